//! `git swarm handoff`: a lane that must stop writes a packet to
//! `refs/swarm/packets/<plan>/<packet-id>` — what the caller says and what
//! the tool derives (repo, checkout, branch, head, pushed or not,
//! uncommitted paths and their content, the plan's contract, leader and
//! epoch) — and publishes it at the arbiter with its lane record.
//!
//! Idempotent under interruption: a re-run finds the open packet of the same
//! content it already wrote and completes the steps that follow (publish,
//! local ref, plan journal, note).

use std::path::PathBuf;

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::records::note::Note;
use crate::records::packet::snapshot::Snapshot;
use crate::records::packet::{clean_url, scan_said, Derived, HandoffInput, Packet, PREFIX};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::yaml;
use crate::store::{Event, Store};
use crate::worktree::contents::content_ids;

mod carry;
mod export;
mod publish;

/// What `handoff` did.
#[derive(Debug, Clone)]
pub struct Handoff {
    pub packet: Packet,
    pub refname: String,
    /// An interrupted run's packet was found and completed.
    pub resumed: bool,
    /// The remote it was published to (None offline or without one).
    pub published_to: Option<String>,
    /// Where `--export` wrote the packet.
    pub exported_to: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// `git swarm handoff`
pub fn handoff(ctx: &Ctx, input: HandoffInput) -> Result<Handoff> {
    // The caller's text is scanned before anything else, so that a credential
    // never reaches a message, a fetch or an object.
    let verified = scan_said(&input)?;
    let actor = ctx.actor()?;
    let plan_name = match &input.plan {
        Some(p) => p.clone(),
        None => crate::session::plan::infer(ctx)?,
    };
    let mut derived = derive(ctx, &input, &actor, &plan_name)?;
    // The branch head travels with the packet when the remote lacks it:
    // in the packet's atomic push when code and records share one remote,
    // else pushed to the code remote first, on its own (see
    // `publish::push_branch_first`).
    let mut branch = publish::branch_companion(
        ctx,
        derived.branch.as_deref(),
        &derived.head,
        derived.pushed,
    )?;
    if ctx.split_remotes() {
        if let Some(update) = branch.take() {
            derived.pushed |= publish::push_branch_first(ctx, &update)?;
        }
    }
    derived.pushed |= branch.is_some();
    let mut packet = Packet::build(&input, verified, derived)?;
    packet.snapshot = snapshot(ctx, &packet)?;
    failpoint::point("handoff:snapshot");
    let (refname, resumed) = publish::publish(ctx, &mut packet, &actor, branch)?;
    publish::snapshot_local(ctx, &packet, &actor)?;
    failpoint::point("handoff:ref");
    record_written(ctx, &packet, &actor)?;
    if let Some(path) = &input.export {
        export::write(path, &yaml::to_yaml(&packet)?)?;
    }
    let warnings = warnings(ctx, &packet);
    Ok(Handoff {
        refname,
        resumed,
        published_to: ctx.remote().map(str::to_string),
        exported_to: input.export.clone(),
        warnings,
        packet,
    })
}

/// The active lane whose branch is `branch`, if any.
fn active_lane_on(store: &Store, branch: &str) -> Result<Option<crate::records::lane::Lane>> {
    Ok(crate::records::lane::all(store)?
        .0
        .into_iter()
        .find(|l| l.record.is_active() && l.record.branch == branch))
}

/// The task whose claim and reservations the packet carries: the lane's
/// own (`lane new --task`), else the one `--task` names in this plan (a
/// task claimed in the lane after it started).
fn carried_task(
    lane: Option<&crate::records::lane::Lane>,
    input: &HandoffInput,
    plan_name: &str,
) -> Option<String> {
    lane.and_then(|l| l.record.task.clone()).or_else(|| {
        input
            .task
            .as_deref()
            .filter(|t| !t.is_empty() && !t.contains(char::is_whitespace))
            .map(|t| match t.contains('/') {
                true => t.to_string(),
                false => format!("{plan_name}/{t}"),
            })
    })
}

/// What the tool derives for the packet; fetches the plan's leader record,
/// its packets and the lane's record first.
fn derive(ctx: &Ctx, input: &HandoffInput, actor: &str, plan_name: &str) -> Result<Derived> {
    let store = &ctx.store;
    let plan_rec = crate::records::plan::require(store, plan_name)?;
    let workdir = store.workdir_or_err()?;
    let packets_prefix = format!("{PREFIX}{plan_name}/");
    let branch = store.git.current_branch()?;
    let lane = match &branch {
        Some(b) => active_lane_on(store, b)?,
        None => None,
    };
    let lane_ref = lane
        .as_ref()
        .map(|l| crate::records::lane::lane_ref(&l.feature));
    let lane_task = carried_task(lane.as_ref(), input, plan_name);
    let carried = carry::wanted(lane_task.as_deref());
    // Every leader record (few, small): a child plan's leader is its
    // parent's, found in the parent's record.
    let mut wanted = vec![crate::records::lead::PREFIX, packets_prefix.as_str()];
    wanted.extend(lane_ref.as_deref());
    wanted.extend(carried.iter().map(String::as_str));
    fetch_refs_from(&ctx.store, ctx.remote(), &wanted)?;
    let claim = carry::claim(ctx, lane_task.as_deref(), actor)?;
    let reservations = carry::reservations(ctx, lane_task.as_deref(), actor)?;

    let head = head_commit(store)?;
    let export = input
        .export
        .as_deref()
        .map(|p| export::location(&workdir, p))
        .transpose()?;
    let mut uncommitted = store.git.dirty_paths()?;
    uncommitted.retain(|p| Some(p) != export.as_ref());
    let uncommitted_content = content_ids(&store.repo, &workdir, &uncommitted)?;
    // Where the code is: the code remote (a coordination remote holds
    // records only).
    let repo = ctx
        .settings
        .code_remote
        .as_deref()
        .and_then(|r| store.config(&format!("remote.{r}.url")))
        .map(|u| clean_url(&u));
    let pushed = pushed(ctx, branch.as_deref(), &head)?;
    // A child plan's packet names the leader it answers to (its parent's).
    let leader = crate::ops::lead::nearest(store, ctx.remote(), plan_name)?;
    let checkout = std::fs::canonicalize(&workdir)
        .unwrap_or(workdir)
        .display()
        .to_string();
    Ok(Derived {
        plan: plan_name.to_string(),
        contract: plan_rec.record.contract.clone(),
        author: actor.to_string(),
        repo,
        checkout,
        branch,
        head,
        pushed,
        uncommitted,
        uncommitted_content,
        export,
        lane: lane.as_ref().map(|l| l.feature.clone()),
        // (A `--task` that names no claim of the author's stays the
        // caller's words only.)
        task: match &claim {
            Some(c) => Some(format!("{}/{}", c.plan, c.task)),
            None => lane.as_ref().and_then(|l| l.record.task.clone()),
        },
        claim,
        reservations,
        leader: leader
            .as_ref()
            .and_then(|l| l.current_leader())
            .map(str::to_string),
        epoch: leader.as_ref().map(|l| l.epoch),
    })
}

/// The snapshot of the uncommitted work (never the plan file nor the
/// export file), when there is any. No ref is written: the commit travels
/// with the packet in its atomic push.
fn snapshot(ctx: &Ctx, packet: &Packet) -> Result<Option<Snapshot>> {
    if packet.uncommitted.is_empty() {
        return Ok(None);
    }
    let store = &ctx.store;
    let workdir = store.workdir_or_err()?;
    let mut exclude = vec![ctx.settings.plan_file.trim_start_matches('/').to_string()];
    exclude.extend(packet.export.clone());
    let limit = crate::worktree::snapshot::limit(store)?;
    crate::worktree::snapshot::take(&store.git, &workdir, &exclude, &packet.author, limit)
}

fn head_commit(store: &Store) -> Result<String> {
    store.git.rev_parse("HEAD")?.ok_or_else(|| {
        Error::new(
            Code::Usage,
            "this checkout has no commit yet: nothing to hand off",
        )
        .hint("commit the work first (a handoff names the head commit)")
    })
}

/// Whether the head is pushed: reachable from the code remote's
/// remote-tracking branch (fetched first when online), or, detached, from
/// any of its remote-tracking branches.
fn pushed(ctx: &Ctx, branch: Option<&str>, head: &str) -> Result<bool> {
    let git = &ctx.store.git;
    let Some(remote) = ctx.settings.code_remote.as_deref() else {
        return Ok(false);
    };
    match branch {
        Some(b) => {
            if ctx.code_remote().is_some() {
                match git.fetch_branch(remote, b) {
                    Ok(true) => {}
                    Ok(false) => return Ok(false),
                    // A code remote of its own that does not answer must
                    // not stop a handoff the coordination remote can take:
                    // judged on the branch as last fetched (the packet
                    // says so, and the handoff warns when it is not there).
                    Err(_) if ctx.split_remotes() => {}
                    Err(e) => return Err(e),
                }
            }
            let tracking = format!("refs/remotes/{remote}/{b}");
            if git.rev_parse(&tracking)?.is_none() {
                return Ok(false);
            }
            git.is_ancestor(head, &tracking)
        }
        None => {
            let out = git.run([
                "for-each-ref",
                "--format=%(refname)",
                "--contains",
                head,
                &format!("refs/remotes/{remote}/"),
            ])?;
            Ok(!out.trim().is_empty())
        }
    }
}

/// The plan's journal entry and the note on the head commit (both once).
fn record_written(ctx: &Ctx, packet: &Packet, actor: &str) -> Result<()> {
    let summary = format!(
        "handoff {}: {} ({})",
        packet.id,
        packet.task.as_deref().unwrap_or("work"),
        packet.reason
    );
    let mut event = Event::new("handoff-written", actor, summary)
        .trailer("Swarm-Packet", packet.id.clone())
        .trailer("Swarm-Reason", packet.reason.clone());
    if let Some(e) = packet.epoch {
        event = event.epoch(e);
    }
    crate::records::plan::journal(
        &ctx.store,
        ctx.remote(),
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    )?;
    failpoint::point("handoff:journal");
    let head_id = ObjectId::from_hex(packet.head.as_bytes())
        .map_err(|e| Error::gix("bad head commit id", e))?;
    let note = Note::Handoff {
        packet: packet.id.clone(),
        plan: packet.plan.clone(),
        author: packet.author.clone(),
        reason: packet.reason.clone(),
    };
    note.append(&ctx.store, ctx.remote(), head_id, &event)
}

/// Why a successor elsewhere may not reach the work.
fn warnings(ctx: &Ctx, packet: &Packet) -> Vec<String> {
    if packet.pushed {
        return Vec::new();
    }
    // A successor elsewhere checks out the branch by name, so what
    // matters is the branch on the remote at this head.
    vec![match (&packet.branch, ctx.settings.code_remote.as_deref()) {
        (Some(b), Some(r)) => format!(
            "{b} is not on {r} at this head: push it (`git push -u {r} {b}`) so that a successor on another machine can check it out"
        ),
        (_, None) => "there is no remote: only a successor working in this repository can take this over".to_string(),
        (None, Some(_)) => "the detached head is not on the remote: push it to a branch so that a successor on another machine can reach it".to_string(),
    }]
}
