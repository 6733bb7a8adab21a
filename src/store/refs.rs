//! Refs: reading them, and every change as one gix transaction where each
//! ref names the value it must hold (compare-and-swap), with stale-lock
//! recovery for refs only git-swarm writes.

use std::path::PathBuf;

use std::collections::BTreeMap;

use gix::bstr::ByteSlice;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

use super::error::StoreError;
use super::{Event, Store};
use crate::error::{Code, Error, Result};

/// The notes ref every swarm note lives on (`store::notes` reads and
/// writes it; the mirror and the lock cleaner name it).
pub const NOTES_REF: &str = "refs/notes/swarm";

/// How long a lock on a swarm ref may stand before it is taken as left by a
/// killed process (git-swarm holds one for microseconds).
pub const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(5);

impl Store {
    /// Current value of a ref, if it exists (peeled to an object id).
    pub fn ref_target(&self, refname: &str) -> Result<Option<ObjectId>> {
        let found = self
            .repo
            .try_find_reference(refname)
            .map_err(|e| Error::gix(format!("could not read ref {refname}"), e))?;
        match found {
            None => Ok(None),
            Some(mut r) => {
                let id = target_id(&mut r)
                    .map_err(|e| Error::gix(format!("could not resolve ref {refname}"), e))?;
                Ok(Some(id))
            }
        }
    }

    /// All refs under `prefix` (e.g. `refs/swarm/plans/`), sorted by name.
    ///
    /// A loose ref listed and then gone before it is read (another process
    /// of this clone pruning or packing its mirror refs: a fetch --prune,
    /// a `git pack-refs`) fails the walk; the listing is then taken again,
    /// up to three times, so that a moving refs directory is not an error.
    pub fn list_refs(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let platform = self
                .repo
                .references()
                .map_err(|e| Error::gix("could not list refs", e))?;
            let iter = platform
                .prefixed(prefix)
                .map_err(|e| Error::gix("could not list refs", e))?;
            let mut out = Vec::new();
            let mut vanished = None;
            for r in iter {
                let mut r = match r {
                    Ok(r) => r,
                    Err(e) => {
                        vanished = Some(e);
                        break;
                    }
                };
                let name = r.name().as_bstr().to_str_lossy().into_owned();
                if let Ok(id) = target_id(&mut r) {
                    out.push((name, id));
                }
            }
            match vanished {
                None => {
                    out.sort();
                    return Ok(out);
                }
                Some(e) if attempt >= 3 => return Err(Error::gix("could not read a ref", e)),
                Some(_) => std::thread::sleep(std::time::Duration::from_millis(10 * attempt)),
            }
        }
    }

    /// Append a version to a record: a commit whose parent is `expected`,
    /// then a CAS update of the ref from `expected` to it.
    pub fn write(
        &self,
        refname: &str,
        expected: Option<ObjectId>,
        files: &BTreeMap<String, Vec<u8>>,
        event: &Event,
    ) -> Result<ObjectId> {
        let tree = self.write_tree(files)?;
        let parents: Vec<ObjectId> = expected.into_iter().collect();
        let id = self.commit(tree, &parents, event)?;
        self.cas(refname, expected, Some(id), &event.actor, &event.summary)?;
        Ok(id)
    }

    /// Compare-and-swap a ref: from `expected` (None: must not exist) to `new`
    /// (None: delete). A lost race is `CAS_FAILED` (exit 3).
    pub fn cas(
        &self,
        refname: &str,
        expected: Option<ObjectId>,
        new: Option<ObjectId>,
        actor: &str,
        reason: &str,
    ) -> Result<()> {
        self.try_cas(refname, expected, new, actor, reason)
            .map_err(Error::from)
    }

    /// THE local-only compare-and-swap loop of one ref (adopting a
    /// published value, a note, the archive fold, `Records::update`): read
    /// the ref, let `step` decide its next value from it (None: keep it),
    /// write that with `(actor, reason)` expecting what was read; when
    /// another process of this clone moved the ref meanwhile, read again
    /// and decide again, at most `attempts` times, then fail with
    /// `exhausted`. Returns the value written (None: kept).
    pub fn cas_loop(
        &self,
        refname: &str,
        attempts: usize,
        mut step: impl FnMut(Option<ObjectId>) -> Result<Option<(ObjectId, String, String)>>,
        exhausted: impl FnOnce() -> Error,
    ) -> Result<Option<ObjectId>> {
        for _ in 0..attempts {
            let local = self.ref_target(refname)?;
            let Some((new, actor, reason)) = step(local)? else {
                return Ok(None);
            };
            match self.try_cas(refname, local, Some(new), &actor, &reason) {
                Ok(()) => return Ok(Some(new)),
                Err(e) if e.is_lost_race() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(exhausted())
    }

    /// [`Store::cas`] with the typed error: [`StoreError::LostRace`] when
    /// another writer moved the ref first.
    pub fn try_cas(
        &self,
        refname: &str,
        expected: Option<ObjectId>,
        new: Option<ObjectId>,
        actor: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        let previous = match expected {
            Some(id) => PreviousValue::MustExistAndMatch(Target::Object(id)),
            None => PreviousValue::MustNotExist,
        };
        let edit = ref_edit(refname, previous, new, reason)?;
        let mut tries = 0;
        loop {
            let err = match self.apply(vec![edit.clone()], actor, reason) {
                Ok(()) => return Ok(()),
                // gix saw the ref under its lock holding another value.
                Err(e @ StoreError::LostRace { .. }) => return Err(e),
                Err(e) => e,
            };
            // A failure while the ref still holds what we expected is lock
            // contention (packed-refs.lock is shared by every ref) or a stale
            // lock: wait for it to clear and try again, a bounded number of times.
            let actual = self.ref_target(refname)?;
            if actual == expected && tries < 10 && self.clear_stale_lock(refname) {
                tries += 1;
                continue;
            }
            // Otherwise decide by looking: if the ref no longer holds what we
            // expected, someone else won; if it does, the environment failed.
            let actual = if actual == expected {
                self.ref_target(refname)?
            } else {
                actual
            };
            return Err(if actual != expected {
                StoreError::LostRace {
                    refname: refname.to_string(),
                    expected,
                    actual,
                }
            } else {
                err
            });
        }
    }

    /// [`Store::try_cas`] of several refs in one transaction: each moves from
    /// its expected value (None: must not exist) to its new one, all or
    /// none. One ref takes the single-ref path (with its stale-lock wait).
    pub fn try_cas_many(
        &self,
        refs: &[(String, Option<ObjectId>, ObjectId)],
        actor: &str,
        reason: &str,
    ) -> Result<(), StoreError> {
        if let [(refname, expected, new)] = refs {
            return self.try_cas(refname, *expected, Some(*new), actor, reason);
        }
        let edits = refs
            .iter()
            .map(|(name, expected, new)| {
                let previous = match expected {
                    Some(id) => PreviousValue::MustExistAndMatch(Target::Object(*id)),
                    None => PreviousValue::MustNotExist,
                };
                ref_edit(name, previous, Some(*new), reason)
            })
            .collect::<Result<Vec<_>, _>>()?;
        match self.apply(edits, actor, reason) {
            Err(e) if !matches!(e, StoreError::LostRace { .. }) => {
                // Decide by looking, as `try_cas` does: a ref that no
                // longer holds its expected value was moved by another writer.
                for (refname, expected, _) in refs {
                    let actual = self.ref_target(refname)?;
                    if actual != *expected {
                        return Err(StoreError::LostRace {
                            refname: refname.clone(),
                            expected: *expected,
                            actual,
                        });
                    }
                }
                Err(e)
            }
            other => other,
        }
    }

    /// Set (or delete, with None) many refs in one transaction, whatever
    /// they held: for caches such as the `refs/swarm-remotes/` mirror, which
    /// the next fetch corrects anyway. One transaction, not one process per ref.
    pub fn force_many(
        &self,
        refs: &[(String, Option<ObjectId>)],
        actor: &str,
        reason: &str,
    ) -> Result<()> {
        let edits = refs
            .iter()
            .map(|(name, new)| ref_edit(name, PreviousValue::Any, *new, reason))
            .collect::<Result<Vec<_>>>()?;
        self.apply(edits, actor, reason).map_err(Error::from)
    }

    /// Delete many refs in one transaction, each only if it still holds its
    /// expected value: all or nothing. On any failure nothing is deleted and
    /// the caller may fall back to [`Store::cas`] one ref at a time. One
    /// transaction rewrites `packed-refs` once, not once per ref.
    pub fn delete_many(
        &self,
        refs: &[(String, ObjectId)],
        actor: &str,
        reason: &str,
    ) -> Result<()> {
        let edits = refs
            .iter()
            .map(|(name, expected)| {
                ref_edit(
                    name,
                    PreviousValue::MustExistAndMatch(Target::Object(*expected)),
                    None,
                    reason,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        self.apply(edits, actor, reason).map_err(Error::from)
    }

    /// Apply ref edits as one transaction, with the actor in the reflog.
    /// A ref found holding another value than its edit expects is
    /// [`StoreError::LostRace`], read from gix's typed error; a lock held
    /// by another process is [`StoreError::Locked`].
    fn apply(&self, edits: Vec<RefEdit>, actor: &str, reason: &str) -> Result<(), StoreError> {
        let sig = self.signature(actor);
        let mut buf = gix::date::parse::TimeBuf::default();
        let expected: Vec<(String, Option<ObjectId>)> = edits
            .iter()
            .map(|e| (e.name.as_bstr().to_str_lossy().into_owned(), expected_of(e)))
            .collect();
        self.repo
            .edit_references_as(edits, Some(sig.to_ref(&mut buf)))
            .map(|_| ())
            .map_err(|e| classify(e, format!("could not update refs ({reason})"), &expected))
    }

    /// A process killed between taking a ref lock and committing it leaves
    /// `<ref>.lock` behind — or `packed-refs.lock`, which gix takes for every
    /// compare-and-swap once a `packed-refs` file exists (clones have one) —
    /// and every later write fails. Refs under `refs/swarm/` and
    /// `refs/notes/swarm` (and the `refs/swarm-remotes/` mirror) are written
    /// only by git-swarm, and git-swarm and git hold these locks for
    /// milliseconds: wait for them to go, and remove one that has stood for
    /// [`STALE_LOCK`]. Returns whether to retry.
    pub fn clear_stale_lock(&self, refname: &str) -> bool {
        if !(refname.starts_with("refs/swarm/")
            || refname.starts_with("refs/swarm-remotes/")
            || refname == NOTES_REF)
        {
            return false;
        }
        let common = self.common_dir();
        let locks = [
            common.join(format!("{refname}.lock")),
            common.join("packed-refs.lock"),
        ];
        self.wait_for_locks(&locks)
    }

    /// Before creating a branch that must not exist yet (`lane new`): a
    /// `<branch>.lock` that has stood for [`STALE_LOCK`] was left by a
    /// killed process and is removed (git itself would fail on it for
    /// good). Returns whether one was removed.
    pub fn clear_stale_branch_lock(&self, refname: &str) -> bool {
        let lock = self.common_dir().join(format!("{refname}.lock"));
        if !lock.exists() {
            return false;
        }
        self.wait_for_locks(std::slice::from_ref(&lock)) && !lock.exists()
    }

    /// [`Store::clear_stale_branch_lock`] for `packed-refs.lock`, which a
    /// git killed while deleting a ref leaves behind.
    pub fn clear_stale_packed_refs_lock(&self) -> bool {
        let lock = self.common_dir().join("packed-refs.lock");
        if !lock.exists() {
            return false;
        }
        self.wait_for_locks(std::slice::from_ref(&lock)) && !lock.exists()
    }

    /// Wait for lock files to go; remove those older than [`STALE_LOCK`].
    /// False when one could not be removed or outlived the wait.
    fn wait_for_locks(&self, locks: &[PathBuf]) -> bool {
        let start = std::time::Instant::now();
        loop {
            let mut held = false;
            for lock in locks {
                let Ok(meta) = std::fs::metadata(lock) else {
                    continue;
                };
                let age = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .unwrap_or_default();
                if age >= STALE_LOCK {
                    if std::fs::remove_file(lock).is_err() && lock.exists() {
                        return false;
                    }
                } else {
                    held = true;
                }
            }
            if !held {
                return true;
            }
            if start.elapsed() > STALE_LOCK + std::time::Duration::from_secs(1) {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// The object a ref names: read from the ref itself when it names one
/// (every record ref does), without reading the object — peeling would
/// inflate every commit to learn it is no tag, which is what made listing
/// 10,000 refs cost 10,000 object reads; a symbolic ref is followed and
/// peeled as before.
fn target_id(r: &mut gix::Reference<'_>) -> std::result::Result<ObjectId, gix::Error> {
    if let Some(id) = r.target().try_id() {
        return Ok(id.to_owned());
    }
    r.peel_to_id().map(|id| id.detach())
}

/// One ref change: to `new` (None: delete), if the ref holds `expected`.
fn ref_edit(
    refname: &str,
    expected: PreviousValue,
    new: Option<ObjectId>,
    reason: &str,
) -> Result<RefEdit> {
    let name: gix::refs::FullName = refname.try_into().map_err(|e| {
        Error::new(
            Code::NameInvalid,
            format!("'{refname}' is not a valid ref name: {e}"),
        )
    })?;
    let change = match new {
        Some(id) => Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: format!("git-swarm: {}", reason.lines().next().unwrap_or("")).into(),
            },
            expected,
            new: Target::Object(id),
        },
        None => Change::Delete {
            expected,
            log: RefLog::AndReference,
        },
    };
    Ok(RefEdit {
        change,
        name,
        deref: false,
    })
}

/// The value an edit requires its ref to hold (None: absent, or any).
fn expected_of(edit: &RefEdit) -> Option<ObjectId> {
    let previous = match &edit.change {
        Change::Update { expected, .. } | Change::Delete { expected, .. } => expected,
    };
    match previous {
        PreviousValue::MustExistAndMatch(Target::Object(id))
        | PreviousValue::ExistingMustMatch(Target::Object(id)) => Some(*id),
        _ => None,
    }
}

/// Tell a lost race and a held lock from other failures by gix's typed
/// errors; keep the source either way.
fn classify(e: gix::Error, context: String, expected: &[(String, Option<ObjectId>)]) -> StoreError {
    use gix::refs::file::transaction::prepare::{MustNotExist, ReferenceOutOfDate};
    let moved = e
        .downcast_any_ref::<ReferenceOutOfDate>()
        .map(|r| (r.full_name.to_str_lossy().into_owned(), &r.actual))
        .or_else(|| {
            e.downcast_any_ref::<MustNotExist>()
                .map(|r| (r.full_name.to_str_lossy().into_owned(), &r.actual))
        });
    if let Some((refname, Target::Object(actual))) = moved {
        if let Some((_, exp)) = expected.iter().find(|(n, _)| *n == refname) {
            return StoreError::LostRace {
                refname,
                expected: *exp,
                actual: Some(*actual),
            };
        }
    }
    if e.is_retryable() {
        let refname = expected.first().map(|(n, _)| n.clone()).unwrap_or_default();
        return StoreError::Locked {
            refname,
            context,
            source: Box::new(e),
        };
    }
    StoreError::git(context, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let ok = std::process::Command::new("git")
            .args(["init", "--quiet", "r"])
            .current_dir(dir.path())
            .status()
            .expect("git runs");
        assert!(ok.success());
        let store = Store::open(&dir.path().join("r")).expect("opens");
        (dir, store)
    }

    #[test]
    fn a_lost_race_is_told_from_gix_typed_error_with_the_value_found() {
        let (_dir, store) = repo();
        let files = BTreeMap::from([("a".to_string(), b"1".to_vec())]);
        let event = Event::new("e", "ann", "one");
        let name = "refs/swarm/plans/p";
        let first = store.write(name, None, &files, &event).unwrap();
        let second = store
            .commit(store.write_tree(&files).unwrap(), &[first], &event)
            .unwrap();
        // The transaction itself (no re-read) names the ref and what it held.
        let create = ref_edit(name, PreviousValue::MustNotExist, Some(second), "x").unwrap();
        match store.apply(vec![create], "ann", "x") {
            Err(StoreError::LostRace {
                refname,
                expected,
                actual,
            }) => {
                assert_eq!(refname, name);
                assert_eq!(expected, None);
                assert_eq!(actual, Some(first));
            }
            other => panic!("expected a lost race, got {other:?}"),
        }
        let stale = PreviousValue::MustExistAndMatch(Target::Object(second));
        let update = ref_edit(name, stale, Some(first), "x").unwrap();
        assert!(matches!(
            store.apply(vec![update], "ann", "x"),
            Err(StoreError::LostRace { actual: Some(a), expected: Some(e), .. }) if a == first && e == second
        ));
        // And through `cas`: CAS_FAILED, nothing moved.
        let e = store
            .cas(name, Some(second), Some(second), "ann", "x")
            .unwrap_err();
        assert_eq!(e.code, Code::CasFailed);
        assert_eq!(store.ref_target(name).unwrap(), Some(first));
    }
}
