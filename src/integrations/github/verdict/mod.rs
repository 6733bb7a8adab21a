//! The pure rules of SPEC §7: from what GitHub said (a [`PrFacts`]) and
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

mod checks;
mod judge;
mod review;

use jiff::Timestamp;
use serde::Serialize;

use super::model::{
    CheckRun, CombinedStatus, IssueComment, MergeableState, PrState, PullRequest, RequiredChecks,
    Review,
};

pub use checks::{evaluate_checks, CheckDetail, Checks};
pub use judge::Judge;
pub use review::{holds, review_decision, Hold};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
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
pub struct PrFacts {
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

#[cfg(test)]
mod tests {
    use super::*;

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
