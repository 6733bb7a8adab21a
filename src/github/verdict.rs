//! The pure rules of SPEC §7: from what GitHub said (a [`Snapshot`]) and
//! what git established locally ([`LocalFacts`]) to a [`Verdict`]. No I/O
//! here, so every rule is tested directly.
//!
//! States: `merged` (the API says merged *and* git finds the merge commit on
//! the remote's base branch), `merged-unconfirmed`, `closed`, and for open
//! PRs `conflicting` (a real local conflict), `blocked` (a person must act:
//! a hold, failed checks, changes requested, draft, branch protection,
//! behind the base), `pending` (machines are still at work or GitHub's
//! answer is not usable yet: running checks, mergeability not computed, a
//! conflict GitHub reports but git does not reproduce, unknown enum values),
//! and `ready`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use regex::Regex;
use serde::Serialize;

use super::model::{
    CheckConclusion, CheckRun, CheckStatus, CombinedStatus, CommitStatus, IssueComment,
    MergeableState, PrState, PullRequest, RequiredChecks, Review, ReviewState, StatusState,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    Merged,
    MergedUnconfirmed,
    Ready,
    Pending,
    Blocked,
    Conflicting,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Merged => "merged",
            State::MergedUnconfirmed => "merged-unconfirmed",
            State::Ready => "ready",
            State::Pending => "pending",
            State::Blocked => "blocked",
            State::Conflicting => "conflicting",
            State::Closed => "closed",
        }
    }
}

/// What `--require` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Require {
    Merged,
    Ready,
}

impl Require {
    pub fn parse(s: &str) -> Option<Require> {
        match s {
            "merged" => Some(Require::Merged),
            "ready" => Some(Require::Ready),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Require::Merged => "merged",
            Require::Ready => "ready",
        }
    }
    pub fn holds(self, state: State) -> bool {
        match self {
            Require::Merged => state == State::Merged,
            Require::Ready => state == State::Ready,
        }
    }
    /// States from which waiting cannot reach the requirement.
    pub fn is_terminal(self, state: State) -> bool {
        match state {
            State::Closed | State::Conflicting => true,
            State::Merged | State::MergedUnconfirmed => self == Require::Ready,
            _ => false,
        }
    }
}

/// Everything GitHub said about the PR. The check, review and comment
/// listings are fetched only for open PRs.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub pr: PullRequest,
    pub open: Option<OpenFacts>,
}

#[derive(Debug, Clone)]
pub struct OpenFacts {
    pub status: CombinedStatus,
    pub check_runs: Vec<CheckRun>,
    pub reviews: Vec<Review>,
    pub comments: Vec<IssueComment>,
    /// What the base branch requires (possibly unreadable).
    pub required: RequiredChecks,
}

/// Is the API's merge commit on the remote's base branch?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseCheck {
    /// Reachable from `base_ref` (e.g. `refs/remotes/origin/main`).
    Confirmed { base_ref: String },
    /// Not reachable from `base_ref` (or not even in the fetched history).
    NotOnBase { base_ref: String },
    /// The API gave no `merge_commit_sha`.
    NoMergeCommit,
    /// There is no remote-tracking base to check against (why).
    Unavailable(String),
}

/// `git merge-tree --write-tree <base> <head>` on a PR GitHub calls dirty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictCheck {
    Clean,
    Conflicts(Vec<String>),
    /// The merge could not be tried locally (why).
    Unavailable(String),
}

#[derive(Debug, Clone, Default)]
pub struct LocalFacts {
    pub merge: Option<BaseCheck>,
    pub conflict: Option<ConflictCheck>,
    /// Committer time of the head commit: the latest the head can have been
    /// pushed is unknown, but it was not pushed before it was committed, so
    /// a hold newer than this may still apply (fail closed).
    pub head_time: Option<Timestamp>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckDetail {
    pub name: String,
    /// `check-run` or `status`.
    pub kind: &'static str,
    /// `passed`, `failed` or `pending`.
    pub result: &'static str,
    /// GitHub's own word: the conclusion, status or state.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq, Eq)]
pub struct Checks {
    pub passed: usize,
    pub failed: usize,
    pub pending: usize,
    pub details: Vec<CheckDetail>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Hold {
    pub id: Option<i64>,
    pub author: Option<String>,
    pub created_at: Option<String>,
    /// The comment's first line.
    pub excerpt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The verdict, as printed with `--json` (SPEC §7 field names, plus a few).
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub repo: String,
    pub number: u64,
    pub state: State,
    pub head_sha: Option<String>,
    pub head_ref: Option<String>,
    pub base: Option<String>,
    pub merge_commit: Option<String>,
    pub confirmed_on_base: bool,
    pub mergeable: Option<bool>,
    pub mergeable_state: Option<String>,
    pub draft: bool,
    /// `null` for closed and merged PRs (not evaluated).
    pub checks: Option<Checks>,
    pub review_decision: Option<String>,
    pub holds: Vec<Hold>,
    /// Paths that conflict in a local `git merge-tree` of base and head.
    pub conflicts: Vec<String>,
    pub reasons: Vec<String>,
    pub url: Option<String>,
    pub requests: u64,
    pub not_modified: u64,
    pub rate_limit_remaining: Option<u64>,
}

fn ts(s: &Option<String>) -> Option<Timestamp> {
    s.as_deref().and_then(|s| s.parse().ok())
}

/// Latest first is decided by time, then id. A run without a start time
/// was just queued, so it counts as the newest.
fn run_key(run: &CheckRun) -> (Timestamp, i64) {
    let t = ts(&run.started_at)
        .or_else(|| ts(&run.completed_at))
        .unwrap_or(Timestamp::MAX);
    (t, run.id.unwrap_or(0))
}

fn status_key(st: &CommitStatus) -> (Timestamp, i64) {
    let t = ts(&st.updated_at)
        .or_else(|| ts(&st.created_at))
        .unwrap_or(Timestamp::MAX);
    (t, st.id.unwrap_or(0))
}

fn run_result(run: &CheckRun) -> (&'static str, String) {
    let status = run.status.as_ref();
    let completed = matches!(status, Some(CheckStatus::Completed))
        || (status.is_none() && run.conclusion.is_some());
    if !completed {
        let word = match status {
            Some(CheckStatus::Queued) => "queued".to_string(),
            Some(CheckStatus::InProgress) => "in_progress".to_string(),
            Some(CheckStatus::Waiting) => "waiting".to_string(),
            Some(CheckStatus::Requested) => "requested".to_string(),
            Some(CheckStatus::Pending) => "pending".to_string(),
            Some(CheckStatus::Other(s)) => s.clone(),
            Some(CheckStatus::Completed) | None => "unknown".to_string(),
        };
        return ("pending", word);
    }
    match &run.conclusion {
        Some(CheckConclusion::Success) => ("passed", "success".into()),
        Some(CheckConclusion::Neutral) => ("passed", "neutral".into()),
        Some(CheckConclusion::Skipped) => ("passed", "skipped".into()),
        Some(CheckConclusion::Failure) => ("failed", "failure".into()),
        Some(CheckConclusion::Cancelled) => ("failed", "cancelled".into()),
        Some(CheckConclusion::TimedOut) => ("failed", "timed_out".into()),
        Some(CheckConclusion::ActionRequired) => ("failed", "action_required".into()),
        Some(CheckConclusion::Stale) => ("failed", "stale".into()),
        Some(CheckConclusion::StartupFailure) => ("failed", "startup_failure".into()),
        // Unknown conclusions are not ready: counted as failed, named as given.
        Some(CheckConclusion::Other(s)) => ("failed", s.clone()),
        None => ("failed", "completed without conclusion".into()),
    }
}

fn status_result(st: &CommitStatus) -> (&'static str, String) {
    match &st.state {
        Some(StatusState::Success) => ("passed", "success".into()),
        Some(StatusState::Pending) => ("pending", "pending".into()),
        Some(StatusState::Failure) => ("failed", "failure".into()),
        Some(StatusState::Error) => ("failed", "error".into()),
        Some(StatusState::Other(s)) => ("failed", s.clone()),
        None => ("pending", "unknown".into()),
    }
}

/// Checks on exactly `head_sha`: the latest check run per name (re-runs
/// supersede) and the latest status per context; a required check that has
/// not reported on `head_sha` is pending (kind `required`, state `expected`).
pub fn evaluate_checks(
    head_sha: &str,
    runs: &[CheckRun],
    status: &CombinedStatus,
    required: &[String],
) -> Checks {
    let mut latest_run: BTreeMap<String, &CheckRun> = BTreeMap::new();
    for run in runs {
        if run.head_sha.as_deref().is_some_and(|s| s != head_sha) {
            continue; // a run for another commit says nothing about this one
        }
        let name = run.name.clone().unwrap_or_else(|| "(unnamed)".into());
        match latest_run.get(&name) {
            Some(prev) if run_key(prev) >= run_key(run) => {}
            _ => {
                latest_run.insert(name, run);
            }
        }
    }
    let status_applies = status.sha.as_deref().is_none_or(|s| s == head_sha);
    let mut latest_status: BTreeMap<String, &CommitStatus> = BTreeMap::new();
    if status_applies {
        for st in &status.statuses {
            let ctx = st.context.clone().unwrap_or_else(|| "(no context)".into());
            match latest_status.get(&ctx) {
                Some(prev) if status_key(prev) >= status_key(st) => {}
                _ => {
                    latest_status.insert(ctx, st);
                }
            }
        }
    }
    let missing: Vec<&String> = required
        .iter()
        .filter(|r| !latest_run.contains_key(*r) && !latest_status.contains_key(*r))
        .collect();
    let mut checks = Checks::default();
    let mut add = |name: String, kind, (result, state): (&'static str, String), url| {
        match result {
            "passed" => checks.passed += 1,
            "failed" => checks.failed += 1,
            _ => checks.pending += 1,
        }
        checks.details.push(CheckDetail {
            name,
            kind,
            result,
            state,
            url,
        });
    };
    for (name, run) in latest_run {
        add(name, "check-run", run_result(run), run.html_url.clone());
    }
    for (ctx, st) in latest_status {
        add(ctx, "status", status_result(st), st.target_url.clone());
    }
    for name in missing {
        add(
            name.clone(),
            "required",
            ("pending", "expected".to_string()),
            None,
        );
    }
    checks
}

/// The REST API has no `reviewDecision`; derive it like GitHub does from
/// each reviewer's latest decisive review. Returns the decision and whether
/// some reviewer's latest review has a state we do not know.
pub fn review_decision(reviews: &[Review]) -> (Option<String>, bool) {
    let mut sorted: Vec<&Review> = reviews.iter().collect();
    sorted.sort_by_key(|r| {
        (
            ts(&r.submitted_at).unwrap_or(Timestamp::MAX),
            r.id.unwrap_or(0),
        )
    });
    let mut by_user: BTreeMap<String, &ReviewState> = BTreeMap::new();
    for r in sorted {
        let who = r
            .user
            .as_ref()
            .and_then(|u| u.login.clone())
            .unwrap_or_else(|| format!("(review {})", r.id.unwrap_or(0)));
        match &r.state {
            Some(
                s @ (ReviewState::Approved | ReviewState::ChangesRequested | ReviewState::Other(_)),
            ) => {
                by_user.insert(who, s);
            }
            Some(ReviewState::Dismissed) => {
                by_user.remove(&who);
            }
            Some(ReviewState::Commented | ReviewState::Pending) | None => {}
        }
    }
    let unknown = by_user.values().any(|s| matches!(s, ReviewState::Other(_)));
    let decision = if by_user
        .values()
        .any(|s| **s == ReviewState::ChangesRequested)
    {
        Some("CHANGES_REQUESTED".to_string())
    } else if by_user.values().any(|s| **s == ReviewState::Approved) {
        Some("APPROVED".to_string())
    } else {
        None
    };
    (decision, unknown)
}

/// Comments matching the hold pattern that are newer than the head commit
/// (all matching comments when the head's time is unknown, or a comment's
/// time is unreadable: fail closed).
pub fn holds(
    comments: &[IssueComment],
    pattern: &Regex,
    head_time: Option<Timestamp>,
) -> Vec<Hold> {
    comments
        .iter()
        .filter(|c| c.body.as_deref().is_some_and(|b| pattern.is_match(b)))
        .filter(|c| match (head_time, ts(&c.created_at)) {
            (Some(head), Some(at)) => at > head,
            _ => true,
        })
        .map(|c| Hold {
            id: c.id,
            author: c.user.as_ref().and_then(|u| u.login.clone()),
            created_at: c.created_at.clone(),
            excerpt: c
                .body
                .as_deref()
                .unwrap_or("")
                .lines()
                .find(|l| pattern.is_match(l))
                .or_else(|| c.body.as_deref().and_then(|b| b.lines().next()))
                .unwrap_or("")
                .chars()
                .take(200)
                .collect(),
            url: c.html_url.clone(),
        })
        .collect()
}

/// Does this PR need `git merge-tree` to confirm GitHub's conflict report?
pub fn needs_conflict_check(pr: &PullRequest) -> bool {
    is_open(pr)
        && (pr.mergeable == Some(false) || pr.mergeable_state == Some(MergeableState::Dirty))
}

/// Is GitHub still computing mergeability?
pub fn mergeability_unknown(pr: &PullRequest) -> bool {
    is_open(pr)
        && (pr.mergeable.is_none()
            || matches!(pr.mergeable_state, None | Some(MergeableState::Unknown)))
}

pub fn is_open(pr: &PullRequest) -> bool {
    pr.state == Some(PrState::Open)
}

/// The API's word on "merged" (`merged`, or `merged_at` in payloads without it).
pub fn api_merged(pr: &PullRequest) -> bool {
    pr.merged.unwrap_or(pr.merged_at.is_some())
}

pub struct Judge<'a> {
    pub repo: &'a str,
    pub number: u64,
    pub hold_pattern: &'a Regex,
}

impl Judge<'_> {
    pub fn verdict(&self, snap: &Snapshot, local: &LocalFacts) -> Verdict {
        let pr = &snap.pr;
        let head_sha = pr.head.as_ref().and_then(|h| h.sha.clone());
        let mut v = Verdict {
            repo: self.repo.to_string(),
            number: self.number,
            state: State::Pending,
            head_sha: head_sha.clone(),
            head_ref: pr.head.as_ref().and_then(|h| h.ref_.clone()),
            base: pr.base.as_ref().and_then(|b| b.ref_.clone()),
            // For an open PR this is GitHub's test merge, not a merge: not shown.
            merge_commit: if api_merged(pr) {
                pr.merge_commit_sha.clone()
            } else {
                None
            },
            confirmed_on_base: false,
            mergeable: pr.mergeable,
            mergeable_state: pr.mergeable_state.as_ref().map(|m| m.as_str().to_string()),
            draft: pr.draft.unwrap_or(false),
            checks: None,
            review_decision: None,
            holds: Vec::new(),
            conflicts: Vec::new(),
            reasons: Vec::new(),
            url: pr.html_url.clone(),
            requests: 0,
            not_modified: 0,
            rate_limit_remaining: None,
        };
        if api_merged(pr) {
            match &local.merge {
                Some(BaseCheck::Confirmed { .. }) => {
                    v.state = State::Merged;
                    v.confirmed_on_base = true;
                }
                other => {
                    v.state = State::MergedUnconfirmed;
                    v.reasons.push(
                        match other {
                            Some(BaseCheck::NotOnBase { .. }) => "not-on-base",
                            Some(BaseCheck::NoMergeCommit) => "no-merge-commit",
                            _ => "base-unavailable",
                        }
                        .to_string(),
                    );
                }
            }
            return v;
        }
        match pr.state {
            Some(PrState::Closed) => {
                v.state = State::Closed;
                v.reasons.push("closed-unmerged".into());
                return v;
            }
            Some(PrState::Open) => {}
            Some(PrState::Other) | None => {
                v.reasons.push("unknown-pr-state".into());
                return v;
            }
        }

        let mut blocked: Vec<&str> = Vec::new();
        let mut pending: Vec<&str> = Vec::new();
        let mut conflicting = false;
        if v.draft || pr.mergeable_state == Some(MergeableState::Draft) {
            blocked.push("draft");
        }
        if needs_conflict_check(pr) {
            match &local.conflict {
                Some(ConflictCheck::Conflicts(paths)) => {
                    conflicting = true;
                    v.conflicts = paths.clone();
                }
                _ => pending.push("conflict-unconfirmed"),
            }
        } else if mergeability_unknown(pr) {
            pending.push("mergeable-unknown");
        } else {
            match pr.mergeable_state.as_ref() {
                Some(MergeableState::Clean | MergeableState::HasHooks) => {}
                Some(MergeableState::Unstable) => pending.push("unstable"),
                Some(MergeableState::Blocked) => blocked.push("branch-protection"),
                Some(MergeableState::Behind) => blocked.push("behind"),
                Some(MergeableState::Draft) => {} // counted above
                Some(MergeableState::Other(_)) => pending.push("unknown-mergeable-state"),
                // Dirty and unknown took the branches above; kept for totality.
                Some(MergeableState::Dirty | MergeableState::Unknown) | None => {
                    pending.push("mergeable-unknown")
                }
            }
        }
        if let Some(open) = &snap.open {
            let checks = evaluate_checks(
                head_sha.as_deref().unwrap_or(""),
                &open.check_runs,
                &open.status,
                &open.required.contexts,
            );
            if checks.failed > 0 {
                blocked.push("checks-failed");
            }
            if checks.pending > 0 {
                pending.push("checks-pending");
            }
            if checks.details.is_empty() {
                // Right after a push nothing has reported yet; like `gh pr
                // checks`, no checks at all is not a pass.
                pending.push("no-checks");
            }
            v.checks = Some(checks);
            let (decision, unknown_review) = review_decision(&open.reviews);
            if decision.as_deref() == Some("CHANGES_REQUESTED") {
                blocked.push("changes-requested");
            }
            if unknown_review {
                pending.push("unknown-review-state");
            }
            v.review_decision = decision;
            v.holds = holds(&open.comments, self.hold_pattern, local.head_time);
            if !v.holds.is_empty() {
                blocked.push("held");
            }
        } else {
            pending.push("checks-unknown");
        }
        v.state = if conflicting {
            State::Conflicting
        } else if !blocked.is_empty() {
            State::Blocked
        } else if !pending.is_empty() {
            State::Pending
        } else {
            State::Ready
        };
        if conflicting {
            v.reasons.push("conflict".into());
        }
        v.reasons
            .extend(blocked.iter().chain(pending.iter()).map(|s| s.to_string()));
        if snap.open.as_ref().is_some_and(|o| o.required.unreadable) {
            // Not a blocker: GitHub's mergeable_state already counts them.
            v.reasons.push("required-checks-unreadable".into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::model::User;

    fn run(
        id: u64,
        name: &str,
        sha: &str,
        status: &str,
        conclusion: Option<&str>,
        started: &str,
    ) -> CheckRun {
        serde_json::from_value(serde_json::json!({
            "id": id, "name": name, "head_sha": sha, "status": status,
            "conclusion": conclusion, "started_at": started,
        }))
        .unwrap()
    }

    fn no_status() -> CombinedStatus {
        serde_json::from_value(serde_json::json!({"state": "pending", "statuses": []})).unwrap()
    }

    #[test]
    fn a_rerun_supersedes_the_failed_run_of_the_same_name() {
        let runs = [
            run(
                1,
                "test",
                "abc",
                "completed",
                Some("failure"),
                "2026-01-01T10:00:00Z",
            ),
            run(
                2,
                "test",
                "abc",
                "completed",
                Some("success"),
                "2026-01-01T10:05:00Z",
            ),
            run(
                3,
                "lint",
                "abc",
                "completed",
                Some("skipped"),
                "2026-01-01T10:00:00Z",
            ),
        ];
        let c = evaluate_checks("abc", &runs, &no_status(), &[]);
        assert_eq!((c.passed, c.failed, c.pending), (2, 0, 0));
        // The order of the listing does not matter.
        let reversed: Vec<CheckRun> = runs.iter().rev().cloned().collect();
        assert_eq!(evaluate_checks("abc", &reversed, &no_status(), &[]), c);
    }

    #[test]
    fn a_queued_rerun_makes_a_passed_check_pending_again() {
        let mut queued = run(9, "test", "abc", "queued", None, "2026-01-01T10:00:00Z");
        queued.started_at = None;
        let runs = [
            run(
                1,
                "test",
                "abc",
                "completed",
                Some("success"),
                "2026-01-01T10:00:00Z",
            ),
            queued,
        ];
        let c = evaluate_checks("abc", &runs, &no_status(), &[]);
        assert_eq!((c.passed, c.failed, c.pending), (0, 0, 1));
    }

    #[test]
    fn runs_of_other_commits_and_unknown_conclusions_do_not_pass() {
        let runs = [
            run(
                1,
                "test",
                "old",
                "completed",
                Some("success"),
                "2026-01-01T10:00:00Z",
            ),
            run(
                2,
                "build",
                "abc",
                "completed",
                Some("exploded"),
                "2026-01-01T10:00:00Z",
            ),
            run(3, "deploy", "abc", "mystery", None, "2026-01-01T10:00:00Z"),
        ];
        let c = evaluate_checks("abc", &runs, &no_status(), &[]);
        assert_eq!((c.passed, c.failed, c.pending), (0, 1, 1));
        assert_eq!(c.details[0].state, "exploded");
    }

    #[test]
    fn the_latest_status_per_context_counts() {
        let status: CombinedStatus = serde_json::from_value(serde_json::json!({
            "state": "failure", "sha": "abc", "statuses": [
                {"id": 1, "context": "ci", "state": "failure", "created_at": "2026-01-01T10:00:00Z", "updated_at": "2026-01-01T10:00:00Z"},
                {"id": 2, "context": "ci", "state": "success", "created_at": "2026-01-01T11:00:00Z", "updated_at": "2026-01-01T11:00:00Z"},
                {"id": 3, "context": "cov", "state": "pending", "created_at": "2026-01-01T11:00:00Z"},
            ]
        }))
        .unwrap();
        let c = evaluate_checks("abc", &[], &status, &[]);
        assert_eq!((c.passed, c.failed, c.pending), (1, 0, 1));
    }

    #[test]
    fn a_required_check_that_has_not_reported_on_the_head_is_pending() {
        let runs = [
            run(
                1,
                "test",
                "abc",
                "completed",
                Some("success"),
                "2026-01-01T10:00:00Z",
            ),
            // Reported, but on another commit: says nothing about this one.
            run(
                2,
                "deploy",
                "old",
                "completed",
                Some("success"),
                "2026-01-01T10:00:00Z",
            ),
        ];
        let required = ["test".to_string(), "deploy".to_string()];
        let c = evaluate_checks("abc", &runs, &no_status(), &required);
        assert_eq!((c.passed, c.failed, c.pending), (1, 0, 1));
        let d = c.details.iter().find(|d| d.name == "deploy").unwrap();
        assert_eq!(
            (d.kind, d.result, d.state.as_str()),
            ("required", "pending", "expected")
        );
        // A required status context counts as reported too.
        let status: CombinedStatus = serde_json::from_value(serde_json::json!({
            "sha": "abc", "statuses": [{"id": 1, "context": "deploy", "state": "success"}]
        }))
        .unwrap();
        let c = evaluate_checks("abc", &runs, &status, &required);
        assert_eq!((c.passed, c.failed, c.pending), (2, 0, 0));
    }

    fn review(id: i64, who: &str, state: &str, at: &str) -> Review {
        Review {
            id: Some(id),
            user: Some(User {
                login: Some(who.into()),
            }),
            state: serde_json::from_value(serde_json::json!(state)).unwrap(),
            submitted_at: Some(at.into()),
        }
    }

    #[test]
    fn review_decision_follows_each_reviewers_latest_decisive_review() {
        let a = review(1, "ann", "CHANGES_REQUESTED", "2026-01-01T10:00:00Z");
        let b = review(2, "ann", "COMMENTED", "2026-01-01T11:00:00Z");
        assert_eq!(
            review_decision(&[a.clone(), b.clone()]).0.as_deref(),
            Some("CHANGES_REQUESTED")
        );
        let c = review(3, "ann", "APPROVED", "2026-01-01T12:00:00Z");
        assert_eq!(
            review_decision(&[c.clone(), a.clone(), b]).0.as_deref(),
            Some("APPROVED")
        );
        let d = review(4, "ann", "DISMISSED", "2026-01-01T13:00:00Z");
        assert_eq!(review_decision(&[a, d]).0, None);
        let e = review(5, "bob", "SUPER_APPROVED", "2026-01-01T13:00:00Z");
        assert_eq!(review_decision(&[c, e]), (Some("APPROVED".into()), true));
    }

    #[test]
    fn holds_older_than_the_head_commit_are_lifted() {
        let pattern = Regex::new("Auto-merge withheld").unwrap();
        let comments: Vec<IssueComment> = serde_json::from_value(serde_json::json!([
            {"id": 1, "body": "Auto-merge withheld until the release", "created_at": "2026-01-01T09:00:00Z", "user": {"login": "lead"}},
            {"id": 2, "body": "LGTM", "created_at": "2026-01-01T11:00:00Z", "user": null},
            {"id": 3, "body": "context\nAuto-merge withheld: flaky", "created_at": "2026-01-01T12:00:00Z", "user": {"login": "lead"}},
        ]))
        .unwrap();
        let head: Timestamp = "2026-01-01T10:00:00Z".parse().unwrap();
        let h = holds(&comments, &pattern, Some(head));
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].id, Some(3));
        assert_eq!(h[0].excerpt, "Auto-merge withheld: flaky");
        assert_eq!(holds(&comments, &pattern, None).len(), 2);
    }

    fn pr(v: serde_json::Value) -> PullRequest {
        serde_json::from_value(v).unwrap()
    }

    fn judge(snap: &Snapshot, local: &LocalFacts) -> Verdict {
        let re = Regex::new("Auto-merge withheld").unwrap();
        Judge {
            repo: "o/r",
            number: 1,
            hold_pattern: &re,
        }
        .verdict(snap, local)
    }

    fn green(sha: &str) -> OpenFacts {
        OpenFacts {
            status: no_status(),
            check_runs: vec![run(
                1,
                "test",
                sha,
                "completed",
                Some("success"),
                "2026-01-01T10:00:00Z",
            )],
            reviews: vec![],
            comments: vec![],
            required: RequiredChecks::default(),
        }
    }

    #[test]
    fn merged_needs_git_to_confirm() {
        let p = pr(
            serde_json::json!({"state": "closed", "merged": true, "merge_commit_sha": "m", "mergeable": false, "head": {"sha": "h"}}),
        );
        let snap = Snapshot { pr: p, open: None };
        let confirmed = LocalFacts {
            merge: Some(BaseCheck::Confirmed {
                base_ref: "refs/remotes/origin/main".into(),
            }),
            ..Default::default()
        };
        assert_eq!(judge(&snap, &confirmed).state, State::Merged);
        let not = LocalFacts {
            merge: Some(BaseCheck::NotOnBase {
                base_ref: "x".into(),
            }),
            ..Default::default()
        };
        let v = judge(&snap, &not);
        assert_eq!(
            (v.state, v.reasons.clone()),
            (State::MergedUnconfirmed, vec!["not-on-base".to_string()])
        );
        assert_eq!(
            judge(&snap, &LocalFacts::default()).state,
            State::MergedUnconfirmed
        );
    }

    #[test]
    fn open_prs_are_ready_only_when_everything_holds() {
        let base = serde_json::json!({"state": "open", "merged": false, "mergeable": true, "mergeable_state": "clean", "head": {"sha": "h"}});
        let snap = Snapshot {
            pr: pr(base.clone()),
            open: Some(green("h")),
        };
        assert_eq!(judge(&snap, &LocalFacts::default()).state, State::Ready);

        let mut draft = base.clone();
        draft["draft"] = true.into();
        let v = judge(
            &Snapshot {
                pr: pr(draft),
                open: Some(green("h")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (State::Blocked, vec!["draft".to_string()])
        );

        let mut odd = base.clone();
        odd["mergeable_state"] = "quantum".into();
        let v = judge(
            &Snapshot {
                pr: pr(odd),
                open: Some(green("h")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (State::Pending, vec!["unknown-mergeable-state".to_string()])
        );

        let mut unknown = base.clone();
        unknown["mergeable"] = serde_json::Value::Null;
        unknown["mergeable_state"] = "unknown".into();
        let v = judge(
            &Snapshot {
                pr: pr(unknown),
                open: Some(green("h")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(v.reasons, vec!["mergeable-unknown".to_string()]);

        let v = judge(
            &Snapshot {
                pr: pr(base.clone()),
                open: Some(green("other")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (State::Pending, vec!["no-checks".to_string()])
        );

        let mut dirty = base;
        dirty["mergeable"] = false.into();
        dirty["mergeable_state"] = "dirty".into();
        let snap = Snapshot {
            pr: pr(dirty),
            open: Some(green("h")),
        };
        let clean = LocalFacts {
            conflict: Some(ConflictCheck::Clean),
            ..Default::default()
        };
        let v = judge(&snap, &clean);
        assert_eq!(
            (v.state, v.reasons),
            (State::Pending, vec!["conflict-unconfirmed".to_string()])
        );
        let conflict = LocalFacts {
            conflict: Some(ConflictCheck::Conflicts(vec!["a.txt".into()])),
            ..Default::default()
        };
        let v = judge(&snap, &conflict);
        assert_eq!(
            (v.state, v.conflicts),
            (State::Conflicting, vec!["a.txt".to_string()])
        );
    }

    #[test]
    fn requirements_and_terminal_states() {
        assert!(Require::Merged.holds(State::Merged));
        assert!(!Require::Merged.holds(State::MergedUnconfirmed));
        assert!(!Require::Ready.holds(State::Merged));
        assert!(Require::Ready.is_terminal(State::Merged));
        assert!(!Require::Merged.is_terminal(State::MergedUnconfirmed));
        assert!(Require::Merged.is_terminal(State::Closed));
        assert!(!Require::Merged.is_terminal(State::Blocked));
    }
}
