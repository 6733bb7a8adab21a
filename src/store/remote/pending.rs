//! Local changes not yet published, and THE step that publishes them: what
//! a command wrote while the remote could not be reached (or with
//! `--offline`) rides with the next command that reaches it.
//!
//! A change is pending when the local ref and the remote's mirror differ
//! and the local side is the newer: a record the remote lacks (and did not
//! archive), a version that descends from the published one, or a live ref
//! `gc` archived here (its deletion travels with the archive). A record
//! both sides moved is pending too, but only `sync` can join it: it is
//! counted, never pushed from here. Everything pushable goes in atomic pushes
//! of at most `swarm.pushBatch` refs where each ref carries the mirrored
//! value as its lease, so a remote that moved meanwhile refuses the batch
//! that holds it (and the rest) and nothing is overwritten.

use std::collections::{BTreeMap, BTreeSet};

use gix::ObjectId;
use serde::Serialize;

use super::super::mirror::fetch;
use super::super::notes::NOTES_REF;
use super::super::reconcile::{archived_on_either_side, mirrored};
use super::{publish_batched, PushOutcome, PushUpdate};
use crate::error::Result;
use crate::store::Store;

/// The one wording of a write that stays in this clone, whatever wrote it:
/// `not published: <why>; `git swarm sync` publishes it`.
pub fn not_published(why: &str) -> String {
    format!("not published: {why}; `git swarm sync` publishes it")
}

/// What this clone has that the remote (as last fetched) does not.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pending {
    /// Fast-forwards, new records and `gc`'s deletions: one atomic push.
    #[serde(skip)]
    pub updates: Vec<PushUpdate>,
    /// The refs of `updates`, for people.
    pub refs: Vec<String>,
    /// Records both sides moved: `sync` joins them.
    pub diverged: Vec<String>,
}

impl Pending {
    /// How many local changes are not published.
    pub fn count(&self) -> usize {
        self.refs.len() + self.diverged.len()
    }
}

/// The local changes not published to `remote`, against its mirror as last
/// fetched. Reads refs and, for records present on one side only, the
/// archives; no network.
pub fn pending(store: &Store, remote: &str) -> Result<Pending> {
    let mut local: BTreeMap<String, ObjectId> =
        store.list_refs("refs/swarm/")?.into_iter().collect();
    if let Some(n) = store.ref_target(NOTES_REF)? {
        local.insert(NOTES_REF.to_string(), n);
    }
    let theirs = mirrored(store, remote)?;
    let differ: BTreeSet<&String> = local
        .keys()
        .chain(theirs.keys())
        .filter(|n| local.get(*n) != theirs.get(*n))
        .collect();
    let mut out = Pending::default();
    if differ.is_empty() {
        return Ok(out);
    }
    // Only a record on one side needs the archives: read them then.
    let one_sided = differ
        .iter()
        .any(|n| local.contains_key(*n) != theirs.contains_key(*n));
    let archived = if one_sided {
        archived_on_either_side(store, &local, &theirs)?
    } else {
        BTreeMap::new()
    };
    let was_archived = |name: &str, tip: ObjectId| -> Result<bool> {
        match archived.get(name) {
            None => Ok(false),
            Some(a) => Ok(*a == tip || store.is_ancestor(tip, *a)?),
        }
    };
    for name in differ {
        let update = match (local.get(name).copied(), theirs.get(name).copied()) {
            // The remote archived it (sync deletes it here), or it is new here.
            (Some(l), None) if was_archived(name, l)? => None,
            (Some(l), None) => Some((Some(l), None)),
            // Archived here by `gc`: the deletion is pending; else the
            // remote has a record this clone has not taken yet.
            (None, Some(r)) if was_archived(name, r)? => Some((None, Some(r))),
            (None, Some(_)) => None,
            (Some(l), Some(r)) if store.is_ancestor(r, l)? => Some((Some(l), Some(r))),
            (Some(l), Some(r)) if store.is_ancestor(l, r)? => None,
            (Some(_), Some(_)) => {
                out.diverged.push(name.clone());
                None
            }
            (None, None) => None,
        };
        if let Some((new, expected)) = update {
            out.refs.push(name.clone());
            out.updates.push(PushUpdate {
                refname: name.clone(),
                new: new.map(|n| n.to_string()),
                expected: expected.map(|e| e.to_string()),
            });
        }
    }
    Ok(out)
}

/// What [`publish_pending`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flushed {
    /// Nothing was pending.
    Nothing,
    /// These refs were published (in atomic pushes of at most
    /// `swarm.pushBatch` refs).
    Published(Vec<String>),
    /// The remote moved meanwhile (a lease did not hold): the batch that
    /// held it and those after it were not pushed; `sync` joins the two.
    Refused(Vec<String>),
}

/// Publish every pushable pending change in atomic pushes with leases, in
/// batches of at most `swarm.pushBatch` refs ([`publish_batched`]).
/// Only when the mirror says something is pending does it fetch (once, so
/// that the leases are fresh) and push: a command with nothing pending
/// costs no network. A remote that cannot be reached is the caller's error.
pub fn publish_pending(store: &Store, remote: &str) -> Result<Flushed> {
    if pending(store, remote)?.updates.is_empty() {
        return Ok(Flushed::Nothing);
    }
    fetch(store, remote)?;
    let fresh = pending(store, remote)?;
    if fresh.updates.is_empty() {
        return Ok(Flushed::Nothing);
    }
    match publish_batched(store, remote, &fresh.updates)? {
        PushOutcome::Ok => Ok(Flushed::Published(fresh.refs)),
        PushOutcome::Rejected(lines) => Ok(Flushed::Refused(lines)),
    }
}
