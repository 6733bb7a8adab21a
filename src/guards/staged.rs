//! What a commit is about to record, read only where the rules look: the
//! index entry of the plan file, HEAD's tree at the plan file and at the
//! changeset directory, and — unless the index's cache tree shows that
//! directory unchanged — the changesets staged there that HEAD lacks
//! (a binary-searched range of the index against HEAD's names). Nothing
//! else of a large index or tree is touched. The hot path of every commit:
//! it spawns no git process.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::ObjectId;

use super::changeset::name::is_changeset_name;
use super::findings::{unreadable, CHANGESET_UNIQUE, PLAN_UNTRACKED};
use crate::error::Result;
use crate::session::Ctx;

/// An index or tree entry: blob id and mode bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub id: ObjectId,
    pub mode: u32,
}

#[derive(Debug, Default)]
pub struct Staged {
    /// The plan file's index entry, if staged.
    pub plan: Option<Blob>,
    /// The plan file in HEAD, if there.
    pub plan_in_head: Option<Blob>,
    /// Changesets staged that HEAD does not have (exact spelling), in
    /// index order: the ones this commit adds.
    pub added: Vec<String>,
    /// Every changeset name (directly under the directory) in the index,
    /// read only when one is added.
    pub changesets: Vec<String>,
    /// The staged blob of each added changeset.
    pub changeset_blobs: std::collections::HashMap<String, ObjectId>,
    /// HEAD's commit, None on an unborn branch.
    pub head: Option<ObjectId>,
    /// HEAD's tree, None on an unborn branch.
    pub head_tree: Option<ObjectId>,
    /// The index as read (None when there is none), for the other guards.
    pub index: Option<Index>,
}

/// The decoded index, read once per hook.
pub struct Index(pub gix::index::File);

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Index({} entries)", self.0.entries().len())
    }
}

/// Is there an index at `path`? Only "not found" means no index (a fresh
/// repository); any other error reading it (permissions, a loop of
/// symlinks, a file where a directory should be) is an error, not a pass.
pub fn index_exists(path: &Path) -> std::io::Result<bool> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The index git tells the hook to read: `GIT_INDEX_FILE` (a temporary index
/// for `git commit -a` / `git commit -- path`, relative to the worktree root),
/// else the worktree's own index.
pub fn index_path(repo: &gix::Repository) -> PathBuf {
    match std::env::var_os("GIT_INDEX_FILE").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
            }
        }
        None => repo.index_path(),
    }
}

impl Staged {
    pub fn read(ctx: &Ctx) -> Result<Staged> {
        let repo = &ctx.store.repo;
        let plan_path = ctx.settings.plan_file.trim_start_matches('/');
        let dir = ctx.settings.changeset_dir.trim_matches('/');
        let mut out = Staged::default();
        out.read_index(repo, plan_path)?;
        out.read_head(repo, plan_path, dir)?;
        Ok(out)
    }

    /// The plan file's entry and the changeset names of the index, if there is one.
    fn read_index(&mut self, repo: &gix::Repository, plan_path: &str) -> Result<()> {
        let path = index_path(repo);
        let has_index = index_exists(&path)
            .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the index {}", path.display()), e))?;
        if !has_index {
            return Ok(());
        }
        let index = gix::index::File::at(
            &path,
            repo.object_hash(),
            true,
            gix::index::decode::Options::default(),
        )
        .map_err(|e| unreadable(PLAN_UNTRACKED, format!("the index {}", path.display()), e))?;
        let entry = index
            .entry_by_path(plan_path.as_bytes().as_bstr())
            .filter(|e| !e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD));
        self.plan = entry.map(|e| Blob {
            id: e.id,
            mode: e.mode.bits(),
        });
        self.index = Some(Index(index));
        Ok(())
    }

    /// The changeset names (and blobs) directly under `dir` in the index.
    fn index_changesets(&mut self, dir: &str) {
        let Some(Index(index)) = &self.index else {
            return;
        };
        let prefix = format!("{dir}/");
        let Some(range) = index.prefixed_entries_range(prefix.as_bytes().as_bstr()) else {
            return;
        };
        for e in &index.entries()[range] {
            if e.stage_raw() != 0 || e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
                continue;
            }
            let p: &BStr = e.path(index);
            let name = &p[prefix.len()..];
            if let Ok(name) = name.to_str() {
                if is_changeset_name(name) {
                    self.changesets.push(name.to_string());
                }
            }
        }
    }

    /// Whether the index's cache tree says nothing under `dir` differs
    /// from `head_dir` (HEAD's tree there): its entry for `dir` is valid
    /// and is that tree. That entry is the very tree `git commit` records.
    fn unchanged_in_index(&self, dir: &str, head_dir: Option<ObjectId>) -> bool {
        let Some(Index(index)) = &self.index else {
            return false;
        };
        head_dir.is_some() && cached_tree(index, dir) == head_dir
    }

    /// HEAD's commit and tree, its plan file, and the changeset names of
    /// the index and of HEAD, unless the cache tree shows nothing under the
    /// directory changed (then nothing can be added and they are not read).
    fn read_head(&mut self, repo: &gix::Repository, plan_path: &str, dir: &str) -> Result<()> {
        let mut head = repo
            .head()
            .map_err(|e| unreadable(PLAN_UNTRACKED, "HEAD", e))?;
        if head.is_unborn() {
            self.read_added(dir, Vec::new());
            return Ok(());
        }
        let commit = head
            .peel_to_commit()
            .map_err(|e| unreadable(PLAN_UNTRACKED, "HEAD's commit", e))?;
        self.head = Some(commit.id);
        let tree = commit
            .tree()
            .map_err(|e| unreadable(PLAN_UNTRACKED, "HEAD's tree", e))?;
        self.head_tree = Some(tree.id);
        self.plan_in_head = tree
            .lookup_entry_by_path(plan_path)
            .map_err(|e| unreadable(PLAN_UNTRACKED, format!("{plan_path} in HEAD"), e))?
            .filter(|e| e.mode().is_blob_or_symlink())
            .map(|e| Blob {
                id: e.object_id(),
                mode: e.mode().value() as u32,
            });
        let head_dir = tree
            .lookup_entry_by_path(dir)
            .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in HEAD"), e))?
            .filter(|e| e.mode().is_tree())
            .map(|e| e.object_id());
        if self.unchanged_in_index(dir, head_dir) {
            return Ok(());
        }
        let in_head = match head_dir {
            Some(t) => Some(
                repo.find_tree(t)
                    .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in HEAD"), e))?,
            ),
            None => None,
        };
        let mut names = Vec::new();
        if let Some(t) = &in_head {
            for entry in gix::objs::TreeRefIter::from_bytes(&t.data, repo.object_hash()) {
                let entry = entry
                    .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("{dir}/ in HEAD"), e))?;
                if !entry.mode.is_tree() {
                    names.push(entry.filename);
                }
            }
        }
        self.read_added(dir, names);
        Ok(())
    }

    /// The changesets staged under `dir` whose exact name is not among
    /// HEAD's file names there (`in_head`); when there are any, every
    /// staged changeset name and blob too (the rules need them then).
    fn read_added(&mut self, dir: &str, in_head: Vec<&BStr>) {
        let Some(Index(index)) = &self.index else {
            return;
        };
        let prefix = format!("{dir}/");
        let Some(range) = index.prefixed_entries_range(prefix.as_bytes().as_bstr()) else {
            return;
        };
        let staged = index.entries()[range]
            .iter()
            .filter(|e| {
                e.stage_raw() == 0 && !e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD)
            })
            .map(|e| (&e.path(index)[prefix.len()..], e.id));
        for (name, blob) in added_names(staged, in_head) {
            self.changeset_blobs.insert(name.clone(), blob);
            self.added.push(name);
        }
        if !self.added.is_empty() {
            self.index_changesets(dir);
        }
    }
}

/// The changeset names among `staged` (index order) that `in_head` (HEAD's
/// file names) lacks, by exact spelling: a name renamed in case is added.
fn added_names<'a, T>(
    staged: impl Iterator<Item = (&'a BStr, T)>,
    mut in_head: Vec<&BStr>,
) -> Vec<(String, T)> {
    // Tree order already in the common case: sorting is one pass.
    in_head.sort_unstable();
    staged
        .filter(|(name, _)| in_head.binary_search(name).is_err())
        .filter_map(|(name, t)| Some((name.to_str().ok()?, t)))
        .filter(|(name, _)| is_changeset_name(name))
        .map(|(name, t)| (name.to_string(), t))
        .collect()
}

/// The index's cache-tree id for `dir` (`a/b`), when that entry is valid.
pub fn cached_tree(index: &gix::index::File, dir: &str) -> Option<ObjectId> {
    let mut node = index.tree()?;
    for seg in dir.split('/').filter(|s| !s.is_empty()) {
        node = node
            .children
            .iter()
            .find(|c| c.name.as_slice() == seg.as_bytes())?;
    }
    node.num_entries.map(|_| node.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_changesets_are_the_staged_names_head_lacks() {
        let b = |v: &'static [&'static str]| {
            v.iter().map(|s| s.as_bytes().as_bstr()).collect::<Vec<_>>()
        };
        let staged = b(&["a.md", "B.md", "c.md", "README.md", "sub/x.md"]);
        let added = added_names(staged.into_iter().zip(1..), b(&["z.md", "c.md", "b.md"]));
        // Exact spelling: a name renamed in case is added; non-changesets
        // and nested paths are not changesets.
        assert_eq!(
            added,
            vec![("a.md".to_string(), 1), ("B.md".to_string(), 2)]
        );
        assert!(added_names(b(&["c.md"]).into_iter().zip(1..), b(&["c.md"])).is_empty());
    }

    #[test]
    fn only_a_missing_index_counts_as_no_index() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index");
        assert!(!index_exists(&index).unwrap());
        std::fs::write(&index, b"DIRC").unwrap();
        assert!(index_exists(&index).unwrap());
        // A path through a file (ENOTDIR) and a symlink loop (ELOOP) are
        // errors that even root meets: the guard must not read them as "no index".
        assert!(index_exists(&index.join("index")).is_err());
        #[cfg(unix)]
        {
            let looped = dir.path().join("loop");
            std::os::unix::fs::symlink(&looped, &looped).unwrap();
            let err = index_exists(&looped).unwrap_err();
            assert_ne!(err.kind(), std::io::ErrorKind::NotFound);
        }
    }
}
