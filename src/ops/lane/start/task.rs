//! `lane new F --task T`: the lane takes task T of plan P. The lane starts
//! on a child plan of P made for it (named F, parent P, titled after the
//! task), so the one-executor rule holds for the child while several lanes
//! work on P's tasks at once; T is claimed for the lane's owner and tied to
//! the lane and its branch. The claim is decided here before anything is
//! made (a task someone else holds refuses the start with nothing written)
//! and again in every round of the start's publication, where the task's
//! next version travels in the same atomic push as the child plan, the
//! lane record and the plan entry: all of it reaches the remote, or none.

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::plan::{plan_ref, PlanDoc, PlanRecord};
use crate::records::task::{self, task_ref, Decision, Known, Op, TaskRecord};
use crate::session::Ctx;
use crate::store::records::Record;
use crate::store::remote::{self, Tip};
use crate::store::Event;

/// The task a lane takes, as resolved before the start.
#[derive(Debug, Clone)]
pub struct Taking {
    pub plan: String,
    pub id: String,
    pub title: String,
    pub owner: String,
    pub feature: String,
    pub lease: jiff::SignedDuration,
}

impl Taking {
    pub fn refname(&self) -> String {
        task_ref(&self.plan, &self.id)
    }
    /// `P/T`, as the lane record names it.
    pub fn key(&self) -> String {
        format!("{}/{}", self.plan, self.id)
    }
}

/// Find task `id` (in `plan`, else in the one plan this clone or the remote
/// knows with a task of that id), fetching the tasks and plans first, and
/// check that `owner` may claim it: nothing is made when not.
pub fn resolve(
    ctx: &Ctx,
    plan: Option<&str>,
    id: &str,
    owner: &str,
    feature: &str,
) -> Result<Taking> {
    names::validate_name("task", id)?;
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
    }
    // The claim is the remote's to decide, as `task claim`'s: a remote that
    // cannot be read refuses the start before anything is made (exit 4, the
    // hint names `--offline`, which decides here).
    if let Some(r) = ctx.remote() {
        let wanted = [task::PREFIX, crate::records::plan::PREFIX];
        crate::store::mirror::fetch_refs(&ctx.store, r, &wanted)?;
    }
    let (all, _) = task::known(&ctx.store, ctx.remote(), plan)?;
    let mut found: Vec<Known> = all.into_iter().filter(|k| k.key.id == id).collect();
    let task = match found.len() {
        1 => found.remove(0),
        0 => {
            // A record there that cannot be read fails with its own error.
            if let Some(p) = plan {
                task::known_one(&ctx.store, ctx.remote(), p, id)?;
            }
            let where_ = plan.map(|p| format!(" in plan '{p}'")).unwrap_or_default();
            return Err(Error::new(
                Code::TaskNotFound,
                format!("no task '{id}'{where_}, here or on the remote"),
            )
            .hint("`git swarm task list` shows the tasks; name the plan with --plan"));
        }
        _ => {
            let plans: Vec<String> = found.iter().map(|k| k.key.plan.clone()).collect();
            return Err(Error::new(
                Code::PlanAmbiguous,
                format!("several plans have a task '{id}': {}", plans.join(", ")),
            )
            .hint("name one with --plan"));
        }
    };
    if task.key.plan == feature {
        return Err(Error::new(
            Code::Usage,
            format!(
                "the lane's plan is a child plan named after the feature, and '{feature}' is the task's own plan"
            ),
        )
        .hint("pick another feature name"));
    }
    let taking = Taking {
        plan: task.key.plan.clone(),
        id: id.to_string(),
        title: task.record.title.clone(),
        owner: owner.to_string(),
        feature: feature.to_string(),
        lease: ctx.lease(None, &task::LEASE)?,
    };
    // Refuse now what would be refused at the push: a live claim of
    // someone else, a finished task, a dependency not done.
    decide(ctx, &taking, &task.record, task.key.plan.as_str())?;
    Ok(taking)
}

/// The task's next version for the lane (None: it already is claimed by
/// the owner for this lane), decided on `current`.
fn decide(
    ctx: &Ctx,
    t: &Taking,
    current: &TaskRecord,
    plan: &str,
) -> Result<Option<(TaskRecord, Event)>> {
    let (tasks, _) = task::known(&ctx.store, ctx.remote(), Some(plan))?;
    let st: std::collections::BTreeMap<String, task::Status> = tasks
        .iter()
        .map(|k| (k.key.id.clone(), k.record.status))
        .collect();
    let dep = |d: &str| st.get(d).copied();
    let now = ctx.store.clock.now();
    let op = Op::Claim { lease: t.lease };
    let branch = crate::records::lane::branch_of(&t.feature);
    let (mut rec, mut ev) = match task::decide(current, &t.owner, &op, now, &dep)? {
        Decision::Already => {
            let ev = task::event("task-claimed", &t.owner, current, String::new());
            (current.clone(), ev)
        }
        Decision::Write(rec, ev) => (*rec, ev),
    };
    let tied = rec.lane.as_deref() == Some(&t.feature) && rec.branch.as_deref() == Some(&branch);
    if tied && rec == *current {
        return Ok(None);
    }
    rec.lane = Some(t.feature.clone());
    rec.branch = Some(branch.clone());
    ev.summary = format!(
        "task {}: claimed by {} for lane {} ({branch})",
        t.id, t.owner, t.feature
    );
    Ok(Some((rec, ev)))
}

/// The task's next version for the lane, decided on the task as `tip`
/// holds it (one write of the start's atomic push); None when nothing is
/// to be written.
pub fn next_version(ctx: &Ctx, t: &Taking, tip: &Tip) -> Result<Option<ObjectId>> {
    let store = &ctx.store;
    let Some(base) = tip.base.filter(|_| !tip.archived) else {
        return Err(Error::new(
            Code::TaskNotFound,
            format!("task {} is gone", t.key()),
        ));
    };
    let key = task::TaskKey {
        plan: t.plan.clone(),
        id: t.id.clone(),
    };
    let current = crate::store::records::Records::<TaskRecord>::new(store)
        .at(&key, base)?
        .value;
    let Some((rec, ev)) = decide(ctx, t, &current, &t.plan)? else {
        return Ok(None);
    };
    let tree = store.write_tree(&rec.to_files()?)?;
    Ok(Some(store.commit(tree, &[base], &ev)?))
}

/// Offline, or left for `sync`: the claim written here by the local CAS.
pub fn claim_locally(ctx: &Ctx, t: &Taking, actor: &str) -> Result<()> {
    let refname = t.refname();
    let tip = Tip::local(ctx.store.ref_target(&refname)?);
    let tip = match tip.base {
        Some(_) => tip,
        None => remote::tip(&ctx.store, ctx.remote(), &refname)?,
    };
    let Some(commit) = next_version(ctx, t, &tip)? else {
        return Ok(());
    };
    ctx.store.cas(
        &refname,
        tip.local,
        Some(commit),
        actor,
        "lane new: task claimed",
    )
}

/// The child plan the lane starts on: made here (the local ref created)
/// when no plan of that name is known; an existing one of the same parent
/// is taken (a re-run, or a plan the coordinator made for it). Returns
/// whether it was made here. The parent plan, when only the remote's copy
/// is here, is taken locally too, so that `status` shows the tree.
pub fn child_plan(ctx: &Ctx, t: &Taking, actor: &str) -> Result<bool> {
    let store = &ctx.store;
    let parent_ref = plan_ref(&t.plan);
    let parent_tip = remote::tip(store, ctx.remote(), &parent_ref)?;
    if let Some(p) = parent_tip.base {
        if parent_tip.local_behind(store)? {
            remote::adopt(store, &parent_ref, p, actor, "lane new: the parent plan")?;
        }
    }
    let refname = plan_ref(&t.feature);
    let tip = remote::tip(store, ctx.remote(), &refname)?;
    if let Some(existing) = tip.base {
        let doc = crate::store::records::Records::<PlanDoc>::new(store)
            .at(&t.feature, existing)?
            .value;
        if doc.record.parent.as_deref() != Some(t.plan.as_str()) {
            return Err(Error::new(
                Code::PlanExists,
                format!(
                    "plan '{}' exists and is not a child of '{}': the lane's plan is named after the feature",
                    t.feature, t.plan
                ),
            )
            .hint("pick another feature name"));
        }
        if tip.local_behind(store)? {
            remote::adopt(store, &refname, existing, actor, "lane new: the child plan")?;
        }
        return Ok(false);
    }
    let now = crate::clock::rfc3339(store.clock.now());
    let record = PlanRecord::new(&t.feature, Some(&t.title), Some(&t.plan), actor, &now);
    crate::records::plan::refuse_secrets(&format!("plan '{}'", t.feature), &record, None, &[])?;
    let text = crate::records::plan::template(&record.title, &t.feature);
    let doc = PlanDoc {
        record,
        text: Some(text),
    };
    let event = Event::new(
        "plan-created",
        actor,
        format!(
            "plan {}: created for lane {} on task {}",
            t.feature,
            t.feature,
            t.key()
        ),
    )
    .trailer("Swarm-Plan", t.feature.as_str())
    .trailer("Swarm-Parent", t.plan.as_str())
    .trailer("Swarm-Task", t.key());
    let tree = store.write_tree(&doc.to_files()?)?;
    let commit = store.commit(tree, &[], &event)?;
    store.cas(&refname, None, Some(commit), actor, "lane new: child plan")?;
    Ok(true)
}

/// Take back a child plan this start made (the start was refused).
pub fn drop_child_plan(ctx: &Ctx, feature: &str, actor: &str) {
    let refname = plan_ref(feature);
    if let Ok(Some(id)) = ctx.store.ref_target(&refname) {
        let _ = ctx
            .store
            .cas(&refname, Some(id), None, actor, "lane new: start undone");
    }
}
