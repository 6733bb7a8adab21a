//! The claim and the reservations a packet carries, moved to the successor
//! in the same atomic push as the acceptance: the task's next version (the
//! claim counter increases, the successor holds it, the author is the
//! previous owner) and the ledger's next version (the entries' holder is
//! the successor). What cannot move — a claim or an entry someone else
//! holds now, after its lease expired and was recovered — is named in the
//! acceptance (`moved.not_moved`) and in `accept`'s output, never dropped
//! silently. Offline the same versions are written in the acceptance's own
//! local CAS transaction: all of them or none.

use gix::ObjectId;

use super::Asked;
use crate::error::Result;
use crate::git::PushUpdate;
use crate::records::packet::{Moved, Packet};
use crate::records::reservation::{self as reservation, shard::Part, stored};
use crate::records::task::{self as task, task_ref, HandOver, TaskKey, TaskRecord};
use crate::store::records::{Record, Records};
use crate::store::remote::{self, Tip};
use crate::store::Event;

/// The moves decided for one acceptance: the updates for its push (each
/// leased at the value fetched) and, for offline, each ref's next version
/// on the tip it was decided on (written with the acceptance, one CAS).
#[derive(Debug, Clone, Default)]
pub struct Moves {
    pub moved: Moved,
    pub updates: Vec<PushUpdate>,
    pub local: Vec<(String, Tip, ObjectId)>,
}

/// Decide what of the packet's claim and reservations moves to `to`.
pub(super) fn decide(s: &Asked<'_>, packet: &Packet) -> Result<Moves> {
    let to = s.actor.as_str();
    let mut out = Moves::default();
    if packet.author == to {
        return Ok(out);
    }
    if let Some(c) = &packet.claim {
        claim(s, packet, c, to, &mut out)?;
    }
    if !packet.reservations.is_empty() {
        ledger(s, packet, to, &mut out)?;
    }
    Ok(out)
}

fn claim(
    s: &Asked<'_>,
    packet: &Packet,
    c: &crate::records::packet::PacketClaim,
    to: &str,
    out: &mut Moves,
) -> Result<()> {
    let store = s.store;
    let key = format!("{}/{}", c.plan, c.task);
    let refname = task_ref(&c.plan, &c.task);
    let tip = remote::tip(store, s.remote, &refname)?;
    let Some(base) = tip.base.filter(|_| !tip.archived) else {
        out.moved
            .not_moved
            .push(format!("task {key}: not found here or on the remote"));
        return Ok(());
    };
    let tkey = TaskKey {
        plan: c.plan.clone(),
        id: c.task.clone(),
    };
    let current: TaskRecord = Records::<TaskRecord>::new(store).at(&tkey, base)?.value;
    let lease = s.task_lease.clone()?;
    let now = store.clock.now();
    match task::hand_over(&current, &packet.author, to, &packet.id, lease, now)? {
        HandOver::Already => out.moved.claim = Some(key),
        HandOver::Lost(why) => out.moved.not_moved.push(why),
        HandOver::Move(rec, ev) => {
            let commit = write(store, &rec.to_files()?, Some(base), &ev)?;
            out.updates.push(PushUpdate {
                refname: refname.clone(),
                new: Some(commit.to_string()),
                expected: tip.remote.map(|r| r.to_string()),
            });
            out.local.push((refname, tip, commit));
            out.moved.claim = Some(key);
        }
    }
    Ok(())
}

fn ledger(s: &Asked<'_>, packet: &Packet, to: &str, out: &mut Moves) -> Result<()> {
    let store = s.store;
    let mut tips = Vec::new();
    for part in stored::parts() {
        let tip = remote::tip(store, s.remote, &stored::refname(part))?;
        let live = tip.base.filter(|_| !tip.archived);
        tips.push((part, tip, live));
    }
    let ids: Vec<String> = packet.reservations.iter().map(|r| r.id.clone()).collect();
    if tips.iter().all(|(_, _, live)| live.is_none()) {
        out.moved.not_moved.extend(
            ids.iter()
                .map(|id| format!("reservation {id}: the ledger is not here")),
        );
        return Ok(());
    }
    let at: Vec<(Part, Option<ObjectId>)> = tips.iter().map(|(p, _, l)| (*p, *l)).collect();
    let before = stored::at(store, &at)?;
    let mut ledger = before.merged();
    let now = store.clock.now();
    let lease = s.reservation_lease.clone()?;
    let until = crate::clock::lease_end(now, lease, crate::error::Code::LeaseInvalidDuration)?;
    let entries_before = ledger.entries.clone();
    let (moved, not_moved) = reservation::hand_over(&mut ledger, &ids, &packet.author, to, &until);
    out.moved.reservations = moved.clone();
    out.moved.not_moved.extend(not_moved);
    if ledger.entries == entries_before {
        return Ok(());
    }
    let summary = format!(
        "reservations {} handed over from {} to {to} (packet {})",
        moved.join(", "),
        packet.author,
        packet.id
    );
    let ev = Event::new("reservation-handed-over", to, summary)
        .trailer("Swarm-Packet", packet.id.as_str());
    for (part, next) in before.changed(&ledger, now) {
        let Some((_, tip, live)) = tips.iter().find(|(p, _, _)| *p == part) else {
            continue;
        };
        let refname = stored::refname(part);
        let commit = write(store, &next.to_files()?, *live, &ev)?;
        out.updates.push(PushUpdate {
            refname: refname.clone(),
            new: Some(commit.to_string()),
            expected: tip.remote.map(|r| r.to_string()),
        });
        out.local.push((refname, *tip, commit));
    }
    Ok(())
}

/// Move the local task and ledger refs up to the versions the acceptance
/// published them at (a run killed between its push and its local update):
/// whether any moved. Offline they moved in the acceptance's own local CAS.
pub(super) fn catch_up(s: &Asked<'_>, moved: &Moved, actor: &str) -> Result<bool> {
    let Some(remote) = s.remote else {
        return Ok(false);
    };
    let mut refs = Vec::new();
    if let Some((plan, task)) = moved.claim.as_deref().and_then(|k| k.split_once('/')) {
        refs.push(task_ref(plan, task));
    }
    if !moved.reservations.is_empty() {
        refs.extend(stored::parts().map(stored::refname));
    }
    let mut any = false;
    for refname in refs {
        any |= super::lane::catch_up_ref(s.store, remote, &refname, actor)?;
    }
    Ok(any)
}

fn write(
    store: &crate::store::Store,
    files: &crate::store::records::Files,
    parent: Option<ObjectId>,
    ev: &Event,
) -> Result<ObjectId> {
    let tree = store.write_tree(files)?;
    let parents: Vec<ObjectId> = parent.into_iter().collect();
    store.commit(tree, &parents, ev)
}
