//! pre-push: fenced-publish and plan-untracked. A push that updates (or
//! deletes) a ref listed in `swarm.protect` is refused unless it is
//! git-swarm's own fenced `lead push`, which sets `GIT_SWARM_FENCED_PUSH=1`.
//! Commits the push would publish are checked for the plan file.

use gix::ObjectId;

use super::findings::{unreadable, Findings, Violation, FENCED_PUBLISH, PLAN_UNTRACKED};
use super::plan_file;
use crate::error::Result;
use crate::session::Ctx;

pub const FENCE_ENV: &str = "GIT_SWARM_FENCED_PUSH";

/// Does `refname` match a `swarm.protect` entry? Entries are full ref names
/// (`refs/heads/main`), short branch names (`main`), or end in `*` (`refs/tags/*`).
pub fn is_protected(patterns: &[String], refname: &str) -> Option<String> {
    patterns
        .iter()
        // An empty entry protects nothing (`init --no-protect` leaves one).
        .filter(|p| !p.trim().is_empty())
        .find(|p| {
            let p = p.trim();
            let full = if p.starts_with("refs/") {
                p.to_string()
            } else {
                format!("refs/heads/{p}")
            };
            match full.strip_suffix('*') {
                Some(prefix) => refname.starts_with(prefix),
                None => refname == full,
            }
        })
        .cloned()
}

fn is_zero(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

pub fn check_push(ctx: &Ctx, remote: &str, input: &str, f: &mut Findings) -> Result<()> {
    let protect = ctx.store.config_all("swarm.protect");
    let fenced = std::env::var(FENCE_ENV).is_ok_and(|v| v == "1");
    for line in input.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [local_ref, local_sha, remote_ref, remote_sha] = fields[..] else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(unreadable(
                FENCED_PUBLISH,
                "the pre-push ref list on stdin",
                format!("unexpected line '{line}'"),
            ));
        };
        if let Some(pattern) = is_protected(&protect, remote_ref) {
            if !fenced {
                let what = if is_zero(local_sha) {
                    "delete"
                } else {
                    "update"
                };
                f.violations.push(Violation {
                    guard: FENCED_PUBLISH,
                    subject: remote_ref.to_string(),
                    commit: None,
                    problem: format!(
                        "this push would {what} {remote_ref} on '{remote}', which swarm.protect ({pattern}) reserves for the current leader's fenced publish"
                    ),
                    fix: format!(
                        "publish through the leader: `git swarm lead push --plan <plan> {local_ref}:{remote_ref}` (it fails if you are no longer the leader); or push a branch and open a PR"
                    ),
                    proposed: None,
                });
            }
        }
        if is_zero(local_sha) {
            continue;
        }
        // The commits this push publishes: what the remote does not have yet.
        let git = &ctx.store.git;
        let remote_known = !is_zero(remote_sha)
            && ctx.store.repo.has_object(
                ObjectId::from_hex(remote_sha.as_bytes())
                    .unwrap_or(ObjectId::null(gix::hash::Kind::Sha1)),
            );
        let commits = if remote_known {
            git.rev_list(&[&format!("{remote_sha}..{local_sha}")])
        } else {
            git.rev_list(&[local_sha, "--not", "--remotes"])
        }
        .map_err(|e| {
            unreadable(
                PLAN_UNTRACKED,
                format!("the commits pushed to {remote_ref}"),
                e.message,
            )
        })?;
        for c in commits {
            let id = ObjectId::from_hex(c.as_bytes())
                .map_err(|e| unreadable(PLAN_UNTRACKED, format!("commit id '{c}'"), e))?;
            plan_file::check_commit(ctx, id, f)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protect_patterns() {
        let p = vec![
            "refs/heads/main".to_string(),
            "release".into(),
            "refs/tags/*".into(),
        ];
        assert!(is_protected(&p, "refs/heads/main").is_some());
        assert!(is_protected(&p, "refs/heads/release").is_some());
        assert!(is_protected(&p, "refs/tags/v1.0").is_some());
        assert!(is_protected(&p, "refs/heads/feat/main").is_none());
        assert!(is_protected(&p, "refs/heads/mainline").is_none());
    }
}
