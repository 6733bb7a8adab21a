//! The capacity check at a task boundary (the session-start and stop
//! hooks, a post-tool-use after a command that ran longer than
//! [`LONG_STEP_MS`], and `task claim`, `task done`, `accept`, `lead
//! claim`/`takeover`): the agent's reading ([`crate::integrations::capacity::read`]),
//! its context fill from the transcript, and what it is told.
//!
//! - a lane's agent at `critical`, or at context ≥ `swarm.freshContext`:
//!   write the packet now (`git swarm handoff --reason capacity_critical|
//!   context_pressure --next …`) and stop; at `low`: finish the step and
//!   hand off at the next boundary;
//! - the plan's leader at `low`: designate a successor (`lead
//!   succession`); at `critical`: a coordinator packet and `lead handover`;
//! - hysteresis: once the agent has an open packet of its own in the plan
//!   it is told to stop and never sent back to the task;
//! - `unknown` never triggers.
//!
//! A change of verdict (and a handoff the verdict asked for) is journalled
//! in the plan as an observation (event `capacity`, trailers
//! `Swarm-Capacity`, `Swarm-Action`), locally: published with the next push.

use std::path::Path;

use crate::integrations::capacity::{
    self, account_from_env, spend, transcript, Action, Reading, Verdict, Who,
};
use crate::records::agent::Input;
use crate::session::Ctx;
use crate::store::Event;

/// Whether the hooks check capacity: not with `swarm.capacity=off` (or
/// `GIT_SWARM_CAPACITY=off`, which wins). Reports still carry a line.
pub fn enabled(ctx: &Ctx) -> bool {
    let off = |v: &str| ["off", "false", "no", "0"].contains(&v.trim());
    match std::env::var("GIT_SWARM_CAPACITY") {
        Ok(v) if !v.trim().is_empty() => !off(&v),
        _ => !ctx.store.config("swarm.capacity").is_some_and(|v| off(&v)),
    }
}

/// A step longer than this is a boundary (20 minutes).
pub const LONG_STEP_MS: u64 = 20 * 60 * 1000;

/// The check's outcome.
#[derive(Debug, Clone)]
pub struct Checked {
    pub verdict: Verdict,
    /// The agent's own open packet in the plan (hysteresis).
    pub packet: Option<String>,
    /// What the agent is told, when anything.
    pub advice: Option<String>,
    pub leader: bool,
}

impl Checked {
    /// The line the hooks show: `Capacity: ok 64% @work1 (command); context 12%.`
    pub fn line(&self) -> String {
        let r = &self.verdict.reading;
        let mut out = format!("Capacity: {} ({}", r.line(), r.source);
        if let Some(w) = &r.window {
            out.push_str(&format!(", window {w}"));
        }
        if let Some(at) = &r.resets_at {
            out.push_str(&format!(", resets {at}"));
        }
        out.push(')');
        if let Some(c) = self.verdict.context_used {
            out.push_str(&format!("; context {}% used", c.round() as i64));
        }
        out.push_str(".\n");
        out
    }

    /// Whether the agent is told to hand off now (or already did).
    pub fn hand_off_now(&self) -> bool {
        matches!(self.verdict.action, Action::HandOff(_))
    }
}

/// The context fill of the transcript at `path` (percent used).
pub fn context_of(ctx: &Ctx, path: Option<&str>) -> Option<f64> {
    context_in(ctx, &transcript::read(Path::new(path?))?)
}

/// The context fill of a transcript already read.
pub fn context_in(ctx: &Ctx, usage: &transcript::Usage) -> Option<f64> {
    let window = ctx
        .store
        .config("swarm.contextWindow")
        .and_then(|v| crate::integrations::capacity::spend::parse_budget(&v).ok())
        .and_then(|b| match b {
            spend::Budget::Tokens(n) => Some(n),
            spend::Budget::Usd(_) => None,
        });
    usage.context_used(window)
}

/// The agent's reading, for the capacity line of its reports.
pub fn reading(ctx: &Ctx, me: &str) -> Reading {
    let account = account_from_env();
    capacity::read(&ctx.store, &Who::of(me, account.as_deref()))
}

/// Check `me` at a boundary, in `plan` (the lane's, or the only one).
pub fn check(ctx: &Ctx, me: &str, plan: Option<&str>, context_used: Option<f64>) -> Checked {
    let in_lane = ctx.lane_here().is_some_and(|l| l.record.owner == me);
    check_in(ctx, me, plan, in_lane, context_used)
}

/// [`check`] where the caller knows whether `me` works in its own lane here.
pub fn check_in(
    ctx: &Ctx,
    me: &str,
    plan: Option<&str>,
    in_lane: bool,
    context_used: Option<f64>,
) -> Checked {
    let r = reading(ctx, me);
    let verdict = capacity::verdict(&r, context_used, capacity::fresh_context(&ctx.store));
    let remote = ctx.settings.remote.as_deref();
    // What only matters when there is something to say: the agent's own
    // open packet (hysteresis: looked up in its lane, or when a handoff is
    // due) and whether it leads.
    let acting = verdict.action != Action::Go;
    let packet = (acting || in_lane)
        .then(|| crate::records::packet::open_packets(&ctx.store, remote).ok())
        .flatten()
        .and_then(|(ps, _)| {
            ps.into_iter()
                .find(|p| p.author == me && plan.is_none_or(|pl| p.plan == pl))
                .map(|p| p.id)
        });
    let leader = acting
        && plan.is_some_and(|p| {
            crate::records::lead::known(&ctx.store, remote, p)
                .ok()
                .flatten()
                .is_some_and(|l| !l.released && l.leader.as_deref() == Some(me))
        });
    let line = r.line();
    let plan_flag = plan.map(|p| format!(" --plan {p}")).unwrap_or_default();
    let advice = if let Some(id) = &packet {
        Some(format!(
            "git swarm: your handoff packet {id} is open: stop now; a successor takes the work over with `git swarm accept {id}`. Do not take the task back, even when your account recovers.\n"
        ))
    } else {
        match (&verdict.action, leader) {
            (Action::HandOff(reason), false) => Some(format!(
                "git swarm: capacity={line}{ctx}: write your handoff packet now and stop: commit what is done, then `git swarm handoff --reason {reason} --next \"<the next step, in order>\"` (add `--task <id>` for the task you hold), and stop. You will not be sent back to the task.\n",
                ctx = context_note(&verdict),
            )),
            (Action::HandOff(_), true) => Some(format!(
                "git swarm: capacity={line}{ctx}: you lead{plan_flag}: write your coordinator packet now (`git swarm handoff --reason lead_handover --next \"<what the next coordinator does>\"`), then hand over: `git swarm lead handover <successor>{plan_flag}`, and stop.\n",
                ctx = context_note(&verdict),
            )),
            (Action::FinishStep, false) => Some(format!(
                "git swarm: capacity={line}: finish the current step and commit it, then hand off at the next task boundary (`git swarm handoff --reason capacity_low --next \"<the next step>\"`); do not claim another task.\n"
            )),
            (Action::FinishStep, true) => Some(format!(
                "git swarm: capacity={line}: you lead{plan_flag}: designate a likely successor now (`git swarm lead succession{plan_flag} <address>[,<address>]`).\n"
            )),
            (Action::Go, _) => None,
        }
    };
    let checked = Checked {
        verdict,
        packet,
        advice,
        leader,
    };
    if let Some(p) = plan {
        observe(ctx, me, p, &checked);
    }
    checked
}

fn context_note(v: &Verdict) -> String {
    match (&v.action, v.context_used) {
        (Action::HandOff("context_pressure"), Some(c)) => {
            format!(" and context {}% used", c.round() as i64)
        }
        _ => String::new(),
    }
}

/// Journal a change of verdict in the plan (once per change, per agent).
fn observe(ctx: &Ctx, me: &str, plan: &str, c: &Checked) {
    let action = match (&c.verdict.action, &c.packet) {
        (_, Some(_)) => "handing-off".to_string(),
        (Action::Go, _) => "go".to_string(),
        (Action::FinishStep, _) => "finish-step".to_string(),
        (Action::HandOff(r), _) => format!("hand-off:{r}"),
    };
    let state = c.verdict.reading.state.as_str();
    let key = format!("{state} {action}");
    let path = ctx
        .store
        .common_dir()
        .join("swarm/capacity/observed")
        .join(format!("{}.{}", safe(plan), safe(me)));
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    if before.trim() == key {
        return;
    }
    // Nothing to say of an agent that always went on unread.
    if before.is_empty() && action == "go" && state == "unknown" {
        return;
    }
    let summary = match &c.packet {
        Some(id) => format!("capacity: {me} hands off (packet {id})"),
        None if c.leader && action != "go" => {
            format!(
                "capacity: leader {me} at {} ({action})",
                c.verdict.reading.line()
            )
        }
        None => format!("capacity: {me} at {} ({action})", c.verdict.reading.line()),
    };
    let mut event = Event::new("capacity", me, summary)
        .trailer("Swarm-Capacity", c.verdict.reading.line())
        .trailer("Swarm-Action", action.as_str())
        .trailer("Swarm-Capacity-Source", c.verdict.reading.source.as_str());
    if let Some(u) = c.verdict.context_used {
        event = event.trailer("Swarm-Context", format!("{}%", u.round() as i64));
    }
    if crate::records::plan::require(&ctx.store, plan).is_err() {
        return;
    }
    if crate::records::plan::journal(&ctx.store, None, plan, &event, None, None).is_ok() {
        crate::integrations::capacity::write_file(&path, &format!("{key}\n"));
    }
}

fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The session's transcript once the host has written its newest turn
/// (the stop hook may run before the host flushes it), within a few seconds.
pub fn settled_usage(input: &Input) -> Option<transcript::Usage> {
    let path = input.transcript_path.as_deref()?;
    transcript::read_settled(Path::new(path), std::time::Duration::from_secs(3))
}

/// Record the session's spend from its transcript (the stop hook).
pub fn record_spend(ctx: &Ctx, me: &str, input: &Input, usage: &transcript::Usage, host: &str) {
    let Some(session) = &input.session_id else {
        return;
    };
    if usage.tokens.total() == 0 {
        return;
    }
    let lane = ctx.lane_here();
    let lane_plan = super::context::plan_of(ctx, lane.as_ref());
    // A lane started for a task (`lane new --task`) spends on that task of
    // its parent plan; else on the task it holds in its own plan.
    let (plan, task) = match lane
        .as_ref()
        .and_then(|l| l.record.task.as_deref())
        .and_then(|t| t.split_once('/'))
    {
        Some((p, t)) => (Some(p.to_string()), Some(t.to_string())),
        None => (
            lane_plan.clone(),
            super::context::claimed(ctx, me, lane_plan.as_deref())
                .ok()
                .and_then(|ts| ts.into_iter().next())
                .map(|t| t.id),
        ),
    };
    spend::publish(
        &ctx.store,
        lane_plan.as_deref(),
        &spend::SessionSpend {
            session: session.clone(),
            host: host.to_string(),
            agent: me.to_string(),
            account: account_from_env(),
            lane: lane.map(|l| l.feature),
            task,
            plan,
            tokens: usage.tokens,
            cost_usd: usage.cost_usd,
            at: String::new(),
        },
    );
}

/// The budget line for session start, when the plan's budget is reached
/// (and the one `budget` escalation recorded).
pub fn budget_note(ctx: &Ctx, me: &str, plan: &str) -> Option<String> {
    let check = spend::check_budget(&ctx.store, ctx.settings.remote.as_deref(), plan).ok()?;
    let spend::BudgetCheck::Reached { limit, spent } = check else {
        return None;
    };
    escalate_budget(ctx, me, plan, &limit, &spent);
    Some(format!(
        "git swarm: plan {plan} reached its budget ({limit}; spent {} tokens{}): start no new task; finish or hand off what you hold. Raising `swarm.budget` resumes.\n",
        spent.total_tokens,
        spent
            .cost_usd
            .map(|c| format!(", {c:.2} USD"))
            .unwrap_or_default()
    ))
}

/// One `budget` observation per plan and budget (raising it and reaching
/// the new one records another).
pub fn escalate_budget(
    ctx: &Ctx,
    me: &str,
    plan: &str,
    limit: &spend::Budget,
    spent: &spend::Totals,
) {
    let key = limit.to_string();
    let event = Event::new(
        "escalation",
        me,
        format!(
            "budget: plan {plan} reached {key} ({} tokens spent)",
            spent.total_tokens
        ),
    )
    .trailer("Swarm-Escalation", "budget")
    .trailer("Swarm-Budget", key.as_str());
    let _ = crate::records::plan::journal(
        &ctx.store,
        None,
        plan,
        &event,
        None,
        Some(("Swarm-Budget", key.as_str())),
    );
}
