//! The git side of a lane's start: the base resolved, the branch and its
//! worktree made (under the kernel lock `git worktree add` needs), what an
//! interrupted start left here looked at and finished or cleared, and all
//! of it rolled back when the record cannot be written.

use std::path::PathBuf;

use gix::ObjectId;

use super::leftovers::{clear_half_made, clear_half_made_admin};
use super::with_hint;
use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::records::lane::{self, branch_of, LaneRecord};
use crate::session::lane::{confined_lane_path, main_worktree, start_marker};
use crate::session::Ctx;
use crate::store::records::Records;
use crate::store::Event;

/// A lane being made: its branch, base, worktree and start marker.
pub(super) struct Making {
    pub(super) git: Git,
    pub(super) branch: String,
    pub(super) base: String,
    pub(super) base_commit: ObjectId,
    pub(super) path: PathBuf,
    pub(super) marker: PathBuf,
    /// Finishing an interrupted start whose branch and worktree are here.
    pub(super) resume: bool,
    pub(super) notes: Vec<String>,
}

/// Resolve the base and the worktree path, and look at what a start of
/// this feature that was interrupted here left (`had_record`: the feature
/// had a lane before, which an interrupted `lane rm` may have left).
pub(super) fn prepare(ctx: &Ctx, feature: &str, base: String, had_record: bool) -> Result<Making> {
    let branch = branch_of(feature);
    let base_commit = ctx.store.git.resolve(&base)?.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            format!("base '{base}' does not name a commit"),
        )
        .hint("pass --base <branch or commit>, or set `git config swarm.base <branch>`")
    })?;
    // A `git worktree add` killed while it wrote its administrative files
    // (a `commondir` still empty) makes `git worktree list` itself fail:
    // what this feature's interrupted start left there goes first.
    let cleared = start_marker(&ctx.store, feature)
        .exists()
        .then(|| clear_half_made_admin(ctx, feature))
        .flatten();
    let main = main_worktree(&ctx.store)?;
    let path = confined_lane_path(ctx, &main, feature)?;
    // Refuse an unusable swarm.planFile before anything is created.
    crate::session::plan::plan_file_in(ctx, &path)?;
    let mut making = Making {
        git: ctx.store.git.at(&main),
        branch,
        base,
        base_commit,
        path,
        marker: start_marker(&ctx.store, feature),
        resume: false,
        notes: Vec::new(),
    };
    // An interrupted `lane rm` leaves the record removed and the rest here.
    let leftover_hint = had_record.then(|| {
        format!("if an interrupted `git swarm lane rm {feature}` left it, run that again to finish")
    });
    if let Some(what) = cleared {
        making.notes.push(format!(
            "an earlier `git swarm lane new {feature}` was interrupted while git made its worktree: removed {what}"
        ));
    }
    making.look_at_leftovers(ctx, feature, leftover_hint.as_deref())?;
    Ok(making)
}

impl Making {
    pub(super) fn branch_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// A `lane new` of this feature that began here (its marker is left)
    /// and was killed before it finished: its branch has no commit of its
    /// own, so finishing it (worktree there) or undoing it (no worktree)
    /// loses nothing. Anything else in the way is `LANE_EXISTS`.
    pub(super) fn look_at_leftovers(
        &mut self,
        ctx: &Ctx,
        feature: &str,
        hint: Option<&str>,
    ) -> Result<()> {
        let (branch, path) = (self.branch.clone(), self.path.clone());
        // `git worktree add` killed half-way (its worktree still marked
        // "initializing", or a directory without its `.git`): what it made
        // is taken away, and the start begins again.
        if self.marker.exists() {
            if let Some(what) = clear_half_made(ctx, &path, &branch) {
                let _ = self.git.worktree_prune();
                self.notes.push(format!(
                    "an earlier `git swarm lane new {feature}` was interrupted while git made its worktree: removed {what}"
                ));
            }
        }
        if let Some(tip) = ctx.store.ref_target(&self.branch_ref())? {
            let no_own_commits = ctx.store.is_ancestor(tip, self.base_commit)?;
            let on_branch = path.exists()
                && ctx
                    .store
                    .git
                    .at(&path)
                    .current_branch()
                    .ok()
                    .flatten()
                    .as_deref()
                    == Some(branch.as_str());
            if self.marker.exists() && no_own_commits && on_branch {
                self.resume = true;
                self.base_commit = tip;
                self.notes.push(format!(
                    "an earlier `git swarm lane new {feature}` was interrupted after creating {branch} and {}: finishing it",
                    path.display()
                ));
            } else if self.marker.exists() && no_own_commits && !path.exists() {
                let _ = self.git.worktree_prune();
                // A git killed while it moved these refs leaves its locks.
                ctx.store.clear_stale_branch_lock(&self.branch_ref());
                ctx.store.clear_stale_packed_refs_lock();
                self.git.branch_delete(&branch)?;
                self.notes.push(format!(
                    "an earlier `git swarm lane new {feature}` was interrupted after creating {branch}: removed that branch (it had no commits) and started again"
                ));
            } else {
                let err = Error::new(Code::LaneExists, format!("branch {branch} already exists"))
                    .hint(format!(
                        "pick another feature name, or delete the branch (`git branch -d {branch}`) if its work is merged"
                    ));
                return Err(with_hint(err, hint));
            }
        }
        if !self.resume && path.exists() {
            let err = Error::new(
                Code::LaneExists,
                format!("{} already exists", path.display()),
            )
            .hint("move it away, or pick another feature name");
            return Err(with_hint(err, hint));
        }
        Ok(())
    }

    /// Mark the start under way, then create the branch and the worktree.
    pub(super) fn add_worktree(&mut self, ctx: &Ctx, plan_name: &str) -> Result<()> {
        // Say, before anything is created, that a start is under way, so a
        // re-run after a kill knows the branch and worktree are its own.
        if let Some(dir) = self.marker.parent() {
            std::fs::create_dir_all(dir).map_err(|e| crate::fsutil::io_error(dir, e))?;
        }
        std::fs::write(&self.marker, format!("{plan_name}\n"))
            .map_err(|e| crate::fsutil::io_error(&self.marker, e))?;
        // A lock left on the branch by a killed process would fail `git
        // worktree add -b` (exit 4): take an old one away.
        let branch_ref = self.branch_ref();
        if ctx.store.clear_stale_branch_lock(&branch_ref) {
            self.notes.push(format!(
                "removed a stale lock on {branch_ref} left by a killed process"
            ));
        }
        // Concurrent `git worktree add`s can trip over each other's half-made
        // metadata before creating anything; such a failure is retried.
        let mut attempt = 0;
        loop {
            match self.git.worktree_add(
                &ctx.store.common_dir(),
                &self.path,
                &self.branch,
                &self.base_commit.to_string(),
            ) {
                Ok(()) => return Ok(()),
                // (Not after a git killed by a signal: its children may
                // still be making the branch, and this run is being killed.)
                Err(e)
                    if attempt < 3
                        && !crate::git::killed_by_signal(&e)
                        && !self.path.exists()
                        && ctx.store.ref_target(&branch_ref)?.is_none() =>
                {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
                }
                Err(e) => {
                    // The marker stays while git made anything (a git killed
                    // under us, seen before our own kill lands, leaves the
                    // branch): the re-run then knows them for its own. A git
                    // killed by a signal may have left its own child (`git
                    // branch`) still writing the branch after this looks, so
                    // then the marker stays whatever is here now.
                    if !crate::git::killed_by_signal(&e)
                        && !self.path.exists()
                        && ctx.store.ref_target(&branch_ref)?.is_none()
                    {
                        let _ = std::fs::remove_file(&self.marker);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Undo what this run made. What an interrupted run made stays for the
    /// next re-run: the worktree may hold work done since.
    pub(super) fn rollback(&self) {
        if !self.resume {
            let removed = self.git.worktree_remove(&self.path);
            let deleted = self.git.branch_delete(&self.branch);
            // The marker goes only with what it marks: a removal that failed
            // (a git killed under us) leaves the branch or worktree for the
            // re-run, which must still know them for its own.
            if removed.is_ok() && deleted.is_ok() {
                let _ = std::fs::remove_file(&self.marker);
            }
        }
    }

    pub(super) fn or_rollback<T>(&self, r: Result<T>) -> Result<T> {
        r.inspect_err(|_| self.rollback())
    }

    /// Write the lane record, then claim the plan with the `lane-started`
    /// journal entry (a CAS on the plan head read before the lanes were
    /// checked); a lost claim takes the record back and undoes the start.
    /// Returns the record's commit, and the entry's with its event.
    pub(super) fn record_and_claim(
        &self,
        ctx: &Ctx,
        plan: &crate::records::plan::Plan,
        record: &LaneRecord,
        expected: Option<ObjectId>,
        actor: &str,
    ) -> Result<(ObjectId, (ObjectId, Event))> {
        let feature = record.feature.as_str();
        let summary = lane::started_summary(feature, &self.branch, &self.base, &record.plan);
        let event = Event::new("lane-started", actor, summary.clone())
            .trailer("Swarm-Lane", feature)
            .trailer("Swarm-Plan", record.plan.as_str());
        let lanes = Records::<LaneRecord>::new(&ctx.store);
        let key = feature.to_string();
        let lane_commit = self.or_rollback(lanes.write(&key, expected, record, &event))?;
        crate::failpoint::point("lane:record");
        let claim = lane::claim_event(actor, summary, feature, &lane_commit.to_string());
        let entry = crate::records::plan::journal(
            &ctx.store,
            ctx.remote(),
            &record.plan,
            &claim,
            Some(plan.head.commit),
            None,
        );
        let entry = match entry {
            Ok(Some(id)) => Ok(id),
            Ok(None) => Err(Error::new(
                Code::CasFailed,
                "the plan entry was not written",
            )),
            Err(e) => Err(e),
        };
        if let Err(e) = &entry {
            let e = e.clone();
            let lane_ref = lane::lane_ref(feature);
            let _ = ctx.store.cas(
                &lane_ref,
                Some(lane_commit),
                expected,
                actor,
                "lane start rolled back",
            );
            self.rollback();
            if e.code == Code::CasFailed {
                return Err(Error::new(
                    Code::CasFailed,
                    format!("plan '{}' changed while lane '{feature}' was starting (another lane may have started); nothing was kept", record.plan),
                )
                .hint("run `git swarm lane list`, then try again"));
            }
            return Err(e);
        }
        Ok((lane_commit, (entry?, claim)))
    }
}
