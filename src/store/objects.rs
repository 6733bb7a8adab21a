//! Objects: record versions (a commit and the flat files of its tree),
//! commits with their journal trailers, and reading a journal back.

use std::collections::BTreeMap;

use gix::bstr::{BString, ByteSlice};
use gix::ObjectId;

use super::Store;
use crate::error::{Error, Result};

/// One record commit (a version of a record): the commit and the files of
/// its tree.
#[derive(Debug, Clone)]
pub struct RecordCommit {
    pub commit: ObjectId,
    pub files: BTreeMap<String, Vec<u8>>,
}

impl RecordCommit {
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

impl Store {
    /// Read the record a ref points to.
    pub fn read(&self, refname: &str) -> Result<Option<RecordCommit>> {
        match self.ref_target(refname)? {
            None => Ok(None),
            Some(id) => self.read_commit(id).map(Some),
        }
    }

    /// Read the files of one record version.
    pub fn read_commit(&self, id: ObjectId) -> Result<RecordCommit> {
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
        Ok(RecordCommit { commit: id, files })
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
        Ok(self.tree_has_first(id, &[name])?.is_some())
    }

    /// The first of `names` the tree of commit `id` has at its top (one
    /// read of the tree for all of them, no blob read).
    pub fn tree_has_first<'n>(&self, id: ObjectId, names: &[&'n str]) -> Result<Option<&'n str>> {
        let tree = self.tree_of(id)?;
        let decoded = tree
            .decode()
            .map_err(|e| Error::gix(format!("could not decode tree of {id}"), e))?;
        Ok(names
            .iter()
            .find(|name| decoded.entries.iter().any(|e| e.filename == **name))
            .copied())
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

    pub(super) fn signature(&self, actor: &str) -> gix::actor::Signature {
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

    /// Write a commit (no ref update) with the actor as author and committer,
    /// signed by the actor's key when one is configured (`trust`).
    pub fn commit(&self, tree: ObjectId, parents: &[ObjectId], event: &Event) -> Result<ObjectId> {
        let sig = self.signature(&event.actor);
        let mut commit = gix::objs::Commit {
            tree,
            parents: parents.iter().copied().collect(),
            author: sig.clone(),
            committer: sig,
            encoding: None,
            message: event.message().into(),
            extra_headers: Vec::new(),
        };
        self.sign_commit(&mut commit, &event.actor)?;
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

    /// The first parent of commit `id` (None for a root commit).
    pub fn first_parent(&self, id: ObjectId) -> Result<Option<ObjectId>> {
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| Error::gix(format!("could not read {id}"), e))?;
        let first = commit.parent_ids().next().map(|p| p.detach());
        Ok(first)
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
