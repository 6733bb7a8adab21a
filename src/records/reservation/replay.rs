//! `sync`'s replay of this clone's unpublished ledger writes on the
//! published ledger ([`Record::replay`](crate::store::kind::Record::replay)).
//!
//! The ledger is one record every clone writes, so two clones that wrote it
//! apart (one offline) always diverge; taking either side whole would drop
//! the other's reservations. Instead each entry is compared three ways, by
//! id: the version both sides last shared (`base`), this clone's, and the
//! published one. What this clone changed is re-decided on the published
//! ledger:
//!
//! - a reservation made here is kept when nothing live of someone else
//!   overlaps it there, else it is lost as `RESERVATION_CONFLICT` naming
//!   both; its id is kept (an id allocated offline carries its holder's
//!   address, see [`super::offline_id`], so it cannot be another's);
//! - a renewal is re-applied (the later lease end wins) while the entry is
//!   still the holder's there;
//! - a release (or `task done`'s) is re-applied while the entry is still
//!   the holder's;
//! - a hand-over (`accept`) is re-applied while the entry is still held by
//!   the one it was handed over from;
//! - anything else both sides changed keeps the published value and is
//!   named as lost.

use jiff::Timestamp;

use super::{Entry, Ledger};
use crate::error::Code;
use crate::store::kind::Replayed;

/// Replay `local`'s changes since `base` on `published`.
pub fn replay(
    base: Option<&Ledger>,
    local: &Ledger,
    published: &Ledger,
    now: Timestamp,
    ic: bool,
) -> Replayed<Ledger> {
    let mut out = published.clone();
    let mut lost: Vec<(Code, String)> = Vec::new();
    let find = |l: &Ledger, id: &str| l.entries.iter().find(|e| e.id == id).cloned();
    let empty = Ledger::default();
    let base = base.unwrap_or(&empty);
    // Every id either side of this clone knew, in the order this clone
    // wrote them (base first, then new ones).
    let mut ids: Vec<String> = base.entries.iter().map(|e| e.id.clone()).collect();
    for e in &local.entries {
        if !ids.contains(&e.id) {
            ids.push(e.id.clone());
        }
    }
    for id in ids {
        let (b, l) = (find(base, &id), find(local, &id));
        if b == l {
            continue;
        }
        let p = find(published, &id);
        match (b, l) {
            (_, Some(l)) if p.as_ref() == Some(&l) => {}
            // Made here.
            (None, Some(l)) => {
                if let Some(p) = p {
                    lost.push((
                        Code::WriteLost,
                        format!(
                            "reservation {id} ({}) by {}: the id is {} on the remote",
                            paths(&l),
                            l.holder,
                            p.describe()
                        ),
                    ));
                    continue;
                }
                if !l.live(now) {
                    continue;
                }
                let blocking: Vec<String> = out
                    .entries
                    .iter()
                    .filter(|o| {
                        l.paths
                            .iter()
                            .any(|q| o.blocks(&l.holder, q, l.shared, now, ic))
                    })
                    .map(Entry::describe)
                    .collect();
                if blocking.is_empty() {
                    out.entries.push(l);
                } else {
                    lost.push((
                        Code::ReservationConflict,
                        format!(
                            "reservation {} ({}): overlaps {} on the remote",
                            l.describe(),
                            paths(&l),
                            blocking.join("; ")
                        ),
                    ));
                }
            }
            // Released here (or pruned from the live ledger).
            (Some(b), None) => match p {
                None => {}
                // Dropped here as long expired, not released: the
                // remote's renewal of it stands.
                Some(p) if p != b && b.until().is_some_and(|t| now >= t + super::PRUNE_AFTER) => {}
                Some(p) if p.holder == b.holder => {
                    out.entries.retain(|e| e.id != id);
                }
                Some(p) => lost.push((
                    Code::WriteLost,
                    format!(
                        "release of reservation {id} by {}: the remote has it {}",
                        b.holder,
                        p.describe()
                    ),
                )),
            },
            // Changed here: renewed, released, handed over, re-tasked.
            (b, Some(l)) => {
                let b = b.expect("the (None, Some) case is above");
                let Some(p) = p else {
                    if l.released_at.is_none() {
                        lost.push((
                            Code::WriteLost,
                            format!(
                                "change of reservation {} ({}): it is released or gone on the remote",
                                l.describe(),
                                paths(&l)
                            ),
                        ));
                    }
                    continue;
                };
                match merge_entry(&b, &l, &p) {
                    Ok(merged) => {
                        for e in out.entries.iter_mut().filter(|e| e.id == id) {
                            *e = merged.clone();
                        }
                    }
                    Err(why) => lost.push((
                        Code::WriteLost,
                        format!("change of reservation {id} by {}: {why}", l.holder),
                    )),
                }
            }
            (None, None) => {}
        }
    }
    out.next = out.next.max(local.next);
    super::prune(&mut out, now);
    Replayed { value: out, lost }
}

/// One entry both sides may have changed since `b`: each field takes the
/// side that changed it; a lease end both changed takes the later. Err
/// when the two changed the holder or the release apart.
fn merge_entry(b: &Entry, l: &Entry, p: &Entry) -> Result<Entry, String> {
    let mut out = p.clone();
    if l.holder != b.holder {
        if p.holder == b.holder {
            out.holder = l.holder.clone();
        } else if p.holder != l.holder {
            return Err(format!(
                "handed to {} here, but the remote has it {}",
                l.holder,
                p.describe()
            ));
        }
    } else if p.holder != b.holder {
        // Handed over (or recovered) on the remote; a renewal or release by
        // the previous holder here is not theirs to make any more.
        return Err(format!("the remote has it {}", p.describe()));
    }
    if l.released_at.is_some() && p.released_at.is_none() {
        out.released_at = l.released_at.clone();
    } else if p.released_at.is_some() && l.released_at.is_none() && l.lease_until != b.lease_until {
        return Err(format!(
            "renewed here until {}, but released on the remote",
            l.lease_until
        ));
    }
    if l.lease_until != b.lease_until {
        let later = match (l.until(), p.until()) {
            (Some(a), Some(c)) => a > c,
            _ => p.lease_until == b.lease_until,
        };
        if later {
            out.lease_until = l.lease_until.clone();
        }
    }
    if l.task != b.task && p.task == b.task {
        out.task = l.task.clone();
    }
    if l.reason != b.reason && p.reason == b.reason {
        out.reason = l.reason.clone();
    }
    if l.shared != b.shared && p.shared == b.shared {
        out.shared = l.shared;
    }
    Ok(out)
}

fn paths(e: &Entry) -> String {
    e.paths
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}
