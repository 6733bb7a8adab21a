//! `refs/notes/swarm`: git notes on code commits, one JSON object per line
//! (handoffs written at a commit, acceptances, verification verdicts).
//! Appends are line unions, so concurrent writers never lose each other's
//! lines: a lost local CAS is simply retried on the new tip (the local-only
//! [`Store::cas_loop`]).

use gix::ObjectId;

use super::remote::LOCAL_ATTEMPTS;
use super::{Event, Store};
use crate::error::{Code, Error, Result};

pub use super::refs::NOTES_REF;

impl Store {
    /// The note lines attached to `target` in `notes_ref`.
    pub fn note_lines_in(&self, notes_ref: &str, target: ObjectId) -> Result<Vec<String>> {
        let Some(tip) = self.ref_target(notes_ref)? else {
            return Ok(Vec::new());
        };
        self.note_lines_at(tip, target)
    }

    /// The note lines attached to `target` in the notes commit `tip`.
    fn note_lines_at(&self, tip: ObjectId, target: ObjectId) -> Result<Vec<String>> {
        let tree = self.commit_tree(tip)?;
        let mut state = gix::note::plumbing::State::new(tree, &self.repo.objects)
            .map_err(|e| Error::gix("could not read the notes tree", e))?;
        let Some(blob) = state
            .get(&target, &self.repo.objects)
            .map_err(|e| Error::gix("could not look up a note", e))?
        else {
            return Ok(Vec::new());
        };
        let data = self
            .repo
            .find_object(blob)
            .map_err(|e| Error::gix("could not read a note", e))?
            .data
            .clone();
        Ok(String::from_utf8_lossy(&data)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect())
    }

    pub fn note_lines(&self, target: ObjectId) -> Result<Vec<String>> {
        self.note_lines_in(NOTES_REF, target)
    }

    /// Parsed JSON objects of the note on `target` (lines that are not JSON are skipped).
    pub fn note_objects(&self, target: ObjectId) -> Result<Vec<serde_json::Value>> {
        Ok(self
            .note_lines(target)?
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    pub fn commit_tree(&self, commit: ObjectId) -> Result<ObjectId> {
        let c = self
            .repo
            .find_commit(commit)
            .map_err(|e| Error::gix(format!("could not read commit {commit}"), e))?;
        c.tree_id()
            .map(|id| id.detach())
            .map_err(|e| Error::gix(format!("could not read tree of {commit}"), e))
    }

    fn empty_tree(&self) -> Result<ObjectId> {
        Ok(self
            .repo
            .write_object(gix::objs::Tree::empty())
            .map_err(|e| Error::gix("could not write the empty tree", e))?
            .detach())
    }

    /// Append one JSON line to the note on `target` (no-op if already there).
    ///
    /// With `remote`, on the notes published there as last fetched when
    /// the local notes have none of their own (absent, or behind them): the
    /// new notes commit is then a fast-forward of the published one, and
    /// goes out with the command's push. Local notes that diverged from the
    /// published ones stay the base (`sync` joins the two).
    pub fn note_append(
        &self,
        target: ObjectId,
        line: &serde_json::Value,
        event: &Event,
        remote: Option<&str>,
    ) -> Result<()> {
        let line = serde_json::to_string(line).expect("a JSON value always serialises");
        let published = match remote {
            Some(r) => self.ref_target(&super::mirror::mirror_ref(r, NOTES_REF))?,
            None => None,
        };
        let step = |local: Option<ObjectId>| {
            let base = match (local, published) {
                (None, p) => p,
                (Some(l), Some(p)) if l != p && self.is_ancestor(l, p)? => Some(p),
                (l, _) => l,
            };
            let mut lines = match base {
                Some(b) => self.note_lines_at(b, target)?,
                None => Vec::new(),
            };
            if lines.contains(&line) {
                // There already: at most catch up with the published notes.
                return Ok(base.filter(|b| Some(*b) != local).map(|b| {
                    let why = "catch up with the published notes".to_string();
                    (b, event.actor.clone(), why)
                }));
            }
            lines.push(line.clone());
            let tree = match base {
                Some(t) => self.commit_tree(t)?,
                None => self.empty_tree()?,
            };
            let new_tree = self.notes_tree_with(tree, &[(target, lines)])?;
            let parents: Vec<ObjectId> = base.into_iter().collect();
            let commit = self.commit(new_tree, &parents, event)?;
            Ok(Some((commit, event.actor.clone(), event.summary.clone())))
        };
        let exhausted = || {
            Error::new(
                Code::CasFailed,
                "refs/notes/swarm kept changing under us; the note was not written",
            )
            .hint("run the command again")
        };
        self.cas_loop(NOTES_REF, LOCAL_ATTEMPTS, step, exhausted)
            .map(drop)
    }

    /// Return a notes tree based on `tree` where each target's note is set to the given lines.
    pub fn notes_tree_with(
        &self,
        tree: ObjectId,
        notes: &[(ObjectId, Vec<String>)],
    ) -> Result<ObjectId> {
        let mut state = gix::note::plumbing::State::new(tree, &self.repo.objects)
            .map_err(|e| Error::gix("could not read the notes tree", e))?;
        let mut current = tree;
        for (target, lines) in notes {
            let mut text = lines.join("\n");
            text.push('\n');
            let blob = self
                .repo
                .write_blob(text.as_bytes())
                .map_err(|e| Error::gix("could not write a note", e))?
                .detach();
            current = state
                .replace(*target, blob, &self.repo.objects)
                .map_err(|e| Error::gix("could not update the notes tree", e))?
                .tree;
        }
        Ok(current)
    }

    /// Every (annotated object, lines) pair in the notes tree of commit `tip`.
    pub fn all_notes(&self, tip: ObjectId) -> Result<Vec<(ObjectId, Vec<String>)>> {
        // Notes trees may use git's fanout (ab/cdef…); walk and join the path.
        let tree = self.commit_tree(tip)?;
        let mut out = Vec::new();
        self.walk_notes(tree, String::new(), &mut out)?;
        Ok(out)
    }

    fn walk_notes(
        &self,
        tree: ObjectId,
        prefix: String,
        out: &mut Vec<(ObjectId, Vec<String>)>,
    ) -> Result<()> {
        let obj = self
            .repo
            .find_object(tree)
            .map_err(|e| Error::gix("could not read the notes tree", e))?;
        let decoded = obj
            .try_into_tree()
            .map_err(|e| Error::gix("the notes tree is not a tree", e))?;
        let decoded = decoded
            .decode()
            .map_err(|e| Error::gix("could not decode the notes tree", e))?
            .to_owned();
        for entry in decoded.entries {
            let name = format!("{prefix}{}", entry.filename);
            if entry.mode.is_tree() {
                self.walk_notes(entry.oid, name, out)?;
            } else if let Ok(target) = ObjectId::from_hex(name.as_bytes()) {
                let data = self
                    .repo
                    .find_object(entry.oid)
                    .map_err(|e| Error::gix("could not read a note", e))?
                    .data
                    .clone();
                let lines = String::from_utf8_lossy(&data)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_string)
                    .collect();
                out.push((target, lines));
            }
        }
        Ok(())
    }
}
