//! `git swarm check --range BASE..HEAD` (CI): the same guards over every
//! commit of a range, so a commit made with `--no-verify` is still caught.
//! plan-untracked and attribution look at each commit; changeset-unique
//! looks at the changesets the range adds (HEAD's changeset directory
//! against the merge base's) and compares them with BASE, the other lane
//! branches, and each other.

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;

use super::changeset::{self, Added, Base, Scope};
use super::{attribution, plan_file, unreadable, Findings};
use super::{ATTRIBUTION, CHANGESET_UNIQUE, PLAN_UNTRACKED};
use crate::ctx::Ctx;
use crate::error::{Error, Result};

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
            Error::usage("NOT_FOUND", format!("'{rev}' does not name a commit"))
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

pub fn check(ctx: &Ctx, spec: &str) -> Result<(Findings, Range)> {
    let Some((base, head)) = spec.split_once("..") else {
        return Err(Error::usage(
            "USAGE",
            format!("--range '{spec}' is not of the form BASE..HEAD"),
        )
        .hint("e.g. git swarm check --range origin/main..HEAD"));
    };
    let head = head.trim_start_matches('.');
    let base = if base.is_empty() { "HEAD" } else { base };
    let head = if head.is_empty() { "HEAD" } else { head };
    let base_id = resolve(ctx, base, PLAN_UNTRACKED)?;
    let head_id = resolve(ctx, head, PLAN_UNTRACKED)?;
    let commits = ctx
        .store
        .git
        .rev_list(&[&format!("{base_id}..{head_id}")])
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the commits of {spec}"), e.message))?;
    let commits: Vec<ObjectId> = commits
        .iter()
        .map(|c| ObjectId::from_hex(c.as_bytes()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the commits of {spec}"), e))?;

    let mut f = Findings {
        guards: vec![PLAN_UNTRACKED, CHANGESET_UNIQUE, ATTRIBUTION],
        ..Findings::default()
    };
    let mode = attribution::mode(ctx)?;
    for &c in &commits {
        plan_file::check_commit(ctx, c, &mut f)?;
        attribution::check_commit_message(ctx, mode, c, &mut f)?;
    }

    // changeset-unique over the range's net additions.
    let repo = &ctx.store.repo;
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    let names_at = |commit: ObjectId| -> Result<Vec<String>> {
        let tree = changeset::dir_tree(repo, commit, dir)
            .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in {commit}"), e))?;
        match tree {
            None => Ok(Vec::new()),
            Some(t) => changeset::names_in(repo, t)
                .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in {commit}"), e)),
        }
    };
    if !commits.is_empty() {
        let merge_base = ctx.store.merge_base(base_id, head_id).map_err(|e| {
            unreadable(
                CHANGESET_UNIQUE,
                format!("the merge base of {spec}"),
                e.message,
            )
        })?;
        let before: HashSet<String> = match merge_base {
            Some(mb) => names_at(mb)?.into_iter().collect(),
            None => HashSet::new(),
        };
        let present = names_at(head_id)?;
        let added: Vec<String> = present
            .iter()
            .filter(|n| !before.contains(*n))
            .cloned()
            .collect();
        // Whose branch this is: the HEAD side's name, else the checked-out lane branch.
        let own = feature_of(head).or_else(|| {
            let name = repo.head_name().ok().flatten()?.as_bstr().to_string();
            let at_head = ctx.store.ref_target("HEAD").ok().flatten() == Some(head_id);
            at_head.then(|| feature_of(&name)).flatten()
        });
        let own_branch = own.as_ref().map(|f| format!("feat/{f}"));
        let scope = Scope {
            base: Some(Base::Commit(base.to_string(), base_id)),
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
            ctx.store
                .repo
                .find_commit(head_id)
                .ok()?
                .tree()
                .ok()?
                .lookup_entry_by_path(format!("{dir}/{name}"))
                .ok()??
                .object_id()
                .into()
        };
        changeset::check_added(
            ctx,
            &scope,
            Added {
                added: &added,
                present: &present,
                commit_of: &commit_of,
                blob_of: &blob_of,
                staged: false,
            },
            &mut f,
        )?;
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
