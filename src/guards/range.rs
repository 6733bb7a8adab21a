//! `git swarm check --range BASE..HEAD` (CI): the same guards over every
//! commit of a range, so a commit made with `--no-verify` is still caught.
//! plan-untracked and attribution look at each commit; changeset-unique
//! looks at the changesets the range adds (HEAD's changeset directory
//! against the merge base's) and compares them with BASE, the other lane
//! branches, and each other.

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;

use super::changeset::dir::{dir_tree, names_in};
use super::changeset::{check_added, Added, Base, Scope};
use super::findings::{unreadable, Findings, ATTRIBUTION, CHANGESET_UNIQUE, PLAN_UNTRACKED};
use super::{attribution, plan_file};
use crate::error::{Code, Error, Result};
use crate::session::Ctx;

#[derive(Debug, Serialize)]
pub struct Range {
    pub base: String,
    pub head: String,
    pub base_commit: String,
    pub head_commit: String,
    pub commits: usize,
}

fn resolve(ctx: &Ctx, rev: &str, guard: &str) -> Result<ObjectId> {
    let id = ctx
        .store
        .git
        .rev_parse(rev)
        .map_err(|e| unreadable(guard, format!("'{rev}'"), e.message))?
        .ok_or_else(|| {
            Error::new(Code::NotFound, format!("'{rev}' does not name a commit"))
                .hint("check --range takes BASE..HEAD, e.g. origin/main..HEAD")
        })?;
    ObjectId::from_hex(id.as_bytes()).map_err(|e| unreadable(guard, format!("'{rev}'"), e))
}

/// The lane feature a revision name points into (`feat/x`, `origin/feat/x`, `refs/heads/feat/x`).
fn feature_of(rev: &str) -> Option<String> {
    let pos = rev.find("feat/")?;
    if pos > 0 && !rev[..pos].ends_with('/') {
        return None;
    }
    let f = &rev[pos + 5..];
    crate::names::is_valid_name(f).then(|| f.to_string())
}

/// BASE and HEAD of `BASE..HEAD` (`...` too); an empty side is HEAD.
fn parse_spec(spec: &str) -> Result<(&str, &str)> {
    let Some((base, head)) = spec.split_once("..") else {
        return Err(Error::new(
            Code::Usage,
            format!("--range '{spec}' is not of the form BASE..HEAD"),
        )
        .hint("e.g. git swarm check --range origin/main..HEAD"));
    };
    let head = head.trim_start_matches('.');
    let base = if base.is_empty() { "HEAD" } else { base };
    let head = if head.is_empty() { "HEAD" } else { head };
    Ok((base, head))
}

/// The commits in `base_id..head_id`.
fn commits_of(
    ctx: &Ctx,
    spec: &str,
    base_id: ObjectId,
    head_id: ObjectId,
) -> Result<Vec<ObjectId>> {
    let commits = ctx
        .store
        .git
        .rev_list(&[&format!("{base_id}..{head_id}")])
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the commits of {spec}"), e.message))?;
    commits
        .iter()
        .map(|c| ObjectId::from_hex(c.as_bytes()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the commits of {spec}"), e))
}

pub fn check(ctx: &Ctx, spec: &str) -> Result<(Findings, Range)> {
    let (base, head) = parse_spec(spec)?;
    let base_id = resolve(ctx, base, PLAN_UNTRACKED)?;
    let head_id = resolve(ctx, head, PLAN_UNTRACKED)?;
    let commits = commits_of(ctx, spec, base_id, head_id)?;

    let mut f = Findings {
        guards: vec![PLAN_UNTRACKED, CHANGESET_UNIQUE, ATTRIBUTION],
        ..Findings::default()
    };
    let mode = attribution::mode(ctx)?;
    for &c in &commits {
        plan_file::check_commit(ctx, c, &mut f)?;
        attribution::check_commit_message(ctx, mode, c, &mut f)?;
    }
    super::reserved::check_commits(ctx, &commits, &mut f)?;
    if !commits.is_empty() {
        let ends = Ends {
            spec,
            base,
            head,
            base_id,
            head_id,
        };
        check_changesets(ctx, &ends, &commits, &mut f)?;
    }
    let range = Range {
        base: base.to_string(),
        head: head.to_string(),
        base_commit: base_id.to_string(),
        head_commit: head_id.to_string(),
        commits: commits.len(),
    };
    Ok((f, range))
}

/// The two ends of the range, as given and resolved.
struct Ends<'a> {
    spec: &'a str,
    base: &'a str,
    head: &'a str,
    base_id: ObjectId,
    head_id: ObjectId,
}

/// Whose branch the range is: the HEAD side's name, else the checked-out
/// lane branch when HEAD is the range's head.
fn own_feature(ctx: &Ctx, ends: &Ends<'_>) -> Option<String> {
    feature_of(ends.head).or_else(|| {
        let name = ctx
            .store
            .repo
            .head_name()
            .ok()
            .flatten()?
            .as_bstr()
            .to_string();
        let at_head = ctx.store.ref_target("HEAD").ok().flatten() == Some(ends.head_id);
        at_head.then(|| feature_of(&name)).flatten()
    })
}

/// changeset-unique over the range's net additions: HEAD's changeset
/// directory against the merge base's.
fn check_changesets(
    ctx: &Ctx,
    ends: &Ends<'_>,
    commits: &[ObjectId],
    f: &mut Findings,
) -> Result<()> {
    let repo = &ctx.store.repo;
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    let names_at = |commit: ObjectId| -> Result<Vec<String>> {
        let tree = dir_tree(repo, commit, dir)
            .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in {commit}"), e))?;
        match tree {
            None => Ok(Vec::new()),
            Some(t) => names_in(repo, t)
                .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in {commit}"), e)),
        }
    };
    let merge_base = ctx
        .store
        .merge_base(ends.base_id, ends.head_id)
        .map_err(|e| {
            unreadable(
                CHANGESET_UNIQUE,
                format!("the merge base of {}", ends.spec),
                e.message,
            )
        })?;
    let before: HashSet<String> = match merge_base {
        Some(mb) => names_at(mb)?.into_iter().collect(),
        None => HashSet::new(),
    };
    let present = names_at(ends.head_id)?;
    let added: Vec<String> = present
        .iter()
        .filter(|n| !before.contains(*n))
        .cloned()
        .collect();
    let own = own_feature(ctx, ends);
    let own_branch = own.as_ref().map(|f| format!("feat/{f}"));
    let scope = Scope {
        base: Some(Base::Commit(ends.base.to_string(), ends.base_id)),
        own_feature: own.as_deref(),
        own_branch: own_branch.as_deref(),
    };
    let commit_of = |name: &str| -> Option<String> {
        // The first commit of the range whose directory has the name.
        commits.iter().find_map(|&c| {
            names_at(c)
                .ok()
                .filter(|n| n.iter().any(|x| x == name))
                .map(|_| c.to_string())
        })
    };
    let blob_of = |name: &str| -> Option<ObjectId> {
        repo.find_commit(ends.head_id)
            .ok()?
            .tree()
            .ok()?
            .lookup_entry_by_path(format!("{dir}/{name}"))
            .ok()??
            .object_id()
            .into()
    };
    check_added(
        ctx,
        &scope,
        Added {
            added: &added,
            present: &present,
            commit_of: &commit_of,
            blob_of: &blob_of,
            sources: &|| vec![ends.head_id],
            staged: false,
        },
        f,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_specs() {
        assert_eq!(parse_spec("main..HEAD").unwrap(), ("main", "HEAD"));
        assert_eq!(parse_spec("main...feat/x").unwrap(), ("main", "feat/x"));
        assert_eq!(parse_spec("..").unwrap(), ("HEAD", "HEAD"));
        assert_eq!(
            parse_spec("origin/main..").unwrap(),
            ("origin/main", "HEAD")
        );
        assert!(parse_spec("main").is_err());
    }

    #[test]
    fn the_lane_a_revision_points_into() {
        assert_eq!(feature_of("feat/auth").as_deref(), Some("auth"));
        assert_eq!(feature_of("origin/feat/auth").as_deref(), Some("auth"));
        assert_eq!(feature_of("refs/heads/feat/auth").as_deref(), Some("auth"));
        assert_eq!(feature_of("defeat/auth"), None);
        assert_eq!(feature_of("main"), None);
        assert_eq!(feature_of("feat/Not Valid"), None);
    }
}
