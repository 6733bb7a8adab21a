//! The endpoints `verify` asks, as the [`GitHub`] trait over [`RestClient`]:
//! each answer parsed into our tolerant models, each error redacted.

use std::time::Instant;

use super::RestClient;
use crate::error::{Code, Error, Result};
use crate::integrations::github::client::{GitHub, MergeAnswer, RepoId, Stats};
use crate::integrations::github::model::{
    BranchRule, CheckRun, CheckRunsPage, CombinedStatus, IssueComment, PullRequest, RequiredChecks,
    RequiredStatusChecks, Review,
};

impl RestClient {
    fn read_required_checks(&mut self, repo: &RepoId, branch: &str) -> Result<RequiredChecks> {
        let branch = encode_path_segment(branch);
        let mut out = RequiredChecks::default();
        let path = format!("/repos/{repo}/branches/{branch}/protection/required_status_checks");
        match self.get(&path) {
            Ok(a) => {
                let r: RequiredStatusChecks = self.parse(&path, &a.body)?;
                out.contexts.extend(r.contexts.unwrap_or_default());
                out.contexts.extend(
                    r.checks
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|c| c.context),
                );
            }
            Err(e) if is_status(&e, 404) && not_protected(&e) => {}
            Err(e) if is_status(&e, 403) || is_status(&e, 404) => out.unreadable = true,
            Err(e) => return Err(e),
        }
        let path = format!("/repos/{repo}/rules/branches/{branch}?per_page=100");
        match self.all_pages(path, |c, path, body| c.parse::<Vec<BranchRule>>(path, body)) {
            Ok(rules) => out
                .contexts
                .extend(rules.iter().flat_map(BranchRule::required_contexts)),
            Err(e) if is_status(&e, 403) || is_status(&e, 404) => out.unreadable = true,
            Err(e) => return Err(e),
        }
        out.contexts.sort();
        out.contexts.dedup();
        Ok(out)
    }
}

fn is_status(e: &Error, status: u16) -> bool {
    e.code == Code::GithubApi && e.detail.as_ref().is_some_and(|d| d["status"] == status)
}

/// GitHub's 404s for a branch without (status-check) protection, as opposed
/// to a 404 that hides what the token may not see.
fn not_protected(e: &Error) -> bool {
    e.message.contains("Branch not protected")
        || e.message.contains("Required status checks not enabled")
}

/// A branch name as one URL path segment (its '/' kept, as GitHub takes it).
fn encode_path_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl GitHub for RestClient {
    fn pull(&mut self, repo: &RepoId, number: u64) -> Result<PullRequest> {
        let path = format!("/repos/{repo}/pulls/{number}");
        let result = match self.get(&path) {
            Ok(a) => self.parse(&path, &a.body),
            Err(e)
                if e.code == Code::GithubApi
                    && e.detail.as_ref().is_some_and(|d| d["status"] == 404) =>
            {
                Err(Error::new(
                    Code::PrNotFound,
                    format!("{repo} has no pull request #{number} (or this token cannot see it)"),
                )
                .hint("check the number and --repo; a private repository needs GITHUB_TOKEN")
                .with_detail(serde_json::json!({"requests": self.stats.requests})))
            }
            Err(e) => Err(e),
        };
        self.shield(result)
    }

    fn pulls_with_head(&mut self, repo: &RepoId, branch: &str) -> Result<Vec<PullRequest>> {
        let path = format!("/repos/{repo}/pulls?head={}:{branch}&state=all", repo.owner);
        let result = self.get(&path).and_then(|a| self.parse(&path, &a.body));
        self.shield(result)
    }

    fn combined_status(&mut self, repo: &RepoId, sha: &str) -> Result<CombinedStatus> {
        let path = format!("/repos/{repo}/commits/{sha}/status");
        let result = self.get(&path).and_then(|a| self.parse(&path, &a.body));
        self.shield(result)
    }

    fn check_runs(&mut self, repo: &RepoId, sha: &str) -> Result<Vec<CheckRun>> {
        let result = self.all_pages(
            format!("/repos/{repo}/commits/{sha}/check-runs?per_page=100"),
            |c, path, body| Ok(c.parse::<CheckRunsPage>(path, body)?.check_runs),
        );
        self.shield(result)
    }

    fn reviews(&mut self, repo: &RepoId, number: u64) -> Result<Vec<Review>> {
        let result = self.all_pages(
            format!("/repos/{repo}/pulls/{number}/reviews?per_page=100"),
            |c, path, body| c.parse(path, body),
        );
        self.shield(result)
    }

    fn comments(&mut self, repo: &RepoId, number: u64) -> Result<Vec<IssueComment>> {
        let result = self.all_pages(
            format!("/repos/{repo}/issues/{number}/comments?per_page=100"),
            |c, path, body| c.parse(path, body),
        );
        self.shield(result)
    }

    fn required_checks(&mut self, repo: &RepoId, branch: &str) -> Result<RequiredChecks> {
        let result = self.read_required_checks(repo, branch);
        self.shield(result)
    }

    fn stats(&self) -> Stats {
        self.stats.clone()
    }

    fn set_wait_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn merge_pull(
        &mut self,
        repo: &RepoId,
        number: u64,
        sha: &str,
        method: &str,
    ) -> Result<MergeAnswer> {
        let path = format!("/repos/{repo}/pulls/{number}/merge");
        let body = serde_json::json!({"sha": sha, "merge_method": method});
        let result = self.put(&path, &body).and_then(|(status, text)| {
            let mut value: serde_json::Value =
                serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
            self.redactor.json(&mut value);
            let message = value["message"].as_str().unwrap_or("").to_string();
            match status {
                200 | 405 | 409 | 422 => Ok(MergeAnswer {
                    status,
                    merged: status == 200 && value["merged"].as_bool().unwrap_or(true),
                    sha: value["sha"].as_str().map(str::to_string),
                    message,
                }),
                _ => Err(Error::new(
                    Code::GithubApi,
                    format!("GitHub answered HTTP {status} for PUT {path}: {message}"),
                )
                .with_detail(serde_json::json!({"status": status, "path": path}))),
            }
        });
        self.shield(result)
    }

    fn authenticated(&self) -> bool {
        self.authenticated
    }

    fn waits(&self) -> &crate::integrations::github::wait::Waits {
        &self.waits
    }
}
