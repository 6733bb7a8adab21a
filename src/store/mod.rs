//! Records as commit chains of YAML under `refs/swarm/…`, written with
//! compare-and-swap ref updates, plus the `refs/notes/swarm` notes — all over
//! gix, so plain git reads everything (SPEC §1).
//!
//! A record is one commit: its tree holds a few flat files (`plan.yaml`,
//! `PLAN.md`, …) and its parent is the previous version of the record, so
//! `git log <ref>` is the record's journal. Every write names the value it
//! expects the ref to hold; if another process moved the ref first, the write
//! fails with exit 3 and nothing is overwritten.

pub mod kind;
pub mod notes;
pub mod record;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::git::Git;

/// How long a lock on a swarm ref may stand before it is taken as left by a
/// killed process (git-swarm holds one for microseconds).
pub const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(5);

/// An open repository: gix for objects and refs, the git binary for the rest.
pub struct Store {
    pub repo: gix::Repository,
    pub git: Git,
    pub clock: Clock,
}

/// One version of a record: the commit and the files of its tree.
#[derive(Debug, Clone)]
pub struct Record {
    pub commit: ObjectId,
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Record {
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files.get(name).map(Vec::as_slice)
    }
}

/// What a record change is, for the commit message and its trailers.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: String,
    pub summary: String,
    pub actor: String,
    pub epoch: Option<u64>,
    /// Text between the summary and the trailers (a report's capacity line).
    pub body: Option<String>,
    /// More `Key: value` trailers (e.g. `Swarm-Lane`).
    pub trailers: Vec<(String, String)>,
}

impl Event {
    pub fn new(kind: &str, actor: &str, summary: impl Into<String>) -> Self {
        Event {
            kind: kind.to_string(),
            summary: summary.into(),
            actor: actor.to_string(),
            epoch: None,
            body: None,
            trailers: Vec::new(),
        }
    }
    pub fn epoch(mut self, epoch: u64) -> Self {
        self.epoch = Some(epoch);
        self
    }
    pub fn trailer(mut self, key: &str, value: impl Into<String>) -> Self {
        self.trailers.push((key.to_string(), value.into()));
        self
    }
    pub fn message(&self) -> String {
        let summary = self.summary.lines().next().unwrap_or("").trim();
        let mut msg = format!("{summary}\n\n");
        if let Some(body) = &self.body {
            msg.push_str(&format!("{}\n\n", body.trim()));
        }
        msg.push_str(&format!(
            "Swarm-Event: {}\nSwarm-Actor: {}\n",
            self.kind, self.actor
        ));
        if let Some(epoch) = self.epoch {
            msg.push_str(&format!("Swarm-Epoch: {epoch}\n"));
        }
        for (k, v) in &self.trailers {
            msg.push_str(&format!("{k}: {v}\n"));
        }
        msg
    }
}

/// One entry of a record's journal, parsed back from its commit.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JournalEntry {
    pub commit: String,
    pub time: String,
    pub event: String,
    pub actor: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    pub summary: String,
    pub trailers: BTreeMap<String, String>,
    pub parents: usize,
}

/// Put `git -c` settings (`GIT_CONFIG_PARAMETERS`) on top of the config gix
/// loaded, in a section of their own at the end, so they win over the files
/// and `GIT_CONFIG_COUNT` as in git; section and key names stay
/// case-insensitive as gix compares them.
fn apply_command_line_config(repo: &mut gix::Repository) -> Result<()> {
    let params = crate::config::command_line_parameters()?;
    if params.is_empty() {
        return Ok(());
    }
    let mut extra =
        gix::config::File::new(gix::config::file::Metadata::from(gix::config::Source::Cli));
    for (key, value) in &params {
        let bad = |why: String| {
            Error::usage(
                "ENV_INVALID",
                format!("`git -c {key}` (GIT_CONFIG_PARAMETERS) is not a valid config key: {why}"),
            )
        };
        let (section, sub, name) =
            crate::config::split_key(key).ok_or_else(|| bad("no section.name".to_string()))?;
        let mut sec = extra
            .new_section(section, sub.map(|s| BString::from(s.as_bytes())))
            .map_err(|e| bad(e.to_string()))?;
        sec.push(name, value.as_deref().map(|v| v.as_bytes().as_bstr()))
            .map_err(|e| bad(e.to_string()))?;
    }
    let mut snapshot = repo.config_snapshot_mut();
    snapshot.append(extra).map_err(|e| {
        Error::usage(
            "ENV_INVALID",
            format!("cannot apply `git -c` settings: {e}"),
        )
    })?;
    snapshot.commit().map_err(|e| {
        Error::usage(
            "ENV_INVALID",
            format!("cannot apply `git -c` settings: {e}"),
        )
    })?;
    Ok(())
}

impl Store {
    /// Open the repository that contains `cwd`, or the one GIT_DIR names.
    pub fn open(cwd: &Path) -> Result<Store> {
        // Like git: GIT_DIR / GIT_WORK_TREE when set (hooks, `git --git-dir`),
        // else discovery upwards from the current directory.
        let mut repo = gix::discover_with_environment_overrides(cwd).map_err(|e| {
            Error::env(
                "NOT_A_REPO",
                format!("not inside a git repository ({}): {e}", cwd.display()),
            )
            .hint("run git swarm inside a git repository, or `git init` one first")
        })?;
        apply_command_line_config(&mut repo)?;
        let store = Store {
            repo,
            git: Git::new(cwd),
            clock: Clock::from_env()?,
        };
        store.refuse_reftable()?;
        Ok(store)
    }

    fn refuse_reftable(&self) -> Result<()> {
        let config = self.repo.config_snapshot();
        if let Some(value) = config.string("extensions.refStorage") {
            if value.to_str_lossy().eq_ignore_ascii_case("reftable") {
                return Err(Error::env(
                    "REFTABLE_UNSUPPORTED",
                    "this repository stores refs in reftable format, which git-swarm cannot yet update safely",
                )
                .hint("use a repository with the files ref backend (git init --ref-format=files)"));
            }
        }
        Ok(())
    }

    /// A config value as git would resolve it (repo, global, system), read by
    /// gix so that hot paths (hooks) spawn no `git config` processes.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// Every value of a multi-valued config key, in order.
    pub fn config_all(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_str_lossy().into_owned())
            .collect()
    }

    /// The worktree root of the checkout we run in, if any.
    pub fn workdir(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    pub fn workdir_or_err(&self) -> Result<PathBuf> {
        self.workdir().map(Path::to_path_buf).ok_or_else(|| {
            Error::usage(
                "USAGE",
                "this command needs a working tree (not a bare repository)",
            )
        })
    }

    /// The `.git` directory shared by all worktrees.
    pub fn common_dir(&self) -> PathBuf {
        self.repo.common_dir().to_path_buf()
    }

    /// Current value of a ref, if it exists (peeled to an object id).
    pub fn ref_target(&self, refname: &str) -> Result<Option<ObjectId>> {
        let found = self
            .repo
            .try_find_reference(refname)
            .map_err(|e| Error::gix(format!("could not read ref {refname}"), e))?;
        match found {
            None => Ok(None),
            Some(mut r) => {
                let id = r
                    .peel_to_id()
                    .map_err(|e| Error::gix(format!("could not resolve ref {refname}"), e))?;
                Ok(Some(id.detach()))
            }
        }
    }

    /// All refs under `prefix` (e.g. `refs/swarm/plans/`), sorted by name.
    pub fn list_refs(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        let platform = self
            .repo
            .references()
            .map_err(|e| Error::gix("could not list refs", e))?;
        let iter = platform
            .prefixed(prefix)
            .map_err(|e| Error::gix("could not list refs", e))?;
        let mut out = Vec::new();
        for r in iter {
            let mut r = r.map_err(|e| Error::gix("could not read a ref", e))?;
            let name = r.name().as_bstr().to_str_lossy().into_owned();
            if let Ok(id) = r.peel_to_id() {
                out.push((name, id.detach()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Read the record a ref points to.
    pub fn read(&self, refname: &str) -> Result<Option<Record>> {
        match self.ref_target(refname)? {
            None => Ok(None),
            Some(id) => self.read_commit(id).map(Some),
        }
    }

    /// Read the files of one record version.
    pub fn read_commit(&self, id: ObjectId) -> Result<Record> {
        let tree = self.tree_of(id)?;
        let mut files = BTreeMap::new();
        let decoded = tree
            .decode()
            .map_err(|e| Error::gix(format!("could not decode tree of {id}"), e))?;
        for entry in &decoded.entries {
            if !entry.mode.is_blob() {
                continue;
            }
            let blob = self
                .repo
                .find_object(entry.oid)
                .map_err(|e| Error::gix(format!("could not read {} of {id}", entry.filename), e))?;
            files.insert(
                entry.filename.to_str_lossy().into_owned(),
                blob.data.clone(),
            );
        }
        Ok(Record { commit: id, files })
    }

    /// The tree of commit `id`: the first step of every record read.
    fn tree_of(&self, id: ObjectId) -> Result<gix::Tree<'_>> {
        self.repo
            .find_commit(id)
            .map_err(|e| Error::gix(format!("could not read commit {id}"), e))?
            .tree()
            .map_err(|e| Error::gix(format!("could not read tree of {id}"), e))
    }

    /// Whether the tree of commit `id` has an entry `name` at its top, read
    /// without reading any blob.
    pub fn tree_has(&self, id: ObjectId, name: &str) -> Result<bool> {
        let tree = self.tree_of(id)?;
        let decoded = tree
            .decode()
            .map_err(|e| Error::gix(format!("could not decode tree of {id}"), e))?;
        Ok(decoded.entries.iter().any(|e| e.filename == name))
    }

    /// The blob of `path` in the tree of commit `id`, if present.
    pub fn blob_at(&self, id: ObjectId, path: &str) -> Result<Option<Vec<u8>>> {
        let tree = self.tree_of(id)?;
        let entry = tree
            .lookup_entry_by_path(path)
            .map_err(|e| Error::gix(format!("could not look up {path} in {id}"), e))?;
        match entry {
            None => Ok(None),
            Some(entry) => {
                let obj = entry
                    .object()
                    .map_err(|e| Error::gix(format!("could not read {path}"), e))?;
                Ok(Some(obj.data.clone()))
            }
        }
    }

    /// Write a tree of flat files and return its id.
    pub fn write_tree(&self, files: &BTreeMap<String, Vec<u8>>) -> Result<ObjectId> {
        let mut entries = Vec::with_capacity(files.len());
        for (name, data) in files {
            let oid = self
                .repo
                .write_blob(data)
                .map_err(|e| Error::gix(format!("could not write {name}"), e))?
                .detach();
            entries.push(gix::objs::tree::Entry {
                mode: gix::objs::tree::EntryKind::Blob.into(),
                filename: BString::from(name.as_str()),
                oid,
            });
        }
        // Flat files only, so a byte-wise sort is git's tree order.
        entries.sort_by(|a, b| a.filename.cmp(&b.filename));
        let tree = gix::objs::Tree { entries };
        Ok(self
            .repo
            .write_object(&tree)
            .map_err(|e| Error::gix("could not write tree", e))?
            .detach())
    }

    fn signature(&self, actor: &str) -> gix::actor::Signature {
        let email = if actor.contains('@') {
            actor.to_string()
        } else {
            format!("{actor}@git-swarm.invalid")
        };
        gix::actor::Signature {
            name: actor.into(),
            email: email.into(),
            time: gix::date::Time {
                seconds: self.clock.now().as_second(),
                offset: 0,
            },
        }
    }

    /// Write a commit (no ref update) with the actor as author and committer.
    pub fn commit(&self, tree: ObjectId, parents: &[ObjectId], event: &Event) -> Result<ObjectId> {
        let sig = self.signature(&event.actor);
        let commit = gix::objs::Commit {
            tree,
            parents: parents.iter().copied().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: event.message().into(),
            extra_headers: Vec::new(),
        };
        let id = self
            .repo
            .write_object(&commit)
            .map_err(|e| Error::gix("could not write commit", e))?
            .detach();
        // Every record version and journal entry passes here after its
        // objects are written and before any ref moves: the one point where
        // a command has begun writing (crash tests kill processes here).
        crate::failpoint::point("store:commit");
        Ok(id)
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
        let previous = match expected {
            Some(id) => PreviousValue::MustExistAndMatch(Target::Object(id)),
            None => PreviousValue::MustNotExist,
        };
        let edit = ref_edit(refname, previous, new, reason)?;
        let mut result = self.apply(vec![edit.clone()], actor, reason);
        // A failure while the ref still holds what we expected is lock
        // contention (packed-refs.lock is shared by every ref) or a stale
        // lock: wait for it to clear and try again, a bounded number of times.
        let mut tries = 0;
        while result.is_err()
            && tries < 10
            && self.ref_target(refname)? == expected
            && self.clear_stale_lock(refname)
        {
            tries += 1;
            result = self.apply(vec![edit.clone()], actor, reason);
        }
        match result {
            Ok(_) => Ok(()),
            Err(err) => {
                // Decide by looking: if the ref no longer holds what we expected,
                // someone else won; otherwise the environment failed.
                let actual = self.ref_target(refname)?;
                if actual != expected {
                    Err(Error::race(
                        "CAS_FAILED",
                        format!(
                            "{refname} changed while we were writing it (expected {}, found {}); nothing was overwritten",
                            short_or_none(expected),
                            short_or_none(actual)
                        ),
                    )
                    .hint("run the command again: it will start from the new value"))
                } else {
                    Err(err)
                }
            }
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
        self.apply(edits, actor, reason)
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
        self.apply(edits, actor, reason)
    }

    /// Apply ref edits as one transaction, with the actor in the reflog.
    fn apply(&self, edits: Vec<RefEdit>, actor: &str, reason: &str) -> Result<()> {
        let sig = self.signature(actor);
        let mut buf = gix::date::parse::TimeBuf::default();
        self.repo
            .edit_references_as(edits, Some(sig.to_ref(&mut buf)))
            .map(|_| ())
            .map_err(|e| Error::gix(format!("could not update refs ({reason})"), e))
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
            || refname == notes::NOTES_REF)
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

    /// The record's journal, newest first (all parents, by commit time).
    pub fn journal(&self, tip: ObjectId, limit: Option<usize>) -> Result<Vec<JournalEntry>> {
        let walk = self
            .repo
            .rev_walk([tip])
            .sorting(gix::revision::walk::Sorting::ByCommitTime(
                Default::default(),
            ))
            .all()
            .map_err(|e| Error::gix("could not walk the journal", e))?;
        let mut out = Vec::new();
        for info in walk {
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
            let info = info.map_err(|e| Error::gix("could not walk the journal", e))?;
            let commit = self
                .repo
                .find_commit(info.id)
                .map_err(|e| Error::gix("could not read a journal commit", e))?;
            let message = commit.message_raw_sloppy().to_str_lossy().into_owned();
            let time = commit.time().map(|t| t.seconds).unwrap_or(0);
            let parents = commit.parent_ids().count();
            out.push(parse_journal_entry(
                info.id.to_string(),
                time,
                &message,
                parents,
            ));
        }
        Ok(out)
    }

    pub fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> Result<bool> {
        if ancestor == descendant {
            return Ok(true);
        }
        let base = self
            .repo
            .merge_base(ancestor, descendant)
            .map_err(|e| Error::gix("could not compute a merge base", e))?;
        Ok(base.map(|b| b.detach()) == Some(ancestor))
    }

    pub fn merge_base(&self, a: ObjectId, b: ObjectId) -> Result<Option<ObjectId>> {
        self.repo
            .merge_base(a, b)
            .map(|base| base.map(|b| b.detach()))
            .map_err(|e| Error::gix("could not compute a merge base", e))
    }
}

/// One ref change: to `new` (None: delete), if the ref holds `expected`.
fn ref_edit(
    refname: &str,
    expected: PreviousValue,
    new: Option<ObjectId>,
    reason: &str,
) -> Result<RefEdit> {
    let name: gix::refs::FullName = refname.try_into().map_err(|e| {
        Error::usage(
            "NAME_INVALID",
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

pub fn short(id: ObjectId) -> String {
    id.to_string()[..12].to_string()
}

fn short_or_none(id: Option<ObjectId>) -> String {
    id.map(short).unwrap_or_else(|| "nothing".into())
}

pub fn parse_journal_entry(
    commit: String,
    seconds: i64,
    message: &str,
    parents: usize,
) -> JournalEntry {
    let summary = message.lines().next().unwrap_or("").to_string();
    let mut trailers = BTreeMap::new();
    for line in message.lines().skip(1) {
        if let Some((k, v)) = line.split_once(": ") {
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                trailers.insert(k.to_string(), v.trim().to_string());
            }
        }
    }
    let time = jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_default();
    JournalEntry {
        commit,
        time,
        event: trailers.get("Swarm-Event").cloned().unwrap_or_default(),
        actor: trailers.get("Swarm-Actor").cloned().unwrap_or_default(),
        epoch: trailers.get("Swarm-Epoch").and_then(|e| e.parse().ok()),
        summary,
        trailers,
        parents,
    }
}
