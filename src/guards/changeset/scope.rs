//! Which refs a new changeset is compared with: the base (the lane's, or
//! the configured default), and whose branches are our own.

use gix::ObjectId;

use crate::error::Result;
use crate::guards::findings::{unreadable, CHANGESET_UNIQUE};
use crate::records::lane::LaneRecord;
use crate::session::Ctx;
use crate::store::records::Records;

/// The base branch a new changeset is compared with.
pub enum Base {
    /// A branch name (`main`, `origin/main`); `true` when configured rather
    /// than defaulted (a configured base that is missing fails the guard).
    Name(String, bool),
    /// A commit given directly (`check --range BASE..HEAD`), with its label.
    Commit(String, ObjectId),
}

/// Which refs to compare against.
pub struct Scope<'a> {
    pub base: Option<Base>,
    /// The lane feature whose branches are ours (excluded), if any.
    pub own_feature: Option<&'a str>,
    /// A branch name that is ours and excluded (the current branch).
    pub own_branch: Option<&'a str>,
}

/// The ref names a base branch name can be here: `refs/heads/<base>`,
/// `refs/remotes/<base>` and `refs/remotes/<remote>/<base>`, or the full
/// ref name given.
fn branch_candidates(base: &str, remote: Option<&str>) -> Vec<String> {
    if base.starts_with("refs/") {
        return vec![base.to_string()];
    }
    let mut candidates = vec![format!("refs/heads/{base}"), format!("refs/remotes/{base}")];
    if let Some(remote) = remote {
        candidates.push(format!("refs/remotes/{remote}/{base}"));
    }
    candidates
}

/// Ref names with the commits they point to.
pub type Refs = Vec<(String, ObjectId)>;

/// The refs a base branch name can be here (see [`branch_candidates`]),
/// with their commits; empty when it is no branch here.
pub fn branch_refs(ctx: &Ctx, base: &str) -> Result<Refs> {
    let mut out = Vec::new();
    for c in branch_candidates(base, ctx.settings.code_remote.as_deref()) {
        // `HEAD~1` and the like cannot be ref names: no branch.
        if gix::refs::FullName::try_from(c.as_str()).is_err() {
            continue;
        }
        let id = ctx
            .store
            .ref_target(&c)
            .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("the base ref {c}"), e.message))?;
        if let Some(id) = id {
            out.push((c, id));
        }
    }
    Ok(out)
}

/// The scope for a commit in this worktree: the lane's base when HEAD is a
/// lane branch with a record, else the configured default base. Returns
/// the checked-out branch too.
pub fn scope_for_head(ctx: &Ctx) -> Result<(Option<String>, Option<Base>)> {
    let head_name = ctx
        .store
        .repo
        .head_name()
        .map_err(|e| unreadable(CHANGESET_UNIQUE, "HEAD", e))?
        .map(|n| n.as_bstr().to_string());
    let branch = head_name
        .as_deref()
        .and_then(|n| n.strip_prefix("refs/heads/"))
        .map(str::to_string);
    let feature = branch.as_deref().and_then(|b| b.strip_prefix("feat/"));
    if let Some(f) = feature.filter(|f| crate::names::is_valid_name(f)) {
        let lane = Records::<LaneRecord>::new(&ctx.store)
            .load(&f.to_string())
            .map_err(|e| {
                unreadable(
                    CHANGESET_UNIQUE,
                    format!("the lane record of {f}"),
                    e.message,
                )
            })?;
        if let Some(lane) = lane {
            return Ok((branch.clone(), Some(lane_base(ctx, &lane.value)?)));
        }
    }
    // `swarm.base` is explicit; the remote's default branch or `main` is a guess.
    let explicit = ctx.settings.base.is_some();
    let base = crate::session::lane::default_base(ctx);
    if explicit && branch_refs(ctx, &base)?.is_empty() {
        // `swarm.base` set to a tag or a commit rather than a branch.
        if let Ok(id) = ctx.store.repo.rev_parse_single(base.as_str()) {
            return Ok((branch, Some(Base::Commit(base, id.detach()))));
        }
    }
    Ok((branch, Some(Base::Name(base, explicit))))
}

/// How a lane's recorded base names its start: an abbreviated id of
/// `base_commit` (`Some(true)`), a revision expression by its syntax alone
/// (`Some(false)`), or neither as far as the text tells (`None`: it may
/// still resolve as a revision, a tag say).
fn revision_syntax(base: &str, base_commit: &str) -> Option<bool> {
    let lower = base.to_ascii_lowercase();
    let is_sha = lower.len() >= 4
        && lower.bytes().all(|c| c.is_ascii_hexdigit())
        && base_commit.starts_with(&lower);
    if is_sha {
        return Some(true);
    }
    // A revision expression may not resolve any more (`HEAD~1` on a lane
    // of one commit), so its syntax counts too.
    (base.contains(['~', '^', ':']) || base.contains("@{")).then_some(false)
}

/// The label of a base given as a revision: the short start commit, after
/// the revision when it is not that commit's id.
fn revision_label(base: &str, base_commit: &str, is_sha: bool) -> String {
    let short = &base_commit[..base_commit.len().min(12)];
    if is_sha {
        short.to_string()
    } else {
        format!("{base} ({short})")
    }
}

/// The base a lane's changesets are compared with. `lane new --base` takes
/// any revision: when the recorded base is a branch here, its current tip
/// (the branch moves, and so do the names on it); when it is a commit, a tag
/// or an expression such as `HEAD~1` (which would now mean something else),
/// the commit the lane started from (`base_commit` in its record). A branch
/// that is missing here fails the guard closed, as before.
fn lane_base(ctx: &Ctx, record: &LaneRecord) -> Result<Base> {
    let base = &record.base;
    if !branch_refs(ctx, base)?.is_empty() {
        return Ok(Base::Name(base.clone(), true));
    }
    let Ok(start) = ObjectId::from_hex(record.base_commit.as_bytes()) else {
        return Ok(Base::Name(base.clone(), true));
    };
    let is_sha = match revision_syntax(base, &record.base_commit) {
        Some(is_sha) => is_sha,
        None if ctx.store.repo.rev_parse_single(base.as_str()).is_ok() => false,
        None => return Ok(Base::Name(base.clone(), true)),
    };
    let label = revision_label(base, &record.base_commit, is_sha);
    Ok(Base::Commit(label, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_branch_is_looked_for_locally_and_on_the_remote() {
        assert_eq!(
            branch_candidates("main", Some("origin")),
            vec![
                "refs/heads/main",
                "refs/remotes/main",
                "refs/remotes/origin/main"
            ]
        );
        assert_eq!(
            branch_candidates("origin/main", None),
            vec!["refs/heads/origin/main", "refs/remotes/origin/main"]
        );
        assert_eq!(
            branch_candidates("refs/tags/v1", Some("origin")),
            vec!["refs/tags/v1"]
        );
    }

    #[test]
    fn a_recorded_base_is_a_revision_by_its_syntax() {
        let start = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(revision_syntax("0123", start), Some(true));
        assert_eq!(revision_syntax("0123ABCD", "0123abcd00"), Some(true));
        // Too short, or not a prefix of the start: no abbreviated id.
        assert_eq!(revision_syntax("012", start), None);
        assert_eq!(revision_syntax("abcd", start), None);
        assert_eq!(revision_syntax("HEAD~1", start), Some(false));
        assert_eq!(revision_syntax("main^", start), Some(false));
        assert_eq!(revision_syntax("main@{1}", start), Some(false));
        assert_eq!(revision_syntax("HEAD:dir", start), Some(false));
        assert_eq!(revision_syntax("main", start), None);
        assert_eq!(revision_label("0123", start, true), "0123456789ab");
        assert_eq!(
            revision_label("HEAD~1", start, false),
            "HEAD~1 (0123456789ab)"
        );
    }
}
