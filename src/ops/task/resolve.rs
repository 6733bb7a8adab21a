//! Which task a command means: its plan (named, the lanex27s, or the only one), the task of the lane here, and the not-found error.

use std::collections::BTreeMap;

use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::task::{self, Known, Status};
use crate::session::Ctx;

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
