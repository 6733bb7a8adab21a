//! The cache file, `<git common dir>/swarm/changeset-names.cache`, a
//! [`cachefile`](crate::store::cachefile) (a torn or edited file is a
//! miss): the directory,
//! the name table, one reference bitmap, then each tree with the positions
//! where its bitmap differs from the reference, and each commit with its
//! directory tree (or none). Written compacted to the names of the trees
//! used in a run, with the first of them (the base's) as the reference
//! bitmap.

use std::collections::{HashMap, HashSet};

use gix::ObjectId;

use super::bits::{any_beyond, flip, has_bit, ones, FxBuild};
use crate::store::cachefile::{Format, Reader, Sealed, Writer};

/// Far above any real cache (2,000 names and 500 trees take 60 KB).
pub const FORMAT: Format = Format::new(b"git-swarm changeset-name-cache\n", 4, 64 << 20);

pub type TreeBits = HashMap<ObjectId, Vec<u64>, FxBuild>;
pub type CommitTrees = HashMap<ObjectId, Option<ObjectId>, FxBuild>;

/// What the file holds.
#[derive(Default)]
pub struct Stored {
    pub names: Vec<String>,
    /// dir tree → bitmap over `names`
    pub trees: TreeBits,
    /// commit → its dir tree (None: the commit has no such directory)
    pub commits: CommitTrees,
}

/// The entries one run used, to be written back.
pub struct Used<'a> {
    pub names: &'a [String],
    pub trees: &'a TreeBits,
    pub commits: &'a CommitTrees,
    /// In the order first used; the first is the reference bitmap.
    pub used_trees: &'a [ObjectId],
    pub used_commits: &'a HashSet<ObjectId, FxBuild>,
}

/// The contents of a cache file for `dir`; None when it is foreign,
/// damaged or for another directory.
pub fn parse(bytes: &[u8], dir: &str) -> Option<Stored> {
    let mut r = Reader::open(bytes, &FORMAT)?;
    if r.str()? != dir {
        return None;
    }
    let mut c = Stored::default();
    let names = r.u32()?;
    // Every name takes at least 5 bytes: a count beyond the file is damage.
    c.names.reserve(names.min(bytes.len() / 5));
    for _ in 0..names {
        c.names.push(r.str()?.to_string());
    }
    let words = r.u32()?;
    let reference = (0..words).map(|_| r.u64()).collect::<Option<Vec<u64>>>()?;
    let trees = r.u32()?;
    c.trees.reserve(trees.min(bytes.len() / 25));
    for _ in 0..trees {
        let id = r.id()?;
        let mut bits = reference.clone();
        for _ in 0..r.u32()? {
            let p = r.u32()?;
            if p >= c.names.len() {
                return None;
            }
            flip(&mut bits, p);
        }
        c.trees.insert(id, bits);
    }
    let commits = r.u32()?;
    c.commits.reserve(commits.min(bytes.len() / 22));
    for _ in 0..commits {
        let id = r.id()?;
        let tree = match r.u8()? {
            0 => None,
            1 => Some(r.id()?),
            _ => return None,
        };
        c.commits.insert(id, tree);
    }
    // A bit beyond the name table means the file is damaged.
    let n = c.names.len();
    if !r.done() || any_beyond(&reference, n) || c.trees.values().any(|b| any_beyond(b, n)) {
        return None;
    }
    Some(c)
}

/// Renumbering of the name table to the names still in use.
struct Compaction {
    /// The old indices kept, ascending: new index → old index.
    live: Vec<usize>,
    /// old index → new index (`usize::MAX`: dropped); empty when every
    /// name is kept and nothing moves.
    remap: Vec<usize>,
}

impl Compaction {
    fn of(used: &Used<'_>) -> Compaction {
        let mut union: Vec<u64> = Vec::new();
        for t in used.used_trees {
            if let Some(bits) = used.trees.get(t) {
                if union.len() < bits.len() {
                    union.resize(bits.len(), 0);
                }
                for (u, b) in union.iter_mut().zip(bits) {
                    *u |= b;
                }
            }
        }
        let live: Vec<usize> = ones(&union).collect();
        // Usually every name is live and the bitmaps are kept as they are.
        let remap = if live.len() == used.names.len() {
            Vec::new()
        } else {
            let mut r = vec![usize::MAX; used.names.len()];
            for (new, &old) in live.iter().enumerate() {
                r[old] = new;
            }
            r
        };
        Compaction { live, remap }
    }

    fn apply(&self, bits: &[u64]) -> Vec<u64> {
        if self.remap.is_empty() {
            return bits.to_vec();
        }
        let mut out = vec![0u64; self.live.len().div_ceil(64)];
        for (old, &new) in self.remap.iter().enumerate() {
            if new != usize::MAX && has_bit(bits, old) {
                out[new / 64] |= 1 << (new % 64);
            }
        }
        out
    }
}

/// The positions where `bits` and `reference` differ.
fn difference(bits: &[u64], reference: &[u64]) -> Vec<usize> {
    let words = bits.len().max(reference.len());
    let xor: Vec<u64> = (0..words)
        .map(|w| bits.get(w).copied().unwrap_or(0) ^ reference.get(w).copied().unwrap_or(0))
        .collect();
    ones(&xor).collect()
}

/// The file for the entries `used`, compacted.
pub fn render(dir: &str, used: &Used<'_>) -> Sealed {
    let compaction = Compaction::of(used);
    let mut w = Writer::new(&FORMAT);
    w.str(dir);
    w.u32(compaction.live.len());
    for &i in &compaction.live {
        w.str(&used.names[i]);
    }
    let reference = used
        .used_trees
        .first()
        .and_then(|t| used.trees.get(t))
        .map(|b| compaction.apply(b))
        .unwrap_or_default();
    w.u32(reference.len());
    for word in &reference {
        w.u64(*word);
    }
    let trees: Vec<(&ObjectId, &Vec<u64>)> = used
        .used_trees
        .iter()
        .filter_map(|t| Some((t, used.trees.get(t)?)))
        .collect();
    w.u32(trees.len());
    for (t, bits) in trees {
        w.id(t);
        let diff = difference(&compaction.apply(bits), &reference);
        w.u32(diff.len());
        for p in diff {
            w.u32(p);
        }
    }
    let mut commits: Vec<(&ObjectId, &Option<ObjectId>)> = used
        .used_commits
        .iter()
        .filter_map(|c| Some((c, used.commits.get(c)?)))
        .collect();
    commits.sort();
    w.u32(commits.len());
    for (c, t) in commits {
        w.id(c);
        match t {
            None => w.u8(0),
            Some(t) => {
                w.u8(1);
                w.id(t);
            }
        }
    }
    w.seal()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_names_are_dropped_and_the_rest_renumbered() {
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        let names: Vec<String> = ["a.md", "b.md", "c.md", "d.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut trees = TreeBits::default();
        let bits = |on: &[usize]| {
            let mut b = Vec::new();
            on.iter().for_each(|&i| flip(&mut b, i));
            b
        };
        trees.insert(id(1), bits(&[1, 3]));
        trees.insert(id(2), bits(&[3]));
        // Not used in this run: neither written nor keeping its names.
        trees.insert(id(3), bits(&[0, 2]));
        let mut commits = CommitTrees::default();
        commits.insert(id(9), None);
        commits.insert(id(8), Some(id(2)));
        let used_commits: HashSet<ObjectId, FxBuild> = [id(9)].into_iter().collect();
        let text = render(
            "cs",
            &Used {
                names: &names,
                trees: &trees,
                commits: &commits,
                used_trees: &[id(1), id(2)],
                used_commits: &used_commits,
            },
        )
        .into_bytes();
        let back = parse(&text, "cs").unwrap();
        assert_eq!(back.names, vec!["b.md", "d.md"]);
        assert_eq!(back.trees.len(), 2);
        assert_eq!(ones(&back.trees[&id(1)]).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(ones(&back.trees[&id(2)]).collect::<Vec<_>>(), vec![1]);
        assert_eq!(back.commits.len(), 1);
        assert_eq!(back.commits[&id(9)], None);
        assert!(parse(&text, "other").is_none());
        // Torn at any length or changed in any byte: ignored.
        for cut in 0..text.len() {
            assert!(parse(&text[..cut], "cs").is_none(), "cut at {cut}");
        }
        for at in 0..text.len() {
            let mut edited = text.clone();
            edited[at] ^= 0x04;
            assert!(parse(&edited, "cs").is_none(), "byte {at}");
        }
    }
}
