//! The archive (`gc`): keep the live ref count bounded. Every push
//! advertises every ref and hosts limit refs, so records that are finished —
//! as each kind's [`AnyKind::finished`] says (accepted packets, removed
//! lanes, closed plans and their released leader records) — older than an
//! age are folded into one archive ref per kind and their live refs deleted.
//! Nothing is lost: the archive commit has each archived record tip as a
//! parent (so every version stays reachable and `git log` shows it) and its
//! tree maps the record's name to its tip. Lookups that must still find
//! archived records go through [`find_record`].
//!
//! Crash-safe by order: the archive is written first (CAS), then live refs
//! are deleted (CAS on their tip). A rerun after a crash finds the same
//! candidates, adds nothing new to the archive, and deletes the rest.

use std::cell::RefCell;
use std::collections::BTreeMap;

use gix::ObjectId;
use serde::Serialize;

use super::records::{kind_of, AnyKind};
use super::{Event, Store};
use crate::error::{Code, Error, Result};

mod lookup;
pub use lookup::{
    archive_ref, archived, archived_tip, entries_at, find_record, split, ARCHIVE_PREFIX,
};

/// Parents per archive commit; larger batches are chained.
const PARENTS_PER_COMMIT: usize = 200;
/// How many times the archive fold retries when another `gc` moved it.
const FOLD_ATTEMPTS: usize = 5;

#[derive(Debug, Clone, Serialize, Default)]
pub struct GcReport {
    pub dry_run: bool,
    pub older_than: String,
    pub live_before: usize,
    pub live_after: usize,
    /// kind -> archived ref names.
    pub archived: BTreeMap<String, Vec<String>>,
}

pub(super) fn commit_seconds(store: &Store, id: ObjectId) -> Result<i64> {
    let c = store
        .repo
        .find_commit(id)
        .map_err(|e| Error::gix(format!("could not read {id}"), e))?;
    Ok(c.time().map(|t| t.seconds).unwrap_or(0))
}

/// Live swarm refs (everything under refs/swarm/ except the archives).
pub fn live_refs(store: &Store) -> Result<Vec<(String, ObjectId)>> {
    Ok(store
        .list_refs("refs/swarm/")?
        .into_iter()
        .filter(|(n, _)| !n.starts_with(ARCHIVE_PREFIX))
        .collect())
}

/// Which live records are due for the archive — finished, and last changed
/// before the cutoff — each asked of its kind once: a kind's rule may ask
/// about another record (`finished_elsewhere`: a leader record goes with
/// its plan, a snapshot with its packet), and every answer is kept. The
/// other record's answer includes its age, so a record tied to another is
/// archived in the same run as it, never before (a snapshot's commit has a
/// fixed old date, so its own age says nothing).
pub struct Finished<'a> {
    store: &'a Store,
    kinds: &'a [&'a dyn AnyKind],
    live: BTreeMap<String, ObjectId>,
    /// Unix seconds: a record whose tip is newer is not due.
    cutoff: i64,
    memo: RefCell<BTreeMap<String, bool>>,
}

impl<'a> Finished<'a> {
    pub fn new(
        store: &'a Store,
        kinds: &'a [&'a dyn AnyKind],
        live: &[(String, ObjectId)],
        cutoff: i64,
    ) -> Self {
        Finished {
            store,
            kinds,
            live: live.iter().cloned().collect(),
            cutoff,
            memo: RefCell::new(BTreeMap::new()),
        }
    }

    /// Whether the record `refname` is due: a live one by its kind's rule
    /// and its age, an archived one always (gc archived it; a record that
    /// outlived its plan's archiving, such as a message posted after the
    /// plan closed, goes with it). A ref of no registered kind, a missing
    /// one and an unreadable one are not.
    pub fn is(&self, refname: &str) -> bool {
        if let Some(known) = self.memo.borrow().get(refname) {
            return *known;
        }
        // Asked again while answering (a cycle): not finished.
        self.memo.borrow_mut().insert(refname.to_string(), false);
        let answer = match (self.live.get(refname), kind_of(self.kinds, refname)) {
            (Some(tip), Some((kind, path))) => {
                let elsewhere = |ns: &str, path: &str| self.is(&format!("refs/swarm/{ns}/{path}"));
                commit_seconds(self.store, *tip).is_ok_and(|t| t <= self.cutoff)
                    && kind.finished(self.store, &path, *tip, &elsewhere)
            }
            (None, Some(_)) => matches!(archived_tip(self.store, refname), Ok(Some(_))),
            _ => false,
        };
        self.memo.borrow_mut().insert(refname.to_string(), answer);
        answer
    }
}

/// Archive the finished records of `kinds` whose tip is older than
/// `older_than`; with `dry_run`, only say which.
pub fn gc(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    older_than: jiff::SignedDuration,
    dry_run: bool,
) -> Result<GcReport> {
    let live = live_refs(store)?;
    let cutoff = store.clock.now().as_second() - older_than.as_secs();
    let due = Finished::new(store, kinds, &live, cutoff);
    let mut by_kind: BTreeMap<String, Vec<(String, ObjectId)>> = BTreeMap::new();
    for (name, tip) in &live {
        if !due.is(name) {
            continue;
        }
        if let Some((kind, _)) = split(name) {
            by_kind
                .entry(kind.to_string())
                .or_default()
                .push((name.clone(), *tip));
        }
    }
    let mut report = GcReport {
        dry_run,
        older_than: format!("{older_than:#}"),
        live_before: live.len(),
        live_after: live.len(),
        archived: BTreeMap::new(),
    };
    for (kind, records) in by_kind {
        report.archived.insert(
            kind.clone(),
            records.iter().map(|(n, _)| n.clone()).collect(),
        );
        if dry_run {
            report.live_after -= records.len();
            continue;
        }
        fold(store, actor, &kind, &records)?;
        crate::failpoint::point("gc:archived");
        report.live_after -= delete_archived(store, actor, &records)?;
    }
    Ok(report)
}

/// Delete the live refs of archived records, each only at its archived tip;
/// returns how many went.
fn delete_archived(store: &Store, actor: &str, records: &[(String, ObjectId)]) -> Result<usize> {
    if store.delete_many(records, actor, "gc: archived").is_ok() {
        return Ok(records.len());
    }
    // Some record moved meanwhile (or a lock was busy): one at a time.
    let mut deleted = 0;
    for (name, tip) in records {
        match store.try_cas(name, Some(*tip), None, actor, "gc: archived") {
            Ok(()) => deleted += 1,
            // Someone moved it meanwhile: it is live again, the archive keeps the old tip.
            Err(e) if e.is_lost_race() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(deleted)
}

/// Add records to the archive of `kind` (idempotent: entries already there
/// at the same tip add nothing), in the local-only [`Store::cas_loop`].
fn fold(store: &Store, actor: &str, kind: &str, records: &[(String, ObjectId)]) -> Result<()> {
    let aref = archive_ref(kind);
    let step = |old: Option<ObjectId>| {
        let mut files = match old {
            Some(t) => store.read_commit(t)?.files,
            None => BTreeMap::new(),
        };
        let mut new_tips = Vec::new();
        for (name, tip) in records {
            let (_, entry) = split(name).expect("records are swarm refs");
            let value = format!("{tip}\n").into_bytes();
            if files.get(&entry) != Some(&value) {
                files.insert(entry, value);
                new_tips.push(*tip);
            }
        }
        if new_tips.is_empty() {
            return Ok(None);
        }
        let new = chain(store, actor, kind, old, &files, &new_tips)?;
        Ok(Some((new, actor.to_string(), "gc: archive".to_string())))
    };
    let exhausted = || {
        Error::new(
            Code::CasFailed,
            format!("{aref} kept changing; nothing was deleted"),
        )
        .hint("run `git swarm gc` again")
    };
    store
        .cas_loop(&aref, FOLD_ATTEMPTS, step, exhausted)
        .map(drop)
}

/// Chain archive commits on `old` so none has more than
/// [`PARENTS_PER_COMMIT`] parents; only the last carries the full index tree.
fn chain(
    store: &Store,
    actor: &str,
    kind: &str,
    old: Option<ObjectId>,
    files: &BTreeMap<String, Vec<u8>>,
    new_tips: &[ObjectId],
) -> Result<ObjectId> {
    let chunks: Vec<&[ObjectId]> = new_tips.chunks(PARENTS_PER_COMMIT).collect();
    let tree = store.write_tree(files)?;
    let mut prev = old;
    for (i, chunk) in chunks.iter().enumerate() {
        let mut parents: Vec<ObjectId> = prev.into_iter().collect();
        parents.extend_from_slice(chunk);
        let this_tree = if i + 1 == chunks.len() {
            tree
        } else {
            match prev {
                Some(p) => store.commit_tree(p)?,
                None => store.write_tree(&BTreeMap::new())?,
            }
        };
        let event = Event::new(
            "archived",
            actor,
            format!(
                "gc: archive {} {kind}",
                crate::text::count(chunk.len(), "record", "records")
            ),
        );
        prev = Some(store.commit(this_tree, &parents, &event)?);
    }
    Ok(prev.expect("at least one new tip"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_ref_maps_to_its_archive_and_a_flat_entry_name() {
        assert_eq!(
            split("refs/swarm/packets/p/id"),
            Some(("packets", "p:id".to_string()))
        );
        assert_eq!(
            split("refs/swarm/plans/p"),
            Some(("plans", "p".to_string()))
        );
        assert_eq!(split("refs/swarm/archive/plans"), None);
        assert_eq!(split("refs/heads/main"), None);
        assert_eq!(archive_ref("lanes"), "refs/swarm/archive/lanes");
    }
}
