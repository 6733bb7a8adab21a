//! `lane rm` and `lane prune`: remove a lane's record (state `removed`),
//! worktree and branch, never deleting unmerged or uncommitted work without
//! `--force`; run again after an interruption, they finish the removal.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::Serialize;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::records::lane::{
    self, has_leftovers, keep_reason, removed_event, rm_check, Keep, Lane, LaneRecord, LaneState,
    Worktree,
};
use crate::session::lane::{
    cwd_inside, ignored_paths, inspect, left_behind, main_worktree, merged, probe, start_marker,
    uncommitted,
};
use crate::session::Ctx;
use crate::store::records::{Records, Update};
use crate::store::yaml::Unreadable;

/// What `lane rm` did.
#[derive(Debug, Serialize)]
pub struct LaneRemoved {
    pub feature: String,
    pub worktree_removed: bool,
    pub branch_deleted: bool,
    pub branch_head: Option<String>,
    pub record: String,
    pub forced: bool,
    /// It completed a removal an earlier run began.
    pub resumed: bool,
    #[serde(skip)]
    pub path: String,
    #[serde(skip)]
    pub branch: String,
    /// The lane's worktree is (or was) in this clone.
    #[serde(skip)]
    pub local: bool,
    /// Why the removal stays in this clone (None: published).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_published: Option<String>,
}

/// `lane rm`. Run again after an interruption, it completes the removal.
pub fn rm(ctx: &Ctx, feature: &str, force: bool, keep_branch: bool) -> Result<LaneRemoved> {
    let lane = require(ctx, feature)?;
    // A start marker left by a `lane new` killed after its record: the lane
    // is being removed, so there is nothing left to finish.
    let _ = std::fs::remove_file(start_marker(&ctx.store, feature));
    let worktrees = ctx.store.git.worktree_paths()?;
    let st = probe(ctx, &lane, &worktrees, true)?;
    let resumed = !lane.record.is_active();
    if resumed && !has_leftovers(&lane.record, &st) {
        return Err(Error::new(
            Code::NotFound,
            format!(
                "lane '{feature}' was already removed ({})",
                lane.record.removed_at.as_deref().unwrap_or("earlier")
            ),
        )
        .hint("`git log refs/swarm/lanes/<feature>` shows its history"));
    }
    let keep_branch = keep_branch || lane.record.branch_kept;
    let actor = ctx.actor()?;
    if st.worktree == Worktree::Present && cwd_inside(Path::new(&st.path)) {
        return Err(Error::new(
            Code::Usage,
            format!("you are inside lane {feature}'s worktree, which this would delete"),
        )
        .hint("run it from the main worktree (or any other directory of the repository)"));
    }
    if !force {
        if !st.is_local() {
            return Err(elsewhere(ctx, &lane, &st, &worktrees)?);
        }
        rm_check(feature, &st, keep_branch, &ctx.settings.plan_file)?;
    }
    crate::failpoint::point("lane-rm:checked");
    let why = if force { "forced" } else { "by request" };
    let done = remove(ctx, &lane, &st, force, keep_branch, &actor, why)?;
    Ok(LaneRemoved {
        feature: feature.to_string(),
        worktree_removed: done.worktree_removed,
        branch_deleted: done.branch_deleted,
        branch_head: st.head.clone(),
        record: done.record.to_string(),
        forced: force,
        resumed,
        path: st.path.clone(),
        branch: st.branch.clone(),
        local: st.is_local(),
        not_published: done.kept,
    })
}

fn require(ctx: &Ctx, feature: &str) -> Result<Lane> {
    lane::require_newest(&ctx.store, ctx.remote(), feature).map_err(|e| {
        if e.code == Code::NotFound && start_marker(&ctx.store, feature).exists() {
            // The generic "list lanes" hint would not show this lane: the
            // one useful next step is to finish the start.
            let mut e = e;
            e.hints.clear();
            e.hint(format!(
                "an interrupted `git swarm lane new {feature}` left its branch and worktree without a record: run `git swarm lane new {feature}` again to finish it, then `git swarm lane rm {feature}` if you do not want it"
            ))
        } else {
            e
        }
    })
}

/// `LANE_ELSEWHERE`: the lane's worktree is not in this clone.
fn elsewhere(ctx: &Ctx, lane: &Lane, st: &LaneState, worktrees: &[PathBuf]) -> Result<Error> {
    let feature = &lane.feature;
    let err = match left_behind(ctx, lane, worktrees)? {
        Some(old) => Error::new(
            Code::LaneElsewhere,
            format!(
                "lane '{feature}' was handed over: {} owns it now, at {} (another checkout); {} here is its old worktree",
                st.owner,
                st.path,
                old.display()
            ),
        )
        .hint("`git swarm lane prune` removes the old worktree here once nothing in it is uncommitted; the lane stays theirs"),
        None => Error::new(
            Code::LaneElsewhere,
            format!(
                "lane '{feature}' has its worktree in another clone ({}, owner {}); nothing of it is here to check",
                st.path, st.owner
            ),
        ),
    };
    Ok(err.hint("remove the lane from the checkout that has it, or pass --force to mark the record removed (nothing on disk is touched)"))
}

struct Removal {
    worktree_removed: bool,
    branch_deleted: bool,
    record: ObjectId,
    /// Why the removal is not published, when it is not.
    kept: Option<String>,
}

/// Remove a lane: first the record (`removed`, a compare-and-swap: a lost
/// race leaves everything on disk as it was), then the worktree, then the
/// branch. For a lane already recorded as removed, only what is left here.
/// Unless `force`, uncommitted work is looked for again right before the
/// worktree goes, and the branch is deleted only if that loses no commit.
fn remove(
    ctx: &Ctx,
    lane: &Lane,
    st: &LaneState,
    force: bool,
    keep_branch: bool,
    actor: &str,
    why: &str,
) -> Result<Removal> {
    let feature = lane.feature.as_str();
    let (record, id, kept) = if lane.record.is_active() {
        record_removal(ctx, lane, actor, why, keep_branch)?
    } else {
        (lane.record.clone(), lane.commit, None)
    };
    crate::failpoint::point("lane-rm:recorded");
    let keep_branch = keep_branch || record.branch_kept;
    let git = ctx.store.git.at(&main_worktree(&ctx.store)?);
    let worktree_removed = remove_worktree(ctx, &git, feature, &record, st, force, id)?;
    let mut branch_deleted = false;
    let r = &record;
    let head = ctx.store.ref_target(&format!("refs/heads/{}", r.branch))?;
    if !keep_branch && st.is_local() && head.is_some() {
        // Commits may have landed since the checks too.
        let base = ctx.store.git.resolve(&r.base)?;
        if !force && !merged(ctx, r, head, base)?.loses_nothing() {
            return Err(Error::new(
                Code::LaneUnmerged,
                format!(
                    "lane '{feature}' is removed, but its branch {} got commits not merged into {} meanwhile; the branch is kept",
                    r.branch, r.base
                ),
            )
            .hint("merge it and delete it with `git branch -d`, or keep it"));
        }
        git.branch_delete(&r.branch)?;
        branch_deleted = true;
    }
    Ok(Removal {
        worktree_removed,
        branch_deleted,
        record: id,
        kept,
    })
}

/// The record step of a removal: the lane's record marked `removed`,
/// published at once (fetched first) and decided on the version the checks
/// saw; a lane that moved since (another clone wrote it) is a lost race and
/// nothing on disk is touched. Returns the record, its commit and why it is
/// not published (when it is not).
fn record_removal(
    ctx: &Ctx,
    lane: &Lane,
    actor: &str,
    why: &str,
    keep_branch: bool,
) -> Result<(LaneRecord, ObjectId, Option<String>)> {
    let feature = lane.feature.as_str();
    let now = rfc3339(ctx.store.clock.now());
    let record = lane.record.removed(actor, &now, keep_branch);
    let event = removed_event(actor, feature, why);
    let written = Records::<LaneRecord>::new(&ctx.store).publish(
        ctx.remote(),
        &lane.feature,
        |current| match current {
            Some(c) if c.commit == lane.commit => Ok(Update::Write(record.clone(), event.clone())),
            Some(c) if !c.value.is_active() => Err(Error::new(
                Code::CasFailed,
                format!("lane '{feature}' was removed meanwhile (by {}); nothing here was touched", c.value.owner),
            )
            .hint("run the command again: it finishes what is left here")),
            _ => Err(Error::new(
                Code::CasFailed,
                format!("lane '{feature}' changed meanwhile (another clone wrote it); nothing was removed"),
            )
            .hint("run the command again: it starts from the new version")),
        },
    )?;
    let kept = written.publication.warning();
    let id = written.commit().expect("the removal was written");
    Ok((record, id, kept))
}

/// Close lane `feature`'s record (state `removed`, its branch kept) and
/// touch nothing on disk: the end of a lane whose worktree cannot go now
/// (the command runs inside it, or it holds uncommitted work). Each clone
/// removes a closed lane's worktree later (`lane prune`). False when the
/// record was closed already.
pub fn close_record(ctx: &Ctx, feature: &str, why: &str) -> Result<bool> {
    let lane = require(ctx, feature)?;
    if !lane.record.is_active() {
        return Ok(false);
    }
    let actor = ctx.actor()?;
    record_removal(ctx, &lane, &actor, why, true)?;
    Ok(true)
}

/// The worktree step of [`remove`]; whether it deleted the worktree.
fn remove_worktree(
    ctx: &Ctx,
    git: &Git,
    feature: &str,
    record: &LaneRecord,
    st: &LaneState,
    force: bool,
    id: ObjectId,
) -> Result<bool> {
    let path = PathBuf::from(&st.path);
    match st.worktree {
        Worktree::Present if force => {
            git.worktree_remove(&path)?;
            Ok(true)
        }
        Worktree::Present => {
            // Work may have appeared since the checks: look again, right
            // before deleting, and let git refuse a dirty worktree too.
            let (dirty, unsaved) = uncommitted(ctx, &record.plan, &path)?;
            if !dirty.is_empty() || unsaved {
                let mut what = dirty.clone();
                if unsaved {
                    what.push(format!(
                        "{} (edits not saved in the plan)",
                        ctx.settings.plan_file
                    ));
                }
                return Err(Error::new(
                    Code::LaneDirty,
                    format!(
                        "lane '{feature}' is recorded as removed, but its worktree {} got uncommitted work meanwhile: {}; the worktree and the branch are left as they are",
                        st.path,
                        what.join(", ")
                    ),
                )
                .hint(format!(
                    "commit or stash it, then run `git swarm lane rm {feature}` again to finish (or add --force to discard it)"
                ))
                .with_detail(serde_json::json!({ "dirty": dirty, "plan_unsaved": unsaved, "record": id.to_string() })));
            }
            let shown = path.to_string_lossy();
            git.run(["worktree", "remove", shown.as_ref()])?;
            Ok(true)
        }
        Worktree::Missing => {
            git.worktree_prune()?;
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// What `lane prune` did (or, with `--dry-run`, would do).
#[derive(Serialize)]
pub struct Pruned {
    pub dry_run: bool,
    pub removed: Vec<PrunedLane>,
    pub kept: Vec<KeptLane>,
    pub old_worktrees: Vec<OldWorktree>,
    /// The entries above in the order they were decided.
    #[serde(skip)]
    pub order: Vec<PruneLine>,
    /// Old worktrees kept when not a dry run, with how to remove them.
    #[serde(skip)]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

#[derive(Serialize)]
pub struct PrunedLane {
    pub feature: String,
    pub why: String,
    pub branch_head: Option<String>,
}

#[derive(Serialize)]
pub struct KeptLane {
    pub feature: String,
    pub reason: String,
}

/// The worktree this clone made for a lane handed over elsewhere.
#[derive(Serialize)]
pub struct OldWorktree {
    pub feature: String,
    pub worktree: String,
    pub owner: String,
    pub path: String,
    #[serde(skip)]
    pub branch: String,
}

/// An index into one of [`Pruned`]'s lists.
#[derive(Debug, Clone, Copy)]
pub enum PruneLine {
    Removed(usize),
    Kept(usize),
    OldWorktree(usize),
}

impl Pruned {
    fn keep(&mut self, feature: &str, reason: String) {
        self.order.push(PruneLine::Kept(self.kept.len()));
        self.kept.push(KeptLane {
            feature: feature.to_string(),
            reason,
        });
    }
}

/// `lane prune`: remove this clone's lanes whose branch is merged into the
/// base (ancestry, or a recorded merged verdict) and whose worktree is clean;
/// also finish the removals an interrupted `lane rm` or prune left here.
pub fn prune(ctx: &Ctx, dry_run: bool) -> Result<Pruned> {
    let worktrees = ctx.store.git.worktree_paths()?;
    let actor = if dry_run { String::new() } else { ctx.actor()? };
    // Local and mirror, newest wins: the lanes `status` and `lane list` show.
    let (lanes, unreadable) = lane::known(&ctx.store, ctx.remote())?;
    let mut out = Pruned {
        dry_run,
        removed: Vec::new(),
        kept: Vec::new(),
        old_worktrees: Vec::new(),
        order: Vec::new(),
        warnings: Vec::new(),
        unreadable,
    };
    for lane in lanes {
        let st = if lane.record.is_active() {
            inspect(ctx, &lane, &worktrees)?
        } else {
            let st = probe(ctx, &lane, &worktrees, true)?;
            if !has_leftovers(&lane.record, &st) {
                continue;
            }
            st
        };
        let how = match keep_reason(&lane.record, &st) {
            Keep::Remove(how) => how,
            Keep::Keep(reason) => {
                out.keep(&st.feature, reason);
                continue;
            }
            Keep::Elsewhere(reason) => {
                match left_behind(ctx, &lane, &worktrees)? {
                    Some(old) => prune_left_behind(ctx, &lane, &old, &mut out)?,
                    None => out.keep(&st.feature, reason),
                }
                continue;
            }
        };
        if st.worktree == Worktree::Present && cwd_inside(Path::new(&st.path)) {
            out.keep(&st.feature, "you are inside its worktree".to_string());
            continue;
        }
        if !dry_run {
            let done = remove(ctx, &lane, &st, false, false, &actor, how)?;
            if let Some(w) = done.kept {
                if !out.warnings.contains(&w) {
                    out.warnings.push(w);
                }
            }
        }
        out.order.push(PruneLine::Removed(out.removed.len()));
        out.removed.push(PrunedLane {
            feature: st.feature,
            why: how.to_string(),
            branch_head: st.head,
        });
    }
    // What is left of closed lanes (worktrees kept above for their
    // uncommitted work) goes now, the work snapshotted first.
    if !dry_run {
        for s in super::sweep::sweep(ctx) {
            if s.removed {
                out.kept.retain(|k| k.feature != s.feature);
                out.order.retain(|l| !matches!(l, PruneLine::Kept(_)));
                out.order.extend((0..out.kept.len()).map(PruneLine::Kept));
            }
            out.warnings.push(s.line);
        }
    }
    Ok(out)
}

/// `lane prune` for a lane handed over elsewhere: remove the worktree this
/// clone made for it, when nothing in it is uncommitted (the lane record
/// and the branch stay: the lane is its new owner's).
fn prune_left_behind(ctx: &Ctx, lane: &Lane, old: &Path, out: &mut Pruned) -> Result<()> {
    let r = &lane.record;
    let (mut dirty, plan_unsaved) = uncommitted(ctx, &r.plan, old)?;
    let why = if cwd_inside(old) {
        Some("you are inside it".to_string())
    } else if ctx.store.git.at(old).current_branch()?.as_deref() != Some(r.branch.as_str()) {
        Some(format!("it is not on the lane's branch {}", r.branch))
    } else if !crate::records::packet::backs_lane(
        &ctx.store,
        ctx.settings.remote.as_deref(),
        &lane.feature,
        &r.owner,
        &r.path,
    )? {
        Some(format!(
            "no accepted handoff of lane {} by {} backs the move",
            lane.feature, r.owner
        ))
    } else {
        let plan_file = ctx.settings.plan_file.trim_start_matches('/');
        dirty.extend(ignored_paths(old)?.into_iter().filter(|p| p != plan_file));
        (!dirty.is_empty() || plan_unsaved)
            .then(|| format!("it has uncommitted work ({})", dirty.join(", ")))
    };
    if let Some(why) = why {
        if !out.dry_run {
            out.warnings.push(format!(
                "lane {}: kept the old worktree {}: {why}; to remove it by hand: `git worktree remove {}` (add --force to discard what is in it)",
                lane.feature,
                old.display(),
                old.display()
            ));
        }
        let reason = format!(
            "handed over to {} at {}; the old worktree {} stays: {why}",
            r.owner,
            r.path,
            old.display()
        );
        out.keep(&lane.feature, reason);
        return Ok(());
    }
    if !out.dry_run {
        // Not forced: git refuses once more if anything appeared meanwhile.
        ctx.store
            .git
            .run(["worktree", "remove", &old.display().to_string()])?;
    }
    out.order
        .push(PruneLine::OldWorktree(out.old_worktrees.len()));
    out.old_worktrees.push(OldWorktree {
        feature: lane.feature.clone(),
        worktree: old.display().to_string(),
        owner: r.owner.clone(),
        path: r.path.clone(),
        branch: r.branch.clone(),
    });
    Ok(())
}
