//! Writing one task: the publication that decides on the task as the remote has it, releases the reservations a finished task held and versions the planx27s graph when its dependencies change.

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::git::PushUpdate;
use crate::records::reservation::{self, shard, stored};
use crate::records::task::{self, task_ref, Known, TaskKey, TaskRecord};
use crate::session::Ctx;
use crate::store::records::{Publish, Txn};
use crate::store::remote;
use crate::store::Event;

use super::{not_found, Ran, MAX_ATTEMPTS, RELEASE_ROUNDS};

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
pub(super) fn publish_releasing(
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
        fetch.push(shard::PREFIX);
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
    let Ok(before) = stored::current(txn) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut ledger = before.merged();
    let ids = reservation::release_task(&mut ledger, holder, plan, id, now);
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
    stored::write(txn, &before, &ledger, &event)?;
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
