//! The stop hook. An agent about to stop is told, with the exact command,
//! what it leaves behind: uncommitted work in its lane that no lane
//! snapshot or handoff of its own holds, or a claim on a task neither done
//! nor released. It may stop anyway when the host says it already goes on
//! because of a stop hook (`stop_hook_active`), and after [`MAX_BLOCKS`]
//! blocks in a session.
//!
//! Idle mode (`swarm.agentIdleWait`, off by default): an agent with nothing
//! left waits instead, at zero model tokens, with the `wait` mechanics
//! (cheap local checks, one `git fetch --dry-run` of the watched prefixes a
//! round, a fetch only when it would change something, sleeps doubling from
//! 1 s to [`CEILING`]), for a message
//! addressed to it (or urgent to `all`), a task of its plan that becomes
//! ready, or a handoff packet opened in its plan. When one arrives the stop
//! is blocked with it as the reason: the agent wakes with its next
//! instruction. At the timeout it stops. A wake is someone else's request,
//! not a nag, so `stop_hook_active` does not prevent it; [`MAX_WAKES`]
//! bounds a session.

use std::collections::BTreeSet;
use std::time::Duration;

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::integrations::github::wait::Waits;
use crate::records::agent::{Answer, Input};
use crate::records::lane::wip::wip_ref;
use crate::records::task::Status;
use crate::session::Ctx;

use super::context::{claimed, plan_of};
use super::inbox::{message_lines, unshown};
use super::state::Session;

/// Blocks for unfinished work in one session, at most.
pub const MAX_BLOCKS: u32 = 3;
/// Idle wakes in one session, at most.
pub const MAX_WAKES: u32 = 20;
/// The longest sleep between two checks of an idle wait.
pub const CEILING: Duration = Duration::from_secs(5);

/// `swarm.agentIdleWait`: how long a stopping agent waits; None when off.
pub fn idle_wait(ctx: &Ctx) -> Result<Option<Duration>> {
    let Some(v) = ctx.store.config("swarm.agentIdleWait") else {
        return Ok(None);
    };
    let v = v.trim();
    if v.is_empty() || ["off", "false", "no", "0"].contains(&v) {
        return Ok(None);
    }
    let d = crate::clock::parse_duration(v)
        .map_err(|e| e.hint("fix `git config swarm.agentIdleWait` (e.g. 10m, or off)"))?;
    Ok(Some(Duration::from_millis(
        u64::try_from(d.as_millis()).unwrap_or(0),
    ))
    .filter(|d| !d.is_zero()))
}

pub fn stop(ctx: &Ctx, input: &Input) -> Result<Answer> {
    let Some(me) = ctx.actor_opt()? else {
        return Ok(Answer::Nothing);
    };
    let mut session = Session::load(&ctx.store, input.session_id.as_deref());
    // The capacity boundary: the session's spend, then its verdict. An
    // agent whose own packet is open may stop (hysteresis); one told to
    // hand off is sent back to write the packet.
    if super::capacity::enabled(ctx) {
        let usage = super::capacity::settled_usage(input);
        if let Some(usage) = &usage {
            super::capacity::record_spend(ctx, &me, input, usage, "");
        }
        let plan = plan_of(ctx, ctx.lane_here().as_ref());
        let context = usage
            .as_ref()
            .and_then(|u| super::capacity::context_in(ctx, u));
        let checked = super::capacity::check(ctx, &me, plan.as_deref(), context);
        if checked.packet.is_some() {
            return Ok(Answer::Nothing);
        }
        // Sent back to write the packet even when the host already goes on
        // because of a stop hook (the transcript a stop hook reads may lack
        // the newest message: the next stop sees it); bounded by MAX_BLOCKS.
        if session.blocks < MAX_BLOCKS && checked.hand_off_now() {
            if let Some(advice) = checked.advice {
                session.blocks += 1;
                session.save();
                return Ok(Answer::Block(advice));
            }
        }
    }
    if !input.stop_hook_active && session.blocks < MAX_BLOCKS {
        if let Some(reason) = unfinished(ctx, &me)? {
            session.blocks += 1;
            session.save();
            return Ok(Answer::Block(reason));
        }
    }
    let Some(timeout) = idle_wait(ctx)? else {
        return Ok(Answer::Nothing);
    };
    if session.wakes >= MAX_WAKES {
        return Ok(Answer::Nothing);
    }
    match idle(ctx, &me, timeout)? {
        Some(reason) => {
            session.wakes += 1;
            session.save();
            Ok(Answer::Block(reason))
        }
        None => Ok(Answer::Nothing),
    }
}

/// What the agent leaves behind, as its next instruction; None when nothing.
pub fn unfinished(ctx: &Ctx, me: &str) -> Result<Option<String>> {
    let mut out = String::new();
    if let Some(lane) = ctx.lane_here().filter(|l| l.record.owner == me) {
        let workdir = ctx
            .store
            .workdir()
            .ok_or_else(|| Error::new(Code::BareRepo, "no working tree"))?
            .to_path_buf();
        let git = ctx.store.git.at(&workdir);
        let plan_file = ctx.settings.plan_file.trim_start_matches('/').to_string();
        let dirty: Vec<String> = git
            .dirty_paths()?
            .into_iter()
            .filter(|p| *p != plan_file)
            .collect();
        if !dirty.is_empty() && !held(ctx, &git, &lane, me, &plan_file) {
            let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
            let more = if dirty.len() > 5 {
                format!(" and {} more", dirty.len() - 5)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "git swarm: lane {} has uncommitted work ({}{more}). Commit it (`git add -A && git commit -m \"<what>\"`), or publish it with `git swarm lane snapshot`, or hand it off with `git swarm handoff --reason <capacity_low|context_pressure|usage_limit> --next \"<next step>\"`; then stop.\n",
                lane.feature,
                shown.join(", ")
            ));
        }
    }
    // A claim an open packet of this agent's carries is handed off: the
    // successor's `accept` moves it; releasing it would undo the handoff.
    let handed: Vec<(String, String)> =
        crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())
            .map(|(open, _)| {
                open.into_iter()
                    .filter(|p| p.author == me)
                    .filter_map(|p| p.claim)
                    .collect()
            })
            .unwrap_or_default();
    for t in claimed(ctx, me, None)?
        .iter()
        .filter(|t| t.status == Status::InProgress)
        .filter(|t| !handed.contains(&(t.plan.clone(), t.id.clone())))
    {
        out.push_str(&format!(
            "git swarm: you hold task {} ({}) of plan {}. When its branch is merged run `git swarm task done {} --plan {}`; if you stop without finishing, run `git swarm task release {} --plan {}` (or hand it off: `git swarm handoff --reason <capacity_low|context_pressure|usage_limit> --task {}`).\n",
            t.id, t.title, t.plan, t.id, t.plan, t.id, t.plan, t.id
        ));
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Whether a snapshot of the lane already holds this uncommitted work: the
/// lane's published or local wip snapshot is of the same tree on the same
/// head, or an open handoff packet of this agent on the lane's branch.
fn held(
    ctx: &Ctx,
    git: &Git,
    lane: &crate::records::lane::Lane,
    me: &str,
    plan_file: &str,
) -> bool {
    if let Ok((packets, _)) =
        crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())
    {
        if packets
            .iter()
            .any(|p| p.author == me && p.branch.as_deref() == Some(lane.record.branch.as_str()))
        {
            return true;
        }
    }
    let refname = wip_ref(&lane.feature);
    let Ok(tip) = crate::store::remote::tip(&ctx.store, ctx.settings.remote.as_deref(), &refname)
    else {
        return false;
    };
    let known: Vec<ObjectId> = [tip.local, tip.remote].into_iter().flatten().collect();
    if known.is_empty() {
        return false;
    }
    let limit = crate::worktree::snapshot::limit(&ctx.store).unwrap_or(u64::MAX);
    let Ok(Some(now)) = crate::worktree::snapshot::take_at(
        git,
        git.cwd(),
        &[plan_file.to_string()],
        me,
        limit,
        "@0 +0000",
        Code::SnapshotSecret,
    ) else {
        return false;
    };
    let Ok(now) = ObjectId::from_hex(now.commit.as_bytes()) else {
        return false;
    };
    let shape = |id: ObjectId| -> Option<(ObjectId, Option<ObjectId>)> {
        let c = ctx.store.repo.find_commit(id).ok()?;
        let first = c.parent_ids().next().map(|p| p.detach());
        Some((c.tree_id().ok()?.detach(), first))
    };
    let want = shape(now);
    want.is_some() && known.into_iter().any(|k| shape(k) == want)
}

/// Wait for something for `me` to do; its description, or None at the timeout.
pub fn idle(ctx: &Ctx, me: &str, timeout: Duration) -> Result<Option<String>> {
    let plan = plan_of(ctx, ctx.lane_here().as_ref());
    let ready = |ctx: &Ctx| -> Result<Vec<(String, String)>> { ready_tasks(ctx, plan.as_deref()) };
    let packets = |ctx: &Ctx| -> Result<Vec<(String, String)>> {
        Ok(
            crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())?
                .0
                .into_iter()
                .filter(|p| p.author != me && plan.as_deref().is_none_or(|pl| p.plan == pl))
                .map(|p| (p.id, format!("by {}: {}", p.author, p.reason)))
                .collect(),
        )
    };
    let ready0: BTreeSet<String> = ready(ctx)?.into_iter().map(|(k, _)| k).collect();
    let packets0: BTreeSet<String> = packets(ctx)?.into_iter().map(|(k, _)| k).collect();
    // The clock of this wait (virtual under GIT_SWARM_VIRTUAL_WAITS=1).
    let clock = Waits::new();
    let deadline = clock.now() + timeout;
    let mut interval = Duration::from_secs(1);
    loop {
        let fresh = unshown(ctx, me)?;
        if !fresh.is_empty() {
            return Ok(Some(format!(
                "git swarm: while you waited, new for {me}:\n{}Act on it now (this is your next instruction), then stop again to wait for more.\n",
                message_lines(&fresh)
            )));
        }
        if let Some((key, title)) = ready(ctx)?.into_iter().find(|(k, _)| !ready0.contains(k)) {
            let (p, id) = key.split_once('/').unwrap_or(("", &key));
            return Ok(Some(format!(
                "git swarm: while you waited, task {id} of plan {p} became ready and is unclaimed: {title}. Take it with `git swarm task claim {id} --plan {p}` (`git swarm task show {id} --plan {p}` shows its acceptance criteria), or stop again to keep waiting.\n"
            )));
        }
        if let Some((id, what)) = packets(ctx)?
            .into_iter()
            .find(|(k, _)| !packets0.contains(k))
        {
            return Ok(Some(format!(
                "git swarm: while you waited, handoff packet {id} was opened ({what}). Look at it with `git swarm packet show {id}` and take the work over with `git swarm accept {id}`, or stop again to keep waiting.\n"
            )));
        }
        if let Some(r) = ctx.remote() {
            if remote_round(ctx, r, plan.as_deref()) {
                continue;
            }
        }
        let now = clock.now();
        if now >= deadline {
            return Ok(None);
        }
        clock.sleep(interval.min(deadline - now), "agent idle");
        interval = (interval * 2).min(CEILING);
    }
}

/// Open, unclaimed tasks whose dependencies are done (of `plan`), as
/// ("plan/id", title).
fn ready_tasks(ctx: &Ctx, plan: Option<&str>) -> Result<Vec<(String, String)>> {
    let (tasks, _) = crate::records::task::known(&ctx.store, ctx.settings.remote.as_deref(), plan)?;
    let now = ctx.store.clock.now();
    let status: std::collections::BTreeMap<(String, String), Status> = tasks
        .iter()
        .map(|k| ((k.key.plan.clone(), k.key.id.clone()), k.record.status))
        .collect();
    Ok(tasks
        .iter()
        .filter(|k| k.record.claim.is_none())
        .filter(|k| {
            k.record.ready(now, |d| {
                status.get(&(k.key.plan.clone(), d.to_string())) == Some(&Status::Done)
            })
        })
        .map(|k| {
            (
                format!("{}/{}", k.key.plan, k.key.id),
                k.record.title.clone(),
            )
        })
        .collect())
}

/// One round of `wait`'s remote question, for what idle mode watches (the
/// messages, and the tasks and packets of the plan): would a fetch of
/// those prefixes change anything here? Then that fetch. True when it
/// fetched; an unreachable remote is a round without news.
fn remote_round(ctx: &Ctx, r: &str, plan: Option<&str>) -> bool {
    // A push budget's queue whose window passed goes out now: idle mode is
    // the agent's last command for a while (no daemon publishes it).
    let _ = crate::store::remote::budget::flush_if_due(&ctx.store, r);
    use crate::records::{packet, task};
    let prefixes = [
        crate::records::message::PREFIX.to_string(),
        plan.map_or_else(|| task::PREFIX.to_string(), task::plan_prefix),
        plan.map_or_else(|| packet::PREFIX.to_string(), packet::plan_prefix),
    ];
    // The messages are watched: one listing compared with the mirror
    // (`wait`'s question when it watches them).
    let moved = crate::store::mirror::remote_moves(&ctx.store, r, &prefixes);
    if !matches!(moved, Ok(m) if !m.is_empty()) {
        return false;
    }
    let refs: Vec<&str> = prefixes.iter().map(String::as_str).collect();
    crate::store::mirror::fetch_refs(&ctx.store, r, &refs).is_ok()
}
