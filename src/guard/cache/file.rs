//! The cache file, `<git common dir>/swarm/changeset-names.cache`:
//! `MAGIC`, `dir <dir>`, then `n <name>` lines (the table), one
//! `r <hex words>` reference bitmap, `t <tree> <positions differing from r>`
//! and `c <commit> <tree or ->` lines. Written compacted to the names of
//! the trees used in a run, with the first of them (the base's) as the
//! reference bitmap.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use gix::ObjectId;

use super::bits::{any_beyond, flip, has_bit, ones, FxBuild};

const MAGIC: &str = "git-swarm changeset-name-cache v2";

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

fn parse_id(s: &str) -> Option<ObjectId> {
    ObjectId::from_hex(s.as_bytes()).ok()
}

/// The contents of a cache file for `dir`; None when it is foreign,
/// damaged or for another directory.
pub fn parse(text: &str, dir: &str) -> Option<Stored> {
    let mut lines = text.lines();
    if lines.next()? != MAGIC || lines.next()? != format!("dir {dir}") {
        return None;
    }
    let mut c = Stored::default();
    // A `t` or `c` line is at least 43 bytes: room for all, no rehashing.
    c.trees.reserve(text.len() / 43);
    c.commits.reserve(text.len() / 43);
    let mut reference: Vec<u64> = Vec::new();
    for line in lines {
        let (kind, rest) = line.split_once(' ')?;
        match kind {
            "n" => c.names.push(rest.to_string()),
            "r" => {
                reference = rest
                    .split(',')
                    .filter(|w| !w.is_empty())
                    .map(|w| u64::from_str_radix(w, 16).ok())
                    .collect::<Option<Vec<u64>>>()?;
            }
            "t" => {
                let (id, diff) = rest.split_once(' ').unwrap_or((rest, ""));
                let mut bits = reference.clone();
                for p in diff.split(',').filter(|p| !p.is_empty()) {
                    let p: usize = p.parse().ok()?;
                    if p >= c.names.len() {
                        return None;
                    }
                    flip(&mut bits, p);
                }
                c.trees.insert(parse_id(id)?, bits);
            }
            "c" => {
                let (id, tree) = rest.split_once(' ')?;
                let tree = if tree == "-" {
                    None
                } else {
                    Some(parse_id(tree)?)
                };
                c.commits.insert(parse_id(id)?, tree);
            }
            _ => return None,
        }
    }
    // A bit beyond the name table means the file is damaged.
    let n = c.names.len();
    if any_beyond(&reference, n) || c.trees.values().any(|b| any_beyond(b, n)) {
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

/// The positions where `bits` and `reference` differ, comma-separated.
fn difference(bits: &[u64], reference: &[u64]) -> String {
    let words = bits.len().max(reference.len());
    let xor: Vec<u64> = (0..words)
        .map(|w| bits.get(w).copied().unwrap_or(0) ^ reference.get(w).copied().unwrap_or(0))
        .collect();
    let diff: Vec<String> = ones(&xor).map(|p| p.to_string()).collect();
    diff.join(",")
}

/// The file for the entries `used`, compacted.
pub fn render(dir: &str, used: &Used<'_>) -> String {
    let compaction = Compaction::of(used);
    let mut out = format!("{MAGIC}\ndir {dir}\n");
    for &i in &compaction.live {
        out.push_str("n ");
        out.push_str(&used.names[i]);
        out.push('\n');
    }
    let reference = used
        .used_trees
        .first()
        .and_then(|t| used.trees.get(t))
        .map(|b| compaction.apply(b))
        .unwrap_or_default();
    let hex: Vec<String> = reference.iter().map(|w| format!("{w:x}")).collect();
    out.push_str(&format!("r {}\n", hex.join(",")));
    for t in used.used_trees {
        let Some(bits) = used.trees.get(t) else {
            continue;
        };
        let diff = difference(&compaction.apply(bits), &reference);
        out.push_str(&format!("t {t} {diff}\n"));
    }
    let mut commits: Vec<&ObjectId> = used.used_commits.iter().collect();
    commits.sort();
    for c in commits {
        if let Some(t) = used.commits.get(c) {
            let t = t.map_or("-".to_string(), |t| t.to_string());
            out.push_str(&format!("c {c} {t}\n"));
        }
    }
    out
}

/// Replace the file at `path` with `text`, best effort: a cache that
/// cannot be written is rebuilt next time.
pub fn write(path: &Path, text: String) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
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
        );
        let back = parse(&text, "cs").unwrap();
        assert_eq!(back.names, vec!["b.md", "d.md"]);
        assert_eq!(back.trees.len(), 2);
        assert_eq!(ones(&back.trees[&id(1)]).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(ones(&back.trees[&id(2)]).collect::<Vec<_>>(), vec![1]);
        assert_eq!(back.commits.len(), 1);
        assert_eq!(back.commits[&id(9)], None);
        assert!(text.contains(&format!("\nt {} 0\n", id(2))));
        assert!(parse(&text.replace(MAGIC, "v1"), "cs").is_none());
        assert!(parse(&format!("{text}x y\n"), "cs").is_none());
    }
}
