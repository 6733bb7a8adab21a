//! The session-start context: who the agent is, its plan and lane, the
//! task it holds (lease end, acceptance criteria), its reservations, what
//! is new for it, a packet it could accept, the forecast for its plan, the
//! leader, the next step, and where the guide is. Short (at most
//! [`MAX_BYTES`]): what does not fit is counted, not listed.

use crate::error::Result;
use crate::records::task::{Status, TaskRecord};
use crate::session::Ctx;

/// The context's budget (the hosts add it to every request of the session).
pub const MAX_BYTES: usize = 2048;

/// Tasks this agent holds a claim on, not done nor cancelled.
pub fn claimed(ctx: &Ctx, me: &str, plan: Option<&str>) -> Result<Vec<TaskRecord>> {
    let (tasks, _) = crate::records::task::known(&ctx.store, ctx.settings.remote.as_deref(), plan)?;
    Ok(tasks
        .into_iter()
        .map(|k| k.record)
        .filter(|r| {
            matches!(r.status, Status::InProgress | Status::Blocked)
                && r.claim.as_ref().is_some_and(|c| c.holder == me)
        })
        .collect())
}

/// The tasks the agent holds for the work here: of its plan, and the one
/// its lane took (`lane new --task`: a task of the parent plan, while the
/// lane runs on a child plan of its own).
pub fn held_here(
    ctx: &Ctx,
    me: &str,
    plan: Option<&str>,
    lane: Option<&crate::records::lane::Lane>,
) -> Result<Vec<TaskRecord>> {
    let lane_task = lane.and_then(|l| l.record.task.clone());
    let Some(key) = lane_task else {
        return claimed(ctx, me, plan);
    };
    Ok(claimed(ctx, me, None)?
        .into_iter()
        .filter(|t| plan.is_none_or(|p| t.plan == p) || format!("{}/{}", t.plan, t.id) == key)
        .collect())
}

/// The plan the agent works on: its lane's, else the only one.
pub fn plan_of(ctx: &Ctx, lane: Option<&crate::records::lane::Lane>) -> Option<String> {
    lane.map(|l| l.record.plan.clone())
        .or_else(|| crate::session::plan::infer(ctx).ok())
}

pub fn session_start(ctx: &Ctx) -> Result<String> {
    session_start_with(ctx, |_, _, _| String::new())
}

/// [`session_start`] with `more(me, plan, in own lane)` inserted after the
/// "You are" line (where a cut never reaches): the capacity check.
pub fn session_start_with(
    ctx: &Ctx,
    more: impl FnOnce(&str, Option<&str>, bool) -> String,
) -> Result<String> {
    let me = ctx.actor_opt()?;
    let lane = ctx.lane_here();
    let plan = plan_of(ctx, lane.as_ref());
    let mut out = String::from("git swarm: this repository is coordinated by git-swarm.\n");
    let Some(me) = me else {
        out.push_str("You have no swarm identity here: ask who you are, then work in your lane's worktree (or set GIT_SWARM_AS). `git swarm agent guide` explains the protocol.\n");
        return Ok(out);
    };
    out.push_str(&format!("You are {me}"));
    if let Some(p) = &plan {
        out.push_str(&format!(", plan {p}"));
    }
    if let Some(l) = &lane {
        out.push_str(&format!(
            ", lane {} (branch {})",
            l.feature, l.record.branch
        ));
    }
    out.push_str(".\n");
    let in_lane = lane.as_ref().is_some_and(|l| l.record.owner == me);
    out.push_str(&more(&me, plan.as_deref(), in_lane));
    if let Some(p) = &plan {
        leader(ctx, p, &mut out);
    }
    let tasks = held_here(ctx, &me, plan.as_deref(), lane.as_ref())?;
    held_tasks(&tasks, &mut out);
    reservations(ctx, &me, &mut out)?;
    let addressed = messages(ctx, &me, &mut out)?;
    let waiting = open_packet(ctx, &me, plan.as_deref(), &mut out)?;
    if let Some(p) = &plan {
        forecast(ctx, p, &mut out);
    }
    let next = if !addressed && tasks.is_empty() && !waiting {
        "claim a task: `git swarm task ready`, then `git swarm task claim <id>`".to_string()
    } else if addressed {
        "read your messages: `git swarm inbox`".to_string()
    } else if let Some(t) = tasks.first() {
        format!("work on {}: reserve what you edit (`git swarm reserve <path> --task {}`), commit, and `git swarm task done {}` when merged", t.id, t.id, t.id)
    } else {
        "look at the open packet: `git swarm packets`".to_string()
    };
    out.push_str(&format!("Next: {next}.\n"));
    out.push_str("The protocol (claim, reserve, commit, report, ask, wait, hand off, done): `git swarm agent guide`.\n");
    Ok(cut(&out, MAX_BYTES))
}

/// The leader of `plan`, when one holds it.
fn leader(ctx: &Ctx, plan: &str, out: &mut String) {
    if let Ok(Some(lead)) =
        crate::records::lead::known(&ctx.store, ctx.settings.remote.as_deref(), plan)
    {
        if let Some(l) = lead.leader.filter(|_| !lead.released) {
            out.push_str(&format!("Leader: {l} (epoch {}).\n", lead.epoch));
        }
    }
}

/// Each task held, with its claim's end and its acceptance criteria.
fn held_tasks(tasks: &[TaskRecord], out: &mut String) {
    for t in tasks {
        let until = t
            .claim
            .as_ref()
            .map(|c| c.lease_until.as_str())
            .unwrap_or("");
        out.push_str(&format!(
            "Your task {}: {} ({}; claim until {until}; renew with `git swarm task renew {}`).\n",
            t.id,
            t.title,
            t.status.as_str(),
            t.id
        ));
        for a in &t.acceptance {
            out.push_str(&format!("  acceptance: {a}\n"));
        }
    }
}

/// The agent's live reservations, and how many exclusive ones others hold.
fn reservations(ctx: &Ctx, me: &str, out: &mut String) -> Result<()> {
    let entries = super::live_reservations(ctx)?;
    let mine: Vec<String> = entries
        .iter()
        .filter(|e| e.holder == me)
        .map(|e| {
            let paths: Vec<&str> = e.paths.iter().map(|p| p.as_str()).collect();
            format!("{} {} (until {})", e.id, paths.join(" "), e.lease_until)
        })
        .collect();
    if !mine.is_empty() {
        out.push_str(&format!("Your reservations: {}.\n", mine.join("; ")));
    }
    let others = entries
        .iter()
        .filter(|e| e.holder != me && !e.shared)
        .count();
    if others > 0 {
        out.push_str(&format!(
            "{others} reservations of others (`git swarm reservations`): writing their paths is refused.\n"
        ));
    }
    Ok(())
}

/// How many messages for the agent are unread, and the first five sent to
/// it by name; true when one of those is unread.
fn messages(ctx: &Ctx, me: &str, out: &mut String) -> Result<bool> {
    let read = crate::ops::message::Cursor::load(&ctx.store, me)?.read;
    let unread: Vec<_> = crate::ops::message::all(ctx)?
        .into_iter()
        .filter(|m| m.is_for(me) && !read.contains(&m.id))
        .collect();
    if !unread.is_empty() {
        out.push_str(&format!(
            "{} new message(s) for you (`git swarm inbox`).\n",
            unread.len()
        ));
        for m in unread.iter().filter(|m| m.to == me).take(5) {
            let first = m.body.lines().next().unwrap_or("");
            out.push_str(&format!(
                "- {} from {} ({}): {first}\n",
                m.kind, m.from, m.id
            ));
        }
    }
    Ok(unread.iter().any(|m| m.to == me))
}

/// The first open handoff packet of another (of `plan`, when known) the
/// agent could accept; true when there is one.
fn open_packet(ctx: &Ctx, me: &str, plan: Option<&str>, out: &mut String) -> Result<bool> {
    let (packets, _) =
        crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())?;
    let waiting: Vec<_> = packets
        .iter()
        .filter(|p| p.author != me && plan.is_none_or(|pl| p.plan == pl))
        .collect();
    if let Some(p) = waiting.first() {
        out.push_str(&format!(
            "Open handoff packet {} by {} ({}): take it over with `git swarm accept {}`.\n",
            p.id, p.author, p.reason, p.id
        ));
    }
    Ok(!waiting.is_empty())
}

/// The last forecast of `plan`, when it saw conflicts or reserved paths.
fn forecast(ctx: &Ctx, plan: &str, out: &mut String) {
    if let Some(seen) = crate::records::forecast::last(&ctx.store).get(plan) {
        if seen.conflicts > 0 || seen.reserved > 0 {
            out.push_str(&format!(
                "Forecast ({}{}): {} conflicting lane pair(s), {} changed path(s) reserved by others; `git swarm forecast`.\n",
                seen.at,
                if seen.moved { ", lanes moved since" } else { "" },
                seen.conflicts,
                seen.reserved
            ));
        }
    }
}

/// At most `max` bytes, cut at a line end, saying that it was cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let tail = "… (cut: `git swarm status` shows more)\n";
    let mut end = max.saturating_sub(tail.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    format!("{}{tail}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn long_context_is_cut_at_a_line() {
        let text = "line of text\n".repeat(500);
        let c = cut(&text, 2048);
        assert!(c.len() <= 2048);
        assert!(c.ends_with("more)\n"));
        assert_eq!(cut("short\n", 2048), "short\n");
    }
}
