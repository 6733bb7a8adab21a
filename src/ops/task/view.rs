//! `task list`, `task show`, `task ready`: what this clone knows (the
//! newer of the local ref and the remote's copy, fetched first when a
//! remote is configured).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use super::{not_found, resolve_plan, statuses};
use crate::error::Result;
use crate::names;
use crate::records::task::{self, Known, Status};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::yaml::Unreadable;
use crate::store::JournalEntry;

/// One row of `task list` / `task ready`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub plan: String,
    pub id: String,
    pub title: String,
    pub status: Status,
    pub status_label: String,
    pub owner: Option<String>,
    pub holder: Option<String>,
    pub lease_until: Option<String>,
    pub lease_left_secs: Option<i64>,
    pub lease_expired: bool,
    pub depends_on: Vec<String>,
    pub branch: Option<String>,
    pub ready: bool,
    pub published: bool,
}

/// `task list` / `task ready`.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub tasks: Vec<Row>,
    pub unreadable: Vec<Unreadable>,
    /// Dependency cycles among the tasks (plan, the cycle): their tasks
    /// can never be ready.
    pub cycles: Vec<(String, Vec<String>)>,
    #[serde(skip)]
    pub ready_only: bool,
}

fn row(k: &Known, now: Timestamp, ready: bool) -> Row {
    let r = &k.record;
    let claim = r.claim.as_ref();
    Row {
        plan: k.key.plan.clone(),
        id: k.key.id.clone(),
        title: r.title.clone(),
        status: r.status,
        status_label: r.status_label(),
        owner: r.owner.clone(),
        holder: claim.map(|c| c.holder.clone()),
        lease_until: claim.map(|c| c.lease_until.clone()),
        lease_left_secs: claim.map(|c| c.left(now).as_secs()),
        lease_expired: claim.is_some_and(|c| !c.live(now)),
        depends_on: r.depends_on.clone(),
        branch: r.branch.clone(),
        ready,
        published: k.published == Some(k.commit),
    }
}

fn load(ctx: &Ctx, plan: Option<&str>) -> Result<(Vec<Known>, Vec<Unreadable>)> {
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
    }
    fetch_refs_from(&ctx.store, ctx.remote(), &[crate::records::task::PREFIX])?;
    task::known(&ctx.store, ctx.remote(), plan)
}

/// Every task (of `plan`), with `statuses` as a filter (empty: all).
pub fn list(ctx: &Ctx, plan: Option<&str>, filter: &[Status]) -> Result<Listed> {
    let now = ctx.store.clock.now();
    let (tasks, unreadable) = load(ctx, plan)?;
    let rows = rows(&tasks, now)
        .into_iter()
        .filter(|r| filter.is_empty() || filter.contains(&r.status))
        .collect();
    Ok(Listed {
        cycles: cycles(&tasks),
        tasks: rows,
        unreadable,
        ready_only: false,
    })
}

/// The dependency cycles of each plan among `tasks`.
fn cycles(tasks: &[Known]) -> Vec<(String, Vec<String>)> {
    let mut graphs: BTreeMap<&str, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for k in tasks {
        graphs
            .entry(k.key.plan.as_str())
            .or_default()
            .insert(k.key.id.clone(), k.record.depends_on.clone());
    }
    graphs
        .into_iter()
        .flat_map(|(plan, g)| {
            crate::records::task::cycles(&g)
                .into_iter()
                .map(move |c| (plan.to_string(), c))
        })
        .collect()
}

fn rows(tasks: &[Known], now: Timestamp) -> Vec<Row> {
    // Each plan's statuses once, not once per task (10,000 tasks made that
    // quadratic).
    let mut statuses: BTreeMap<&str, BTreeMap<&str, Status>> = BTreeMap::new();
    for k in tasks {
        let plan = statuses.entry(k.key.plan.as_str()).or_default();
        plan.insert(k.key.id.as_str(), k.record.status);
    }
    tasks
        .iter()
        .map(|k| {
            let st = &statuses[k.key.plan.as_str()];
            let ready = k.record.ready(now, |d| st.get(d) == Some(&Status::Done));
            row(k, now, ready)
        })
        .collect()
}

/// Open, unclaimed tasks whose dependencies are all done.
pub fn ready(ctx: &Ctx, plan: Option<&str>) -> Result<Listed> {
    let now = ctx.store.clock.now();
    let (tasks, unreadable) = load(ctx, plan)?;
    Ok(Listed {
        cycles: cycles(&tasks),
        tasks: rows(&tasks, now).into_iter().filter(|r| r.ready).collect(),
        unreadable,
        ready_only: true,
    })
}

/// `task show`: the record and its journal (the task's audit trail).
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    pub task: serde_json::Value,
    pub commit: String,
    pub published: bool,
    pub ready: bool,
    pub journal: Vec<JournalEntry>,
    #[serde(skip)]
    pub row: Row,
}

pub fn show(ctx: &Ctx, plan: Option<&str>, id: &str) -> Result<Shown> {
    let plan = resolve_plan(ctx, plan, id)?;
    let now = ctx.store.clock.now();
    let (tasks, _) = load(ctx, Some(&plan))?;
    let Some(k) = tasks.iter().find(|k| k.key.id == id) else {
        // Unreadable: its own error; absent: not found.
        task::known_one(&ctx.store, ctx.remote(), &plan, id)?;
        return Err(not_found(Some(&plan), id, &tasks));
    };
    let row = rows(std::slice::from_ref(k), now).remove(0);
    let st = statuses(&tasks);
    let ready = k.record.ready(now, |d| st.get(d) == Some(&Status::Done));
    Ok(Shown {
        task: k.record.to_json(now),
        commit: k.commit.to_string(),
        published: row.published,
        ready,
        journal: ctx.store.journal(k.commit, Some(100))?,
        row: Row { ready, ..row },
    })
}
