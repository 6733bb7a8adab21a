//! THE push step of a publication ([`land`]): what one round of
//! [`crate::store::records::Publish`] decided, published at the arbiter.
//!
//! Online: ONE atomic push of every version written, each leased on the
//! value the round fetched, with the updates and refspecs that travel
//! along (and, in the first round under a push budget, what this clone
//! queued); then the failpoint `<point>:pushed`; then the local refs move
//! forward to what was published. Offline: ONE local compare-and-swap
//! transaction of every version written: all refs move, or none. Leased
//! updates of independent records (`sync`'s) go alone, in atomic batches
//! of at most `swarm.pushBatch` refs, and move no local ref.

use gix::ObjectId;

use super::{adopt, budget, publish, publish_batched, Tip};
use crate::error::{Code, Error, Result};
use crate::git::{PushOutcome, PushUpdate};
use crate::store::mirror::gone;
use crate::store::Store;

/// One version a round wrote: `new` on the record at `tip` (its lease).
#[derive(Debug, Clone)]
pub struct Write {
    pub refname: String,
    pub tip: Tip,
    pub new: ObjectId,
    pub actor: String,
    pub reason: String,
}

impl Write {
    fn update(&self) -> PushUpdate {
        PushUpdate {
            refname: self.refname.clone(),
            new: Some(self.new.to_string()),
            expected: self.tip.remote.map(|e| e.to_string()),
        }
    }
}

/// What one round publishes.
#[derive(Debug, Clone, Default)]
pub struct Landing {
    /// Versions written: pushed with their leases, then moved locally
    /// (offline: one local CAS transaction of all of them).
    pub writes: Vec<Write>,
    /// Leased updates in the same push (online only), their local refs
    /// moved forward after it.
    pub along: Vec<PushUpdate>,
    /// Plain refspecs in the same push (online only): `lead push`'s branches.
    pub extra: Vec<String>,
    /// Leased updates of independent records whose local refs are already
    /// where they should be (`sync`'s), pushed in batches; a landing that
    /// has them has nothing else.
    pub independent: Vec<PushUpdate>,
    /// The failpoint prefix (`<point>:pushed`; empty: none).
    pub point: String,
    /// Carry this clone's queued writes along (the first round under a
    /// push budget: a refusal may be a carried record's stale lease, and
    /// the command's own write must not pay for it twice).
    pub carry: bool,
    /// A local ref that cannot move to the published version (it holds a
    /// local change that version lacks) fails the command with
    /// `CAS_FAILED` naming both, after the others moved; else it is left
    /// for `sync` to join.
    pub strict: bool,
}

/// How a [`land`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// Published (or, offline, written here).
    Done,
    /// The arbiter refused (a lease no longer held, or the local CAS lost):
    /// git's lines, or the lost CAS's message. Nothing moved.
    Lost(Vec<String>),
    /// The remote stopped answering and this process keeps its writes
    /// then: land it again offline.
    Unreachable,
}

impl Landing {
    /// Nothing to publish.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
            && self.along.is_empty()
            && self.extra.is_empty()
            && self.independent.is_empty()
    }
}

/// Publish `landing` at `remote` (None: the local CAS arbitrates); see the
/// module docs.
pub fn land(store: &Store, remote: Option<&str>, landing: &Landing) -> Result<Landed> {
    let Some(r) = remote else {
        return land_locally(store, &landing.writes);
    };
    if !landing.independent.is_empty() {
        if !(landing.writes.is_empty() && landing.along.is_empty() && landing.extra.is_empty()) {
            return Err(Error::new(
                Code::Internal,
                "independent updates are pushed alone, not with the versions of a round",
            ));
        }
        return match publish_batched(store, r, &landing.independent) {
            Ok(PushOutcome::Ok) => Ok(Landed::Done),
            Ok(PushOutcome::Rejected(lines)) => Ok(Landed::Lost(lines)),
            Err(_) if gone(store, r) => Ok(Landed::Unreachable),
            Err(e) => Err(e),
        };
    }
    let mut updates: Vec<PushUpdate> = landing.writes.iter().map(Write::update).collect();
    updates.extend(landing.along.iter().cloned());
    let (carried, _carrying_lock) = match landing.carry {
        true => {
            let own: Vec<&str> = updates.iter().map(|u| &u.refname[..]).collect();
            budget::carry(store, r, &own).unwrap_or((Vec::new(), None))
        }
        false => (Vec::new(), None),
    };
    let carrying = !carried.is_empty();
    updates.extend(carried);
    match publish(store, r, &updates, &landing.extra) {
        Ok(PushOutcome::Ok) => {
            if carrying {
                let _ = budget::settle(store, r);
            }
        }
        Ok(PushOutcome::Rejected(lines)) => return Ok(Landed::Lost(lines)),
        Err(_) if gone(store, r) => return Ok(Landed::Unreachable),
        Err(e) => return Err(e),
    }
    if !landing.point.is_empty() {
        crate::failpoint::point(&format!("{}:pushed", landing.point));
    }
    let (actor, reason) = landing
        .writes
        .first()
        .map_or(("git-swarm", "published along"), |w| {
            (&w.actor[..], &w.reason[..])
        });
    let along = landing.along.iter().filter_map(|u| {
        let new = ObjectId::from_hex(u.new.as_deref()?.as_bytes()).ok()?;
        Some((&u.refname[..], new, actor, reason, false))
    });
    let written = landing
        .writes
        .iter()
        .map(|w| (&w.refname[..], w.new, &w.actor[..], &w.reason[..], true));
    let mut diverged = None;
    for (refname, new, actor, reason, own) in written.chain(along) {
        // Published already; a local ref holding a change the pushed
        // version lacks is `sync`'s to join (or, strict, the command's
        // error once the others moved).
        match adopt(store, refname, new, actor, reason) {
            Err(e) if e.code == Code::CasFailed => {
                if own && landing.strict && diverged.is_none() {
                    diverged = Some(e);
                }
            }
            other => other?,
        }
    }
    match diverged {
        Some(e) => Err(e),
        None => Ok(Landed::Done),
    }
}

/// Offline: every version written in ONE local compare-and-swap
/// transaction (each expecting the local value the round read).
fn land_locally(store: &Store, writes: &[Write]) -> Result<Landed> {
    let Some(first) = writes.first() else {
        return Ok(Landed::Done);
    };
    let edits: Vec<(String, Option<ObjectId>, ObjectId)> = writes
        .iter()
        .map(|w| (w.refname.clone(), w.tip.local, w.new))
        .collect();
    match store.try_cas_many(&edits, &first.actor, &first.reason) {
        Ok(()) => Ok(Landed::Done),
        Err(e) if e.is_lost_race() => Ok(Landed::Lost(vec![Error::from(e).message])),
        Err(e) => Err(e.into()),
    }
}
