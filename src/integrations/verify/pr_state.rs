//! What GitHub says about the PR, waiting (bounded) while GitHub is still
//! computing mergeability; and the checks on what the API hands us before
//! it goes near git (a head that is a commit id, branch names git accepts).

use super::{Report, Timing};
use crate::error::{Code, Error, Result};
use crate::integrations::github::client::{GitHub, RepoId};
use crate::integrations::github::model::{PullRequest, RequiredChecks};
use crate::integrations::github::verdict::{is_open, mergeability_unknown, OpenFacts, PrFacts};

pub(super) fn is_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Branch names from the API go into refspecs: refuse anything git would
/// not accept as a branch, or that could be read as an option.
pub(super) fn is_safe_branch(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.starts_with('/')
        && !s.ends_with('/')
        && !s.ends_with(".lock")
        && !s.contains("..")
        && !s.contains("@{")
        && !s.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c))
}

/// The PR's head commit, if the API gave a commit id.
pub(super) fn head_sha(pr: &PullRequest) -> Option<String> {
    pr.head
        .as_ref()
        .and_then(|h| h.sha.clone())
        .filter(|s| is_sha(s))
}

/// Everything GitHub says about the PR, waiting (bounded) while GitHub is
/// still computing mergeability.
pub(super) fn read(
    gh: &mut dyn GitHub,
    repo: &RepoId,
    number: u64,
    timing: &Timing,
    report: &mut dyn Report,
) -> Result<PrFacts> {
    let mut pr = gh.pull(repo, number)?;
    let mut attempt = 0;
    while mergeability_unknown(&pr) && attempt < timing.retries {
        let wait = timing.backoff * 2u32.pow(attempt);
        report.progress(&format!(
            "{repo}#{number}: GitHub has not computed mergeability yet; asking again in {} ms",
            wait.as_millis()
        ));
        gh.waits().sleep(wait, "mergeable-unknown");
        attempt += 1;
        pr = gh.pull(repo, number)?;
    }
    let open = if is_open(&pr) {
        Some(open_facts(gh, repo, number, &pr)?)
    } else {
        None
    };
    Ok(PrFacts { pr, open })
}

/// The checks, reviews, comments and required checks of an open PR.
fn open_facts(
    gh: &mut dyn GitHub,
    repo: &RepoId,
    number: u64,
    pr: &PullRequest,
) -> Result<OpenFacts> {
    let sha = head_sha(pr).ok_or_else(|| {
        Error::new(
            Code::GithubBadResponse,
            format!(
                "GitHub's answer for {repo}#{number} is unusable: field `head.sha` is not a commit SHA"
            ),
        )
    })?;
    let status = gh.combined_status(repo, &sha)?;
    let check_runs = gh.check_runs(repo, &sha)?;
    let reviews = gh.reviews(repo, number)?;
    let comments = gh.comments(repo, number)?;
    let base = pr.base.as_ref().and_then(|b| b.ref_.clone());
    let required = match base.filter(|b| is_safe_branch(b)) {
        Some(base) => gh.required_checks(repo, &base)?,
        None => RequiredChecks {
            contexts: Vec::new(),
            unreadable: true,
        },
    };
    Ok(OpenFacts {
        status,
        check_runs,
        reviews,
        comments,
        required,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_that_could_be_options_are_refused() {
        assert!(is_safe_branch("feat/x"));
        assert!(!is_safe_branch("--upload-pack=evil"));
        assert!(!is_safe_branch("a..b"));
        assert!(!is_safe_branch("a:b"));
    }

    #[test]
    fn only_commit_ids_are_heads() {
        assert!(is_sha(&"a".repeat(40)));
        assert!(is_sha(&"0".repeat(64)));
        assert!(!is_sha(&"g".repeat(40)));
        assert!(!is_sha("abc"));
    }
}
