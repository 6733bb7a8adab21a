//! The task commands. Every write — create, update, claim, renew, release,
//! block, done, cancel, recover — runs in the store's one fetch → decide →
//! publish loop: it fetches the plan's task refs, decides on the published
//! record with [`crate::records::task::decide`], writes the next version on
//! top of it and publishes it in one atomic push whose lease is the value
//! just fetched; only then does the local ref move. Of several clones
//! claiming one task at once the remote takes exactly one push; the others
//! fetch again, find the winner's claim and fail with `LEASE_HELD` (exit 3).
//! Offline (no remote, or `--offline`) the local CAS arbitrates and the
//! result says it is not published.

use std::collections::BTreeMap;

use gix::ObjectId;
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::git::PushUpdate;
use crate::names;
use crate::records::reservation::{self, Ledger, LEDGER, LEDGER_REF};
use crate::records::task::{
    self, task_ref, Decision, Known, Op, Status, TaskKey, TaskRecord, Work,
};
use crate::session::Ctx;
use crate::store::records::{Publish, Txn};
use crate::store::remote;
use crate::store::Event;

mod batch;
mod fields;
mod next;
mod view;

pub use batch::{create_many, parse as parse_task_file, Created};
pub use fields::{create, update, Fields, NewTask};
pub use next::claim_next;
pub use view::{list, ready, show, Listed, Shown};

/// How many times a task command re-reads and decides again after the
/// remote refused its push (someone moved a task of the plan first).
const MAX_ATTEMPTS: usize = 5;

/// The rounds of a `task done` whose push also releases the task's
/// reservations on the one reservation ledger, which every reservation of
/// the repository moves: as many as a `release` has (12). After them the
/// done goes alone for its own [`MAX_ATTEMPTS`] rounds, and says what it
/// left held. (Seven were too few: in the swarm simulation's step of 20
/// dones at one instant, 9 of the 20 releases fell back.)
const RELEASE_ROUNDS: usize = 12;

/// What a task command did.
#[derive(Debug, Clone, Serialize)]
pub struct Ran {
    pub command: &'static str,
    pub plan: String,
    pub id: String,
    pub task: serde_json::Value,
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Nothing was written: the task already was what the command asked.
    pub already: bool,
    /// Published to the shared remote (false: local only).
    pub published: bool,
    /// `task done`: the reservations of the task released in its push.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<String>,
    /// `task done`: the reservations of the task still held, because the
    /// reservation ledger kept changing (release them with `release`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub still_reserved: Vec<String>,
    /// `task claim --next`: the ready tasks (plan/id) other clones claimed
    /// first, one lost push each, before this one was taken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_to_others: Vec<String>,
    /// `task done` on merged work: what the lane's end closed (`lane F`,
    /// `plan C`; see [`crate::ops::lane::end`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<String>,
    /// What the lane's end could not close, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub record: TaskRecord,
}

/// The plan of task `id`: `plan` when given, else the one plan that has a
/// task of that id (`PLAN_AMBIGUOUS` when several do).
pub fn resolve_plan(ctx: &Ctx, plan: Option<&str>, id: &str) -> Result<String> {
    names::validate_name("task", id)?;
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
        return Ok(p.to_string());
    }
    crate::store::mirror::fetch_refs_from(
        &ctx.store,
        ctx.remote(),
        &[crate::records::task::PREFIX],
    )?;
    let (all, unreadable) = task::known(&ctx.store, ctx.remote(), None)?;
    // An unreadable task counts: naming its plan lets the command fail
    // with the record's own error rather than "no task".
    let mut plans: Vec<String> = all
        .iter()
        .filter(|k| k.key.id == id)
        .map(|k| k.key.plan.clone())
        .collect();
    plans.extend(
        unreadable
            .iter()
            .filter_map(|u| u.name.split_once('/'))
            .filter(|(_, i)| *i == id)
            .map(|(p, _)| p.to_string()),
    );
    plans.sort();
    plans.dedup();
    match plans.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(not_found(None, id, &all)),
        many => Err(Error::new(
            Code::PlanAmbiguous,
            format!("several plans have a task '{id}': {}", many.join(", ")),
        )
        .hint("name one with --plan")),
    }
}

/// The task a command names: `id` (with `plan`) as given; with no id, the
/// task the lane whose worktree this is took (`lane new --task`), in its
/// plan. A given id without a plan that is the lane's task takes the
/// lane's plan too.
pub fn named(
    ctx: &Ctx,
    id: Option<String>,
    plan: Option<String>,
) -> Result<(Option<String>, String)> {
    let lane = ctx.lane_here().or_else(|| ended_lane_here(ctx));
    let lane_task = lane.and_then(|l| l.record.task).and_then(|t| {
        t.split_once('/')
            .map(|(p, i)| (p.to_string(), i.to_string()))
    });
    match (id, plan, lane_task) {
        (Some(id), None, Some((p, i))) if i == id => Ok((Some(p), id)),
        (Some(id), plan, _) => Ok((plan, id)),
        (None, plan, Some((p, i))) if plan.as_deref().is_none_or(|x| x == p) => Ok((Some(p), i)),
        (None, _, _) => Err(Error::new(Code::Usage, "name the task")
            .hint("e.g. `git swarm task renew <id> --plan <plan>`; in the worktree of a lane started with `lane new --task`, the lane's task is the default")),
    }
}

/// The lane whose worktree this is, once its record was closed (its task
/// done on merged work ends it, and the worktree stays until the clone
/// removes it): its task stays the default, so `task done` run again there
/// says "already so" rather than asking for the task.
fn ended_lane_here(ctx: &Ctx) -> Option<crate::records::lane::Lane> {
    let here = std::fs::canonicalize(ctx.store.workdir()?).ok()?;
    let branch = ctx.store.git.at(&here).current_branch().ok()??;
    crate::records::lane::all(&ctx.store)
        .ok()?
        .0
        .into_iter()
        .find(|l| {
            !l.record.is_active()
                && l.record.branch == branch
                && std::fs::canonicalize(&l.record.path).ok().as_deref() == Some(here.as_path())
        })
}

/// `TASK_NOT_FOUND`, with a "did you mean" when one of the `known` tasks'
/// ids is a likely typo of `id`.
pub(crate) fn not_found(plan: Option<&str>, id: &str, known: &[Known]) -> Error {
    let where_ = plan.map(|p| format!(" in plan '{p}'")).unwrap_or_default();
    let err = Error::new(Code::TaskNotFound, format!("no task '{id}'{where_}"));
    names::did_you_mean(err, id, known.iter().map(|k| k.key.id.as_str()))
        .hint("`git swarm task list` shows the tasks; `git swarm sync` fetches new ones")
}

/// The status of each task of the plan, by id.
pub(crate) fn statuses(tasks: &[Known]) -> BTreeMap<String, Status> {
    tasks
        .iter()
        .map(|k| (k.key.id.clone(), k.record.status))
        .collect()
}

/// Publish the next version of task `id` as `step` decides it from the
/// task as the arbiter holds it (None: absent) and every task of the plan.
/// `step` returns None when there is nothing to write.
pub(crate) fn publish(
    ctx: &Ctx,
    plan: &str,
    id: &str,
    command: &'static str,
    step: impl FnMut(Option<&Known>, &[Known]) -> Result<Option<(TaskRecord, Event)>>,
) -> Result<Ran> {
    publish_releasing(ctx, plan, id, command, None, step)
}

/// [`publish`], and with `release_for` (`task done`'s actor) the
/// reservations that holder holds for the task released in the same
/// atomic push as the task's new version ([`reservation::release_task`]).
fn publish_releasing(
    ctx: &Ctx,
    plan: &str,
    id: &str,
    command: &'static str,
    release_for: Option<&str>,
    mut step: impl FnMut(Option<&Known>, &[Known]) -> Result<Option<(TaskRecord, Event)>>,
) -> Result<Ran> {
    let store = &ctx.store;
    let refname = task_ref(plan, id);
    let key = TaskKey {
        plan: plan.to_string(),
        id: id.to_string(),
    };
    let target = Target {
        ctx,
        plan,
        id,
        command,
    };
    let prefix = task::plan_prefix(plan);
    let plan_ref = crate::records::plan::plan_ref(plan);
    let attempts = match release_for {
        Some(_) => RELEASE_ROUNDS + MAX_ATTEMPTS,
        None => MAX_ATTEMPTS,
    };
    let exhausted = |lines: &[String]| {
        Error::new(
            Code::PushRejected,
            format!(
                "the tasks of plan '{plan}' kept changing at the remote ({attempts} attempts): {}",
                lines.join("; ")
            ),
        )
        .hint("run the command again")
    };
    let mut fetch = vec![prefix.as_str(), plan_ref.as_str()];
    if release_for.is_some() {
        fetch.push(LEDGER_REF);
    }
    let done = Publish::new(store, ctx.remote())
        .fetch(fetch)
        .attempts(attempts)
        .point("task")
        .exhausted(exhausted)
        .run(|txn| {
            let tip = txn.tip(&refname)?;
            let (tasks, _) = task::known(store, ctx.remote(), Some(plan))?;
            let current = target.current(&tasks)?;
            let Some((record, event)) = step(current.as_ref(), &tasks)? else {
                return target.unchanged(tip, current, &tasks);
            };
            let commit = txn.write(&key, &record, &event)?;
            // A change of dependencies was checked for cycles against the
            // graph just fetched: it publishes only if that graph is still
            // current, by moving the plan's ref in the same push (a plan-wide
            // version two racing updates cannot both swap).
            if deps_changed(current.as_ref(), &record) {
                graph_version(ctx, txn, &plan_ref, &event)?;
            }
            let (released, still_reserved) = match release_for {
                Some(holder) => release_task(txn, holder, plan, id)?,
                None => (Vec::new(), Vec::new()),
            };
            failpoint::point("task:objects");
            Ok(Ran {
                released,
                still_reserved,
                ..target.ran(record, Some(commit), false, Some(event.kind.clone()))
            })
        })?;
    Ok(done.then)
}

/// The task a [`publish_releasing`] writes, and the command writing it.
struct Target<'a> {
    ctx: &'a Ctx,
    plan: &'a str,
    id: &'a str,
    command: &'static str,
}

impl Target<'_> {
    /// The task among the plan's `tasks` just fetched, else read alone: a
    /// record there that cannot be read fails the command with its own
    /// error, never taken for an absent task and overwritten.
    fn current(&self, tasks: &[Known]) -> Result<Option<Known>> {
        Ok(match tasks.iter().find(|k| k.key.id == self.id) {
            Some(k) => Some(k.clone()),
            None => task::known_one(&self.ctx.store, self.ctx.remote(), self.plan, self.id)?,
        })
    }

    /// What the command did to the task: `record` at `commit`, written by
    /// `event` or `already` so.
    fn ran(
        &self,
        record: TaskRecord,
        commit: Option<ObjectId>,
        already: bool,
        event: Option<String>,
    ) -> Ran {
        Ran {
            command: self.command,
            plan: self.plan.to_string(),
            id: self.id.to_string(),
            task: record.to_json(self.ctx.store.clock.now()),
            commit: commit.map(|c| c.to_string()),
            event,
            already,
            published: self.ctx.remote().is_some(),
            released: Vec::new(),
            still_reserved: Vec::new(),
            lost_to_others: Vec::new(),
            ended: Vec::new(),
            warnings: Vec::new(),
            record,
        }
    }

    /// Nothing to write: the task as it is (absent, `NOT_FOUND`), its local
    /// ref caught up with the remote's when behind it.
    fn unchanged(&self, tip: remote::Tip, current: Option<Known>, tasks: &[Known]) -> Result<Ran> {
        let store = &self.ctx.store;
        let cur = current.ok_or_else(|| not_found(Some(self.plan), self.id, tasks))?;
        if tip.local_behind(store)? {
            let refname = task_ref(self.plan, self.id);
            remote::adopt(
                store,
                &refname,
                cur.commit,
                &event_actor(self.ctx),
                "task: catch up",
            )?;
        }
        Ok(self.ran(cur.record, Some(cur.commit), true, None))
    }
}

/// Whether `record` changes the task's dependencies (to some).
fn deps_changed(current: Option<&Known>, record: &TaskRecord) -> bool {
    let deps_before = current
        .map(|c| c.record.depends_on.clone())
        .unwrap_or_default();
    record.depends_on != deps_before && !record.depends_on.is_empty()
}

/// In a `task done`'s round: the ledger's next version with the entries
/// `holder` holds for the task released (its ids), written to go in the
/// round's push; after [`RELEASE_ROUNDS`] lost rounds, nothing written and
/// the ids said to be still held. A ledger that cannot be read (forged,
/// corrupt: `reservations --repair` says why) is left alone.
fn release_task(
    txn: &mut Txn<'_>,
    holder: &str,
    plan: &str,
    id: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    let now = txn.store().clock.now();
    let key = LEDGER.to_string();
    let Ok(Some(mut ledger)) = txn.current::<Ledger>(&key) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let ids = reservation::release_task(&mut ledger.value, holder, plan, id, now);
    if ids.is_empty() || txn.attempt() > RELEASE_ROUNDS {
        return Ok((Vec::new(), ids));
    }
    let event = Event::new(
        "released",
        holder,
        format!(
            "{holder} releases {} (task {plan}/{id} done)",
            ids.join(" ")
        ),
    );
    txn.write(&key, &ledger.value, &event)?;
    Ok((ids, Vec::new()))
}

/// The plan's next version on the one just fetched (its tree as it is, a
/// journal entry saying the dependencies changed), as a companion of the
/// task's push: the remote takes it only if nobody else moved the plan
/// since — so two dependency changes decided on the same graph never both
/// publish. Offline, or with a plan not published yet, none: the local
/// CAS of the task arbitrates alone there.
fn graph_version(ctx: &Ctx, txn: &mut Txn<'_>, plan_ref: &str, event: &Event) -> Result<()> {
    let Some(published) = txn.tip(plan_ref)?.remote else {
        return Ok(());
    };
    let store = &ctx.store;
    let mut entry = Event::new(
        "task-dependencies",
        &event.actor,
        format!("dependencies changed: {}", event.summary),
    );
    for (k, v) in &event.trailers {
        entry = entry.trailer(k, v.clone());
    }
    let tree = store.commit_tree(published)?;
    let commit = store.commit(tree, &[published], &entry)?;
    txn.push_along(PushUpdate {
        refname: plan_ref.to_string(),
        new: Some(commit.to_string()),
        expected: Some(published.to_string()),
    });
    Ok(())
}

fn event_actor(ctx: &Ctx) -> String {
    ctx.actor().unwrap_or_else(|_| "git-swarm".into())
}

/// A claim, renew, release, block, done, cancel or recover on task `id`.
pub fn act(ctx: &Ctx, plan: Option<&str>, id: &str, op: OpArgs) -> Result<Ran> {
    let actor = ctx.actor()?;
    let plan = resolve_plan(ctx, plan, id)?;
    let lease = match &op {
        OpArgs::Claim { lease } | OpArgs::Renew { lease } | OpArgs::Recover { lease, .. } => {
            Some(ctx.lease(lease.as_deref(), &task::LEASE)?)
        }
        _ => None,
    };
    op.validate()?;
    let now = ctx.store.clock.now();
    let command = op.name();
    // A done releases the task's reservations in its own push.
    let release_for = matches!(op, OpArgs::Done { .. }).then_some(actor.as_str());
    let done = matches!(op, OpArgs::Done { .. });
    let mut ran = publish_releasing(ctx, &plan, id, command, release_for, |current, tasks| {
        let cur = current.ok_or_else(|| not_found(Some(&plan), id, tasks))?;
        let lease = lease.unwrap_or_default();
        let op = match &op {
            OpArgs::Claim { .. } => Op::Claim { lease },
            OpArgs::Renew { .. } => Op::Renew { lease },
            OpArgs::Release => Op::Release,
            OpArgs::Block { reason } => Op::Block {
                reason: reason.clone(),
            },
            OpArgs::Done { unverified, base } => Op::Done {
                work: work(ctx, &cur.record, base.as_deref())?,
                unverified: unverified.clone(),
            },
            OpArgs::Cancel => Op::Cancel,
            OpArgs::Recover { owner, reason, .. } => Op::Recover {
                owner: owner.clone().unwrap_or_else(|| actor.clone()),
                reason: reason.clone(),
                lease,
            },
        };
        let st = statuses(tasks);
        let dep = |d: &str| st.get(d).copied();
        match task::decide(&cur.record, &actor, &op, now, &dep)? {
            Decision::Already => Ok(None),
            Decision::Write(rec, ev) => Ok(Some((*rec, ev))),
        }
    })?;
    if done {
        end_lane(ctx, &mut ran);
    }
    Ok(ran)
}

/// A task done on merged work (not `--unverified`, not a task without a
/// branch) ends its lane: the lane record and its child plan are closed
/// ([`crate::ops::lane::end`], the mechanism `lead merge` uses). Run again
/// (the task already done), it closes what an interrupted run left.
fn end_lane(ctx: &Ctx, ran: &mut Ran) {
    let rec = &ran.record;
    if rec.status != Status::Done || rec.done_unverified || rec.branch.is_none() {
        return;
    }
    let Some(feature) = rec.lane.as_deref() else {
        return;
    };
    let Ok(lane) = crate::records::lane::require_newest(&ctx.store, ctx.remote(), feature) else {
        return;
    };
    let own = format!("{}/{}", ran.plan, ran.id);
    if !lane.record.is_active() || lane.record.task.as_deref() != Some(own.as_str()) {
        return;
    }
    failpoint::point("task-done:lane-end");
    let ended = crate::ops::lane::end::end(ctx, &lane, &ran.plan);
    ran.ended = ended.closed;
    ran.warnings = ended.warnings;
}

/// `lead merge` landed task `id` of `plan` in `commit`: mark it done on
/// the leader's word (no holder check; the merge is the evidence).
pub fn landed(ctx: &Ctx, plan: &str, id: &str, commit: &str) -> Result<Ran> {
    let actor = ctx.actor()?;
    let now = ctx.store.clock.now();
    let op = Op::Landed {
        commit: commit.to_string(),
    };
    publish_releasing(ctx, plan, id, "done", None, |current, tasks| {
        let cur = current.ok_or_else(|| not_found(Some(plan), id, tasks))?;
        let st = statuses(tasks);
        let dep = |d: &str| st.get(d).copied();
        match task::decide(&cur.record, &actor, &op, now, &dep)? {
            Decision::Already => Ok(None),
            Decision::Write(rec, ev) => Ok(Some((*rec, ev))),
        }
    })
}

/// A task command's arguments, as the CLI passes them.
#[derive(Debug, Clone)]
pub enum OpArgs {
    Claim {
        lease: Option<String>,
    },
    Renew {
        lease: Option<String>,
    },
    Release,
    Block {
        reason: Option<String>,
    },
    Done {
        unverified: Option<String>,
        base: Option<String>,
    },
    Cancel,
    Recover {
        owner: Option<String>,
        reason: String,
        lease: Option<String>,
    },
}

impl OpArgs {
    pub fn name(&self) -> &'static str {
        match self {
            OpArgs::Claim { .. } => "claim",
            OpArgs::Renew { .. } => "renew",
            OpArgs::Release => "release",
            OpArgs::Block { .. } => "block",
            OpArgs::Done { .. } => "done",
            OpArgs::Cancel => "cancel",
            OpArgs::Recover { .. } => "recover",
        }
    }

    fn validate(&self) -> Result<()> {
        match self {
            OpArgs::Recover { owner, reason, .. } => {
                if let Some(o) = owner {
                    names::validate_address(o)?;
                }
                if reason.trim().is_empty() {
                    return Err(
                        Error::new(Code::Usage, "task recover needs a non-empty --reason").hint(
                            "say why the claim is taken over, e.g. --reason \"ann's machine died\"",
                        ),
                    );
                }
                crate::secret::check_fields("the recovery", &[("--reason", reason)])
            }
            OpArgs::Block { reason: Some(r) } => {
                crate::secret::check_fields("the block", &[("--reason", r)])
            }
            OpArgs::Done {
                unverified: Some(r),
                ..
            } => {
                if r.trim().is_empty() {
                    return Err(Error::new(
                        Code::Usage,
                        "--unverified needs a non-empty --reason",
                    ));
                }
                crate::secret::check_fields("the done", &[("--reason", r)])
            }
            _ => Ok(()),
        }
    }
}

/// Whether the task's branch is merged: the lane rule (an ancestor of its
/// base, or a merged verdict note on its head). The base is `--base`, else
/// the lane's base when the task names a lane, else the default base.
fn work(ctx: &Ctx, task: &TaskRecord, base_flag: Option<&str>) -> Result<Work> {
    let Some(branch) = &task.branch else {
        return Ok(Work::Unbound);
    };
    let store = &ctx.store;
    let mut head = store.ref_target(&format!("refs/heads/{branch}"))?;
    if head.is_none() {
        if let Some(r) = ctx.code_remote() {
            head = store.ref_target(&format!("refs/remotes/{r}/{branch}"))?;
        }
    }
    let lane = match &task.lane {
        Some(l) => crate::records::lane::load(store, l)?,
        None => None,
    };
    let base_name = match (base_flag, &lane) {
        (Some(b), _) => b.to_string(),
        (None, Some(l)) => l.record.base.clone(),
        (None, None) => crate::session::lane::default_base(ctx),
    };
    let base_commit = lane.map(|l| l.record.base_commit).unwrap_or_default();
    // The merge happened at the remote (a PR, the leader's push): judge
    // on the base as the remote has it now, not as last fetched.
    let refreshed = crate::session::base::refresh(ctx, &base_name);
    let mut bases: Vec<ObjectId> = store.git.resolve(&base_name)?.into_iter().collect();
    if let Some(tracking) = refreshed.tracking() {
        bases.extend(store.git.resolve(tracking)?);
    }
    let stale = refreshed
        .warning(&base_name, "judged on")
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let Some(h) = head else {
        return Ok(Work::NotMerged {
            why: format!("its branch {branch} does not exist here (fetch it, or `git swarm sync`)"),
        });
    };
    let verdict = crate::records::note::has_merged_verdict(store, h)?;
    let in_base = !verdict
        && bases
            .iter()
            .any(|&b| store.is_ancestor(h, b).unwrap_or(false));
    use crate::records::lane::Merged;
    Ok(
        match crate::records::lane::merged_state(head, verdict, in_base, &base_commit) {
            Merged::Verdict => Work::Merged { how: "verdict" },
            Merged::Ancestry => Work::Merged { how: "ancestry" },
            Merged::Empty => Work::NotMerged {
                why: format!("its branch {branch} has no commits beyond its base {base_name}"),
            },
            _ => Work::NotMerged {
                why: format!(
                    "its branch {branch} is not merged into {base_name} and has no merged verdict note{stale}"
                ),
            },
        },
    )
}
