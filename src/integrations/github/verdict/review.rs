//! What people said: the review decision GitHub's REST API does not give,
//! and the comments that hold the PR.

use std::collections::BTreeMap;

use jiff::Timestamp;
use regex::Regex;
use serde::Serialize;

use super::ts;
use crate::integrations::github::model::{IssueComment, Review, ReviewState};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrations::github::model::User;

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
}
