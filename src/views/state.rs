//! `state`: a summary of where a swarm stands, derived only from this
//! clone's `refs/swarm/*` (never the working tree, the mirror or the clock),
//! so the same refs give byte-identical output on any clone. It is a view:
//! the CLI renders it as markdown, which `--write` puts in `state.md`
//! ([`write`]: untracked, excluded, replaced atomically) for agents to
//! read, and nothing ever reads it back as truth.
//!
//! The summary is a list of sections, each built by one function in
//! [`SECTIONS`]; a new kind (tasks, reservations) adds its section there.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::integrations::capacity::spend;
use crate::records::lane::LaneRecord;
use crate::records::lead::LeadRecord;
use crate::records::message::{self, Kind, Message, PREFIX};
use crate::records::note::Note;
use crate::records::packet::PacketVersion;
use crate::records::plan::PlanDoc;
use crate::records::reservation::stored;
use crate::session::Ctx;
use crate::store::records::Records;
use crate::store::Store;

/// One section: a title, its lines (text), and the same as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub title: &'static str,
    pub lines: Vec<String>,
    pub items: Vec<serde_json::Value>,
}

/// The sections, in the order shown. Tasks and reservations append theirs.
pub const SECTIONS: &[(&str, Builder)] = &[
    ("Plans", plans),
    ("Leaders", leaders),
    ("Decisions", decisions),
    ("Escalations", escalations),
    ("Open questions", asks),
    ("Lanes", lanes),
    ("Open packets", packets),
    ("Verification", verification),
    ("Open tasks", tasks),
    ("Reservations", reservations),
    ("Spend", spend),
];

type Builder = fn(&Store, Option<&str>) -> Result<Vec<(String, serde_json::Value)>>;

#[derive(Debug, Clone, Serialize)]
pub struct State {
    pub plan: Option<String>,
    pub sections: Vec<Section>,
    /// Where `--write` put it ([`write`]).
    pub written: Option<String>,
}

fn item<T: Serialize>(line: String, value: &T) -> (String, serde_json::Value) {
    (
        line,
        serde_json::to_value(value).expect("records serialise"),
    )
}

fn plans(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = Records::<PlanDoc>::new(store).all()?;
    Ok(all
        .into_iter()
        .filter(|v| plan.is_none_or(|p| v.key == p))
        .map(|v| {
            let r = &v.value.record;
            let line = format!("{} ({}): {}", r.plan, r.status, r.title);
            item(line, &serde_json::json!({ "plan": r.plan, "status": r.status.as_str(), "title": r.title }))
        })
        .collect())
}

fn leaders(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = Records::<LeadRecord>::new(store).all()?;
    Ok(all
        .into_iter()
        .filter(|v| plan.is_none_or(|p| v.key == p))
        .map(|v| {
            let r = v.value;
            let who = match (&r.leader, r.released) {
                (Some(l), false) => l.clone(),
                _ => "nobody (released)".into(),
            };
            let lease = r.lease_until.clone().unwrap_or_else(|| "-".into());
            let line = format!("{}: {who}, epoch {}, lease until {lease}", r.plan, r.epoch);
            item(line, &serde_json::json!({ "plan": r.plan, "leader": r.leader, "released": r.released, "epoch": r.epoch, "lease_until": r.lease_until, "lanes": r.lanes }))
        })
        .collect())
}

fn messages(store: &Store, plan: Option<&str>, kind: Kind) -> Result<Vec<Message>> {
    let (all, _) = Records::<Message>::new(store).all_under(PREFIX)?;
    let mut out: Vec<Message> = all
        .into_iter()
        .map(|v| v.value)
        .filter(|m| m.kind == kind && plan.is_none_or(|p| m.plan.as_deref() == Some(p)))
        .collect();
    message::sort(&mut out);
    Ok(out)
}

fn relayed(m: &Message) -> String {
    m.relayed_from
        .as_deref()
        .map(|r| format!(" (relayed from {r})"))
        .unwrap_or_default()
}

fn decisions(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    Ok(messages(store, plan, Kind::Decision)?
        .iter()
        .map(|m| {
            let reason = m.reason.as_deref().unwrap_or("-");
            let line = format!("{} {}: {} — {reason}{}", m.at, m.from, m.body, relayed(m));
            item(line, m)
        })
        .collect())
}

fn escalations(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    Ok(messages(store, plan, Kind::Escalation)?
        .iter()
        .map(|m| {
            let class = m.class.as_deref().unwrap_or("-");
            let task = m
                .task
                .as_deref()
                .map(|t| format!(" task {t}"))
                .unwrap_or_default();
            let line = format!(
                "{} {} [{class}]{task} -> {}: {}{}",
                m.at,
                m.from,
                m.to,
                m.body,
                relayed(m)
            );
            item(line, m)
        })
        .collect())
}

/// Questions (`ask`) nobody replied to yet.
fn asks(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let replied: std::collections::BTreeSet<String> = messages(store, plan, Kind::Reply)?
        .into_iter()
        .filter_map(|m| m.reply_to)
        .collect();
    Ok(messages(store, plan, Kind::Ask)?
        .iter()
        .filter(|m| !replied.contains(&m.id))
        .map(|m| item(format!("{} {} -> {}: {}", m.id, m.from, m.to, m.body), m))
        .collect())
}

fn lanes(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = Records::<LaneRecord>::new(store).all()?;
    // Each lane's agent as this clone's pool records name it (no clock:
    // whether its lease lapsed is for `status`, which reads the time).
    let (accounts, _) = Records::<crate::records::pool::Account>::new(store).all()?;
    let accounts: Vec<_> = accounts.into_iter().map(|v| v.value).collect();
    let agents = super::agents::derive(&accounts, &[], jiff::Timestamp::UNIX_EPOCH).by_lane;
    let mut reports: BTreeMap<String, BTreeMap<String, (String, Option<String>)>> = BTreeMap::new();
    let by_lane = spend::summary(&spend::known(store, None)).lanes;
    let mut out = Vec::new();
    for v in all.into_iter().filter(|v| v.value.is_active()) {
        let r = v.value;
        if plan.is_some_and(|p| r.plan != p) {
            continue;
        }
        if !reports.contains_key(&r.plan) {
            reports.insert(r.plan.clone(), last_reports(store, &r.plan)?);
        }
        let last = reports[&r.plan].get(&r.feature).cloned();
        let shown = match &last {
            Some((text, cap)) => format!(
                ", last report: {text}{}",
                cap.as_deref()
                    .map(|c| format!(" (capacity={c})"))
                    .unwrap_or_default()
            ),
            None => String::new(),
        };
        let line = format!(
            "{} [{}] owner {}, {}{shown}",
            r.feature, r.plan, r.owner, r.state
        );
        let spent = by_lane.get(&r.feature);
        let line = match spent {
            Some(t) => format!("{line}, spent {}", spent_text(t)),
            None => line,
        };
        let (report, capacity) = last.map_or((None, None), |(t, c)| (Some(t), c));
        let agent = agents.get(&r.feature);
        let line = match agent {
            Some(a) => format!("{line}; agent {}", a.line()),
            None => line,
        };
        let agent = agent.map(|a| {
            let mut v = serde_json::to_value(a).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.remove("live");
            }
            v
        });
        out.push(item(line, &serde_json::json!({ "feature": r.feature, "plan": r.plan, "owner": r.owner, "state": r.state, "last_report": report, "capacity": capacity, "spend": spent, "agent": agent })));
    }
    Ok(out)
}

fn spent_text(t: &spend::Totals) -> String {
    let cost = t
        .cost_usd
        .map(|c| format!(", {c:.2} USD"))
        .unwrap_or_default();
    format!("{} tokens{cost}", t.total_tokens)
}

/// What the swarm spent, per plan and per task (this clone's sessions and
/// the local journals' `spend` entries).
fn spend(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let sessions = spend::known(store, None);
    let sum = spend::summary(&sessions);
    let mut out = Vec::new();
    for (p, t) in &sum.plans {
        if plan.is_some_and(|only| only != p) {
            continue;
        }
        // The plan's budget (this clone's setting), when it has one.
        let check = spend::budget_of(store, p)
            .ok()
            .flatten()
            .map(|limit| spend::check(Some(limit), p, &sessions));
        let budget = match &check {
            Some(spend::BudgetCheck::Reached { limit, .. }) => {
                format!(" — budget {limit} REACHED: nothing new is launched")
            }
            Some(spend::BudgetCheck::Under { limit, .. }) => format!(" — budget {limit}"),
            _ => String::new(),
        };
        out.push(item(
            format!("plan {p}: {}{budget}", spent_text(t)),
            &serde_json::json!({ "plan": p, "spend": t, "budget": check }),
        ));
    }
    for (k, t) in &sum.tasks {
        if plan.is_some_and(|only| !k.starts_with(&format!("{only}/"))) {
            continue;
        }
        out.push(item(
            format!("task {k}: {}", spent_text(t)),
            &serde_json::json!({ "task": k, "spend": t }),
        ));
    }
    Ok(out)
}

/// Each lane's newest report in a plan's journal: its text and capacity.
fn last_reports(store: &Store, plan: &str) -> Result<BTreeMap<String, (String, Option<String>)>> {
    let mut out = BTreeMap::new();
    let Some(tip) = store.ref_target(&crate::records::plan::plan_ref(plan))? else {
        return Ok(out);
    };
    for e in store.journal(tip, None)? {
        if e.event != "lane-report" {
            continue;
        }
        if let Some(lane) = e.trailers.get("Swarm-Lane") {
            out.entry(lane.clone())
                .or_insert_with(|| (e.summary.clone(), e.trailers.get("Swarm-Capacity").cloned()));
        }
    }
    Ok(out)
}

fn packets(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = Records::<PacketVersion>::new(store).all()?;
    Ok(all
        .into_iter()
        .filter(|v| v.value.is_open() && plan.is_none_or(|p| v.key.plan == p))
        .map(|v| {
            let p = &v.value.packet;
            let unverified = if p.unverified.is_empty() {
                String::new()
            } else {
                format!(", unverified: {}", p.unverified.join("; "))
            };
            let line = format!("{} [{}] by {} ({}){unverified}", p.id, p.plan, p.author, p.reason);
            item(line, &serde_json::json!({ "id": p.id, "plan": p.plan, "author": p.author, "reason": p.reason, "unverified": p.unverified }))
        })
        .collect())
}

/// The latest evidence: accepted packets with the gates their successor
/// must re-run (the packet's unverified claims), and the newest verify
/// verdict per pull request (from the notes; verdicts name no plan, so
/// `--plan` shows them all).
fn verification(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = Records::<PacketVersion>::new(store).all()?;
    let mut rows = Vec::new();
    for v in all.iter().filter(|v| plan.is_none_or(|p| v.key.plan == p)) {
        let Some(acc) = &v.value.acceptance else {
            continue;
        };
        let rerun = if acc.must_rerun.is_empty() {
            String::new()
        } else {
            format!("; must re-run: {}", acc.must_rerun.join("; "))
        };
        let line = format!(
            "packet {} [{}] accepted by {} at {}{rerun}",
            acc.packet, acc.plan, acc.accepted_by, acc.accepted_at
        );
        rows.push(item(line, &serde_json::json!({ "packet": acc.packet, "plan": acc.plan, "accepted_by": acc.accepted_by, "accepted_at": acc.accepted_at, "must_rerun": acc.must_rerun })));
    }
    let Some(tip) = store.ref_target(crate::store::notes::NOTES_REF)? else {
        return Ok(rows);
    };
    let mut newest: BTreeMap<(String, u64), Note> = BTreeMap::new();
    for (_, lines) in store.all_notes(tip)? {
        for note in Note::parse_all(&lines) {
            if let Note::Verdict {
                repo, number, at, ..
            } = &note
            {
                let key = (repo.clone(), *number);
                let newer = match newest.get(&key) {
                    Some(Note::Verdict { at: seen, .. }) => at > seen,
                    _ => true,
                };
                if newer {
                    newest.insert(key, note.clone());
                }
            }
        }
    }
    for note in newest.into_values() {
        if let Note::Verdict {
            state,
            repo,
            number,
            head_sha,
            confirmed_on_base,
            at,
            ..
        } = &note
        {
            let head = head_sha
                .as_deref()
                .map(|h| format!(", head {}", &h[..h.len().min(12)]))
                .unwrap_or_default();
            let base = if *confirmed_on_base {
                ", confirmed on base"
            } else {
                ""
            };
            rows.push(item(
                format!("{repo}#{number}: {state} at {at}{head}{base}"),
                &note.value(),
            ));
        }
    }
    Ok(rows)
}

/// The summary of `plan` (or every plan), from the refs alone.
pub fn state(ctx: &Ctx, plan: Option<&str>) -> Result<State> {
    if let Some(p) = plan {
        crate::names::validate_name("plan", p)?;
    }
    // From the local refs; the fetch only finds out whether the remote
    // answers (a listing that cannot reach it says so once, as all do).
    crate::store::mirror::fetch_refs_from(
        &ctx.store,
        ctx.remote(),
        &[crate::records::plan::PREFIX, crate::records::lane::PREFIX],
    )?;
    let mut sections = Vec::new();
    for (title, build) in SECTIONS {
        let rows = build(&ctx.store, plan)?;
        let (lines, items) = rows.into_iter().unzip();
        sections.push(Section {
            title,
            lines,
            items,
        });
    }
    Ok(State {
        plan: plan.map(str::to_string),
        sections,
        written: None,
    })
}

/// Write `state.md` (the rendered [`State`]) at the top of the working
/// tree, atomically, and make sure `info/exclude` keeps it out of `git
/// status`; where it went.
pub fn write(ctx: &Ctx, text: &str) -> Result<String> {
    let root = ctx.store.workdir_or_err()?;
    let io = |what: &std::path::Path, e: std::io::Error| {
        Error::new(
            Code::IoFailed,
            format!("cannot write {}: {e}", what.display()),
        )
    };
    let exclude = ctx.store.common_dir().join("info").join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !current.lines().any(|l| l.trim() == "/state.md") {
        if let Some(dir) = exclude.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let sep = if current.is_empty() || current.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        let next = format!("{current}{sep}/state.md\n");
        crate::fsutil::replace_file(&exclude, next.as_bytes()).map_err(|e| io(&exclude, e))?;
    }
    let path = root.join("state.md");
    crate::fsutil::replace_file(&path, text.as_bytes()).map_err(|e| io(&path, e))?;
    Ok(path.display().to_string())
}

/// Tasks not done or cancelled, from this clone's own task refs only (the
/// remote's mirror and the clock play no part: a claim shows its lease end
/// time, never the time left).
fn tasks(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let (all, _) = crate::records::task::known(store, None, plan)?;
    Ok(all
        .into_iter()
        .filter(|k| !k.record.status.terminal())
        .map(|k| {
            let r = &k.record;
            let owner = r.owner.as_deref().unwrap_or("-");
            let claim = r
                .claim
                .as_ref()
                .map(|c| format!(", held by {} until {}", c.holder, c.lease_until))
                .unwrap_or_default();
            let deps = if r.depends_on.is_empty() {
                String::new()
            } else {
                format!(", depends on {}", r.depends_on.join(", "))
            };
            let why = r
                .blocked_reason
                .as_deref()
                .filter(|_| r.status == crate::records::task::Status::Blocked)
                .map(|b| format!(" — {b}"))
                .unwrap_or_default();
            let line = format!(
                "{}/{} ({}) {}: owner {owner}{claim}{deps}{why}",
                r.plan,
                r.id,
                r.status_label(),
                r.title
            );
            let value = serde_json::json!({
                "plan": r.plan, "id": r.id, "title": r.title, "status": r.status,
                "owner": r.owner,
                "holder": r.claim.as_ref().map(|c| c.holder.clone()),
                "lease_until": r.claim.as_ref().map(|c| c.lease_until.clone()),
                "depends_on": r.depends_on, "blocked_reason": r.blocked_reason,
            });
            item(line, &value)
        })
        .collect())
}

/// Reservations not released, repository-wide (a reservation belongs to a
/// holder, not to a plan); with a plan, those held by its active lanes'
/// owners. The lease shows as its end time, never as time left, so the
/// summary does not depend on the clock.
fn reservations(store: &Store, plan: Option<&str>) -> Result<Vec<(String, serde_json::Value)>> {
    let ledger = stored::known(store, None)?;
    let owners: Option<std::collections::BTreeSet<String>> = match plan {
        None => None,
        Some(p) => Some(
            Records::<LaneRecord>::new(store)
                .all()?
                .0
                .into_iter()
                .filter(|v| v.value.is_active() && v.value.plan == p)
                .map(|v| v.value.owner)
                .collect(),
        ),
    };
    let mut out = Vec::new();
    for e in ledger.entries.iter().filter(|e| e.released_at.is_none()) {
        if owners.as_ref().is_some_and(|o| !o.contains(&e.holder)) {
            continue;
        }
        let paths: Vec<String> = e.paths.iter().map(|p| p.to_string()).collect();
        let task = e
            .task
            .as_deref()
            .map(|t| format!(", task {t}"))
            .unwrap_or_default();
        let line = format!(
            "{} {}: {} ({}{task}), lease until {}",
            e.id,
            e.holder,
            paths.join(", "),
            if e.shared { "shared" } else { "exclusive" },
            e.lease_until
        );
        out.push(item(line, e));
    }
    Ok(out)
}
