//! The reservations as stored: every record of [`super::shard`] read in one
//! pass (in a publication's round, or as this clone knows them), and the
//! shards a decision changed written back in that round's one push.

use gix::ObjectId;

use super::shard::{Part, Shards, PREFIX, SHARDS};
use super::Ledger;
use crate::error::Result;
use crate::store::records::{Records, Txn};
use crate::store::remote::{self, Tip};
use crate::store::yaml::Unreadable;
use crate::store::{Event, Store};

/// Every part of the reservations, the one-ref ledger first.
pub fn parts() -> impl Iterator<Item = Part> {
    std::iter::once(Part::Legacy).chain((0..SHARDS).map(Part::Shard))
}

/// The ref of a part.
pub fn refname(part: Part) -> String {
    format!("{PREFIX}{}", part.key())
}

/// The reservations at these commits (None: the part is absent).
pub fn at(store: &Store, tips: &[(Part, Option<ObjectId>)]) -> Result<Shards> {
    let records = Records::<Ledger>::new(store);
    let mut out = Shards::default();
    for (part, at) in tips {
        if let Some(c) = at {
            out.set(*part, Some(records.at(&part.key(), *c)?.value));
        }
    }
    Ok(out)
}

/// Where each part that exists stands as this clone knows it (local, or
/// the last fetched mirror when that is newer), without fetching: one
/// listing of each side.
pub fn tips(store: &Store, remote: Option<&str>) -> Result<Vec<(Part, Tip)>> {
    Ok(remote::tips_under(store, remote, PREFIX)?
        .into_iter()
        .filter_map(|(key, tip)| Some((Part::from_key(&key)?, tip)))
        .collect())
}

/// The reservations as this clone knows them, merged into one ledger.
pub fn known(store: &Store, remote: Option<&str>) -> Result<Ledger> {
    let tips: Vec<(Part, Option<ObjectId>)> = tips(store, remote)?
        .into_iter()
        .map(|(p, t)| (p, t.base))
        .collect();
    Ok(at(store, &tips)?.merged())
}

/// [`known`] for a view: a part that cannot be read is named in
/// `unreadable` and left out (its entries are not shown), the rest shown.
pub fn known_readable(
    store: &Store,
    remote: Option<&str>,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Ledger> {
    let records = Records::<Ledger>::new(store);
    let mut out = Shards::default();
    for (part, tip) in tips(store, remote)? {
        let Some(at) = tip.base else { continue };
        match records.at(&part.key(), at) {
            Ok(v) => out.set(part, Some(v.value)),
            Err(e) => unreadable.push(Unreadable::new(
                "reservations",
                &part.key(),
                &refname(part),
                &e,
            )),
        }
    }
    Ok(out.merged())
}

/// The reservations where this round stands.
pub fn current(txn: &mut Txn<'_>) -> Result<Shards> {
    let mut out = Shards::default();
    for part in parts() {
        out.set(part, txn.current::<Ledger>(&part.key())?.map(|v| v.value));
    }
    Ok(out)
}

/// Write what `after` (`before` merged, then decided on) changed: the
/// shards it changed, in this round's push. Returns the commit of the
/// first one written (None: nothing changed).
pub fn write(
    txn: &mut Txn<'_>,
    before: &Shards,
    after: &Ledger,
    event: &Event,
) -> Result<Option<ObjectId>> {
    let mut first = None;
    let now = txn.store().clock.now();
    for (part, ledger) in before.changed(after, now) {
        let new = txn.write(&part.key(), &ledger, event)?;
        first.get_or_insert(new);
    }
    Ok(first)
}

/// A write that changed nothing (a rerun of one whose push landed before
/// it was killed): each local part behind what the remote published moves
/// up to it, as the first run would have left it. The version of the
/// first part that exists, else the null id.
pub fn catch_up(txn: &mut Txn<'_>) -> Result<ObjectId> {
    let mut first = None;
    for part in parts() {
        txn.catch_up(&refname(part))?;
        if let Some(at) = txn.tip(&refname(part))?.base {
            first.get_or_insert(at);
        }
    }
    Ok(first.unwrap_or(ObjectId::null(gix::hash::Kind::Sha1)))
}
