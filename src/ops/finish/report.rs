//! The completion report `finish` writes: markdown in the shape of a pull
//! request's body, derived only from the records (and, for spend, this
//! clone's capacity files). Its sections: the tasks with their lanes and
//! commits, every handoff with its packet and acceptance, every succession
//! with its epoch and reason, the escalations and questions with their
//! answers, the capacity verdicts, the spend, and what was left unverified.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::error::Result;
use crate::integrations::capacity::spend::{self, Totals};
use crate::ops::lead::{self, merge};
use crate::records::message::{Kind, Message};
use crate::session::Ctx;

use super::Scope;

fn short(c: &str) -> &str {
    &c[..c.len().min(12)]
}

/// One line of a table cell: no pipes, no line breaks.
fn cell(text: &str) -> String {
    crate::text::clean(text)
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// The report of plan `scope.plan`, as `actor` (the leader) finishes it:
/// one section after another.
pub(crate) fn render(ctx: &Ctx, code: Option<&str>, scope: &Scope, actor: &str) -> Result<String> {
    let names = scope.names();
    let mut md = String::new();
    summary(&mut md, ctx, scope, actor);
    let landings = landings(ctx, code, scope)?;
    tasks(&mut md, ctx, code, scope, &landings)?;
    handoffs(&mut md, scope);
    successions(&mut md, ctx, &scope.plan.record.plan)?;
    let messages: Vec<Message> = crate::ops::message::all(ctx)?
        .into_iter()
        .filter(|m| m.plan.as_deref().is_some_and(|p| names.contains(p)))
        .collect();
    escalations(&mut md, &messages);
    capacity(&mut md, scope);
    spent(&mut md, ctx, scope, &names);
    unverified(&mut md, scope, &messages);
    Ok(md)
}

/// The title, the counts and the plans.
fn summary(md: &mut String, ctx: &Ctx, scope: &Scope, actor: &str) {
    let store = &ctx.store;
    let plan = &scope.plan.record;
    let name = &plan.plan;
    let _ = writeln!(md, "# Plan {name} finished: {}", cell(&plan.title));
    let _ = writeln!(md);
    let done = scope
        .tasks
        .iter()
        .filter(|k| k.record.status == crate::records::task::Status::Done)
        .count();
    let _ = writeln!(
        md,
        "Finished by {actor}, who led it, at {}: {} of {} tasks done, {} cancelled; {} lane(s), {} handoff(s); every lane, child plan, claim and reservation of the plan is closed and the leadership released.",
        crate::clock::rfc3339(store.clock.now()),
        done,
        scope.tasks.len(),
        scope.tasks.len() - done,
        scope.lanes.len(),
        scope.packets.len(),
    );
    let plans: Vec<String> = scope
        .plans
        .iter()
        .map(|p| format!("`{}`", p.record.plan))
        .collect();
    let _ = writeln!(md, "Plans: {}.", plans.join(", "));
}

/// Where each lane landed: the trailers on the base's first-parent line.
fn landings(ctx: &Ctx, code: Option<&str>, scope: &Scope) -> Result<Vec<merge::Landing>> {
    let store = &ctx.store;
    let mut landings = Vec::new();
    let mut bases = BTreeSet::new();
    for l in &scope.lanes {
        let base = match code {
            Some(c) => format!("refs/remotes/{c}/{}", merge::base_branch(&l.record.base, c)),
            None => l.record.base.clone(),
        };
        if bases.insert(base.clone()) {
            if let Some(tip) = store.git.rev_parse(&base)? {
                landings.extend(merge::landings(&store.git, "", &tip).unwrap_or_default());
            }
        }
    }

    Ok(landings)
}

/// The tasks, each with its lane, owner, branch and commit; then the lanes
/// without a task.
fn tasks(
    md: &mut String,
    ctx: &Ctx,
    code: Option<&str>,
    scope: &Scope,
    landings: &[merge::Landing],
) -> Result<()> {
    let store = &ctx.store;
    let _ = writeln!(md, "\n## Tasks\n");
    if scope.tasks.is_empty() {
        let _ = writeln!(md, "The plan had no tasks.");
    } else {
        let _ = writeln!(
            md,
            "| Task | Title | Status | Lane | Owner | Branch | Commit |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    }
    for k in &scope.tasks {
        let r = &k.record;
        let id = format!("{}/{}", k.key.plan, k.key.id);
        let lane = scope.lanes.iter().find(|l| {
            l.record.task.as_deref() == Some(id.as_str())
                || r.lane.as_deref() == Some(l.feature.as_str())
        });
        let landing = lane.and_then(|l| landings.iter().find(|x| x.feature == l.feature));
        let commit = commit_cell(ctx, code, landing, lane);
        let how = store
            .journal(k.commit, Some(1))?
            .into_iter()
            .next()
            .map(|e| e.summary)
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| `{id}` | {} | {} | {} | {} | {} | {commit} |",
            cell(&r.title),
            cell(&if how.is_empty() {
                r.status_label()
            } else {
                format!("{} — {how}", r.status_label())
            }),
            lane.map(|l| format!("`{}`", l.feature))
                .unwrap_or_else(|| "-".into()),
            lane.map(|l| cell(&l.record.owner))
                .or(r.owner.clone())
                .unwrap_or_else(|| "-".into()),
            lane.map(|l| format!("`{}`", l.record.branch))
                .or(r.branch.as_ref().map(|b| format!("`{b}`")))
                .unwrap_or_else(|| "-".into()),
        );
    }
    let others: Vec<_> = scope
        .lanes
        .iter()
        .filter(|l| l.record.task.is_none())
        .collect();
    if !others.is_empty() {
        let _ = writeln!(md, "\nLanes without a task:");
        for l in others {
            let _ = writeln!(
                md,
                "- lane `{}` (plan `{}`, owner {}, branch `{}`)",
                l.feature,
                l.record.plan,
                cell(&l.record.owner),
                l.record.branch
            );
        }
    }

    Ok(())
}

/// A task's commit cell: where its lane landed, else its lane's head.
fn commit_cell(
    ctx: &Ctx,
    code: Option<&str>,
    landing: Option<&merge::Landing>,
    lane: Option<&crate::records::lane::Lane>,
) -> String {
    let store = &ctx.store;
    match (landing, lane) {
        (Some(x), _) => format!("`{}` (landed; head `{}`)", short(&x.commit), short(&x.head)),
        (None, Some(l)) => {
            let head = code
                .and_then(|c| {
                    store
                        .git
                        .rev_parse(&format!("refs/remotes/{c}/{}", l.record.branch))
                        .ok()
                        .flatten()
                })
                .or_else(|| {
                    store
                        .git
                        .rev_parse(&format!("refs/heads/{}", l.record.branch))
                        .ok()
                        .flatten()
                });
            match head {
                Some(h) => format!("head `{}`", short(&h)),
                None => "-".into(),
            }
        }
        (None, None) => "-".into(),
    }
}

/// Every handoff with its packet and what became of it.
fn handoffs(md: &mut String, scope: &Scope) {
    let _ = writeln!(md, "\n## Handoffs\n");
    if scope.packets.is_empty() {
        let _ = writeln!(md, "No handoff: no lane changed hands.");
    }
    for v in &scope.packets {
        let p = &v.packet;
        let _ = write!(
            md,
            "- Packet `{}` (plan `{}`{}{}): written by {} at {}, reason `{}`, head `{}`{}",
            p.id,
            p.plan,
            p.lane
                .as_deref()
                .map(|l| format!(", lane `{l}`"))
                .unwrap_or_default(),
            p.task
                .as_deref()
                .map(|t| format!(", task `{t}`"))
                .unwrap_or_default(),
            cell(&p.author),
            p.created_at,
            cell(&p.reason),
            short(&p.head),
            if p.uncommitted.is_empty() {
                String::new()
            } else {
                format!(
                    ", uncommitted {}",
                    p.uncommitted
                        .iter()
                        .map(|u| format!("`{}`", cell(u)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
        );
        if !p.next.is_empty() {
            let _ = write!(
                md,
                "; next: {}",
                p.next
                    .iter()
                    .map(|n| cell(n))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        outcome(md, v);
        let _ = writeln!(md, ".");
    }
}

/// A packet's acceptance (what moved), withdrawal, or that it is open.
fn outcome(md: &mut String, v: &crate::records::packet::PacketVersion) {
    match (&v.acceptance, &v.withdrawal) {
        (Some(a), _) => {
            let _ = write!(
                md,
                ". **Accepted** by {} at {}",
                cell(&a.accepted_by),
                a.accepted_at
            );
            if let Some(e) = a.epoch {
                let _ = write!(md, " (epoch {e})");
            }
            let mut moved = Vec::new();
            if let Some(c) = &a.moved.claim {
                moved.push(format!("claim on `{c}`"));
            }
            if !a.moved.reservations.is_empty() {
                moved.push(format!("reservations {}", a.moved.reservations.join(", ")));
            }
            if !moved.is_empty() {
                let _ = write!(md, "; moved to them: {}", moved.join(", "));
            }
            for n in &a.moved.not_moved {
                let _ = write!(md, "; not moved: {}", cell(n));
            }
        }
        (None, Some(w)) => {
            let _ = write!(
                md,
                ". Withdrawn by {} at {}: {}",
                cell(&w.withdrawn_by),
                w.withdrawn_at,
                cell(&w.reason)
            );
        }
        (None, None) => {
            let _ = write!(md, ". Open");
        }
    }
}

/// Every succession with its epoch and reason.
fn successions(md: &mut String, ctx: &Ctx, name: &str) -> Result<()> {
    let _ = writeln!(md, "\n## Successions\n");
    let log = lead::log(ctx, name)?;
    let mut lines = Vec::new();
    for e in log.entries.iter().rev() {
        let verb = match e.event.as_str() {
            "lead-claimed" => "claimed",
            "lead-handover" => "handed over",
            "lead-takeover" => "taken over",
            "lead-released" => "released",
            _ => continue,
        };
        lines.push(format!(
            "- Epoch {}: {verb} by {} at {} — {}{}",
            e.epoch,
            cell(&e.actor),
            e.time,
            cell(&e.summary),
            if e.succession.is_empty() {
                String::new()
            } else {
                format!(" (succession {})", e.succession.join(", "))
            }
        ));
    }
    if lines.is_empty() {
        let _ = writeln!(md, "Nobody led the plan.");
    }
    for l in lines {
        let _ = writeln!(md, "{l}");
    }

    Ok(())
}

/// The escalations and questions with their answers.
fn escalations(md: &mut String, messages: &[Message]) {
    let _ = writeln!(md, "\n## Escalations and questions\n");
    let mut any = false;
    for m in messages
        .iter()
        .filter(|m| matches!(m.kind, Kind::Escalation | Kind::Ask))
    {
        any = true;
        let kind = if m.kind == Kind::Escalation {
            "Escalation"
        } else {
            "Question"
        };
        let _ = write!(
            md,
            "- {kind} `{}` from {} to {} at {}{}: {}",
            m.id,
            cell(&m.from),
            cell(&m.to),
            m.at,
            m.class
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            cell(&m.body)
        );
        let answers: Vec<&Message> = messages
            .iter()
            .filter(|r| r.reply_to.as_deref() == Some(m.id.as_str()))
            .collect();
        if answers.is_empty() {
            let _ = write!(md, " — **unanswered**");
        }
        for a in answers {
            let _ = write!(
                md,
                " — answered by {} at {}: {}",
                cell(&a.from),
                a.at,
                cell(&a.body)
            );
        }
        let _ = writeln!(md);
    }
    if !any {
        let _ = writeln!(md, "None.");
    }
}

/// The capacity verdicts: lanes' last reports, capacity handoffs.
fn capacity(md: &mut String, scope: &Scope) {
    let _ = writeln!(md, "\n## Capacity\n");
    let mut any = false;
    for l in &scope.lanes {
        if let Some(c) = l
            .record
            .last_report
            .as_ref()
            .and_then(|r| r.capacity.as_ref())
        {
            any = true;
            let _ = writeln!(
                md,
                "- lane `{}` ({}): last reported `{}`",
                l.feature,
                cell(&l.record.owner),
                cell(c)
            );
        }
    }
    for v in scope
        .packets
        .iter()
        .filter(|v| v.packet.reason.starts_with("capacity") || v.packet.reason == "usage_limit")
    {
        any = true;
        let _ = writeln!(
            md,
            "- packet `{}`: {} handed off for `{}`",
            v.packet.id,
            cell(&v.packet.author),
            cell(&v.packet.reason)
        );
    }
    if !any {
        let _ = writeln!(md, "No capacity verdict was recorded.");
    }
}

/// What the plan's sessions spent (this clone's capacity files).
fn spent(md: &mut String, ctx: &Ctx, scope: &Scope, names: &BTreeSet<String>) {
    let store = &ctx.store;
    let _ = writeln!(md, "\n## Spend\n");
    let lanes: BTreeSet<&str> = scope.lanes.iter().map(|l| l.feature.as_str()).collect();
    let sessions: Vec<_> = spend::sessions(store)
        .into_iter()
        .filter(|s| {
            s.plan.as_deref().is_some_and(|p| names.contains(p))
                || s.lane.as_deref().is_some_and(|l| lanes.contains(l))
        })
        .collect();
    if sessions.is_empty() {
        let _ = writeln!(
            md,
            "No spend was recorded in this clone for the plan (no host reported tokens)."
        );
    } else {
        let mut total = Totals::default();
        for s in &sessions {
            total.add(s);
        }
        let _ = writeln!(md, "Total: {}.", totals(&total));
        for (lane, t) in spend::sum_by(&sessions, |s| s.lane.clone()) {
            let _ = writeln!(md, "- lane `{lane}`: {}", totals(&t));
        }
        for (agent, t) in spend::sum_by(&sessions, |s| {
            (!s.agent.is_empty()).then(|| s.agent.clone())
        }) {
            let _ = writeln!(md, "- agent {}: {}", cell(&agent), totals(&t));
        }
    }
}

/// What was left unverified: tasks done unmerged, landings without a gate,
/// packets handed on an unverified gate.
fn unverified(md: &mut String, scope: &Scope, messages: &[Message]) {
    let _ = writeln!(md, "\n## Left unverified\n");
    let mut any = false;
    for k in scope.tasks.iter().filter(|k| k.record.done_unverified) {
        any = true;
        let _ = writeln!(
            md,
            "- task `{}/{}` was marked done without a verified merge: {}",
            k.key.plan,
            k.key.id,
            cell(k.record.done_reason.as_deref().unwrap_or("no reason given"))
        );
    }
    for m in messages.iter().filter(|m| {
        m.kind == Kind::Notify
            && m.body.starts_with("lead merge landed lane ")
            && m.body.contains("(no gate ran)")
    }) {
        any = true;
        let lane = m
            .body
            .trim_start_matches("lead merge landed lane ")
            .split_whitespace()
            .next()
            .unwrap_or("?");
        let _ = writeln!(
            md,
            "- lane `{lane}` was landed without a gate (`lead merge --no-gate`)"
        );
    }
    for v in &scope.packets {
        for u in &v.packet.unverified {
            any = true;
            let _ = writeln!(
                md,
                "- packet `{}` handed on an unverified gate: {}{}",
                v.packet.id,
                cell(u),
                if v.acceptance.is_some() {
                    " (the successor had to re-run it)"
                } else {
                    ""
                }
            );
        }
    }
    if !any {
        let _ = writeln!(
            md,
            "Nothing: every task was done on merged work and every landing ran its gate."
        );
    }
}

fn totals(t: &Totals) -> String {
    let cost = t
        .cost_usd
        .map(|c| format!(", {c:.2} USD"))
        .unwrap_or_default();
    format!(
        "{} tokens ({} input, {} cache read, {} cache write, {} output){cost}, {} sessions",
        t.total_tokens,
        t.tokens.input,
        t.tokens.cache_read,
        t.tokens.cache_write,
        t.tokens.output,
        t.sessions
    )
}
