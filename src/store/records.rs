//! The record model the store offers every kind, without knowing any.
//!
//! A kind (plan, lane, lead, packet, …) is a type implementing [`Record`]:
//! where its refs live, its schema family, its key, how it is written to and
//! read from the files of a record commit, what `sync` does when a local and
//! a published version diverged, and when `gc` may archive it. Given that,
//! [`Records`] loads, lists, creates and updates it — the one local
//! compare-and-swap loop lives here — and [`AnyKind`] lets `sync` and `gc`
//! treat every registered kind alike (`crate::records::kinds()` lists them).
//!
//! # A toy kind, end to end
//!
//! A counter kind, defined here and nowhere else, gets create, the CAS
//! update, `sync` (fetch, reconcile of a diverged ref with a second clone,
//! one atomic push) and `gc` from the store without a change to it:
//!
//! ```
//! use std::process::Command;
//! use git_swarm::error::{Code, Error, Result};
//! use git_swarm::store::records::{AnyKind, Diverged, Files, KindOf, Record, Records, Update};
//! use git_swarm::store::{archive, mirror, reconcile, remote, Event, Store};
//!
//! #[derive(Debug, Clone)]
//! struct Counter {
//!     n: u64,
//! }
//!
//! impl Record for Counter {
//!     const NAMESPACE: &'static str = "counters";
//!     const KIND: &'static str = "counter";
//!     const DIVERGED: Diverged = Diverged::MergeJournals;
//!     type Key = String;
//!     fn to_files(&self) -> Result<Files> {
//!         let yaml = format!("n: {}\n", self.n).into_bytes();
//!         Ok(Files::from([("counter.yaml".to_string(), yaml)]))
//!     }
//!     fn from_files(files: &Files, _key: &String, what: &str) -> Result<Self> {
//!         let text = String::from_utf8_lossy(files.get("counter.yaml").map_or(&[][..], |b| b));
//!         let n = text.trim().strip_prefix("n: ").and_then(|n| n.parse().ok());
//!         let n = n.ok_or_else(|| Error::new(Code::RecordInvalid, format!("{what}: no count")))?;
//!         Ok(Counter { n })
//!     }
//!     fn is_finished(&self, _key: &String, _elsewhere: &dyn Fn(&str, &str) -> bool) -> bool {
//!         self.n >= 10
//!     }
//! }
//!
//! static COUNTER: KindOf<Counter> = KindOf::new();
//! let kinds: &[&dyn AnyKind] = &[&COUNTER];
//!
//! // A bare remote and two clones of it.
//! let tmp = tempfile::tempdir().unwrap();
//! let git = |args: &[&str]| {
//!     let ok = Command::new("git").args(args).current_dir(tmp.path()).output().unwrap();
//!     assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
//! };
//! git(&["init", "--quiet", "--bare", "remote.git"]);
//! git(&["clone", "--quiet", "remote.git", "a"]);
//! git(&["clone", "--quiet", "remote.git", "b"]);
//! let a = Store::open(&tmp.path().join("a")).unwrap();
//! let b = Store::open(&tmp.path().join("b")).unwrap();
//!
//! // `sync`, as its operation does it, for the kinds given.
//! let sync = |store: &Store| -> Result<reconcile::Reconciled> {
//!     mirror::fetch(store, "origin")?;
//!     let done = reconcile::reconcile(store, kinds, "origin", "ann")?;
//!     remote::publish(store, "origin", &done.updates, &[])?;
//!     Ok(done)
//! };
//! let key = "c".to_string();
//! let set = |store: &Store, n: u64| {
//!     Records::<Counter>::new(store).update(&key, |_current| {
//!         Ok(Update::Write(Counter { n }, Event::new("count", "ann", format!("count {n}"))))
//!     })
//! };
//!
//! // Create in clone a, publish; clone b pulls it.
//! Records::<Counter>::new(&a).create(&key, &Counter { n: 1 }, &Event::new("created", "ann", "new")).unwrap();
//! assert_eq!(sync(&a).unwrap().updates.len(), 1);
//! assert_eq!(sync(&b).unwrap().pulled, ["refs/swarm/counters/c"]);
//!
//! // Both clones move it; a publishes first, b's sync joins the journals.
//! set(&a, 10).unwrap();
//! set(&b, 5).unwrap();
//! sync(&a).unwrap();
//! let joined = sync(&b).unwrap();
//! assert_eq!(joined.merged, ["refs/swarm/counters/c"]);
//! let counter = Records::<Counter>::new(&b).require(&key, "").unwrap();
//! assert_eq!(counter.value.n, 10, "where both changed a key, the published value wins");
//! assert_eq!(b.journal(counter.commit, Some(1)).unwrap()[0].parents, 2);
//!
//! // Finished (n >= 10): gc folds it into refs/swarm/archive/counters.
//! let report = archive::gc(&b, kinds, "ann", jiff::SignedDuration::ZERO, false).unwrap();
//! assert_eq!(report.archived["counters"], ["refs/swarm/counters/c"]);
//! assert!(Records::<Counter>::new(&b).load(&key).unwrap().is_none());
//! assert!(archive::find_record(&b, "refs/swarm/counters/c").unwrap().is_some());
//! ```

mod many;
mod publish;
#[cfg(test)]
mod testkit;
mod txn;

pub use publish::{Known, Written};
pub use txn::{Outcome, Publication, Publish, Rejected, Txn, OFFLINE, PUBLISH_ATTEMPTS};

use std::marker::PhantomData;

use gix::ObjectId;

use super::yaml::Unreadable;
use super::{Event, Store};
use crate::error::{Code, Error, Result};

pub use super::yaml::Files;

/// What `sync` does when the local and the published version of a record
/// both moved and neither contains the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diverged {
    /// A merge commit joins the two journals (per file, per top-level YAML
    /// key, the published side wins where both changed one thing); two
    /// unrelated histories are a conflict.
    MergeJournals,
    /// The published version wins and the local one is reported as fenced
    /// (a leader record: a stale writer is fenced by its successor).
    PublishedWinsFenced,
    /// The published version wins and the local one is reported as
    /// superseded; two unrelated histories (two records written
    /// independently under one key) are a conflict, never overwritten.
    PublishedWinsIfRelated,
    /// The published version wins and the local one is reported as
    /// superseded, related or not: for a record written once under a name
    /// its content decides (an escalation: two clones sending the same one
    /// offline wrote two commits of one message).
    PublishedWins,
    /// The version whose commit is newer (committer date) wins; on a tie
    /// the published one. For a ref with one writer that replaces it
    /// whole (a lane's snapshot of uncommitted work), where the two
    /// versions are siblings, not a history.
    NewestWins,
}

/// How a record's key maps to the rest of its ref name under
/// `refs/swarm/<namespace>/`.
pub trait RecordKey: Sized + Clone + Ord + std::fmt::Display + Send + Sync {
    /// The ref path below the namespace (`plan`, `plan/id`).
    fn to_path(&self) -> String;
    /// The key of a ref path below the namespace; None when the path cannot
    /// be one (the record is then listed as unreadable).
    fn from_path(path: &str) -> Option<Self>;
}

/// A one-segment name (a plan, a feature).
impl RecordKey for String {
    fn to_path(&self) -> String {
        self.clone()
    }
    fn from_path(path: &str) -> Option<Self> {
        (!path.is_empty() && !path.contains('/')).then(|| path.to_string())
    }
}

/// The key of a record that lives inside a plan (or another one-segment
/// scope such as `_`): `<plan>/<id>` below the namespace. Tasks, packets
/// and messages share it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScopedKey {
    pub plan: String,
    pub id: String,
}

impl ScopedKey {
    pub fn new(plan: impl Into<String>, id: impl Into<String>) -> Self {
        ScopedKey {
            plan: plan.into(),
            id: id.into(),
        }
    }
}

impl std::fmt::Display for ScopedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.plan, self.id)
    }
}

impl RecordKey for ScopedKey {
    fn to_path(&self) -> String {
        self.to_string()
    }
    fn from_path(path: &str) -> Option<Self> {
        let (plan, id) = path.split_once('/')?;
        (!plan.is_empty() && !id.is_empty() && !id.contains('/')).then(|| ScopedKey::new(plan, id))
    }
}

/// A record kind. Implement it once, in `src/records/<kind>.rs`, and register
/// the kind in `crate::records::kinds()`: create, CAS update, listing with
/// unreadable records, `sync` and `gc` then work for it unchanged.
pub trait Record: Sized + Clone + Send {
    /// `refs/swarm/<NAMESPACE>/<key>`; also the archive name under
    /// `refs/swarm/archive/`.
    const NAMESPACE: &'static str;
    /// The kind in messages and in listings' `unreadable` entries.
    const KIND: &'static str;
    /// What `sync` does with a diverged local and published version.
    const DIVERGED: Diverged;
    /// The fields of the record's YAML that may hold a newline (read them
    /// with `record::parse_with`); every other field refuses control
    /// characters, so a forged record cannot paint a terminal.
    const MULTILINE_FIELDS: &'static [&'static str] = &[];
    type Key: RecordKey;

    /// The files of the record commit for this value.
    fn to_files(&self) -> Result<Files>;
    /// Parse the files of one record commit; `what` names it in errors.
    fn from_files(files: &Files, key: &Self::Key, what: &str) -> Result<Self>;
    /// For a kind whose records are finished exactly when their commit's
    /// tree has this file (a packet: its acceptance), `gc` looks at the tree
    /// and parses nothing; [`Record::is_finished`] must agree with it.
    const FINISHED_WITH_FILE: Option<&'static str> = None;
    /// A finished record may be archived by `gc` once old enough.
    /// `finished_elsewhere(namespace, path)` answers the same for another
    /// live record (a leader record is finished with its plan).
    fn is_finished(
        &self,
        _key: &Self::Key,
        _finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool {
        false
    }

    /// `sync`, when both sides moved since `base`: why this clone's version
    /// (`self`) must not be joined into the published one — the record
    /// changed hands on the published side, and the local writes were made
    /// for its previous holder (a lane's old owner reporting after a
    /// handover) — or None (the default): [`Record::DIVERGED`] joins them.
    fn refuses_join(&self, _base: &Self, _published: &Self) -> Option<String> {
        None
    }
    /// Whether [`Record::refuses_join`] can refuse anything (so that `sync`
    /// reads the three versions only for kinds that may).
    const REFUSES_JOINS: bool = false;

    /// The value as the record cache keeps it (see `store::record_cache`); None
    /// (the default) keeps this kind, or this value, out of the cache, so
    /// every read parses its files. A serde type returns
    /// `cache::encode(self)`.
    fn to_cache(&self) -> Option<Vec<u8>> {
        None
    }
    /// The value [`Record::to_cache`] kept; None reads the files instead.
    fn from_cache(_bytes: &[u8]) -> Option<Self> {
        None
    }
    /// A few bits the cache keeps beside the value, so that a listing can
    /// filter on them without decoding it ([`Records::cached_tags`]); e.g.
    /// a packet's "accepted" and "withdrawn".
    fn cache_tags(&self) -> u8 {
        0
    }

    /// `sync`'s replay of this clone's unpublished writes: given the
    /// version both sides last shared (`base`; None when the two histories
    /// are unrelated), this clone's version (`self`) and the published one,
    /// the published version with each of this clone's writes re-decided on
    /// it, and the writes that could not be kept (each named, with the code
    /// saying why). None (the default): the kind does not replay, and its
    /// [`Record::DIVERGED`] policy decides (see `store::reconcile`).
    fn replay(
        &self,
        _base: Option<&Self>,
        _published: &Self,
        _store: &Store,
    ) -> Option<Replayed<Self>> {
        None
    }

    /// The ref of the record with this key.
    fn refname(key: &Self::Key) -> String {
        format!("refs/swarm/{}/{}", Self::NAMESPACE, key.to_path())
    }
    /// The key of a ref of this kind (None: another kind's ref, or a path
    /// no key has).
    fn key_of(refname: &str) -> Option<Self::Key> {
        let path = refname
            .strip_prefix("refs/swarm/")?
            .strip_prefix(Self::NAMESPACE)?
            .strip_prefix('/')?;
        Self::Key::from_path(path)
    }
}

/// What [`Record::replay`] made of this clone's unpublished writes.
#[derive(Debug, Clone)]
pub struct Replayed<R> {
    /// The published version with every write that could be kept re-applied.
    pub value: R,
    /// Each write that could not be kept: why (its code) and what (one
    /// line naming the write and what the remote holds instead).
    pub lost: Vec<(Code, String)>,
}

/// One version of a record: its key, its value and the commit holding it.
#[derive(Debug, Clone)]
pub struct Versioned<R: Record> {
    pub key: R::Key,
    pub value: R,
    pub commit: ObjectId,
}

/// The outcome of one step of [`Records::update`].
pub enum Update<R> {
    /// Write this value as the next version.
    Write(R, Event),
    /// Leave the record as it is.
    Keep,
}

/// The records of kind `R` in one store.
pub struct Records<'s, R: Record> {
    store: &'s Store,
    kind: PhantomData<R>,
}

/// How many times [`Records::update`] re-reads a record that another local
/// process moved under it before giving up with `CAS_FAILED`.
pub const LOCAL_CAS_ATTEMPTS: usize = 20;

impl<'s, R: Record> Records<'s, R> {
    pub fn new(store: &'s Store) -> Self {
        Records {
            store,
            kind: PhantomData,
        }
    }

    /// The `<ref>:<file>`-style name of a record in errors.
    pub fn what(key: &R::Key) -> String {
        R::refname(key)
    }

    /// The version at `commit` (e.g. the mirror's, or an archived one),
    /// through the record cache: a version read cleanly once is kept by
    /// commit id and key, and not parsed again (an unreadable one is read,
    /// and fails, every time).
    pub fn at(&self, key: &R::Key, commit: ObjectId) -> Result<Versioned<R>> {
        // The name for errors only when the cache does not have it: a
        // listing reads thousands.
        let path = key.to_path();
        // Before the cache: a version that is not trusted is never used.
        self.store.trusted(R::NAMESPACE, R::KIND, &path, commit)?;
        match self.cached(key, commit, &path) {
            Some(v) => Ok(v),
            None => self.read(key, commit, &path, &Self::what(key)),
        }
    }

    /// [`Records::at`], naming the version `what` in errors.
    pub fn at_named(&self, key: &R::Key, commit: ObjectId, what: &str) -> Result<Versioned<R>> {
        let path = key.to_path();
        // Before the cache: a version that is not trusted is never used.
        self.store.trusted(R::NAMESPACE, R::KIND, &path, commit)?;
        match self.cached(key, commit, &path) {
            Some(v) => Ok(v),
            None => self.read(key, commit, &path, what),
        }
    }

    /// Some fields of the version at `commit`, as `V` (a serde struct
    /// naming a few of the kind's fields as the kind names them): decoded
    /// straight from the cache when it holds the version as the kind's
    /// JSON, skipping every other field; else the whole record is read
    /// (and cached) and made into `V`. A listing that shows thousands of
    /// records pays for the fields it shows, not for whole records.
    pub fn view_at<V>(&self, key: &R::Key, commit: ObjectId) -> Result<V>
    where
        V: serde::de::DeserializeOwned + From<R>,
    {
        let path = key.to_path();
        self.store.trusted(R::NAMESPACE, R::KIND, &path, commit)?;
        let decode = |bytes: &[u8]| serde_json::from_slice::<V>(bytes).ok();
        match self.store.cache.lookup(R::NAMESPACE, commit, &path, decode) {
            Some(v) => Ok(v),
            None => Ok(V::from(
                self.read(key, commit, &path, &Self::what(key))?.value,
            )),
        }
    }

    fn cached(&self, key: &R::Key, commit: ObjectId, path: &str) -> Option<Versioned<R>> {
        let value = self
            .store
            .cache
            .lookup(R::NAMESPACE, commit, path, R::from_cache)?;
        Some(Versioned {
            key: key.clone(),
            value,
            commit,
        })
    }

    fn read(&self, key: &R::Key, commit: ObjectId, path: &str, what: &str) -> Result<Versioned<R>> {
        let cache = &self.store.cache;
        let rec = self.store.read_commit(commit)?;
        let value = R::from_files(&rec.files, key, what)?;
        if cache.enabled() {
            if let Some(bytes) = value.to_cache() {
                cache.insert(R::NAMESPACE, commit, path, value.cache_tags(), bytes);
            }
        }
        Ok(Versioned {
            key: key.clone(),
            value,
            commit,
        })
    }

    /// The kind's [`Record::cache_tags`] of the version at `commit`, when
    /// the cache holds it (None: read it with [`Records::at`]).
    pub fn cached_tags(&self, key: &R::Key, commit: ObjectId) -> Option<u8> {
        self.store.cache.tags(R::NAMESPACE, commit, &key.to_path())
    }

    /// Keep only `tags` for the version at `commit`, learnt without
    /// parsing it (a packet's acceptance file in its tree):
    /// [`Records::cached_tags`] finds them, [`Records::at`] still reads
    /// and keeps the value.
    pub fn remember_tags(&self, key: &R::Key, commit: ObjectId, tags: u8) {
        self.store
            .cache
            .insert(R::NAMESPACE, commit, &key.to_path(), tags, Vec::new());
    }

    /// The live record, if its ref exists.
    /// Under `swarm.trust=require` the newest trusted version of it (see
    /// [`Store::trusted_version`]).
    pub fn load(&self, key: &R::Key) -> Result<Option<Versioned<R>>> {
        let refname = R::refname(key);
        match self.store.ref_target(&refname)? {
            None => Ok(None),
            Some(tip) => {
                let trusted = self.store.trusted_version(&refname, tip)?;
                self.at(key, trusted.unwrap_or(tip)).map(Some)
            }
        }
    }

    /// The live record; `NOT_FOUND` (exit 2) with `hint` when it is absent,
    /// and a "did you mean" when another record's key is a likely typo of it.
    pub fn require(&self, key: &R::Key, hint: &str) -> Result<Versioned<R>> {
        if let Some(found) = self.load(key)? {
            return Ok(found);
        }
        let prefix = format!("refs/swarm/{}/", R::NAMESPACE);
        let keys: Vec<String> = self
            .store
            .list_refs(&prefix)
            .unwrap_or_default()
            .into_iter()
            .map(|(r, _)| r[prefix.len()..].to_string())
            .collect();
        let err = Error::new(
            Code::NotFound,
            format!("{} '{key}' does not exist", R::KIND),
        );
        let path = key.to_path();
        Err(crate::names::did_you_mean(err, &path, keys.iter().map(String::as_str)).hint(hint))
    }

    /// Every live record of the kind that can be read, sorted by key, and
    /// those that cannot: one bad record must not hide the others.
    pub fn all(&self) -> Result<(Vec<Versioned<R>>, Vec<Unreadable>)> {
        self.all_under(&format!("refs/swarm/{}/", R::NAMESPACE))
    }

    /// [`Records::all`] for the refs under another prefix holding the same
    /// layout (a remote's mirror, `refs/swarm-remotes/<remote>/<ns>/`).
    pub fn all_under(&self, prefix: &str) -> Result<(Vec<Versioned<R>>, Vec<Unreadable>)> {
        let mut good = Vec::new();
        let mut bad = Vec::new();
        let refs = self.store.list_refs(prefix)?;
        // With trust on, the signatures no verdict is kept for yet are
        // checked a few at once first (a cold listing).
        let tips: Vec<ObjectId> = refs.iter().map(|(_, tip)| *tip).collect();
        self.store.check_ahead(R::NAMESPACE, &tips);
        for (refname, tip) in refs {
            let path = &refname[prefix.len()..];
            let read = R::Key::from_path(path)
                .ok_or_else(|| {
                    Error::new(
                        Code::RecordInvalid,
                        format!("{refname} is not a valid {} ref name", R::KIND),
                    )
                })
                .and_then(|key| {
                    // An untrusted version on top is passed over, and said.
                    let trusted = self.store.trusted_version(&refname, tip)?.unwrap_or(tip);
                    if trusted != tip {
                        if let Err(e) = self.store.trusted(R::NAMESPACE, R::KIND, path, tip) {
                            bad.push(Unreadable::new(R::KIND, path, &refname, &e));
                        }
                    }
                    self.at(&key, trusted)
                });
            match read {
                Ok(v) => good.push(v),
                Err(e) => bad.push(Unreadable::new(R::KIND, path, &refname, &e)),
            }
        }
        good.sort_by(|a, b| a.key.cmp(&b.key));
        self.store.cache.flush();
        Ok((good, bad))
    }

    /// Write `value` as the next version after `expected` (None: create):
    /// one commit and one compare-and-swap of the ref. A lost race is
    /// `CAS_FAILED` (exit 3) and nothing is overwritten.
    pub fn write(
        &self,
        key: &R::Key,
        expected: Option<ObjectId>,
        value: &R,
        event: &Event,
    ) -> Result<ObjectId> {
        self.store
            .write(&R::refname(key), expected, &value.to_files()?, event)
    }

    /// Create the record; `CAS_FAILED` when it exists already.
    pub fn create(&self, key: &R::Key, value: &R, event: &Event) -> Result<ObjectId> {
        self.write(key, None, value, event)
    }

    /// The one local compare-and-swap loop: read the record, let `step`
    /// decide from it, write the result expecting what was read; when
    /// another process moved the ref meanwhile, read again and decide again.
    /// Returns the new commit, or None when `step` kept the record. It is
    /// [`Store::cas_loop`](crate::store::Store::cas_loop).
    pub fn update(
        &self,
        key: &R::Key,
        mut step: impl FnMut(Option<&Versioned<R>>) -> Result<Update<R>>,
    ) -> Result<Option<ObjectId>> {
        let refname = R::refname(key);
        let store = self.store;
        let decide = |expected: Option<ObjectId>| {
            let current = match expected {
                None => None,
                Some(tip) => Some(self.at(key, tip)?),
            };
            let (value, event) = match step(current.as_ref())? {
                Update::Keep => return Ok(None),
                Update::Write(value, event) => (value, event),
            };
            let tree = store.write_tree(&value.to_files()?)?;
            let new = store.commit(tree, &expected.into_iter().collect::<Vec<_>>(), &event)?;
            Ok(Some((new, event.actor, event.summary)))
        };
        let exhausted = || {
            Error::new(
                Code::CasFailed,
                format!("{refname} kept changing under {LOCAL_CAS_ATTEMPTS} attempts to update it; nothing was overwritten"),
            )
            .hint("run the command again")
        };
        store.cas_loop(&refname, LOCAL_CAS_ATTEMPTS, decide, exhausted)
    }
}

/// A kind as `sync` and `gc` see it, without its type: one value per
/// registered kind (see `crate::records::kinds()`).
pub trait AnyKind: Sync {
    fn namespace(&self) -> &'static str;
    fn kind(&self) -> &'static str;
    fn diverged(&self) -> Diverged;
    /// [`Record::refuses_join`] of the versions at these commits (`base`
    /// their merge base); a version that cannot be read refuses nothing.
    fn refuses_join(
        &self,
        _store: &Store,
        _path: &str,
        _base: ObjectId,
        _local: ObjectId,
        _published: ObjectId,
    ) -> Result<Option<String>> {
        Ok(None)
    }
    /// Whether [`AnyKind::refuses_join`] can refuse anything.
    fn may_refuse_join(&self) -> bool {
        false
    }
    /// Whether the record at `tip` (ref path `path` below the namespace) is
    /// finished; an unreadable record is not.
    fn finished(
        &self,
        store: &Store,
        path: &str,
        tip: ObjectId,
        finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool;
    /// [`Record::replay`] of the versions at these commits (`base`: their
    /// merge base, if any): the files of the replayed version and the
    /// writes that could not be kept. Ok(None): the kind does not replay.
    fn replay(
        &self,
        _store: &Store,
        _path: &str,
        _base: Option<ObjectId>,
        _local: ObjectId,
        _published: ObjectId,
    ) -> Result<Option<Replayed<Files>>> {
        Ok(None)
    }
}

/// The [`AnyKind`] of a [`Record`] type.
pub struct KindOf<R>(PhantomData<fn() -> R>);

impl<R> KindOf<R> {
    pub const fn new() -> Self {
        KindOf(PhantomData)
    }
}

impl<R> Default for KindOf<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Record> AnyKind for KindOf<R> {
    fn namespace(&self) -> &'static str {
        R::NAMESPACE
    }
    fn kind(&self) -> &'static str {
        R::KIND
    }
    fn diverged(&self) -> Diverged {
        R::DIVERGED
    }
    fn may_refuse_join(&self) -> bool {
        R::REFUSES_JOINS
    }
    fn refuses_join(
        &self,
        store: &Store,
        path: &str,
        base: ObjectId,
        local: ObjectId,
        published: ObjectId,
    ) -> Result<Option<String>> {
        if !R::REFUSES_JOINS {
            return Ok(None);
        }
        let Some(key) = R::Key::from_path(path) else {
            return Ok(None);
        };
        let records = Records::<R>::new(store);
        let read = |c| records.at(&key, c).ok().map(|v| v.value);
        Ok(match (read(base), read(local), read(published)) {
            (Some(b), Some(l), Some(p)) => l.refuses_join(&b, &p),
            _ => None,
        })
    }
    fn finished(
        &self,
        store: &Store,
        path: &str,
        tip: ObjectId,
        finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool {
        let Some(key) = R::Key::from_path(path) else {
            return false;
        };
        if let Some(file) = R::FINISHED_WITH_FILE {
            return store.tree_has(tip, file).unwrap_or(false);
        }
        Records::<R>::new(store)
            .at(&key, tip)
            .map(|v| v.value.is_finished(&key, finished_elsewhere))
            .unwrap_or(false)
    }
    fn replay(
        &self,
        store: &Store,
        path: &str,
        base: Option<ObjectId>,
        local: ObjectId,
        published: ObjectId,
    ) -> Result<Option<Replayed<Files>>> {
        let Some(key) = R::Key::from_path(path) else {
            return Ok(None);
        };
        let records = Records::<R>::new(store);
        let (l, r) = (records.at(&key, local)?, records.at(&key, published)?);
        // A base that cannot be read (or is not trusted) is taken as none:
        // every local write is then re-decided on the published version.
        let b = base.and_then(|b| records.at(&key, b).ok());
        match l
            .value
            .replay(b.as_ref().map(|b| &b.value), &r.value, store)
        {
            None => Ok(None),
            Some(done) => Ok(Some(Replayed {
                value: done.value.to_files()?,
                lost: done.lost,
            })),
        }
    }
}

/// The kind a ref under `refs/swarm/` belongs to, and its path below the
/// namespace.
pub fn kind_of<'k>(
    kinds: &'k [&'k dyn AnyKind],
    refname: &str,
) -> Option<(&'k dyn AnyKind, String)> {
    let rest = refname.strip_prefix("refs/swarm/")?;
    let (ns, path) = rest.split_once('/')?;
    kinds
        .iter()
        .find(|k| k.namespace() == ns)
        .map(|k| (*k, path.to_string()))
}
