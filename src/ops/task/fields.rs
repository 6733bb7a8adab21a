//! `task new` and `task update`: a task's fields (never its claim), with
//! the dependency graph checked before anything is written.

use std::collections::BTreeMap;

use super::{not_found, publish, Ran};
use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::task::Known;
use crate::records::task::{self, TaskRecord};
use crate::session::Ctx;
use crate::store::remote;

/// The fields `task new` and `task update` set (None: unchanged).
#[derive(Debug, Clone, Default)]
pub struct Fields {
    pub title: Option<String>,
    pub depends_on: Option<Vec<String>>,
    pub files_hint: Option<Vec<String>>,
    pub acceptance: Option<Vec<String>>,
    pub owner: Option<String>,
    pub branch: Option<String>,
    pub lane: Option<String>,
    pub clear_owner: bool,
    pub clear_branch: bool,
}

/// `task new`.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub plan: String,
    pub id: String,
    pub fields: Fields,
}

impl Fields {
    fn validate(&self) -> Result<()> {
        if let Some(t) = &self.title {
            if t.trim().is_empty() {
                return Err(Error::new(Code::Usage, "a task needs a non-empty --title"));
            }
        }
        for d in self.depends_on.iter().flatten() {
            names::validate_name("task", d)?;
        }
        if let Some(o) = &self.owner {
            names::validate_address(o)?;
        }
        if let Some(l) = &self.lane {
            names::validate_name("feature", l)?;
        }
        if self.owner.is_some() && self.clear_owner {
            return Err(Error::new(
                Code::Usage,
                "--owner and --clear-owner contradict each other",
            ));
        }
        if (self.branch.is_some() || self.lane.is_some()) && self.clear_branch {
            return Err(Error::new(
                Code::Usage,
                "--branch/--lane and --clear-branch contradict each other",
            ));
        }
        let mut text: Vec<(String, &str)> = Vec::new();
        if let Some(t) = &self.title {
            text.push(("--title".into(), t));
        }
        if let Some(b) = &self.branch {
            text.push(("--branch".into(), b));
        }
        for (i, f) in self.files_hint.iter().flatten().enumerate() {
            text.push((format!("--files-hint[{i}]"), f));
        }
        for (i, a) in self.acceptance.iter().flatten().enumerate() {
            text.push((format!("--acceptance[{i}]"), a));
        }
        let named: Vec<(&str, &str)> = text.iter().map(|(f, v)| (f.as_str(), *v)).collect();
        crate::secret::check_fields("the task", &named)
    }

    /// Apply to `rec`; whether anything changed.
    fn apply(&self, rec: &mut TaskRecord) -> bool {
        let before = rec.clone();
        if let Some(t) = &self.title {
            rec.title = t.clone();
        }
        if let Some(d) = &self.depends_on {
            rec.depends_on = dedup(d);
        }
        if let Some(f) = &self.files_hint {
            rec.files_hint = f.clone();
        }
        if let Some(a) = &self.acceptance {
            rec.acceptance = a.clone();
        }
        if let Some(o) = &self.owner {
            rec.owner = Some(o.clone());
        }
        if self.clear_owner {
            rec.owner = None;
        }
        if let Some(l) = &self.lane {
            rec.lane = Some(l.clone());
            if self.branch.is_none() {
                rec.branch = Some(format!("feat/{l}"));
            }
        }
        if let Some(b) = &self.branch {
            rec.branch = Some(b.clone());
        }
        if self.clear_branch {
            rec.branch = None;
            rec.lane = None;
        }
        *rec != before
    }
}

fn dedup(list: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in list {
        if !out.contains(d) {
            out.push(d.clone());
        }
    }
    out
}

/// Refuse unknown dependencies and cycles, with `rec` as it would be written.
fn check_graph(rec: &TaskRecord, tasks: &[Known]) -> Result<()> {
    let mut graph: BTreeMap<String, Vec<String>> = tasks
        .iter()
        .map(|k| (k.key.id.clone(), k.record.depends_on.clone()))
        .collect();
    graph.insert(rec.id.clone(), rec.depends_on.clone());
    task::check_graph(&rec.id, &graph)
}

/// `task new`: create the task, published at once.
pub fn create(ctx: &Ctx, new: NewTask) -> Result<Ran> {
    let actor = ctx.actor()?;
    names::validate_name("plan", &new.plan)?;
    names::validate_name("task", &new.id)?;
    if new.fields.title.is_none() {
        return Err(Error::new(Code::Usage, "task new needs --title"));
    }
    new.fields.validate()?;
    let now = ctx.store.clock.now();
    let (plan, id) = (new.plan.as_str(), new.id.as_str());
    publish(ctx, plan, id, "new", |current, tasks| {
        let plan_tip = remote::tip(
            &ctx.store,
            ctx.remote(),
            &crate::records::plan::plan_ref(plan),
        )?;
        if plan_tip.base.is_none() {
            return Err(
                Error::new(Code::NotFound, format!("plan '{plan}' does not exist"))
                    .hint("create it with `git swarm plan new <plan>`"),
            );
        }
        let mut rec = TaskRecord::new(plan, id, "", now);
        new.fields.apply(&mut rec);
        if let Some(cur) = current {
            // An earlier run of this very command was published: done.
            let mut same = cur.record.clone();
            same.created_at.clone_from(&rec.created_at);
            same.updated_at.clone_from(&rec.updated_at);
            if same == rec {
                return Ok(None);
            }
            return Err(Error::new(
                Code::TaskExists,
                format!(
                    "plan '{plan}' already has a task '{id}' ({})",
                    cur.record.title
                ),
            )
            .hint("pick another id, or change it with `git swarm task update`"));
        }
        let archived = remote::tip(&ctx.store, ctx.remote(), &task::task_ref(plan, id))?;
        if archived.archived {
            return Err(Error::new(
                Code::TaskExists,
                format!("plan '{plan}' had a task '{id}' (archived by gc)"),
            )
            .hint("pick another id"));
        }
        check_graph(&rec, tasks)?;
        let ev = task::event(
            "task-created",
            &actor,
            &rec,
            format!("task {id}: {}", rec.title),
        );
        Ok(Some((rec, ev)))
    })
}

/// `task update`: change fields (never the claim or the status).
pub fn update(ctx: &Ctx, plan: Option<&str>, id: &str, fields: Fields) -> Result<Ran> {
    let actor = ctx.actor()?;
    fields.validate()?;
    let plan = super::resolve_plan(ctx, plan, id)?;
    let now = ctx.store.clock.now();
    publish(ctx, &plan, id, "update", |current, tasks| {
        let cur = current.ok_or_else(|| not_found(Some(&plan), id, tasks))?;
        let mut rec = cur.record.clone();
        if !fields.apply(&mut rec) {
            return Ok(None);
        }
        check_graph(&rec, tasks)?;
        rec.updated_at = crate::clock::rfc3339(now);
        let ev = task::event(
            "task-updated",
            &actor,
            &rec,
            format!("task {id}: fields updated"),
        );
        Ok(Some((rec, ev)))
    })
}
