//! `git swarm finish --plan P`: the end of a plan, by the leader of the
//! current epoch. It checks that every task of the plan (and of its child
//! plans) is done or cancelled, every lane merged or closed and every
//! handoff packet accepted or withdrawn, and refuses, naming each open
//! thing (`PLAN_NOT_FINISHED`, nothing written), while one is not. Then it
//! closes what is left — merged lanes ([`crate::ops::lane::end`], the
//! mechanism `task done` and `lead merge` use), child plans, the
//! reservations still held for the plan's tasks, the plan itself —
//! publishes that, releases the leadership (the fenced step: a leader
//! whose epoch was taken over meanwhile is refused `LEAD_FENCED`), and
//! writes the completion report ([`report`]).
//!
//! Re-run after a kill it finishes: every closing step is idempotent, and
//! a run that finds the leadership released by its own actor on a closed
//! plan (the kill came after the release) writes the report again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::names;
use crate::ops::lead::{self, merge};
use crate::records::lane::{self, Lane};
use crate::records::lead::Op;
use crate::records::packet::{self, PacketVersion};
use crate::records::plan::{self as plan_rec, Plan};
use crate::records::task::{self, Known, Status};
use crate::session::Ctx;
use crate::store::remote;

pub mod report;

/// What `finish` was asked.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub plan: String,
    /// Write the report there (else it is printed).
    pub out: Option<PathBuf>,
}

/// What `finish` did.
#[derive(Debug, Clone, Serialize)]
pub struct Finished {
    pub plan: String,
    pub leader: String,
    /// The epoch the leadership was released at.
    pub epoch: u64,
    /// An earlier run had released the leadership; this one completed
    /// what was left and wrote the report again.
    pub resumed: bool,
    /// What this run closed: `lane F`, `plan C`, `reservation r3`, `plan P`.
    pub closed: Vec<String>,
    /// The leadership was released by this run.
    pub released: bool,
    /// Where the report was written (None: it is `report`, printed).
    pub out: Option<String>,
    /// The completion report, markdown.
    pub report: String,
    pub warnings: Vec<String>,
}

/// One thing that keeps the plan from finishing.
#[derive(Debug, Clone, Serialize)]
pub struct Open {
    /// `task`, `lane`, `packet`.
    pub kind: &'static str,
    pub name: String,
    pub why: String,
}

/// What finish reads: the plan, its child plans, their tasks, lanes and
/// packets, as the records are after a sync.
pub(crate) struct Scope {
    pub plan: Plan,
    /// The plan and every plan below it, parents before children.
    pub plans: Vec<Plan>,
    pub tasks: Vec<Known>,
    /// Every lane of the plans, active or closed.
    pub lanes: Vec<Lane>,
    pub packets: Vec<PacketVersion>,
}

impl Scope {
    fn names(&self) -> BTreeSet<String> {
        self.plans.iter().map(|p| p.record.plan.clone()).collect()
    }
}

/// Close what the plan still holds open: the merged lanes, then the child
/// plans (deepest first) and the plan, then the reservations held for the
/// plan's tasks. Returns what was closed, in that order.
fn close_all(
    ctx: &Ctx,
    plan: &str,
    scope: &Scope,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>> {
    let mut closed = Vec::new();
    for l in scope.lanes.iter().filter(|l| l.record.is_active()) {
        let ended = crate::ops::lane::end::end(ctx, l, plan);
        closed.extend(ended.closed);
        warnings.extend(ended.warnings);
    }
    failpoint::point("finish:lanes-closed");
    for p in scope.plans.iter().rev() {
        if p.record.status.is_closed() {
            continue;
        }
        let name = &p.record.plan;
        let changed = crate::ops::plan::close(ctx, name, false)?;
        if changed.changed && !closed.contains(&format!("plan {name}")) {
            closed.push(format!("plan {name}"));
        }
    }
    let tasks: Vec<(String, String)> = scope
        .tasks
        .iter()
        .map(|k| (k.key.plan.clone(), k.key.id.clone()))
        .collect();
    let why = format!("plan {plan} finished");
    for id in crate::ops::reserve::release_for_tasks(ctx, &tasks, &why)? {
        closed.push(format!("reservation {id}"));
    }
    Ok(closed)
}

/// `git swarm finish --plan P`.
pub fn finish(ctx: &Ctx, args: &Args) -> Result<Finished> {
    let plan = args.plan.as_str();
    names::validate_name("plan", plan)?;
    let actor = ctx.actor()?;
    // The fence, read only: nothing is written before the checks pass. A
    // stale leader's renew fails LEAD_FENCED (NOT_LEADER for one who never
    // led), writing nothing; the release at the end is the fenced write.
    let check = lead::check(ctx, plan)?;
    let resumed = !check.is_leader && released_by(ctx, plan, &actor)?;
    if !check.is_leader && !resumed {
        lead::run(
            ctx,
            plan,
            Op::Renew {
                lease: None,
                lanes: None,
            },
        )?;
    }
    let mut warnings = Vec::new();
    if ctx.remote().is_some() {
        let report = crate::ops::sync::sync(ctx, &actor, &mut |_| {})?;
        warnings.extend(report.warnings);
    }
    let scope = read_scope(ctx, plan)?;
    let code = ctx.code_remote().map(str::to_string);
    fetch_code(ctx, code.as_deref(), &scope.lanes);
    let open = open_items(ctx, code.as_deref(), &scope)?;
    if !open.is_empty() {
        return Err(not_finished(plan, &open));
    }
    let closed = close_all(ctx, plan, &scope, &mut warnings)?;
    if ctx.remote().is_some() {
        let report = crate::ops::sync::sync(ctx, &actor, &mut |_| {})?;
        warnings.extend(report.warnings);
    }
    failpoint::point("finish:closed");
    let (released, epoch) = if resumed {
        (false, check.epoch)
    } else {
        let ran = lead::run(ctx, plan, Op::Release)?;
        (ran.change.is_some(), ran.record.epoch)
    };
    failpoint::point("finish:released");
    // The report, from the records as they now are.
    let scope = read_scope(ctx, plan)?;
    let text = report::render(ctx, code.as_deref(), &scope, &actor)?;
    let out = match &args.out {
        Some(path) => {
            write_report(path, &text)?;
            Some(path.display().to_string())
        }
        None => None,
    };
    Ok(Finished {
        plan: plan.to_string(),
        leader: actor,
        epoch,
        resumed,
        closed,
        released,
        out,
        report: text,
        warnings,
    })
}

/// The leader record's newest version is a release by `actor` and the
/// plan is closed: an earlier `finish` got past its release.
fn released_by(ctx: &Ctx, plan: &str, actor: &str) -> Result<bool> {
    let log = lead::log(ctx, plan)?;
    let Some(last) = log.entries.first() else {
        return Ok(false);
    };
    if last.event != "lead-released" || last.actor != actor {
        return Ok(false);
    }
    Ok(plan_rec::load(&ctx.store, plan)?.is_some_and(|p| p.record.status.is_closed()))
}

/// The plan, its child plans (to any depth), their tasks, lanes and packets.
pub(crate) fn read_scope(ctx: &Ctx, plan: &str) -> Result<Scope> {
    let store = &ctx.store;
    let root = plan_rec::require(store, plan)?;
    let (all, _) = plan_rec::all(store)?;
    let mut plans = vec![root.clone()];
    let mut i = 0;
    while i < plans.len() && plans.len() <= 10_000 {
        let parent = plans[i].record.plan.clone();
        let mut kids: Vec<Plan> = all
            .iter()
            .filter(|p| p.record.parent.as_deref() == Some(parent.as_str()))
            .filter(|p| !plans.iter().any(|q| q.record.plan == p.record.plan))
            .cloned()
            .collect();
        kids.sort_by(|a, b| a.record.plan.cmp(&b.record.plan));
        plans.extend(kids);
        i += 1;
    }
    let names: BTreeSet<String> = plans.iter().map(|p| p.record.plan.clone()).collect();
    let mut tasks = Vec::new();
    for p in &names {
        tasks.extend(task::known(store, ctx.remote(), Some(p))?.0);
    }
    tasks.sort_by(|a, b| (&a.key.plan, &a.key.id).cmp(&(&b.key.plan, &b.key.id)));
    let (lanes, _) = lane::known(store, ctx.remote())?;
    let mut lanes: Vec<Lane> = lanes
        .into_iter()
        .filter(|l| {
            names.contains(&l.record.plan)
                || l.record
                    .task
                    .as_deref()
                    .and_then(|t| t.split_once('/'))
                    .is_some_and(|(p, _)| names.contains(p))
        })
        .collect();
    lanes.sort_by(|a, b| a.feature.cmp(&b.feature));
    let mut packets = Vec::new();
    for p in &names {
        let prefix = packet::plan_prefix(p);
        for (below, tip) in remote::tips_under(store, ctx.settings.remote.as_deref(), &prefix)? {
            let Some(base) = tip.base else { continue };
            if let Ok(v) = packet::read_at(store, &format!("{prefix}{below}"), base) {
                packets.push(v);
            }
        }
    }
    packets.sort_by(|a, b| {
        (&a.packet.created_at, &a.packet.id).cmp(&(&b.packet.created_at, &b.packet.id))
    });
    Ok(Scope {
        plan: root,
        plans,
        tasks,
        lanes,
        packets,
    })
}

/// The lanes' branches and bases as the code remote has them.
fn fetch_code(ctx: &Ctx, code: Option<&str>, lanes: &[Lane]) {
    let Some(code) = code else { return };
    for l in lanes.iter().filter(|l| l.record.is_active()) {
        let base = merge::base_branch(&l.record.base, code);
        for b in [base.as_str(), l.record.branch.as_str()] {
            let spec = format!("+refs/heads/{b}:refs/remotes/{code}/{b}");
            let _ = ctx.store.git.fetch(code, std::slice::from_ref(&spec));
        }
    }
}

/// Every task not done or cancelled, every active lane whose branch is
/// not merged into its base, every packet neither accepted nor withdrawn.
fn open_items(ctx: &Ctx, code: Option<&str>, scope: &Scope) -> Result<Vec<Open>> {
    let now = ctx.store.clock.now();
    let mut open = Vec::new();
    for k in &scope.tasks {
        let r = &k.record;
        if matches!(r.status, Status::Done | Status::Cancelled) {
            continue;
        }
        let holder = r
            .live_holder(now)
            .map(|h| format!(", claimed by {h}"))
            .unwrap_or_default();
        let lane = r
            .lane
            .as_deref()
            .map(|l| format!(", lane {l}"))
            .unwrap_or_default();
        open.push(Open {
            kind: "task",
            name: format!("{}/{}", k.key.plan, k.key.id),
            why: format!("{}{holder}{lane}", r.status_label()),
        });
    }
    for l in scope.lanes.iter().filter(|l| l.record.is_active()) {
        if let Some(why) = unmerged(ctx, code, l)? {
            open.push(Open {
                kind: "lane",
                name: l.feature.clone(),
                why,
            });
        }
    }
    for v in scope.packets.iter().filter(|v| v.is_open()) {
        let p = &v.packet;
        open.push(Open {
            kind: "packet",
            name: p.id.clone(),
            why: format!(
                "written by {} ({}) for lane {}, neither accepted nor withdrawn",
                p.author,
                p.reason,
                p.lane.as_deref().unwrap_or("-")
            ),
        });
    }
    Ok(open)
}

/// Why an active lane is not merged (None: it is, or it has no work).
fn unmerged(ctx: &Ctx, code: Option<&str>, l: &Lane) -> Result<Option<String>> {
    let r = &l.record;
    let store = &ctx.store;
    let mut head = store.ref_target(&format!("refs/heads/{}", r.branch))?;
    let mut base = store.git.resolve(&r.base)?;
    if let Some(code) = code {
        let b = merge::base_branch(&r.base, code);
        if let Some(h) = store.ref_target(&format!("refs/remotes/{code}/{}", r.branch))? {
            // The pushed head, when the local branch is not ahead of it.
            if head.is_none_or(|local| store.is_ancestor(local, h).unwrap_or(false)) {
                head = Some(h);
            }
        }
        if let Some(t) = store.ref_target(&format!("refs/remotes/{code}/{b}"))? {
            base = Some(t);
        }
    }
    let state = crate::session::lane::merged(ctx, r, head, base)?;
    use crate::records::lane::Merged;
    match state {
        Merged::Ancestry | Merged::Verdict | Merged::Empty => return Ok(None),
        Merged::BranchMissing => {
            return Ok(Some(format!(
                "its branch {} is neither here nor on the code remote (push it, or `git swarm lane rm {}` in its clone)",
                r.branch, l.feature
            )))
        }
        Merged::No => {}
    }
    // A squash or rebase landing carries the lane's trailer.
    if let (Some(h), Some(b)) = (head, base) {
        let (h, b) = (h.to_string(), b.to_string());
        let landed = merge::landings(&store.git, &r.base_commit, &b)?;
        if landed.iter().any(|x| x.feature == l.feature && x.head == h) {
            return Ok(None);
        }
    }
    Ok(Some(format!(
        "active, its branch {} is not merged into {} (land it: `git swarm lead merge --plan <P> {}`)",
        r.branch, r.base, l.feature
    )))
}

fn not_finished(plan: &str, open: &[Open]) -> Error {
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for o in open {
        *by_kind.entry(o.kind).or_default() += 1;
    }
    let lines: Vec<String> = open
        .iter()
        .map(|o| format!("{} {}: {}", o.kind, o.name, o.why))
        .collect();
    let mut err = Error::new(
        Code::PlanNotFinished,
        format!(
            "plan '{plan}' is not finished, {} still open (nothing was written):\n  {}",
            open.len(),
            lines.join("\n  ")
        ),
    );
    if by_kind.contains_key("task") {
        err = err.hint("finish each task (`git swarm task done`, or land its lane with `git swarm lead merge`) or cancel it (`git swarm task cancel <id>`)");
    }
    if by_kind.contains_key("lane") {
        err = err.hint(format!("land each lane (`git swarm lead merge --plan {plan}`), or remove it in its clone (`git swarm lane rm <F>`)"));
    }
    if by_kind.contains_key("packet") {
        err = err.hint("accept each packet (`git swarm accept <id>`) or let its author withdraw it (`git swarm packet withdraw <id> --reason …`)");
    }
    err.hint(format!("then `git swarm finish --plan {plan}` again"))
        .with_detail(serde_json::json!({ "plan": plan, "open": open }))
}

/// The report written whole or not at all (a temporary file renamed).
fn write_report(path: &std::path::Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "report.md".into());
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::new(
                Code::IoFailed,
                format!("cannot write {}: {e}", path.display()),
            )
            .hint(
                "name a file in a directory you can write, or leave --out out to print the report",
            )
        })
}
