//! `sync`'s replay of this clone's unpublished ledger writes on the
//! published ledger ([`Record::replay`](crate::store::records::Record::replay)).
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
use crate::store::records::Replayed;

/// Replay `local`'s changes since `base` on `published`.
pub fn replay(
    base: Option<&Ledger>,
    local: &Ledger,
    published: &Ledger,
    now: Timestamp,
    ic: bool,
) -> Replayed<Ledger> {
    let mut r = Replaying {
        out: published.clone(),
        lost: Vec::new(),
        now,
        ic,
    };
    let find = |l: &Ledger, id: &str| l.entries.iter().find(|e| e.id == id).cloned();
    let empty = Ledger::default();
    let base = base.unwrap_or(&empty);
    for id in known_ids(base, local) {
        let (b, l) = (find(base, &id), find(local, &id));
        if b == l {
            continue;
        }
        let p = find(published, &id);
        match (b, l) {
            (_, Some(l)) if p.as_ref() == Some(&l) => {}
            // Made here.
            (None, Some(l)) => r.made_here(&id, l, p),
            // Released here (or pruned from the live ledger).
            (Some(b), None) => r.released_here(&id, b, p),
            // Changed here: renewed, released, handed over, re-tasked.
            (b, Some(l)) => {
                let b = b.expect("the (None, Some) case is above");
                r.changed_here(&id, b, l, p);
            }
            (None, None) => {}
        }
    }
    let mut out = r.out;
    out.next = out.next.max(local.next);
    super::prune(&mut out, now);
    Replayed {
        value: out,
        lost: r.lost,
    }
}

/// Every id either side of this clone knew, in the order this clone
/// wrote them (base first, then new ones).
fn known_ids(base: &Ledger, local: &Ledger) -> Vec<String> {
    let mut ids: Vec<String> = base.entries.iter().map(|e| e.id.clone()).collect();
    for e in &local.entries {
        if !ids.contains(&e.id) {
            ids.push(e.id.clone());
        }
    }
    ids
}

/// The published ledger as [`replay`] rewrites it, what it could not keep,
/// and the time and case rule it decides by.
struct Replaying {
    out: Ledger,
    lost: Vec<(Code, String)>,
    now: Timestamp,
    ic: bool,
}

impl Replaying {
    /// A reservation `l` made here: kept when its id is free on the remote
    /// (`p`: what holds it there) and nothing live of someone else overlaps.
    fn made_here(&mut self, id: &str, l: Entry, p: Option<Entry>) {
        let (now, ic) = (self.now, self.ic);
        if let Some(p) = p {
            self.lost.push((
                Code::WriteLost,
                format!(
                    "reservation {id} ({}) by {}: the id is {} on the remote",
                    paths(&l),
                    l.holder,
                    p.describe()
                ),
            ));
            return;
        }
        if !l.live(now) {
            return;
        }
        let blocking: Vec<String> = self
            .out
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
            self.out.entries.push(l);
        } else {
            self.lost.push((
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

    /// The entry `b` released (or pruned) here: dropped from the remote's
    /// ledger while it is still the holder's there (`p`).
    fn released_here(&mut self, id: &str, b: Entry, p: Option<Entry>) {
        let now = self.now;
        match p {
            None => {}
            // Dropped here as long expired, not released: the
            // remote's renewal of it stands.
            Some(p) if p != b && b.until().is_some_and(|t| now >= t + super::PRUNE_AFTER) => {}
            Some(p) if p.holder == b.holder => {
                self.out.entries.retain(|e| e.id != id);
            }
            Some(p) => self.lost.push((
                Code::WriteLost,
                format!(
                    "release of reservation {id} by {}: the remote has it {}",
                    b.holder,
                    p.describe()
                ),
            )),
        }
    }

    /// The entry changed here from `b` to `l`: merged with the remote's
    /// `p` ([`merge_entry`]), or lost when it is gone there or they clash.
    fn changed_here(&mut self, id: &str, b: Entry, l: Entry, p: Option<Entry>) {
        let Some(p) = p else {
            if l.released_at.is_none() {
                self.lost.push((
                    Code::WriteLost,
                    format!(
                        "change of reservation {} ({}): it is released or gone on the remote",
                        l.describe(),
                        paths(&l)
                    ),
                ));
            }
            return;
        };
        match merge_entry(&b, &l, &p) {
            Ok(merged) => {
                for e in self.out.entries.iter_mut().filter(|e| e.id == id) {
                    *e = merged.clone();
                }
            }
            Err(why) => self.lost.push((
                Code::WriteLost,
                format!("change of reservation {id} by {}: {why}", l.holder),
            )),
        }
    }
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

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::super::{hand_over, normalise, release, reserve, reserve_as, Request};
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn req(holder: &str, path: &str) -> Request {
        Request {
            holder: holder.into(),
            paths: vec![normalise(path, "").unwrap()],
            shared: false,
            task: None,
            reason: None,
            lease: SignedDuration::from_hours(1),
        }
    }

    /// The shared base (ann holds z.txt as r1), bob's published ledger
    /// with `theirs` reserved online, and ann's with `mine` reserved offline.
    fn apart(mine: &str, theirs: &str) -> (Ledger, Ledger, Ledger) {
        let now = t(NOW);
        let mut base = Ledger::default();
        reserve(&mut base, &req("ann", "z.txt"), now, false).unwrap();
        let mut published = base.clone();
        reserve(&mut published, &req("bob", theirs), now, false).unwrap();
        let mut local = base.clone();
        reserve_as(&mut local, &req("ann", mine), now, false, false).unwrap();
        (base, local, published)
    }

    fn ids(l: &Ledger) -> Vec<&str> {
        l.entries.iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn an_offline_reservation_nothing_overlaps_is_kept_with_its_id() {
        let (base, local, published) = apart("Cargo.toml", "src/");
        let done = replay(Some(&base), &local, &published, t(NOW), false);
        assert!(done.lost.is_empty(), "{:?}", done.lost);
        assert_eq!(ids(&done.value), ["r1", "r2", "r2-ann"]);
        assert_eq!(done.value.next, 3);
    }

    #[test]
    fn an_offline_reservation_that_overlaps_is_lost_naming_both() {
        let (base, local, published) = apart("src/lib.rs", "src/");
        let done = replay(Some(&base), &local, &published, t(NOW), false);
        assert_eq!(ids(&done.value), ["r1", "r2"]);
        let [(code, what)] = done.lost.as_slice() else {
            panic!("{:?}", done.lost)
        };
        assert_eq!(*code, Code::ReservationConflict);
        assert!(what.contains("r2-ann held by ann"), "{what}");
        assert!(what.contains("r2 held by bob"), "{what}");
    }

    #[test]
    fn a_renewal_and_a_release_are_re_applied_and_a_renewal_of_what_moved_is_lost() {
        let (base, _, published) = apart("x", "src/");
        // ann renews r1 later, offline.
        let mut local = base.clone();
        reserve(
            &mut local,
            &req("ann", "z.txt"),
            t("2026-01-01T00:30:00Z"),
            false,
        )
        .unwrap();
        let done = replay(Some(&base), &local, &published, t(NOW), false);
        assert!(done.lost.is_empty());
        assert_eq!(done.value.entries[0].lease_until, "2026-01-01T01:30:00Z");
        // ann releases r1 offline.
        let mut local = base.clone();
        release(&mut local, "ann", &[("r1".into(), None)], t(NOW), false).unwrap();
        let done = replay(Some(&base), &local, &published, t(NOW), false);
        assert_eq!(ids(&done.value), ["r2"]);
        // ann's r1 was handed to bob at the remote: her renewal is lost.
        let mut moved = published.clone();
        hand_over(
            &mut moved,
            &["r1".into()],
            "ann",
            "bob",
            "2026-01-01T02:00:00Z",
        );
        let mut local = base.clone();
        reserve(
            &mut local,
            &req("ann", "z.txt"),
            t("2026-01-01T00:30:00Z"),
            false,
        )
        .unwrap();
        let done = replay(Some(&base), &local, &moved, t(NOW), false);
        assert_eq!(done.value.entries[0].holder, "bob");
        assert_eq!(done.lost.len(), 1, "{:?}", done.lost);
        assert!(done.lost[0].1.contains("held by bob"), "{:?}", done.lost);
    }

    #[test]
    fn an_offline_hand_over_is_re_applied_and_two_ledgers_started_apart_are_joined() {
        let (base, _, published) = apart("x", "src/");
        let mut local = base.clone();
        hand_over(
            &mut local,
            &["r1".into()],
            "ann",
            "cat",
            "2026-01-01T03:00:00Z",
        );
        let done = replay(Some(&base), &local, &published, t(NOW), false);
        assert!(done.lost.is_empty());
        assert_eq!(done.value.entries[0].holder, "cat");
        assert_eq!(done.value.entries[0].lease_until, "2026-01-01T03:00:00Z");
        // No shared version: every local entry is re-decided.
        let mut mine = Ledger::default();
        reserve_as(&mut mine, &req("ann", "a.txt"), t(NOW), false, false).unwrap();
        let mut theirs = Ledger::default();
        reserve_as(&mut theirs, &req("bob", "b.txt"), t(NOW), false, false).unwrap();
        let done = replay(None, &mine, &theirs, t(NOW), false);
        assert!(done.lost.is_empty());
        assert_eq!(ids(&done.value), ["r1-bob", "r1-ann"]);
    }
}
