//! Which PR to ask about, resolved before GitHub is asked anything but the
//! lane's PR list: the repository (`--repo`, a PR URL, the remote's URL),
//! whether a lane is known here at all, and a lane's newest PR.

use crate::error::{Code, Error, Result};
use crate::integrations::github::client::{GitHub, RepoId};
use crate::session::Ctx;

/// `verify lane` of a feature this repository knows nothing of is a usage
/// error, found before GitHub is asked anything: known means a lane record
/// (live, published or archived) or a branch `feat/<feature>` here or on a
/// remote-tracking ref.
pub(super) fn require_known_lane(ctx: &Ctx, feature: &str) -> Result<()> {
    let store = &ctx.store;
    let record = crate::records::lane::lane_ref(feature);
    if crate::store::archive::find_record(store, &record)?.is_some() {
        return Ok(());
    }
    if let Some(r) = ctx.settings.remote.as_deref() {
        if store
            .ref_target(&crate::store::mirror::mirror_ref(r, &record))?
            .is_some()
        {
            return Ok(());
        }
    }
    let branch = crate::records::lane::branch_of(feature);
    if store.ref_target(&format!("refs/heads/{branch}"))?.is_some() {
        return Ok(());
    }
    let suffix = format!("/{branch}");
    if store
        .list_refs("refs/remotes/")?
        .iter()
        .any(|(name, _)| name.ends_with(&suffix))
    {
        return Ok(());
    }
    let known: Vec<String> = crate::records::lane::all(store)?
        .0
        .into_iter()
        .map(|l| l.feature)
        .collect();
    Err(unknown_lane(feature, &branch, &known))
}

fn unknown_lane(feature: &str, branch: &str, known: &[String]) -> Error {
    let mut err = Error::new(
        Code::NotFound,
        format!("there is no lane '{feature}' here: no lane record and no branch {branch}"),
    );
    err = if known.is_empty() {
        err.hint("no lanes are known here: `git swarm sync` fetches the shared lane records")
    } else {
        err.hint(format!("known lanes: {}", known.join(", ")))
    };
    err.hint(format!(
        "if {branch} exists only on the remote, `git fetch` it first, or verify the PR by number: `git swarm verify pr <N>`"
    ))
}

/// A URL safe to show: any `user:password@` removed.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let slash = if rest.contains('/') { "/" } else { "" };
        return format!("{scheme}://{host}{slash}{path}");
    }
    url.to_string()
}

/// Which repository to ask: `--repo`, else the one a PR URL names, else the
/// remote's URL.
pub(super) fn resolve_repo(
    ctx: &Ctx,
    explicit: Option<&str>,
    from_url: Option<RepoId>,
) -> Result<RepoId> {
    let explicit = explicit.map(RepoId::parse).transpose()?;
    match (explicit, from_url) {
        (Some(e), Some(u))
            if !(e.owner.eq_ignore_ascii_case(&u.owner)
                && e.name.eq_ignore_ascii_case(&u.name)) =>
        {
            Err(Error::new(
                Code::Usage,
                format!("--repo {e} disagrees with the PR URL, which names {u}"),
            )
            .hint("drop --repo, or pass the PR number instead of the URL"))
        }
        (Some(e), _) => Ok(e),
        (None, Some(u)) => Ok(u),
        (None, None) => repo_of_remote(ctx),
    }
}

/// The repository the code remote's URL names.
fn repo_of_remote(ctx: &Ctx) -> Result<RepoId> {
    let Some(remote) = ctx.settings.code_remote.as_deref() else {
        return Err(Error::new(
            Code::RepoUnknown,
            "cannot tell which GitHub repository to ask: this repository has no remote",
        )
        .hint("pass --repo OWNER/NAME, or a PR URL"));
    };
    let url = ctx
        .store
        .config(&format!("remote.{remote}.url"))
        .unwrap_or_default();
    RepoId::from_remote_url(&url).ok_or_else(|| {
        Error::new(
            Code::RepoUnknown,
            format!(
                "cannot tell which GitHub repository to ask: the URL of remote '{remote}' ({}) names none",
                redact_url(&url)
            ),
        )
        .hint("pass --repo OWNER/NAME, or a PR URL")
    })
}

/// The newest PR (by creation, then number) whose head is `feat/<feature>`.
pub(super) fn lane_pr(gh: &mut dyn GitHub, repo: &RepoId, feature: &str) -> Result<u64> {
    crate::names::validate_name("feature", feature)?;
    let branch = format!("feat/{feature}");
    let pulls = gh.pulls_with_head(repo, &branch)?;
    pulls
        .iter()
        .filter(|p| {
            p.head
                .as_ref()
                .and_then(|h| h.ref_.as_deref())
                .is_none_or(|r| r == branch)
        })
        .filter_map(|p| {
            let created: Option<jiff::Timestamp> =
                p.created_at.as_deref().and_then(|c| c.parse().ok());
            p.number
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(|n| ((created, n), n))
        })
        .max()
        .map(|(_, n)| n)
        .ok_or_else(|| {
            Error::new(
                Code::PrNotFound,
                format!("{repo} has no pull request whose head is {}:{branch}", repo.owner),
            )
            .hint(format!(
                "push the lane and open one: git push -u origin {branch} && gh pr create --head {branch}"
            ))
            .with_detail(serde_json::json!({"requests": gh.stats().requests}))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_never_shown() {
        assert_eq!(
            redact_url("https://x-access-token:ghp_abc@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            redact_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
    }
}
