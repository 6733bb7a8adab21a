//! `lane new`: start a lane (worktree `<swarm.worktreeRoot>/<feature>` on a
//! new branch `feat/<feature>`, the lane record, and the `lane-started`
//! entry in the plan's journal, whose compare-and-swap makes "one executor
//! per plan" hold against a concurrent start; with a remote the start is
//! checked against the remote's lanes and published at once, so the rule
//! holds across machines too: see `publish`). Run again, it finishes a
//! start that was interrupted.

mod leftovers;
use leftovers::{clear_half_made, clear_half_made_admin};
mod publish;
mod task;

use std::path::PathBuf;

use gix::ObjectId;
use serde::Serialize;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::names;
use crate::records::lane::{self, branch_of, check_start, Lane, LaneRecord, NewRecord, Start};
use crate::session::lane::{confined_lane_path, default_base, main_worktree, start_marker};
use crate::session::Ctx;
use crate::store::kind::Records;
use crate::store::Event;

pub struct NewLane<'a> {
    pub feature: &'a str,
    pub plan: Option<&'a str>,
    pub base: Option<&'a str>,
    pub owner: Option<&'a str>,
    /// `--task T`: take task T (of `plan` when given, else of the one plan
    /// that has it); the lane then starts on a child plan named `feature`.
    pub task: Option<&'a str>,
    /// `--no-task`: start without a task although the plan has ready ones.
    pub no_task: bool,
}

/// The task a lane took, as `lane new --task` reports it.
#[derive(Debug, Serialize)]
pub struct TaskTaken {
    pub plan: String,
    pub id: String,
    pub holder: String,
    pub lease_until: Option<String>,
    pub branch: String,
    /// The child plan the lane runs on (parent: `plan`).
    pub lane_plan: String,
}

/// What `lane new` did.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum LaneStarted {
    New(Box<Started>),
    /// An interrupted start had written the record: its journal entry was
    /// written (`journalled`) or found.
    Finished {
        #[serde(flatten)]
        lane: LaneFields,
        resumed: bool,
        #[serde(skip)]
        journalled: bool,
    },
}

/// The lane as `lane new` reports it.
#[derive(Debug, Serialize)]
pub struct LaneFields {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub path: String,
    pub base: String,
    pub base_commit: String,
    pub record: String,
}

#[derive(Debug, Serialize)]
pub struct Started {
    #[serde(flatten)]
    pub lane: LaneFields,
    /// The plan file written into the worktree, if the plan has text.
    pub plan_file: Option<String>,
    pub resumed: bool,
    /// What was found and finished or cleaned up first.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// `swarm.planFile`, as configured.
    #[serde(skip)]
    pub plan_file_setting: String,
    #[serde(skip)]
    pub hooks_installed: bool,
    /// The remote has the lane record and its plan entry (the start was
    /// arbitrated there); false offline or when it was left for `sync`.
    pub published: bool,
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// `--task`: the task taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskTaken>,
}

/// `lane new`
pub fn new(ctx: &Ctx, args: NewLane<'_>) -> Result<LaneStarted> {
    names::validate_name("feature", args.feature)?;
    // `--base` is recorded as given (`lane.yaml: base`).
    crate::secret::check_fields("the lane", &[("--base", args.base.unwrap_or(""))])?;
    let actor = ctx.actor()?;
    let owner = args
        .owner
        .map(str::to_string)
        .unwrap_or_else(|| actor.clone());
    names::validate_address(&owner)?;
    let Some(t) = args.task else {
        if let (Some(plan), false) = (args.plan, args.no_task) {
            refuse_ready_tasks(ctx, plan, args.feature)?;
        }
        return start(ctx, &args, None, &actor, &owner, Vec::new());
    };
    // The task is found and its claim checked before anything is made.
    let taking = task::resolve(ctx, args.plan, t, &owner, args.feature)?;
    let made = task::child_plan(ctx, &taking, &actor)?;
    start(ctx, &args, Some(&taking), &actor, &owner, Vec::new()).inspect_err(|_| {
        if made {
            task::drop_child_plan(ctx, args.feature, &actor);
        }
    })
}

/// A lane started on plan `plan` without `--task` while the plan has
/// ready, unclaimed tasks would take the plan's one executor slot and none
/// of its work: `LANE_NEEDS_TASK`, naming them and the `--task` form.
fn refuse_ready_tasks(ctx: &Ctx, plan: &str, feature: &str) -> Result<()> {
    let ready: Vec<_> = crate::ops::task::ready(ctx, Some(plan))?
        .tasks
        .into_iter()
        .filter(|r| r.holder.is_none())
        .collect();
    let Some(first) = ready.first() else {
        return Ok(());
    };
    let list: Vec<String> = ready
        .iter()
        .map(|r| format!("{} ({})", r.id, r.title))
        .collect();
    Err(Error::new(
        Code::LaneNeedsTask,
        format!(
            "plan '{plan}' has {} ready task(s) nobody holds: {}; a lane without a task would take the plan's one executor slot",
            ready.len(),
            list.join(", ")
        ),
    )
    .hint(format!(
        "take one: `git swarm lane new {feature} --task {} --plan {plan}`",
        first.id
    ))
    .hint("or start it anyway with --no-task")
    .with_detail(serde_json::json!({
        "plan": plan,
        "ready": ready.iter().map(|r| &r.id).collect::<Vec<_>>(),
    })))
}

fn start(
    ctx: &Ctx,
    args: &NewLane<'_>,
    taking: Option<&task::Taking>,
    actor: &str,
    owner: &str,
    mut warnings: Vec<String>,
) -> Result<LaneStarted> {
    let actor = actor.to_string();
    let owner = owner.to_string();
    let feature = args.feature;
    let plan_name = match (taking, args.plan) {
        (Some(_), _) => feature.to_string(),
        (None, Some(p)) => p.to_string(),
        (None, None) => crate::session::plan::infer(ctx)?,
    };
    // Read the plan head before scanning lanes: the CAS on it at the end is
    // what makes "one executor per plan" hold against a concurrent lane new.
    // A plan another clone published is found without a `sync` first.
    crate::records::plan::catch_up(&ctx.store, ctx.remote(), &plan_name)?;
    let plan = crate::records::plan::require(&ctx.store, &plan_name)?;

    let resuming = start_marker(&ctx.store, feature).exists();
    // A re-run finishing an interrupted start is let through.
    if !resuming {
        crate::records::plan::refuse_closed(&plan, &plan_name, "start a lane on it")?;
    }
    // This lane's own record is needed: unreadable, it fails with its code.
    // Other unreadable lane records are skipped.
    lane::load(&ctx.store, feature)?;
    publish::fetch_first(ctx, &plan_name, &mut warnings);
    let lanes = publish::known_lanes(ctx)?;
    let previous = match check_start(&lanes, feature, &plan_name, resuming)? {
        Start::FinishRecorded(lane) => {
            let finished = finish_after_record(ctx, lane, &actor)?;
            // The claim the interrupted start did not get to: written here,
            // as the rest of the finished start is (`sync` publishes it).
            if let Some(t) = taking {
                task::claim_locally(ctx, t, &actor)?;
            }
            return Ok(finished);
        }
        Start::New { previous } => previous,
    };
    let base = args
        .base
        .map(str::to_string)
        .unwrap_or_else(|| default_base(ctx));
    // Start from the base as the remote has it now, or say that it is not.
    let refreshed = crate::session::base::refresh(ctx, &base);
    warnings.extend(refreshed.warning(&base, "started from"));
    let mut making = prepare(ctx, feature, base, previous.is_some())?;
    // Keep the plan file and the lanes directory out of `git status`.
    crate::worktree::setup::ensure_excludes(
        &ctx.store,
        &ctx.settings.plan_file,
        &ctx.settings.worktree_root,
    )?;
    if !making.resume {
        making.add_worktree(ctx, &plan_name)?;
    }
    crate::failpoint::point("lane:worktree");
    making.path = std::fs::canonicalize(&making.path).unwrap_or(making.path.clone());

    let plan_file = making.or_rollback(crate::session::plan::plan_file_in(ctx, &making.path))?;
    let wrote_plan = match plan.text {
        Some(_) => making.or_rollback(crate::session::plan::write_plan_file(
            &ctx.store, &plan, &plan_file, false,
        ))?,
        None => false,
    };
    let now = rfc3339(ctx.store.clock.now());
    let path = making.path.display().to_string();
    let new = NewRecord {
        feature,
        plan: &plan_name,
        owner: &owner,
        path: &path,
        base: &making.base,
        base_commit: making.base_commit,
        actor: &actor,
        now: &now,
    };
    let mut record = LaneRecord::started(&new, previous.map(|p| &p.record));
    record.task = taking.map(task::Taking::key);
    // The local record is what the write replaces (`previous` may be the
    // remote's newer version of a lane removed there).
    let expected = ctx.store.ref_target(&lane::lane_ref(feature))?;
    let (lane_commit, claim) = making.record_and_claim(ctx, &plan, &record, expected, &actor)?;
    let written = publish::Written {
        feature,
        plan: &plan_name,
        lane: lane_commit,
        lane_before: expected,
        entry: claim.0,
        entry_on: plan.head.commit,
        event: &claim.1,
        task: taking,
    };
    let published = match making.or_rollback(publish::publish(ctx, &written))? {
        publish::Outcome::Published => true,
        publish::Outcome::Offline => {
            if let Some(t) = taking {
                making.or_rollback(task::claim_locally(ctx, t, &actor))?;
            }
            false
        }
        publish::Outcome::Local(why) => {
            if let Some(t) = taking {
                making.or_rollback(task::claim_locally(ctx, t, &actor))?;
            }
            warnings.push(format!(
                "lane {feature} is started here, {}; until then the remote cannot refuse another machine's lane of plan {plan_name}", crate::store::remote::not_published(&why)
            ));
            false
        }
    };
    let _ = std::fs::remove_file(&making.marker);
    Ok(LaneStarted::New(Box::new(Started {
        lane: fields(feature, &record, lane_commit),
        plan_file: wrote_plan.then(|| plan_file.display().to_string()),
        resumed: making.resume,
        notes: making.notes,
        plan_file_setting: ctx.settings.plan_file.clone(),
        hooks_installed: crate::worktree::setup::hooks_installed(&ctx.store),
        published,
        warnings,
        task: taking.map(|t| taken(ctx, t)),
    })))
}

/// The task as the start left it here.
fn taken(ctx: &Ctx, t: &task::Taking) -> TaskTaken {
    let rec = crate::records::task::known_one(&ctx.store, ctx.remote(), &t.plan, &t.id)
        .ok()
        .flatten();
    let claim = rec.as_ref().and_then(|k| k.record.claim.clone());
    TaskTaken {
        plan: t.plan.clone(),
        id: t.id.clone(),
        holder: claim
            .as_ref()
            .map_or_else(|| t.owner.clone(), |c| c.holder.clone()),
        lease_until: claim.map(|c| c.lease_until),
        branch: crate::records::lane::branch_of(&t.feature),
        lane_plan: t.feature.clone(),
    }
}

fn fields(feature: &str, r: &LaneRecord, record: ObjectId) -> LaneFields {
    LaneFields {
        feature: feature.to_string(),
        plan: r.plan.clone(),
        owner: r.owner.clone(),
        branch: r.branch.clone(),
        path: r.path.clone(),
        base: r.base.clone(),
        base_commit: r.base_commit.clone(),
        record: record.to_string(),
    }
}

/// A `lane new` killed after writing the lane record and before its
/// `lane-started` journal entry: write the entry (once: it carries the
/// record's commit) and say so.
fn finish_after_record(ctx: &Ctx, lane: &Lane, actor: &str) -> Result<LaneStarted> {
    let feature = lane.feature.as_str();
    let r = &lane.record;
    let summary = lane::started_summary(feature, &r.branch, &r.base, &r.plan);
    let record = lane.commit.to_string();
    let claim = lane::claim_event(actor, summary, feature, &record);
    let wrote = crate::records::plan::journal(
        &ctx.store,
        ctx.remote(),
        &r.plan,
        &claim,
        None,
        Some(("Swarm-Lane-Record", record.as_str())),
    )?;
    let _ = std::fs::remove_file(start_marker(&ctx.store, feature));
    Ok(LaneStarted::Finished {
        lane: fields(feature, r, lane.commit),
        resumed: true,
        journalled: wrote.is_some(),
    })
}

/// A lane being made: its branch, base, worktree and start marker.
struct Making {
    git: Git,
    branch: String,
    base: String,
    base_commit: ObjectId,
    path: PathBuf,
    marker: PathBuf,
    /// Finishing an interrupted start whose branch and worktree are here.
    resume: bool,
    notes: Vec<String>,
}

/// Resolve the base and the worktree path, and look at what a start of
/// this feature that was interrupted here left (`had_record`: the feature
/// had a lane before, which an interrupted `lane rm` may have left).
fn prepare(ctx: &Ctx, feature: &str, base: String, had_record: bool) -> Result<Making> {
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
        git: Git::new(&main),
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
    fn branch_ref(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// A `lane new` of this feature that began here (its marker is left)
    /// and was killed before it finished: its branch has no commit of its
    /// own, so finishing it (worktree there) or undoing it (no worktree)
    /// loses nothing. Anything else in the way is `LANE_EXISTS`.
    fn look_at_leftovers(&mut self, ctx: &Ctx, feature: &str, hint: Option<&str>) -> Result<()> {
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
                && Git::new(&path).current_branch().ok().flatten().as_deref()
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
    fn add_worktree(&mut self, ctx: &Ctx, plan_name: &str) -> Result<()> {
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
    fn rollback(&self) {
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

    fn or_rollback<T>(&self, r: Result<T>) -> Result<T> {
        r.inspect_err(|_| self.rollback())
    }

    /// Write the lane record, then claim the plan with the `lane-started`
    /// journal entry (a CAS on the plan head read before the lanes were
    /// checked); a lost claim takes the record back and undoes the start.
    /// Returns the record's commit, and the entry's with its event.
    fn record_and_claim(
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

fn with_hint(err: Error, hint: Option<&str>) -> Error {
    match hint {
        Some(h) => err.hint(h.to_string()),
        None => err,
    }
}
