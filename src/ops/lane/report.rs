//! `report`: journal a lane report in the plan (event `lane-report`,
//! trailer `Swarm-Lane`) and keep it as the lane's `last_report`.

use gix::ObjectId;
use serde::Serialize;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::records::lane::{
    self, parse_capacity, report_event, Lane, LaneRecord, LastReport, ReportKind,
};
use crate::session::Ctx;
use crate::store::records::{Records, Update};
use crate::store::yaml::Extra;
use crate::store::{Event, Store};

/// What `report` journalled.
#[derive(Debug, Serialize)]
pub struct Reported {
    pub lane: String,
    pub plan: String,
    pub kind: &'static str,
    pub text: String,
    pub capacity: Option<String>,
    /// The plan journal commit carrying the report.
    pub commit: String,
    /// Why the lane's `last_report` copy was not updated, if it was not.
    pub warnings: Vec<String>,
}

/// `report`
pub fn report(
    ctx: &Ctx,
    lane_flag: Option<&str>,
    kind: ReportKind,
    capacity: Option<&str>,
) -> Result<Reported> {
    check_report(ctx, &kind, capacity)?;
    let capacity = report_capacity(ctx, capacity)?;
    let (feature, lane) = active_lane(ctx, lane_flag)?;
    let actor = ctx.actor()?;
    let plan_name = lane.record.plan.clone();
    crate::records::plan::require(&ctx.store, &plan_name)?;
    let line = kind.line();
    let mut entry = Event::new("lane-report", &actor, line.clone())
        .trailer("Swarm-Lane", feature.as_str())
        .trailer("Swarm-Report", kind.slug());
    if let Some(c) = &capacity {
        entry.body = Some(format!("capacity={c}"));
        entry = entry.trailer("Swarm-Capacity", c.as_str());
    }
    let (journal, capacity) = journal_once(ctx, &plan_name, &entry, capacity)?;

    let report = LastReport {
        kind: kind.slug().into(),
        text: line.clone(),
        cleared: None,
        capacity: capacity.clone(),
        at: rfc3339(ctx.store.clock.now()),
        by: actor,
        commit: journal.to_string(),
        extra: Extra::new(),
    };
    let warnings = keep_last_report(&ctx.store, &lane, &report)?
        .into_iter()
        .collect();
    Ok(Reported {
        lane: feature,
        plan: plan_name,
        kind: kind.slug(),
        text: line,
        capacity,
        commit: journal.to_string(),
        warnings,
    })
}

/// Refuses a report that carries a secret (before anything else, so that
/// not even an error message echoes it), is malformed, or points at a
/// packet that does not exist.
fn check_report(ctx: &Ctx, kind: &ReportKind, capacity: Option<&str>) -> Result<()> {
    crate::secret::check_fields(
        "the report",
        &[
            ("report", kind.line().as_str()),
            ("--capacity", capacity.unwrap_or("")),
        ],
    )?;
    kind.validate()?;
    if let ReportKind::Handoff(packet) = kind {
        // The report points at a packet: it must be one that exists.
        crate::records::packet::locate(&ctx.store, ctx.remote(), packet)?;
    }
    Ok(())
}

/// The capacity the report carries: `--capacity` as parsed, else the
/// agent's reading (the cache while fresh), `unknown` when no source
/// answers; never typed by the agent.
fn report_capacity(ctx: &Ctx, capacity: Option<&str>) -> Result<Option<String>> {
    let capacity = capacity.map(parse_capacity).transpose()?;
    Ok(match capacity {
        Some(c) => Some(c),
        None => ctx.actor_opt()?.map(|me| {
            let account = crate::integrations::capacity::account_from_env();
            crate::integrations::capacity::read(
                &ctx.store,
                &crate::integrations::capacity::Who::of(&me, account.as_deref()),
            )
            .line()
        }),
    })
}

/// The lane that reports (`--lane`, else the one whose worktree we run
/// in) and its record; a removed lane cannot report.
fn active_lane(ctx: &Ctx, lane_flag: Option<&str>) -> Result<(String, Lane)> {
    let feature = match lane_flag {
        Some(f) => f.to_string(),
        None => reporting_lane(ctx)?,
    };
    let lane = lane::require(&ctx.store, &feature)?;
    if !lane.record.is_active() {
        return Err(Error::new(
            Code::NotFound,
            format!("lane '{feature}' was removed; it cannot report"),
        ));
    }
    Ok((feature, lane))
}

/// Journals the report's `entry` in the plan, once: a rerun of a report
/// killed after it was journalled finds its own entry at the head of the
/// plan's journal and keeps it (with the capacity it recorded).
fn journal_once(
    ctx: &Ctx,
    plan_name: &str,
    entry: &Event,
    capacity: Option<String>,
) -> Result<(ObjectId, Option<String>)> {
    if let Some(found) = own_report(&ctx.store, ctx.remote(), plan_name, entry)? {
        return Ok(found);
    }
    let journal =
        crate::records::plan::journal(&ctx.store, ctx.remote(), plan_name, entry, None, None)?
            .expect("an entry without `once` is always written");
    crate::failpoint::point("report:journalled");
    Ok((journal, capacity))
}

/// The same report (kind, text, actor, lane) already at the head of the
/// plan's journal, nothing after it: a run killed after journalling it. Its
/// commit and the capacity it recorded, so the rerun keeps that entry rather
/// than writing a second one.
fn own_report(
    store: &Store,
    remote: Option<&str>,
    plan: &str,
    entry: &Event,
) -> Result<Option<(ObjectId, Option<String>)>> {
    let (_, Some(head)) = crate::records::plan::newest_head(store, remote, plan)? else {
        return Ok(None);
    };
    let Some(last) = store.journal(head, Some(1))?.into_iter().next() else {
        return Ok(None);
    };
    let trailer = |key: &str| {
        entry
            .trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let same = head == last.commit.as_str()
        && last.event == entry.kind
        && last.actor == entry.actor
        && last.summary == entry.summary.lines().next().unwrap_or("").trim()
        && ["Swarm-Lane", "Swarm-Report"]
            .iter()
            .all(|k| last.trailers.get(*k).map(String::as_str) == trailer(k))
        // A capacity given anew (`--capacity`) must be the one it recorded.
        && trailer("Swarm-Capacity")
            .is_none_or(|c| last.trailers.get("Swarm-Capacity").map(String::as_str) == Some(c));
    Ok(same.then(|| (head, last.trailers.get("Swarm-Capacity").cloned())))
}

/// The lane whose worktree we run in; an error saying why when none.
fn reporting_lane(ctx: &Ctx) -> Result<String> {
    if let Some(lane) = ctx.lane_here() {
        return Ok(lane.feature);
    }
    if let (Some(moved), Some(here)) = (ctx.moved_from_here(), ctx.store.workdir()) {
        return Err(crate::session::lane::moved_error(&moved, here));
    }
    Err(Error::new(
        Code::Usage,
        "which lane is reporting? you are not in a lane worktree",
    )
    .hint("pass --lane <feature>, or run it inside the lane's worktree"))
}

/// Keep a journalled report as the lane's `last_report`. The plan's journal
/// is the report; this copy is a convenience. A lane record moved by a
/// concurrent writer is re-read and written again; losing that race every
/// time, or the lane being removed meanwhile, costs only the copy (returned
/// as a warning). Any other failure is an error.
fn keep_last_report(store: &Store, lane: &Lane, report: &LastReport) -> Result<Option<String>> {
    let feature = lane.feature.clone();
    let ours = ObjectId::from_hex(report.commit.as_bytes()).ok();
    let mut warning = None;
    let step = |current: Option<&crate::store::records::Versioned<LaneRecord>>| {
        warning = None;
        let Some(current) = current else {
            warning = Some(format!("lane '{feature}' has no record any more"));
            return Ok(Update::Keep);
        };
        if !current.value.is_active() {
            warning = Some(format!(
                "lane '{feature}' was removed meanwhile; its last_report was not updated"
            ));
            return Ok(Update::Keep);
        }
        // A report journalled after ours got there first: it is the last one.
        let theirs = current
            .value
            .last_report
            .as_ref()
            .and_then(|r| ObjectId::from_hex(r.commit.as_bytes()).ok());
        if let (Some(o), Some(t)) = (ours, theirs) {
            // Ours already kept (a rerun), or one journalled after ours.
            if store.is_ancestor(o, t).unwrap_or(false) {
                return Ok(Update::Keep);
            }
        }
        let record = current.value.with_report(report);
        Ok(Update::Write(record, report_event(&feature, report)))
    };
    match Records::<LaneRecord>::new(store).update(&lane.feature, step) {
        Ok(_) => Ok(warning),
        Err(e) if e.code == Code::CasFailed => Ok(Some(format!(
            "lane '{}' kept changing; its last_report was not updated",
            lane.feature
        ))),
        Err(e) => Err(e.hint(format!(
            "the report itself is in plan '{}' ({}); only lane '{}''s last_report copy is missing; the same report run again completes it without a second entry",
            lane.record.plan,
            &report.commit[..12],
            lane.feature
        ))),
    }
}
