//! The paths a commit of the index would change against HEAD, walked only
//! where a reserved pattern could lie: directory by directory from the root,
//! a directory is entered only when some pattern's literal directory is
//! inside it or it is inside one, and skipped when the index's cache tree
//! has a valid entry for it equal to HEAD's tree there (that entry is the
//! very tree `git commit` records, so nothing under it changes). What is
//! left is compared entry by entry, as `git diff --cached` would. On a
//! commit touching one file in a 50,000-file tree this reads HEAD's trees
//! along that file's path only.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::extension::Tree as CacheTree;
use gix::objs::TreeRefIter;
use gix::ObjectId;

use crate::error::Result;
use crate::guards::findings::unreadable;

use super::RESERVATIONS;

/// The directories patterns name, each ending in `/` ("" for the root),
/// sorted. Every path a pattern covers lies under its directory.
pub struct Wanted(Vec<String>);

/// How much of a directory the patterns can reach.
#[derive(Debug, PartialEq, Eq)]
enum Reach {
    /// Nothing under it.
    Nothing,
    /// Everything: it is a pattern's directory or lies inside one.
    All,
    /// Only the subdirectories (by name) on the way to patterns' directories.
    Towards(Vec<String>),
}

impl Wanted {
    pub fn new(mut dirs: Vec<String>) -> Wanted {
        dirs.sort();
        dirs.dedup();
        Wanted(dirs)
    }

    fn reach(&self, dir: &str) -> Reach {
        // `dir` itself or one of its ancestors is listed.
        let listed = |end: usize| {
            self.0
                .binary_search_by(|d| d.as_str().cmp(&dir[..end]))
                .is_ok()
        };
        if std::iter::once(0)
            .chain(dir.match_indices('/').map(|(i, _)| i + 1))
            .any(listed)
        {
            return Reach::All;
        }
        // Those inside `dir` follow it in sorted order.
        let from = self.0.partition_point(|d| d.as_str() < dir);
        let mut next: Vec<String> = self.0[from..]
            .iter()
            .take_while(|d| d.starts_with(dir))
            .filter_map(|d| d[dir.len()..].split('/').next())
            .map(str::to_string)
            .collect();
        next.dedup();
        if next.is_empty() {
            Reach::Nothing
        } else {
            Reach::Towards(next)
        }
    }
}

/// What a directory holds on one side, by name.
enum Side {
    File(ObjectId, u32),
    Dir(Range<usize>, Option<ObjectId>),
}

struct Walk<'a> {
    repo: &'a gix::Repository,
    index: Option<&'a gix::index::File>,
    wanted: &'a Wanted,
    out: Vec<String>,
}

fn counts(e: &gix::index::Entry) -> bool {
    e.stage_raw() == 0 && !e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD)
}

impl Walk<'_> {
    fn err(&self, dir: &[u8], e: impl std::fmt::Display) -> crate::error::Error {
        unreadable(RESERVATIONS, format!("{} in HEAD", dir.as_bstr()), e)
    }

    /// The index entries directly in `dir` (files) and its subdirectories
    /// (each a range of entries), by name.
    fn index_side(&self, dir: &[u8], range: Range<usize>) -> BTreeMap<BString, Side> {
        let mut out = BTreeMap::new();
        let Some(index) = self.index else { return out };
        let entries = index.entries();
        let mut i = range.start;
        while i < range.end {
            let e = &entries[i];
            let path: &BStr = e.path(index);
            let rest = &path[dir.len()..];
            match rest.find_byte(b'/') {
                Some(slash) => {
                    let name = BString::from(&rest[..slash]);
                    let prefix = [dir, &rest[..=slash]].concat();
                    let sub = index
                        .prefixed_entries_range(prefix.as_bstr())
                        .unwrap_or(i..i + 1);
                    i = sub.end.max(i + 1);
                    out.insert(name, Side::Dir(sub, None));
                }
                None => {
                    if counts(e) {
                        out.insert(BString::from(rest), Side::File(e.id, e.mode.bits()));
                    }
                    i += 1;
                }
            }
        }
        out
    }

    /// HEAD's entries in the tree `tree`, by name.
    fn head_side(&self, dir: &[u8], tree: ObjectId) -> Result<BTreeMap<BString, Side>> {
        let t = self.repo.find_tree(tree).map_err(|e| self.err(dir, e))?;
        let mut out = BTreeMap::new();
        for entry in t.iter() {
            let entry = entry.map_err(|e| self.err(dir, e))?;
            let name = BString::from(entry.filename());
            let side = if entry.mode().is_tree() {
                Side::Dir(0..0, Some(entry.object_id()))
            } else {
                Side::File(entry.object_id(), entry.mode().value() as u32)
            };
            out.insert(name, side);
        }
        Ok(out)
    }

    /// Compare `dir` (`""` or `a/b/`): the index entries `range` under it,
    /// its cache-tree node, and HEAD's tree there.
    fn dir(
        &mut self,
        dir: &[u8],
        range: Range<usize>,
        node: Option<&CacheTree>,
        head: Option<ObjectId>,
    ) -> Result<()> {
        if node.is_some_and(|n| n.num_entries.is_some() && Some(n.id) == head) {
            return Ok(());
        }
        match self.wanted.reach(&dir.to_str_lossy()) {
            Reach::Nothing => Ok(()),
            Reach::All => self.every_entry(dir, range, node, head),
            Reach::Towards(names) => self.towards(dir, &names, node, head),
        }
    }

    /// Enter only the subdirectories `names` of `dir`: nothing else in it
    /// can be covered.
    fn towards(
        &mut self,
        dir: &[u8],
        names: &[String],
        node: Option<&CacheTree>,
        head: Option<ObjectId>,
    ) -> Result<()> {
        let tree = match head {
            Some(t) => Some(self.repo.find_tree(t).map_err(|e| self.err(dir, e))?),
            None => None,
        };
        // HEAD's subtrees and the cache tree's children by name, borrowed.
        let mut subtrees: HashMap<&[u8], ObjectId> = HashMap::new();
        if let Some(t) = &tree {
            for entry in TreeRefIter::from_bytes(&t.data, self.repo.object_hash()) {
                let entry = entry.map_err(|e| self.err(dir, e))?;
                if entry.mode.is_tree() {
                    subtrees.insert(entry.filename.as_bytes(), entry.oid.to_owned());
                }
            }
        }
        let children: HashMap<&[u8], &CacheTree> = node
            .map(|n| n.children.iter().map(|c| (c.name.as_slice(), c)).collect())
            .unwrap_or_default();
        for name in names {
            let head_tree = subtrees.get(name.as_bytes()).copied();
            let child = children.get(name.as_bytes()).copied();
            if child.is_some_and(|c| c.num_entries.is_some() && Some(c.id) == head_tree) {
                continue;
            }
            let sub = [dir, name.as_bytes(), b"/"].concat();
            let range = self
                .index
                .and_then(|i| i.prefixed_entries_range(sub.as_bstr()))
                .unwrap_or(0..0);
            if range.is_empty() && head_tree.is_none() {
                continue;
            }
            self.dir(&sub, range, child, head_tree)?;
        }
        Ok(())
    }

    /// Compare every entry of `dir`, entering its subdirectories.
    fn every_entry(
        &mut self,
        dir: &[u8],
        range: Range<usize>,
        node: Option<&CacheTree>,
        head: Option<ObjectId>,
    ) -> Result<()> {
        let ours = self.index_side(dir, range);
        let theirs = match head {
            Some(t) => self.head_side(dir, t)?,
            None => BTreeMap::new(),
        };
        let mut names: Vec<&BString> = ours.keys().chain(theirs.keys()).collect();
        names.sort();
        names.dedup();
        // The cache tree keeps its children in git's order (length first).
        let children: BTreeMap<&[u8], &CacheTree> = node
            .map(|n| n.children.iter().map(|c| (c.name.as_slice(), c)).collect())
            .unwrap_or_default();
        for name in names {
            let path = [dir, name.as_slice()].concat();
            let (index_range, index_file) = match ours.get(name) {
                Some(Side::Dir(r, _)) => (r.clone(), None),
                Some(Side::File(id, mode)) => (0..0, Some((*id, *mode))),
                None => (0..0, None),
            };
            let (head_tree, head_file) = match theirs.get(name) {
                Some(Side::Dir(_, t)) => (*t, None),
                Some(Side::File(id, mode)) => (None, Some((*id, *mode))),
                None => (None, None),
            };
            if index_file != head_file {
                self.out.push(path.to_str_lossy().into_owned());
            }
            if !index_range.is_empty() || head_tree.is_some() {
                let child = children.get(name.as_slice()).copied();
                self.dir(&[&path[..], b"/"].concat(), index_range, child, head_tree)?;
            }
        }
        Ok(())
    }
}

/// The paths (sorted) whose staged version differs from HEAD's
/// (`head_tree`; None on an unborn branch), in the directories `wanted`
/// enters. Conflicted and intent-to-add entries count as absent.
pub fn staged_changes(
    repo: &gix::Repository,
    index: Option<&gix::index::File>,
    head_tree: Option<ObjectId>,
    wanted: &Wanted,
) -> Result<Vec<String>> {
    let mut walk = Walk {
        repo,
        index,
        wanted,
        out: Vec::new(),
    };
    let all = index.map_or(0..0, |i| 0..i.entries().len());
    walk.dir(b"", all, index.and_then(|i| i.tree()), head_tree)?;
    let mut out = walk.out;
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_entered_towards_and_under_patterns() {
        let w = Wanted::new(vec![
            "src/a/".into(),
            "docs/".into(),
            "src/a/".into(),
            "src/b/c/".into(),
        ]);
        let towards = |v: &[&str]| Reach::Towards(v.iter().map(|s| s.to_string()).collect());
        assert_eq!(w.reach(""), towards(&["docs", "src"]));
        assert_eq!(w.reach("src/"), towards(&["a", "b"]));
        assert_eq!(w.reach("src/b/"), towards(&["c"]));
        for dir in ["src/a/", "src/a/b/", "docs/", "docs/x/y/", "src/b/c/"] {
            assert_eq!(w.reach(dir), Reach::All, "{dir}");
        }
        for dir in [
            "src/c/",
            "src/ab/",
            "lib/",
            "doc/",
            ".changeset/",
            "src/b/d/",
        ] {
            assert_eq!(w.reach(dir), Reach::Nothing, "{dir}");
        }
        let root = Wanted::new(vec![String::new()]);
        assert_eq!(root.reach("anything/at/all/"), Reach::All);
        assert_eq!(root.reach(""), Reach::All);
        assert_eq!(Wanted::new(vec![]).reach(""), Reach::Nothing);
    }
}
