//! The few fields of GitHub's REST payloads that `verify` reads, as our own
//! small serde structs. Real payloads are messier than the documentation:
//! old ones lack fields (`draft`, `auto_merge`), a merged PR can say
//! `mergeable: null`, users can be `null` (deleted accounts), and GitHub adds
//! enum values over time. So every field is optional, unknown fields are
//! ignored, and every enum has a catch-all that the verdict treats as "not
//! ready" — a new value never crashes the tool.
//!
//! Only what the verdict reads is typed. Ids and numbers, which the verdict
//! only uses to order things, are `i64` read leniently (the description says
//! `integer`, nothing more: a negative, fractional or huge value is `None`,
//! never a failed verification); everything else is skipped.

use serde::{Deserialize, Deserializer};

/// An integer field whose value the verdict can do without: anything that
/// is not an `i64` (a float, a string, a number past `i64`) reads as `None`.
fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(serde_json::Value::deserialize(d)?.as_i64())
}

/// [`parse`] for a payload already read as JSON.
pub fn parse_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("field `{path}`: {}", e.inner())
        }
    })
}

/// Parse a payload, naming the field that did not fit (`head.sha: invalid
/// type …`) so a fail-closed error says what GitHub sent wrong.
pub fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, String> {
    let de = &mut serde_json::Deserializer::from_str(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("field `{path}`: {}", e.inner())
        }
    })
}

/// `GET /repos/{o}/{r}/pulls/{n}` (and the items of `GET …/pulls?head=…`,
/// which lack the merge fields).
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    #[serde(default, deserialize_with = "lenient_int")]
    pub number: Option<i64>,
    pub state: Option<PrState>,
    pub draft: Option<bool>,
    pub merged: Option<bool>,
    pub mergeable: Option<bool>,
    pub mergeable_state: Option<MergeableState>,
    pub merge_commit_sha: Option<String>,
    pub merged_at: Option<String>,
    pub created_at: Option<String>,
    pub html_url: Option<String>,
    pub head: Option<Branch>,
    pub base: Option<Branch>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Branch {
    #[serde(rename = "ref")]
    pub ref_: Option<String>,
    pub sha: Option<String>,
    /// `null` when the head repository (a fork) was deleted.
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    pub full_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrState {
    Open,
    Closed,
    #[serde(other)]
    Other,
}

/// GitHub's `mergeable_state` (documented values plus a catch-all).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeableState {
    Clean,
    HasHooks,
    Unstable,
    Blocked,
    Behind,
    Dirty,
    Draft,
    Unknown,
    #[serde(untagged)]
    Other(String),
}

impl MergeableState {
    pub fn as_str(&self) -> &str {
        match self {
            MergeableState::Clean => "clean",
            MergeableState::HasHooks => "has_hooks",
            MergeableState::Unstable => "unstable",
            MergeableState::Blocked => "blocked",
            MergeableState::Behind => "behind",
            MergeableState::Dirty => "dirty",
            MergeableState::Draft => "draft",
            MergeableState::Unknown => "unknown",
            MergeableState::Other(s) => s,
        }
    }
}

/// `GET /repos/{o}/{r}/commits/{sha}/check-runs` (one page).
#[derive(Debug, Clone, Deserialize)]
pub struct CheckRunsPage {
    #[serde(default)]
    pub check_runs: Vec<CheckRun>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckRun {
    #[serde(default, deserialize_with = "lenient_int")]
    pub id: Option<i64>,
    pub name: Option<String>,
    pub head_sha: Option<String>,
    pub status: Option<CheckStatus>,
    pub conclusion: Option<CheckConclusion>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub html_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
    Waiting,
    Requested,
    Pending,
    #[serde(untagged)]
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Neutral,
    Skipped,
    Failure,
    Cancelled,
    TimedOut,
    ActionRequired,
    Stale,
    StartupFailure,
    #[serde(untagged)]
    Other(String),
}

/// `GET /repos/{o}/{r}/commits/{sha}/status` (the combined status).
#[derive(Debug, Clone, Deserialize)]
pub struct CombinedStatus {
    pub state: Option<StatusState>,
    pub sha: Option<String>,
    #[serde(default)]
    pub statuses: Vec<CommitStatus>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CommitStatus {
    #[serde(default, deserialize_with = "lenient_int")]
    pub id: Option<i64>,
    pub context: Option<String>,
    pub state: Option<StatusState>,
    pub target_url: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusState {
    Success,
    Pending,
    Failure,
    Error,
    #[serde(untagged)]
    Other(String),
}

/// One item of `GET /repos/{o}/{r}/pulls/{n}/reviews`.
#[derive(Debug, Clone, Deserialize)]
pub struct Review {
    #[serde(default, deserialize_with = "lenient_int")]
    pub id: Option<i64>,
    pub user: Option<User>,
    pub state: Option<ReviewState>,
    pub submitted_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    Dismissed,
    Pending,
    #[serde(untagged)]
    Other(String),
}

/// One item of `GET /repos/{o}/{r}/issues/{n}/comments`.
#[derive(Debug, Clone, Deserialize)]
pub struct IssueComment {
    #[serde(default, deserialize_with = "lenient_int")]
    pub id: Option<i64>,
    pub user: Option<User>,
    pub body: Option<String>,
    pub created_at: Option<String>,
    pub html_url: Option<String>,
}

/// `GET /repos/{o}/{r}/branches/{branch}/protection/required_status_checks`.
#[derive(Debug, Clone, Deserialize)]
pub struct RequiredStatusChecks {
    #[serde(default)]
    pub contexts: Option<Vec<String>>,
    #[serde(default)]
    pub checks: Option<Vec<RequiredCheck>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RequiredCheck {
    pub context: Option<String>,
}

/// One item of `GET /repos/{o}/{r}/rules/branches/{branch}`: only the
/// `required_status_checks` rule is read, and of it only the contexts.
#[derive(Debug, Clone, Deserialize)]
pub struct BranchRule {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
}

impl BranchRule {
    /// The contexts a `required_status_checks` rule requires (else none).
    pub fn required_contexts(&self) -> Vec<String> {
        if self.type_.as_deref() != Some("required_status_checks") {
            return Vec::new();
        }
        self.parameters
            .as_ref()
            .and_then(|p| p.get("required_status_checks"))
            .and_then(|c| c.as_array())
            .map(|list| {
                list.iter()
                    .filter_map(|c| c.get("context").and_then(|c| c.as_str()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The checks the base branch requires, from branch protection and rulesets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequiredChecks {
    /// Check or status names that must report on the head SHA.
    pub contexts: Vec<String>,
    /// The token may not read one of the sources (HTTP 403/404): the list
    /// may be incomplete, so the verdict leans on `mergeable_state`.
    pub unreadable: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub login: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_enum_values_parse_into_the_catch_all() {
        let pr: PullRequest = serde_json::from_str(
            r#"{"state":"reopened","mergeable_state":"shiny_new","head":{"ref":"x","sha":null,"repo":null}}"#,
        )
        .unwrap();
        assert_eq!(pr.state, Some(PrState::Other));
        assert_eq!(
            pr.mergeable_state,
            Some(MergeableState::Other("shiny_new".into()))
        );
        let run: CheckRun =
            serde_json::from_str(r#"{"status":"paused","conclusion":"exploded"}"#).unwrap();
        assert_eq!(run.status, Some(CheckStatus::Other("paused".into())));
        assert_eq!(
            run.conclusion,
            Some(CheckConclusion::Other("exploded".into()))
        );
        let review: Review = serde_json::from_str(r#"{"state":"SUPER_APPROVED"}"#).unwrap();
        assert_eq!(
            review.state,
            Some(ReviewState::Other("SUPER_APPROVED".into()))
        );
        let st: StatusState = serde_json::from_str(r#""weird""#).unwrap();
        assert_eq!(st, StatusState::Other("weird".into()));
    }

    #[test]
    fn odd_integers_and_unread_fields_never_fail_a_parse() {
        let run: CheckRun = parse(
            r#"{"id": -5, "name": "t", "app": {"id": 1.5, "owner": null}, "output": 3, "pull_requests": [{"number": 1e30}]}"#,
        )
        .unwrap();
        assert_eq!(run.id, Some(-5));
        let review: Review =
            parse(r#"{"id": 18446744073709551615, "user": {"id": "x", "login": "a"}}"#).unwrap();
        assert_eq!(review.id, None);
        let pr: PullRequest =
            parse(r#"{"number": 2.5, "state": "open", "labels": "whatever"}"#).unwrap();
        assert_eq!((pr.number, pr.state), (None, Some(PrState::Open)));
    }

    #[test]
    fn a_field_the_verdict_reads_of_the_wrong_type_is_named() {
        let err = parse::<PullRequest>(r#"{"state": "open", "head": {"sha": 7}}"#).unwrap_err();
        assert!(err.contains("field `head.sha`"), "{err}");
        let err = parse::<PullRequest>("[").unwrap_err();
        assert!(!err.contains("field"), "{err}");
    }

    #[test]
    fn known_enum_values_parse_into_their_variants() {
        let ms: MergeableState = serde_json::from_str(r#""has_hooks""#).unwrap();
        assert_eq!(ms, MergeableState::HasHooks);
        let c: CheckConclusion = serde_json::from_str(r#""timed_out""#).unwrap();
        assert_eq!(c, CheckConclusion::TimedOut);
        let r: ReviewState = serde_json::from_str(r#""CHANGES_REQUESTED""#).unwrap();
        assert_eq!(r, ReviewState::ChangesRequested);
        let s: CheckStatus = serde_json::from_str(r#""in_progress""#).unwrap();
        assert_eq!(s, CheckStatus::InProgress);
    }
}
