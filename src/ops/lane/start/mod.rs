//! `lane new`: start a lane (worktree `<swarm.worktreeRoot>/<feature>` on a
//! new branch `feat/<feature>`, the lane record, and the `lane-started`
//! entry in the plan's journal, whose compare-and-swap makes "one executor
//! per plan" hold against a concurrent start; with a remote the start is
//! checked against the remote's lanes and published at once, so the rule
//! holds across machines too: see `publish`). Run again, it finishes a
//! start that was interrupted.

mod leftovers;
mod making;
mod model;
mod publish;
mod task;

use making::{prepare, Making};
pub use model::{LaneFields, LaneStarted, NewLane, Started, TaskTaken};

use gix::ObjectId;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::lane::{self, check_start, Lane, LaneRecord, NewRecord, Start};
use crate::records::plan::Plan;
use crate::session::lane::{default_base, start_marker};
use crate::session::Ctx;
use crate::store::Event;

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

/// Starts the lane, or finishes a start that was interrupted: checked
/// against the plan and the lanes known here and on the remote, its
/// worktree made, its record and plan entry (and claim) written and
/// published.
fn start(
    ctx: &Ctx,
    args: &NewLane<'_>,
    taking: Option<&task::Taking>,
    actor: &str,
    owner: &str,
    mut warnings: Vec<String>,
) -> Result<LaneStarted> {
    let feature = args.feature;
    let plan_name = plan_name_for(ctx, args, taking)?;
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
            let finished = finish_after_record(ctx, lane, actor)?;
            // The claim the interrupted start did not get to: written here,
            // as the rest of the finished start is (`sync` publishes it).
            if let Some(t) = taking {
                task::claim_locally(ctx, t, actor)?;
            }
            return Ok(finished);
        }
        Start::New { previous } => previous,
    };
    let making = make_worktree(ctx, args, &plan_name, previous.is_some(), &mut warnings)?;
    let plan_file = making.or_rollback(crate::session::plan::plan_file_in(ctx, &making.path))?;
    let wrote_plan = match plan.text {
        Some(_) => making.or_rollback(crate::session::plan::write_plan_file(
            &ctx.store, &plan, &plan_file, false,
        ))?,
        None => false,
    };
    let starting = Starting {
        ctx,
        feature,
        plan_name: &plan_name,
        plan: &plan,
        taking,
        actor,
        owner,
    };
    let written = starting.write_record(&making, previous)?;
    let published = starting.publish(&making, &written, &mut warnings)?;
    let _ = std::fs::remove_file(&making.marker);
    Ok(LaneStarted::New(Box::new(Started {
        lane: fields(feature, &written.record, written.lane_commit),
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

/// The plan the lane starts on: the child plan named after the feature
/// with `--task`, else `--plan`, else the one plan inferred.
fn plan_name_for(ctx: &Ctx, args: &NewLane<'_>, taking: Option<&task::Taking>) -> Result<String> {
    Ok(match (taking, args.plan) {
        (Some(_), _) => args.feature.to_string(),
        (None, Some(p)) => p.to_string(),
        (None, None) => crate::session::plan::infer(ctx)?,
    })
}

/// The lane's branch and worktree made (or found, finishing an interrupted
/// start) on its base as the remote has it now, the plan file and lanes
/// kept out of `git status`.
fn make_worktree(
    ctx: &Ctx,
    args: &NewLane<'_>,
    plan_name: &str,
    had_record: bool,
    warnings: &mut Vec<String>,
) -> Result<Making> {
    let base = args
        .base
        .map(str::to_string)
        .unwrap_or_else(|| default_base(ctx));
    // Start from the base as the remote has it now, or say that it is not.
    let refreshed = crate::session::base::refresh(ctx, &base);
    warnings.extend(refreshed.warning(&base, "started from"));
    let mut making = prepare(ctx, args.feature, base, had_record)?;
    // Keep the plan file and the lanes directory out of `git status`.
    crate::worktree::setup::ensure_excludes(
        &ctx.store,
        &ctx.settings.plan_file,
        &ctx.settings.worktree_root,
    )?;
    if !making.resume {
        making.add_worktree(ctx, plan_name)?;
    }
    crate::failpoint::point("lane:worktree");
    making.path = std::fs::canonicalize(&making.path).unwrap_or(making.path.clone());
    Ok(making)
}

/// A start past its checks, its worktree made: what its record and plan
/// entry are written from.
struct Starting<'a> {
    ctx: &'a Ctx,
    feature: &'a str,
    plan_name: &'a str,
    plan: &'a Plan,
    taking: Option<&'a task::Taking>,
    actor: &'a str,
    owner: &'a str,
}

/// The lane record and the plan's `lane-started` entry as written here.
struct RecordWritten {
    record: LaneRecord,
    /// The local record the write replaced.
    expected: Option<ObjectId>,
    lane_commit: ObjectId,
    /// The plan entry's commit and the event it records.
    claim: (ObjectId, Event),
}

impl Starting<'_> {
    /// Writes the lane record (following `previous`, the feature's removed
    /// one) and the plan's `lane-started` entry.
    fn write_record(&self, making: &Making, previous: Option<&Lane>) -> Result<RecordWritten> {
        let ctx = self.ctx;
        let now = rfc3339(ctx.store.clock.now());
        let path = making.path.display().to_string();
        let new = NewRecord {
            feature: self.feature,
            plan: self.plan_name,
            owner: self.owner,
            path: &path,
            base: &making.base,
            base_commit: making.base_commit,
            actor: self.actor,
            now: &now,
        };
        let mut record = LaneRecord::started(&new, previous.map(|p| &p.record));
        record.task = self.taking.map(task::Taking::key);
        // The local record is what the write replaces (`previous` may be the
        // remote's newer version of a lane removed there).
        let expected = ctx.store.ref_target(&lane::lane_ref(self.feature))?;
        let (lane_commit, claim) =
            making.record_and_claim(ctx, self.plan, &record, expected, self.actor)?;
        Ok(RecordWritten {
            record,
            expected,
            lane_commit,
            claim,
        })
    }

    /// Publishes the start (with its claim); left here, the claim is
    /// written locally and a warning says so. True when the remote has it.
    fn publish(
        &self,
        making: &Making,
        written: &RecordWritten,
        warnings: &mut Vec<String>,
    ) -> Result<bool> {
        let (ctx, feature, plan_name, taking) =
            (self.ctx, self.feature, self.plan_name, self.taking);
        let w = publish::Written {
            feature,
            plan: plan_name,
            lane: written.lane_commit,
            lane_before: written.expected,
            entry: written.claim.0,
            entry_on: self.plan.head.commit,
            event: &written.claim.1,
            task: taking,
        };
        Ok(match making.or_rollback(publish::publish(ctx, &w))? {
            publish::Outcome::Published => true,
            publish::Outcome::Offline => {
                if let Some(t) = taking {
                    making.or_rollback(task::claim_locally(ctx, t, self.actor))?;
                }
                false
            }
            publish::Outcome::Local(why) => {
                if let Some(t) = taking {
                    making.or_rollback(task::claim_locally(ctx, t, self.actor))?;
                }
                warnings.push(format!(
                    "lane {feature} is started here, {}; until then the remote cannot refuse another machine's lane of plan {plan_name}", crate::store::remote::not_published(&why)
                ));
                false
            }
        })
    }
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

fn with_hint(err: Error, hint: Option<&str>) -> Error {
    match hint {
        Some(h) => err.hint(h.to_string()),
        None => err,
    }
}
