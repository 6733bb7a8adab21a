//! `git swarm packet withdraw <id> --reason R`: the author takes a packet
//! back before anyone accepted it (e.g. written to the wrong plan). A new
//! version of the packet ref with `withdrawal.yaml`, published by
//! compare-and-swap like an acceptance, so a withdrawal and an acceptance
//! racing each other cannot both win; the packet is never deleted.

use gix::ObjectId;

use crate::clock::rfc3339;
use crate::ctx::packet::{fetch, locate, read_at};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::model::packet::{scan, Withdrawal, PREFIX, WITHDRAWAL_FILE};
use crate::plan;
use crate::store::record;
use crate::store::Event;
use crate::sync::{self, Published};

/// What `packet withdraw` did.
#[derive(Debug, Clone)]
pub struct Withdrawn {
    pub packet: String,
    pub refname: String,
    pub withdrawal: Withdrawal,
    /// None: the packet was withdrawn already, nothing changed.
    pub commit: Option<ObjectId>,
}

/// `git swarm packet withdraw <id> --reason R`
pub fn withdraw(ctx: &Ctx, arg: &str, reason: &str) -> Result<Withdrawn> {
    let store = &ctx.store;
    scan(&serde_json::json!({ "reason": reason }))?;
    if reason.trim().is_empty() {
        return Err(Error::usage(
            "USAGE",
            "--reason must say why the packet is withdrawn",
        ));
    }
    let actor = ctx.actor()?;
    fetch(ctx, &[PREFIX])?;
    let refname = locate(ctx, arg)?;
    let tip = sync::tip(store, ctx.remote(), &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let version = read_at(store, &refname, base)?;
    let packet = &version.packet;
    if let Some(w) = version.may_withdraw(&actor)? {
        return Ok(Withdrawn {
            packet: packet.id.clone(),
            refname,
            withdrawal: w.clone(),
            commit: None,
        });
    }
    let w = Withdrawal::new(packet, &actor, rfc3339(store.clock.now()), reason);
    // The packet's own bytes stay as they are: the withdrawal is added.
    let mut files = store.read_commit(base)?.files;
    files.insert(WITHDRAWAL_FILE.to_string(), record::to_yaml(&w)?);
    let tree = store.write_tree(&files)?;
    let event = Event::new(
        "handoff-withdrawn",
        &actor,
        format!("handoff {}: withdrawn by {actor} ({reason})", packet.id),
    )
    .trailer("Swarm-Packet", packet.id.clone());
    let commit = store.commit(tree, &[base], &event)?;
    if let Published::Rejected(lines) = sync::publish_record(
        store,
        ctx.remote(),
        &refname,
        &tip,
        commit,
        &[],
        &actor,
        &event.summary,
        "withdraw",
    )? {
        return Err(Error::race(
            "PUSH_REJECTED",
            format!(
                "packet {} changed at the remote while you withdrew it (accepted?): {}",
                packet.id,
                lines.join("; ")
            ),
        )
        .hint(format!("see it with `git swarm packet show {}`", packet.id)));
    }
    // The plan's journal says so too; a missing plan (archived) is no reason to fail.
    match plan::journal(
        ctx,
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    ) {
        Err(e) if e.code == "NOT_FOUND" => {}
        other => {
            other?;
        }
    }
    Ok(Withdrawn {
        packet: packet.id.clone(),
        refname,
        withdrawal: w,
        commit: Some(commit),
    })
}
