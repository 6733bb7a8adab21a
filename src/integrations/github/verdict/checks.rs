//! Which checks passed on exactly the head commit: the latest check run per
//! name and the latest status per context, and the checks the base branch
//! requires that have not reported yet.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use super::ts;
use crate::integrations::github::model::{
    CheckConclusion, CheckRun, CheckStatus, CombinedStatus, CommitStatus, StatusState,
};

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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn run(
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

    pub(crate) fn no_status() -> CombinedStatus {
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
}
