//! The verdict itself: SPEC §7's order of precedence over what GitHub said
//! and what git established. A merged PR is `merged` only when git confirms
//! it; an open one is `conflicting` before `blocked` before `pending`
//! before `ready`, and every reason found is listed.

use regex::Regex;

use super::{
    api_merged, evaluate_checks, holds, mergeability_unknown, needs_conflict_check,
    review_decision, BaseCheck, ConflictCheck, LocalFacts, OpenFacts, PrFacts, State, Verdict,
};
use crate::integrations::github::model::{MergeableState, PrState, PullRequest};

pub struct Judge<'a> {
    pub repo: &'a str,
    pub number: u64,
    pub hold_pattern: &'a Regex,
}

/// What an open PR's facts add up to, before they become a state.
#[derive(Default)]
struct Reasons {
    conflicting: bool,
    blocked: Vec<&'static str>,
    pending: Vec<&'static str>,
}

impl Judge<'_> {
    pub fn verdict(&self, snap: &PrFacts, local: &LocalFacts) -> Verdict {
        let pr = &snap.pr;
        let mut v = self.blank(pr);
        if api_merged(pr) {
            merged(&mut v, local);
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
        let mut r = Reasons::default();
        mergeability(pr, local, &mut v, &mut r);
        match &snap.open {
            Some(open) => self.open_facts(open, local, &mut v, &mut r),
            None => r.pending.push("checks-unknown"),
        }
        v.state = if r.conflicting {
            State::Conflicting
        } else if !r.blocked.is_empty() {
            State::Blocked
        } else if !r.pending.is_empty() {
            State::Pending
        } else {
            State::Ready
        };
        if r.conflicting {
            v.reasons.push("conflict".into());
        }
        v.reasons.extend(
            r.blocked
                .iter()
                .chain(r.pending.iter())
                .map(|s| s.to_string()),
        );
        if snap.open.as_ref().is_some_and(|o| o.required.unreadable) {
            // Not a blocker: GitHub's mergeable_state already counts them.
            v.reasons.push("required-checks-unreadable".into());
        }
        v
    }

    /// The verdict's fields as GitHub gives them, still `pending`.
    fn blank(&self, pr: &PullRequest) -> Verdict {
        Verdict {
            repo: self.repo.to_string(),
            number: self.number,
            state: State::Pending,
            head_sha: pr.head.as_ref().and_then(|h| h.sha.clone()),
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
        }
    }

    /// Checks, reviews and holds of an open PR.
    fn open_facts(&self, open: &OpenFacts, local: &LocalFacts, v: &mut Verdict, r: &mut Reasons) {
        let checks = evaluate_checks(
            v.head_sha.as_deref().unwrap_or(""),
            &open.check_runs,
            &open.status,
            &open.required.contexts,
        );
        if checks.failed > 0 {
            r.blocked.push("checks-failed");
        }
        if checks.pending > 0 {
            r.pending.push("checks-pending");
        }
        if checks.details.is_empty() {
            // Right after a push nothing has reported yet; like `gh pr
            // checks`, no checks at all is not a pass.
            r.pending.push("no-checks");
        }
        v.checks = Some(checks);
        let (decision, unknown_review) = review_decision(&open.reviews);
        if decision.as_deref() == Some("CHANGES_REQUESTED") {
            r.blocked.push("changes-requested");
        }
        if unknown_review {
            r.pending.push("unknown-review-state");
        }
        v.review_decision = decision;
        v.holds = holds(&open.comments, self.hold_pattern, local.head_time);
        if !v.holds.is_empty() {
            r.blocked.push("held");
        }
    }
}

/// A PR the API calls merged: `merged` only when git confirms it.
fn merged(v: &mut Verdict, local: &LocalFacts) {
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
}

/// Draft, conflicts and GitHub's `mergeable_state` of an open PR.
fn mergeability(pr: &PullRequest, local: &LocalFacts, v: &mut Verdict, r: &mut Reasons) {
    if v.draft || pr.mergeable_state == Some(MergeableState::Draft) {
        r.blocked.push("draft");
    }
    if needs_conflict_check(pr) {
        match &local.conflict {
            Some(ConflictCheck::Conflicts(paths)) => {
                r.conflicting = true;
                v.conflicts = paths.clone();
            }
            _ => r.pending.push("conflict-unconfirmed"),
        }
        return;
    }
    if mergeability_unknown(pr) {
        r.pending.push("mergeable-unknown");
        return;
    }
    match pr.mergeable_state.as_ref() {
        Some(MergeableState::Clean | MergeableState::HasHooks) => {}
        Some(MergeableState::Unstable) => r.pending.push("unstable"),
        Some(MergeableState::Blocked) => r.blocked.push("branch-protection"),
        Some(MergeableState::Behind) => r.blocked.push("behind"),
        Some(MergeableState::Draft) => {} // counted above
        Some(MergeableState::Other(_)) => r.pending.push("unknown-mergeable-state"),
        // Dirty and unknown took the branches above; kept for totality.
        Some(MergeableState::Dirty | MergeableState::Unknown) | None => {
            r.pending.push("mergeable-unknown")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::checks::tests::{no_status, run};
    use super::*;
    use crate::integrations::github::model::RequiredChecks;

    fn pr(v: serde_json::Value) -> PullRequest {
        serde_json::from_value(v).unwrap()
    }

    fn judge(snap: &PrFacts, local: &LocalFacts) -> Verdict {
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
        let snap = PrFacts { pr: p, open: None };
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
        let snap = PrFacts {
            pr: pr(base.clone()),
            open: Some(green("h")),
        };
        assert_eq!(judge(&snap, &LocalFacts::default()).state, State::Ready);

        let mut draft = base.clone();
        draft["draft"] = true.into();
        let v = judge(
            &PrFacts {
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
            &PrFacts {
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
            &PrFacts {
                pr: pr(unknown),
                open: Some(green("h")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(v.reasons, vec!["mergeable-unknown".to_string()]);

        let v = judge(
            &PrFacts {
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
        let snap = PrFacts {
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
    fn closed_and_unknown_prs_are_never_ready() {
        let closed =
            pr(serde_json::json!({"state": "closed", "merged": false, "head": {"sha": "h"}}));
        let v = judge(
            &PrFacts {
                pr: closed,
                open: None,
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (State::Closed, vec!["closed-unmerged".to_string()])
        );
        let odd = pr(serde_json::json!({"state": "locked", "head": {"sha": "h"}}));
        let v = judge(
            &PrFacts {
                pr: odd,
                open: Some(green("h")),
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (State::Pending, vec!["unknown-pr-state".to_string()])
        );
    }

    #[test]
    fn reasons_list_conflict_then_blockers_then_pending_work() {
        let p = pr(
            serde_json::json!({"state": "open", "merged": false, "draft": true,
            "mergeable": false, "mergeable_state": "dirty", "head": {"sha": "h"}}),
        );
        let mut open = green("h");
        open.check_runs.push(run(
            2,
            "lint",
            "h",
            "in_progress",
            None,
            "2026-01-01T10:00:00Z",
        ));
        open.comments = serde_json::from_value(serde_json::json!([
            {"id": 1, "body": "Auto-merge withheld", "created_at": "2026-01-01T12:00:00Z"}
        ]))
        .unwrap();
        open.required.unreadable = true;
        let local = LocalFacts {
            conflict: Some(ConflictCheck::Conflicts(vec!["a.txt".into()])),
            ..Default::default()
        };
        let v = judge(
            &PrFacts {
                pr: p,
                open: Some(open),
            },
            &local,
        );
        assert_eq!(v.state, State::Conflicting);
        assert_eq!(
            v.reasons,
            [
                "conflict",
                "draft",
                "held",
                "checks-pending",
                "required-checks-unreadable"
            ]
        );
        assert_eq!(v.holds.len(), 1);
    }

    #[test]
    fn changes_requested_and_branch_protection_block() {
        let p = pr(
            serde_json::json!({"state": "open", "merged": false, "mergeable": true,
            "mergeable_state": "blocked", "head": {"sha": "h"}}),
        );
        let mut open = green("h");
        open.reviews = serde_json::from_value(serde_json::json!([
            {"id": 1, "user": {"login": "ann"}, "state": "CHANGES_REQUESTED", "submitted_at": "2026-01-01T10:00:00Z"}
        ]))
        .unwrap();
        let v = judge(
            &PrFacts {
                pr: p,
                open: Some(open),
            },
            &LocalFacts::default(),
        );
        assert_eq!(
            (v.state, v.reasons),
            (
                State::Blocked,
                vec!["branch-protection".to_string(), "changes-requested".into()]
            )
        );
        assert_eq!(v.review_decision.as_deref(), Some("CHANGES_REQUESTED"));
    }
}
