//! A deletable cache for changeset-unique, so that a commit adding a
//! changeset does not inflate every lane branch's changeset directory each
//! time: `<git common dir>/swarm/changeset-names.cache` maps a commit to its
//! changeset-directory tree, and a tree to a bitmap over a shared table of
//! names (stored as the positions where it differs from one reference
//! bitmap, since lane branches differ from their base by a few names).
//! Every entry is keyed by an immutable object id, so an entry is never
//! stale; a missing, torn, edited or foreign cache is simply rebuilt (the
//! file is a checksummed `store::cachefile`), and a cache that cannot be
//! written is not an error.
//!
//! The pieces, each importing only those after it: `file` (the file
//! format), `tree` (a raw tree into a bitmap), `delta` (a tree rebuilt
//! from a delta against one in memory), `table` (the name table), `bits`
//! (bitmaps and the hasher).

mod bits;
mod delta;
mod file;
mod table;
mod tree;

use std::collections::HashSet;
use std::path::PathBuf;

use gix::ObjectId;

use self::bits::{has_bit, FxBuild};
use self::file::{CommitTrees, Stored, TreeBits, Used, FORMAT};
use self::table::NameTable;
use self::tree::Reader;
use super::dir::{dir_tree, GixResult};

pub struct NameCache {
    path: Option<PathBuf>,
    dir: String,
    table: NameTable,
    trees: TreeBits,
    commits: CommitTrees,
    used_trees: Vec<ObjectId>,
    /// The same trees, to tell a tree used already at once.
    used_tree_set: HashSet<ObjectId, FxBuild>,
    used_commits: HashSet<ObjectId, FxBuild>,
    changed: bool,
    reader: Reader,
}

impl NameCache {
    fn from_stored(dir: &str, stored: Stored) -> NameCache {
        NameCache {
            path: None,
            dir: dir.to_string(),
            table: NameTable::new(stored.names),
            trees: stored.trees,
            commits: stored.commits,
            used_trees: Vec::new(),
            used_tree_set: HashSet::with_hasher(FxBuild),
            used_commits: HashSet::with_hasher(FxBuild),
            changed: false,
            reader: Reader::default(),
        }
    }

    /// The cache for `dir` in this repository; empty if absent or unreadable.
    pub fn load(repo: &gix::Repository, dir: &str) -> NameCache {
        let path = repo
            .common_dir()
            .join("swarm")
            .join("changeset-names.cache");
        let stored = FORMAT
            .read(&path)
            .and_then(|bytes| file::parse(&bytes, dir))
            .unwrap_or_default();
        let mut cache = Self::from_stored(dir, stored);
        cache.path = Some(path);
        cache
    }

    /// The changeset-directory tree of `commit` (or of what a tag points to), cached.
    pub fn dir_tree(
        &mut self,
        repo: &gix::Repository,
        commit: ObjectId,
    ) -> GixResult<Option<ObjectId>> {
        self.used_commits.insert(commit);
        if let Some(t) = self.commits.get(&commit) {
            return Ok(*t);
        }
        let t = dir_tree(repo, commit, &self.dir)?;
        self.commits.insert(commit, t);
        self.changed = true;
        Ok(t)
    }

    /// Make sure `tree`'s names are known.
    pub fn load_tree(&mut self, repo: &gix::Repository, tree: ObjectId) -> GixResult<()> {
        if self.trees.contains_key(&tree) {
            if self.used_tree_set.insert(tree) {
                self.used_trees.push(tree);
            }
            return Ok(());
        }
        let rebuilt = self.reader.delta_of_reference(repo, tree);
        let read;
        let data = match &rebuilt {
            Some(data) => data,
            None => {
                read = repo.find_tree(tree).map_err(|e| e.to_string())?;
                &read.data
            }
        };
        let hash_len = repo.object_hash().len_in_bytes();
        let bits = self.reader.read(&mut self.table, tree, data, hash_len)?;
        if self.used_tree_set.insert(tree) {
            self.used_trees.push(tree);
            self.changed = true;
        }
        self.trees.insert(tree, bits);
        Ok(())
    }

    /// Indices of the names equal to `lower` case-insensitively (to test many trees at once).
    pub fn spellings(&self, lower: &str) -> Vec<usize> {
        self.table.spellings(lower)
    }

    /// The first of `spellings` that `tree` has.
    pub fn has_any(&self, tree: ObjectId, spellings: &[usize]) -> Option<&str> {
        let bits = self.trees.get(&tree)?;
        spellings
            .iter()
            .find(|&&i| has_bit(bits, i))
            .map(|&i| self.table.names[i].as_str())
    }

    /// Every name in `tree`.
    pub fn names_of(&self, tree: ObjectId) -> Vec<&str> {
        let Some(bits) = self.trees.get(&tree) else {
            return Vec::new();
        };
        let names = &self.table.names;
        (0..names.len())
            .filter(|&i| has_bit(bits, i))
            .map(|i| names[i].as_str())
            .collect()
    }

    /// Write the entries used in this run back, if anything was added or
    /// enough went unused. The name table is compacted to the live names,
    /// and the first tree used (the base's) is the reference bitmap.
    pub fn save(&self) {
        let Some(path) = &self.path else { return };
        let unused = self.trees.len().saturating_sub(self.used_trees.len());
        if !self.changed && unused <= self.used_trees.len() {
            return;
        }
        let bytes = file::render(
            &self.dir,
            &Used {
                names: &self.table.names,
                trees: &self.trees,
                commits: &self.commits,
                used_trees: &self.used_trees,
                used_commits: &self.used_commits,
            },
        );
        // Best effort: a cache that cannot be written is rebuilt next time.
        let _ = FORMAT.write(path, &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::bits::flip;
    use super::*;

    fn set(c: &mut NameCache, t: ObjectId, names: &[&str]) {
        let mut bits = Vec::new();
        for n in names {
            let i = c.table.add(n);
            flip(&mut bits, i);
        }
        c.trees.insert(t, bits);
        c.used_trees.push(t);
    }

    #[test]
    fn round_trip_keeps_names_per_tree() {
        let t1 = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let t2 = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        let t3 = ObjectId::from_hex(b"4444444444444444444444444444444444444444").unwrap();
        let c1 = ObjectId::from_hex(b"3333333333333333333333333333333333333333").unwrap();
        let mut c = NameCache::from_stored(".changeset", Stored::default());
        let many: Vec<String> = (0..100).map(|i| format!("c{i}.md")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        set(&mut c, t1, &many);
        set(&mut c, t2, &["Fix-Auth.md", "c99.md"]);
        let mut most = many[1..].to_vec();
        most.push("lane.md");
        set(&mut c, t3, &most);
        // The same name spelled differently on another tree.
        let t4 = ObjectId::from_hex(b"6666666666666666666666666666666666666666").unwrap();
        set(&mut c, t4, &["FIX-AUTH.md"]);
        c.commits.insert(c1, Some(t2));
        c.used_commits.insert(c1);
        c.changed = true;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        c.path = Some(path.clone());
        c.save();
        let text = std::fs::read(&path).unwrap();
        let back = NameCache::from_stored(".changeset", file::parse(&text, ".changeset").unwrap());
        // Looked up the way changeset-unique does: the spellings of a
        // lowercase name once, then each tree's bitmap.
        let find = |tree: ObjectId, lower: &str| {
            let spellings = back.spellings(lower);
            back.has_any(tree, &spellings).map(str::to_string)
        };
        assert_eq!(find(t2, "fix-auth.md").as_deref(), Some("Fix-Auth.md"));
        assert_eq!(find(t1, "fix-auth.md"), None);
        assert_eq!(find(t1, "c77.md").as_deref(), Some("c77.md"));
        assert_eq!(find(t3, "c0.md"), None);
        assert_eq!(find(t3, "lane.md").as_deref(), Some("lane.md"));
        assert_eq!(find(t2, "c99.md").as_deref(), Some("c99.md"));
        assert_eq!(find(t2, "absent.md"), None);
        assert_eq!(find(t4, "fix-auth.md").as_deref(), Some("FIX-AUTH.md"));
        assert_eq!(back.spellings("fix-auth.md").len(), 2);
        let unknown = ObjectId::from_hex(b"5555555555555555555555555555555555555555").unwrap();
        assert_eq!(find(unknown, "c1.md"), None);
        assert_eq!(back.names_of(t2).len(), 2);
        assert_eq!(back.names_of(t3).len(), 100);
        assert_eq!(back.commits.get(&c1), Some(&Some(t2)));
        assert!(file::parse(&text, "other").is_none());
        // A damaged file is ignored, not trusted.
        assert!(file::parse(&text[..text.len() - 1], ".changeset").is_none());
    }
}
