//! What a packet carries for the successor besides the work: the claim the
//! author holds on the lane's task and the live reservations the author
//! holds for it. `accept` moves both in the same atomic push as the
//! acceptance. Read from the records as fetched just before.

use crate::error::Result;
use crate::records::packet::{PacketClaim, PacketReservation};
use crate::records::reservation::{shard, stored};
use crate::session::Ctx;
use crate::store::yaml::Extra;

/// The refs [`claim`] and [`reservations`] read, to fetch first.
pub fn wanted(task: Option<&str>) -> Vec<String> {
    let mut out = vec![shard::PREFIX.to_string()];
    if let Some((plan, id)) = task.and_then(|t| t.split_once('/')) {
        out.push(crate::records::task::task_ref(plan, id));
    }
    out
}

/// The claim `author` holds on the lane's task (`<plan>/<id>`), if any.
pub fn claim(ctx: &Ctx, task: Option<&str>, author: &str) -> Result<Option<PacketClaim>> {
    let Some((plan, id)) = task.and_then(|t| t.split_once('/')) else {
        return Ok(None);
    };
    let Some(known) = crate::records::task::known_one(&ctx.store, ctx.remote(), plan, id)? else {
        return Ok(None);
    };
    Ok(known
        .record
        .claim
        .filter(|c| c.holder == author)
        .map(|c| PacketClaim {
            plan: plan.to_string(),
            task: id.to_string(),
            holder: c.holder,
            epoch: c.epoch,
            lease_until: c.lease_until,
            extra: Extra::new(),
        }))
}

/// The live reservations `author` holds for this work: those of the lane's
/// task (by id or `<plan>/<id>`) and those tied to no task.
pub fn reservations(ctx: &Ctx, task: Option<&str>, author: &str) -> Result<Vec<PacketReservation>> {
    let store = &ctx.store;
    // An unreadable ledger carries nothing; `reservations --repair` says why.
    let Ok(ledger) = stored::known(store, ctx.remote()) else {
        return Ok(Vec::new());
    };
    let id = task.and_then(|t| t.split_once('/')).map(|(_, i)| i);
    let now = store.clock.now();
    Ok(ledger
        .entries
        .into_iter()
        .filter(|e| e.holder == author && e.live(now))
        .filter(|e| match e.task.as_deref() {
            None => true,
            Some(t) => Some(t) == task || Some(t) == id,
        })
        .map(|e| PacketReservation {
            id: e.id,
            paths: e.paths.iter().map(|p| p.to_string()).collect(),
            lease_until: e.lease_until,
            extra: Extra::new(),
        })
        .collect())
}
