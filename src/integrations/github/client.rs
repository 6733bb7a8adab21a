//! What `verify` asks GitHub, as a trait: the REST implementation
//! ([`super::rest::RestClient`]) talks HTTP, a test can hand in anything
//! else. Also the names `verify` resolves before asking: which repository
//! (`OWNER/NAME`, from `--repo`, a PR URL or the remote's URL) and which PR.

use std::time::{Duration, Instant};

use super::model::{CheckRun, CombinedStatus, IssueComment, PullRequest, RequiredChecks, Review};
use crate::error::{Code, Error, Result};

/// The REST endpoints of SPEC §7. Every method fails closed: an HTTP error,
/// a network failure or a malformed body is an `Err` (exit 4), never an
/// empty answer.
pub trait GitHub {
    /// `GET /repos/{o}/{r}/pulls/{n}`; a 404 is `PR_NOT_FOUND`.
    fn pull(&mut self, repo: &RepoId, number: u64) -> Result<PullRequest>;
    /// `GET /repos/{o}/{r}/pulls?head={o}:{branch}&state=all` (first page).
    fn pulls_with_head(&mut self, repo: &RepoId, branch: &str) -> Result<Vec<PullRequest>>;
    /// `GET /repos/{o}/{r}/commits/{sha}/status`.
    fn combined_status(&mut self, repo: &RepoId, sha: &str) -> Result<CombinedStatus>;
    /// `GET /repos/{o}/{r}/commits/{sha}/check-runs`, every page.
    fn check_runs(&mut self, repo: &RepoId, sha: &str) -> Result<Vec<CheckRun>>;
    /// `GET /repos/{o}/{r}/pulls/{n}/reviews`, every page.
    fn reviews(&mut self, repo: &RepoId, number: u64) -> Result<Vec<Review>>;
    /// `GET /repos/{o}/{r}/issues/{n}/comments`, every page.
    fn comments(&mut self, repo: &RepoId, number: u64) -> Result<Vec<IssueComment>>;
    /// The checks `branch` requires: `GET /repos/{o}/{r}/branches/{branch}/
    /// protection/required_status_checks` and `GET /repos/{o}/{r}/rules/
    /// branches/{branch}`; a 403/404 that is not "not protected" marks them
    /// unreadable instead of failing.
    fn required_checks(&mut self, repo: &RepoId, branch: &str) -> Result<RequiredChecks>;
    /// What the requests so far cost and what the server asked of us.
    fn stats(&self) -> Stats;
    /// Until when rate-limit waits (`retry-after`, `x-ratelimit-reset`) may
    /// be waited out instead of failing; `None`: fail at once.
    fn set_wait_deadline(&mut self, deadline: Option<Instant>);
    /// Whether requests carry a token (to warn before asking without one).
    fn authenticated(&self) -> bool;
    /// This client's waits: the clock its deadlines are measured on, and
    /// every wait it and its caller made ([`super::wait`]).
    fn waits(&self) -> &super::wait::Waits;
    /// `PUT /repos/{o}/{r}/pulls/{n}/merge` with `sha` (the head GitHub
    /// must still have, else it refuses: 409) and `merge_method` (`merge`,
    /// `squash`, `rebase`). A refusal (405, 409, 422) is an answer, not an
    /// error; a network failure or another status is an error.
    fn merge_pull(
        &mut self,
        repo: &RepoId,
        number: u64,
        sha: &str,
        method: &str,
    ) -> Result<MergeAnswer> {
        let _ = (repo, number, sha, method);
        Err(Error::new(
            Code::GithubApi,
            "this GitHub client cannot merge pull requests",
        ))
    }
}

/// GitHub's answer to a merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeAnswer {
    /// 200: merged; 405: not mergeable; 409: the head moved; 422: invalid.
    pub status: u16,
    pub merged: bool,
    /// The merge commit (200).
    pub sha: Option<String>,
    /// GitHub's `message`.
    pub message: String,
}

/// Request accounting, reported in the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// HTTP requests sent, whatever their answer.
    pub requests: u64,
    /// Of those, answered `304 Not Modified` (free of rate limit on GitHub).
    pub not_modified: u64,
    /// The largest `x-poll-interval` the server sent.
    pub poll_interval: Option<Duration>,
    /// `x-ratelimit-remaining` / `x-ratelimit-reset` of the last answer.
    pub rate_limit_remaining: Option<u64>,
    pub rate_limit_reset: Option<u64>,
}

/// `OWNER/NAME` of a GitHub repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoId {
    pub owner: String,
    pub name: String,
}

impl std::fmt::Display for RepoId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

fn is_repo_part(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl RepoId {
    /// Parse `OWNER/NAME` as given to `--repo`.
    pub fn parse(s: &str) -> Result<RepoId> {
        let bad = || {
            Error::new(
                Code::Usage,
                format!("'{}' is not OWNER/NAME", s.escape_debug()),
            )
            .hint("pass --repo like --repo octo-org/widgets")
        };
        let (owner, name) = s.split_once('/').ok_or_else(bad)?;
        let name = name.strip_suffix(".git").unwrap_or(name);
        if !is_repo_part(owner) || !is_repo_part(name) {
            return Err(bad());
        }
        Ok(RepoId {
            owner: owner.to_string(),
            name: name.to_string(),
        })
    }

    /// The host a remote or PR URL names (`https://HOST[:port]/…` keeps its
    /// port; ssh and scp-like URLs name the web host without their ssh
    /// port). `None` for local paths and `file://`.
    pub fn host_of_url(url: &str) -> Option<String> {
        let url = url.trim();
        let host = if let Some((scheme, rest)) = url.split_once("://") {
            let scheme = scheme.to_ascii_lowercase();
            if scheme == "file" {
                return None;
            }
            let authority = rest.split('/').next()?;
            let host = authority.rsplit('@').next()?;
            if scheme == "http" || scheme == "https" {
                host.to_string()
            } else {
                host.split(':').next()?.to_string()
            }
        } else {
            let colon = url.find(':')?;
            if url[..colon].contains('/') || colon == 0 {
                return None;
            }
            url[..colon].rsplit('@').next()?.to_string()
        };
        let ok = !host.is_empty()
            && host.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'[' | b']')
            });
        ok.then(|| host.to_ascii_lowercase())
    }

    /// OWNER/NAME from a remote URL: `https://host/o/r(.git)`,
    /// `git@host:o/r.git`, `ssh://git@host[:port]/o/r.git`, `git://host/o/r`.
    /// Local paths and `file://` URLs name no GitHub repository: `None`.
    pub fn from_remote_url(url: &str) -> Option<RepoId> {
        let url = url.trim();
        let path = if let Some((scheme, rest)) = url.split_once("://") {
            if scheme.eq_ignore_ascii_case("file") {
                return None;
            }
            // Drop `user[:password]@host[:port]`; the path starts at the first '/'.
            let (_, path) = rest.split_once('/')?;
            path
        } else {
            // scp-like `[user@]host:path`; a ':' after a '/' is a local path.
            let colon = url.find(':')?;
            if url[..colon].contains('/') || colon == 0 {
                return None;
            }
            &url[colon + 1..]
        };
        let path = path.split(['?', '#']).next().unwrap_or("");
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() < 2 {
            return None;
        }
        let owner = parts[parts.len() - 2];
        let name = parts[parts.len() - 1];
        let name = name.strip_suffix(".git").unwrap_or(name);
        if !is_repo_part(owner) || !is_repo_part(name) {
            return None;
        }
        Some(RepoId {
            owner: owner.to_string(),
            name: name.to_string(),
        })
    }
}

/// `verify pr` takes a number or a PR URL (`https://host/o/r/pull/N[/…]`).
/// Returns the repository the URL names, if any, and the number.
pub fn parse_pr_arg(arg: &str) -> Result<(Option<RepoId>, u64)> {
    let arg = arg.trim();
    let digits = arg.strip_prefix('#').unwrap_or(arg);
    if let Ok(n) = digits.parse::<u64>() {
        if n > 0 {
            return Ok((None, n));
        }
    }
    let bad = || {
        Error::new(
            Code::Usage,
            format!(
                "'{}' is neither a PR number nor a pull request URL",
                arg.escape_debug()
            ),
        )
        .hint("pass a number (git swarm verify pr 42) or a URL like https://github.com/OWNER/NAME/pull/42")
    };
    let (_, rest) = arg.split_once("://").ok_or_else(bad)?;
    let path = rest.split_once('/').map(|(_, p)| p).ok_or_else(bad)?;
    let path = path.split(['?', '#']).next().unwrap_or("");
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let at = parts
        .iter()
        .position(|p| *p == "pull" || *p == "pulls")
        .ok_or_else(bad)?;
    if at < 2 {
        return Err(bad());
    }
    let n: u64 = parts
        .get(at + 1)
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .ok_or_else(bad)?;
    let repo = RepoId::parse(&format!("{}/{}", parts[at - 2], parts[at - 1]))?;
    Ok((Some(repo), n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(o: &str, n: &str) -> Option<RepoId> {
        Some(RepoId {
            owner: o.into(),
            name: n.into(),
        })
    }

    #[test]
    fn remote_urls_of_every_form_name_their_repository() {
        for url in [
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets",
            "https://github.com/acme/widgets/",
            "https://x-access-token:abc@github.com/acme/widgets.git",
            "http://ghe.example:8080/acme/widgets",
            "git@github.com:acme/widgets.git",
            "github.com:acme/widgets",
            "ssh://git@github.com/acme/widgets.git",
            "ssh://git@ghe.example:2222/acme/widgets",
            "git://github.com/acme/widgets.git",
        ] {
            assert_eq!(RepoId::from_remote_url(url), id("acme", "widgets"), "{url}");
        }
        for url in [
            "/srv/git/acme/widgets.git",
            "./widgets.git",
            "file:///srv/git/acme/widgets.git",
            "https://github.com/widgets",
            "",
        ] {
            assert_eq!(RepoId::from_remote_url(url), None, "{url}");
        }
    }

    #[test]
    fn remote_urls_name_their_web_host() {
        for (url, host) in [
            ("https://github.com/acme/widgets.git", Some("github.com")),
            (
                "https://tok@GHE.example.com:8443/a/b",
                Some("ghe.example.com:8443"),
            ),
            (
                "git@ghe.example.com:acme/widgets.git",
                Some("ghe.example.com"),
            ),
            (
                "ssh://git@ghe.example.com:2222/acme/widgets",
                Some("ghe.example.com"),
            ),
            ("/srv/git/acme/widgets.git", None),
            ("file:///srv/git/w.git", None),
        ] {
            assert_eq!(RepoId::host_of_url(url).as_deref(), host, "{url}");
        }
    }

    #[test]
    fn pr_args_are_numbers_or_urls() {
        assert_eq!(parse_pr_arg("42").unwrap(), (None, 42));
        assert_eq!(parse_pr_arg("#7").unwrap(), (None, 7));
        assert_eq!(
            parse_pr_arg("https://github.com/acme/widgets/pull/42").unwrap(),
            (id("acme", "widgets"), 42)
        );
        assert_eq!(
            parse_pr_arg("https://github.com/acme/widgets/pull/42/files#diff").unwrap(),
            (id("acme", "widgets"), 42)
        );
        for bad in [
            "0",
            "abc",
            "https://github.com/acme/widgets",
            "https://github.com/pull/3",
        ] {
            assert_eq!(parse_pr_arg(bad).unwrap_err().code, Code::Usage, "{bad}");
        }
        assert!(RepoId::parse("acme/widgets").is_ok());
        assert!(RepoId::parse("acme").is_err());
        assert!(RepoId::parse("a/b/c").is_err());
    }
}
