//! `git swarm packet withdraw <id> --reason R`: the author takes a packet
//! back before anyone accepted it (e.g. written to the wrong plan). A new
//! version of the packet ref with `withdrawal.yaml`, published by
//! compare-and-swap like an acceptance, so a withdrawal and an acceptance
//! racing each other cannot both win; the packet is never deleted.

use gix::ObjectId;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::records::packet::{locate, read_at, scan, Packet, Withdrawal, PREFIX, WITHDRAWAL_FILE};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::records::{Publish, Txn};
use crate::store::yaml;
use crate::store::Event;

/// What `packet withdraw` did.
#[derive(Debug, Clone)]
pub struct Withdrawn {
    pub packet: String,
    pub refname: String,
    pub withdrawal: Withdrawal,
    /// None: the packet was withdrawn already, nothing changed.
    pub commit: Option<ObjectId>,
}

/// What the publish loop's one round decided.
enum Decided {
    /// Withdrawn already: nothing to publish (the plan's journal entry may
    /// still be missing, after a run killed past its push).
    Already(Box<(Packet, Withdrawal)>),
    /// This withdrawal, in a new version of the packet ref.
    Wrote(Box<(Packet, Withdrawal, ObjectId)>),
}

/// `git swarm packet withdraw <id> --reason R`
pub fn withdraw(ctx: &Ctx, arg: &str, reason: &str) -> Result<Withdrawn> {
    scan(&serde_json::json!({ "reason": reason }))?;
    if reason.trim().is_empty() {
        return Err(Error::new(
            Code::Usage,
            "--reason must say why the packet is withdrawn",
        ));
    }
    let actor = ctx.actor()?;
    fetch_refs_from(&ctx.store, ctx.remote(), &[PREFIX])?;
    let refname = locate(&ctx.store, ctx.remote(), arg)?;
    // One round: a withdrawal that loses its race (the packet was accepted
    // meanwhile) is refused, never decided again.
    let tried = std::cell::RefCell::new(None::<String>);
    let decided = Publish::new(&ctx.store, ctx.remote())
        .attempts(1)
        .point("withdraw")
        .exhausted(|lines| {
            let id = tried.borrow().clone().unwrap_or_default();
            Error::new(
                Code::PushRejected,
                format!(
                    "packet {id} changed at the remote while you withdrew it (accepted?): {}",
                    lines.join("; ")
                ),
            )
            .hint(format!("see it with `git swarm packet show {id}`"))
        })
        .run(|txn| decide(ctx, txn, &refname, &actor, reason, &tried))?
        .then;
    let (packet, w, commit) = match decided {
        Decided::Already(done) => {
            let (packet, w) = *done;
            (packet, w, None)
        }
        Decided::Wrote(wrote) => {
            let (packet, w, commit) = *wrote;
            (packet, w, Some(commit))
        }
    };
    // The plan's journal says so too, once: a rerun of a withdrawal killed
    // after its push writes the entry it left out, and never a second one.
    // A missing plan (archived) is no reason to fail.
    let event = withdrawn_event(&packet, &w);
    match crate::records::plan::journal(
        &ctx.store,
        ctx.remote(),
        &packet.plan,
        &event,
        None,
        Some(("Swarm-Packet", &packet.id)),
    ) {
        Err(e) if e.code == Code::NotFound => {}
        other => {
            other?;
        }
    }
    Ok(Withdrawn {
        packet: packet.id.clone(),
        refname,
        withdrawal: w,
        commit,
    })
}

/// The event of a withdrawal: the packet version's and the journal entry's.
fn withdrawn_event(packet: &Packet, w: &Withdrawal) -> Event {
    let by = &w.withdrawn_by;
    Event::new(
        "handoff-withdrawn",
        by,
        format!("handoff {}: withdrawn by {by} ({})", packet.id, w.reason),
    )
    .trailer("Swarm-Packet", packet.id.clone())
}

/// Read the packet where it stands and decide: refused (accepted, or not
/// the author's), withdrawn already, or the next version with the
/// withdrawal, to publish. `tried` names the packet for a lost race.
fn decide(
    ctx: &Ctx,
    txn: &mut Txn<'_>,
    refname: &str,
    actor: &str,
    reason: &str,
    tried: &std::cell::RefCell<Option<String>>,
) -> Result<Decided> {
    let store = &ctx.store;
    let tip = txn.tip(refname)?;
    let base = tip.base.expect("a located packet has a version");
    let version = read_at(store, refname, base)?;
    let packet = version.packet.clone();
    if let Some(w) = version.may_withdraw(actor)? {
        // Withdrawn by a run killed after its push: the local ref catches up.
        if tip.local_behind(store)? {
            match crate::store::remote::adopt(
                store,
                refname,
                base,
                "git-swarm",
                "catch up with the remote",
            ) {
                Err(e) if e.code == Code::CasFailed => {}
                other => other?,
            }
        }
        return Ok(Decided::Already(Box::new((packet, w.clone()))));
    }
    let w = Withdrawal::new(&packet, actor, rfc3339(store.clock.now()), reason);
    // The packet's own bytes stay as they are: the withdrawal is added.
    let mut files = store.read_commit(base)?.files;
    files.insert(WITHDRAWAL_FILE.to_string(), yaml::to_yaml(&w)?);
    let tree = store.write_tree(&files)?;
    let event = withdrawn_event(&packet, &w);
    let commit = store.commit(tree, &[base], &event)?;
    *tried.borrow_mut() = Some(packet.id.clone());
    txn.write_commit(refname, commit, actor, &event.summary)?;
    Ok(Decided::Wrote(Box::new((packet, w, commit))))
}
