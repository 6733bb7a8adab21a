//! A deletable cache for changeset-unique, so that a commit adding a
//! changeset does not inflate every lane branch's changeset directory each
//! time: `<git common dir>/swarm/changeset-names.cache` maps a commit to its
//! changeset-directory tree, and a tree to a bitmap over a shared table of
//! names (stored as the positions where it differs from one reference
//! bitmap, since lane branches differ from their base by a few names).
//! Every entry is keyed by an immutable object id, so an entry is never
//! stale; a missing, unreadable or foreign cache is simply rebuilt, and a
//! cache that cannot be written is not an error.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use gix::ObjectId;

use super::changeset::{dir_tree, is_changeset_name};

const MAGIC: &str = "git-swarm changeset-name-cache v2";

type GixResult<T> = std::result::Result<T, String>;

pub struct NameCache {
    path: Option<PathBuf>,
    dir: String,
    /// Changeset names, exact spelling; bitmaps index into this table.
    names: Vec<String>,
    /// exact name → index; built on the first miss only.
    index: Option<HashMap<String, usize, FxBuild>>,
    trees: HashMap<ObjectId, Vec<u64>, FxBuild>,
    commits: HashMap<ObjectId, Option<ObjectId>, FxBuild>,
    used_trees: Vec<ObjectId>,
    used_commits: HashSet<ObjectId, FxBuild>,
    changed: bool,
    /// The name indices of the last tree read, in tree order.
    last_order: Vec<usize>,
    /// The first tree parsed in full, kept raw to compare others with.
    reference: Option<Reference>,
}

/// A tree's raw bytes and where each entry lies in them, with its name's
/// index when it is a changeset name.
struct Reference {
    id: ObjectId,
    data: Vec<u8>,
    /// (start, end, name index)
    entries: Vec<(usize, usize, Option<usize>)>,
}

/// One raw tree entry at `at`: (end, is a tree, file name); `None` if
/// the bytes are no whole entry.
fn raw_entry(data: &[u8], at: usize, hash_len: usize) -> Option<(usize, bool, &[u8])> {
    let rest = data.get(at..)?;
    let space = rest.iter().position(|&b| b == b' ')?;
    let nul = space + 1 + rest[space + 1..].iter().position(|&b| b == 0)?;
    let mode = &rest[..space];
    if mode.is_empty() || !mode.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    let value = mode
        .iter()
        .fold(0u32, |v, b| v.wrapping_mul(8) + u32::from(b - b'0'));
    let end = at + nul + 1 + hash_len;
    if end > data.len() {
        return None;
    }
    Some((end, value & 0o170000 == 0o040000, &rest[space + 1..nul]))
}

/// Length of the common prefix of `a` and `b`, comparing blocks first.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 256 <= n && a[i..i + 256] == b[i..i + 256] {
        i += 256;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Length of the common suffix of `a` and `b`, at most `limit`.
fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
    let (la, lb) = (a.len(), b.len());
    let mut i = 0;
    while i + 256 <= limit && a[la - i - 256..la - i] == b[lb - i - 256..lb - i] {
        i += 256;
    }
    while i < limit && a[la - i - 1] == b[lb - i - 1] {
        i += 1;
    }
    i
}

/// A fast non-cryptographic hasher (the rustc "Fx" hash) for the name
/// table and the object-id maps: building a cache hashes every name of
/// every lane's directory, and loading one hashes every id it holds.
#[derive(Default, Clone, Copy)]
struct FxBuild;

struct Fx(u64);

impl std::hash::BuildHasher for FxBuild {
    type Hasher = Fx;
    fn build_hasher(&self) -> Fx {
        Fx(0)
    }
}

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn parse_id(s: &str) -> Option<ObjectId> {
    ObjectId::from_hex(s.as_bytes()).ok()
}

fn has_bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

fn flip(bits: &mut Vec<u64>, i: usize) {
    if bits.len() <= i / 64 {
        bits.resize(i / 64 + 1, 0);
    }
    bits[i / 64] ^= 1 << (i % 64);
}

impl NameCache {
    fn empty(dir: &str) -> NameCache {
        NameCache {
            path: None,
            dir: dir.to_string(),
            names: Vec::new(),
            index: None,
            trees: HashMap::with_hasher(FxBuild),
            commits: HashMap::with_hasher(FxBuild),
            used_trees: Vec::new(),
            used_commits: HashSet::with_hasher(FxBuild),
            changed: false,
            last_order: Vec::new(),
            reference: None,
        }
    }

    /// The cache for `dir` in this repository; empty if absent or unreadable.
    pub fn load(repo: &gix::Repository, dir: &str) -> NameCache {
        let path = repo
            .common_dir()
            .join("swarm")
            .join("changeset-names.cache");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut cache = Self::parse(&text, dir).unwrap_or_else(|| Self::empty(dir));
        cache.path = Some(path);
        cache
    }

    /// `MAGIC`, `dir <dir>`, then `n <name>` lines (the table), one
    /// `r <hex words>` reference bitmap, `t <tree> <positions differing from r>`
    /// and `c <commit> <tree or ->` lines.
    fn parse(text: &str, dir: &str) -> Option<NameCache> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC || lines.next()? != format!("dir {dir}") {
            return None;
        }
        let mut c = Self::empty(dir);
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
        let beyond = |bits: &Vec<u64>| {
            bits.iter()
                .enumerate()
                .rev()
                .find(|(_, w)| **w != 0)
                .is_some_and(|(i, w)| i * 64 + 63 - w.leading_zeros() as usize >= n)
        };
        if beyond(&reference) || c.trees.values().any(beyond) {
            return None;
        }
        Some(c)
    }

    fn add_name(&mut self, name: &str) -> usize {
        let names = &self.names;
        let index = self.index.get_or_insert_with(|| {
            let mut m = HashMap::with_capacity_and_hasher(names.len() * 2, FxBuild);
            m.extend(names.iter().enumerate().map(|(i, n)| (n.clone(), i)));
            m
        });
        if let Some(&i) = index.get(name) {
            return i;
        }
        let i = self.names.len();
        index.insert(name.to_string(), i);
        self.names.push(name.to_string());
        i
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
            if !self.used_trees.contains(&tree) {
                self.used_trees.push(tree);
            }
            return Ok(());
        }
        let t = repo.find_tree(tree).map_err(|e| e.to_string())?;
        let hash_len = repo.object_hash().len_in_bytes();
        let (bits, cacheable) = match self.by_difference(&t.data, hash_len) {
            Some(found) => found,
            None => self.parse_full(tree, &t.data, hash_len)?,
        };
        if cacheable {
            self.used_trees.push(tree);
            self.changed = true;
        }
        self.trees.insert(tree, bits);
        Ok(())
    }

    /// The index of a changeset name, and whether the cache file can hold it.
    fn changeset_index(
        &mut self,
        name: &[u8],
        previous: &[usize],
        cursor: &mut usize,
    ) -> Option<(usize, bool)> {
        let name = std::str::from_utf8(name).ok()?;
        if !is_changeset_name(name) {
            return None;
        }
        let cacheable = !name.bytes().any(|b| b == b'\n' || b == b'\r');
        while *cursor < previous.len() && self.names[previous[*cursor]].as_str() < name {
            *cursor += 1;
        }
        let i = match previous.get(*cursor) {
            Some(&p) if self.names[p] == name => p,
            _ => self.add_name(name),
        };
        Some((i, cacheable))
    }

    /// Every entry of a raw tree; the first tree read whole (the base's,
    /// usually) is kept as the reference for the others.
    fn parse_full(
        &mut self,
        id: ObjectId,
        data: &[u8],
        hash_len: usize,
    ) -> GixResult<(Vec<u64>, bool)> {
        let mut bits: Vec<u64> = Vec::new();
        let mut cacheable = true;
        // Lane directories mostly repeat the previous one's names in the
        // same (sorted) order: walk along it and hash only what differs.
        let previous = std::mem::take(&mut self.last_order);
        let mut cursor = 0;
        let mut order = Vec::with_capacity(previous.len() + 4);
        let mut entries = Vec::with_capacity(previous.len() + 4);
        let mut at = 0;
        while at < data.len() {
            let (end, is_tree, name) = raw_entry(data, at, hash_len)
                .ok_or_else(|| format!("tree {id} is malformed at byte {at}"))?;
            let mut index = None;
            if !is_tree {
                if let Some((i, ok)) = self.changeset_index(name, &previous, &mut cursor) {
                    cacheable &= ok;
                    order.push(i);
                    if !has_bit(&bits, i) {
                        flip(&mut bits, i);
                    }
                    index = Some(i);
                }
            }
            entries.push((at, end, index));
            at = end;
        }
        self.last_order = order;
        if self.reference.is_none() && cacheable {
            self.reference = Some(Reference {
                id,
                data: data.to_vec(),
                entries,
            });
        }
        Ok((bits, cacheable))
    }

    /// A tree that differs from the reference in a few entries (a lane's
    /// directory is the base's plus its own changesets): the bytes both
    /// share at the start and at the end are the reference's entries, so
    /// only the entries between are parsed. `None` when the shared parts do
    /// not fall on entry boundaries (then the tree is read whole).
    fn by_difference(&mut self, data: &[u8], hash_len: usize) -> Option<(Vec<u64>, bool)> {
        let reference = self.reference.take()?;
        let found = self.difference_from(&reference, data, hash_len);
        self.reference = Some(reference);
        found
    }

    fn difference_from(
        &mut self,
        reference: &Reference,
        data: &[u8],
        hash_len: usize,
    ) -> Option<(Vec<u64>, bool)> {
        let r = &reference.data;
        let pre = common_prefix(r, data);
        let suf = common_suffix(r, data, r.len().min(data.len()) - pre);
        // Reference entries wholly inside the shared start, and from the
        // first one wholly inside the shared end.
        let k1 = reference.entries.partition_point(|e| e.1 <= pre);
        let k2 = reference.entries.partition_point(|e| e.0 < r.len() - suf);
        if k2 < k1 {
            return None;
        }
        let p = if k1 == 0 {
            0
        } else {
            reference.entries[k1 - 1].1
        };
        let s_ref = reference.entries.get(k2).map_or(r.len(), |e| e.0);
        let q = (s_ref + data.len()).checked_sub(r.len())?;
        if q < p {
            return None;
        }
        let mut bits = self.trees.get(&reference.id)?.clone();
        for e in &reference.entries[k1..k2] {
            if let Some(i) = e.2 {
                if has_bit(&bits, i) {
                    flip(&mut bits, i);
                }
            }
        }
        let mut cacheable = true;
        let mut at = p;
        let mut cursor = 0;
        while at < q {
            let (end, is_tree, name) = raw_entry(data, at, hash_len)?;
            if end > q {
                return None;
            }
            if !is_tree {
                if let Some((i, ok)) = self.changeset_index(name, &[], &mut cursor) {
                    cacheable &= ok;
                    if !has_bit(&bits, i) {
                        flip(&mut bits, i);
                    }
                }
            }
            at = end;
        }
        (at == q).then_some((bits, cacheable))
    }

    /// Indices of the names equal to `lower` case-insensitively (to test many trees at once).
    pub fn spellings(&self, lower: &str) -> Vec<usize> {
        self.names
            .iter()
            .enumerate()
            .filter(|(_, n)| n.len() == lower.len() && n.eq_ignore_ascii_case(lower))
            .map(|(i, _)| i)
            .collect()
    }

    /// The first of `spellings` that `tree` has.
    pub fn has_any(&self, tree: ObjectId, spellings: &[usize]) -> Option<&str> {
        let bits = self.trees.get(&tree)?;
        spellings
            .iter()
            .find(|&&i| has_bit(bits, i))
            .map(|&i| self.names[i].as_str())
    }

    /// Every name in `tree`.
    pub fn names_of(&self, tree: ObjectId) -> Vec<&str> {
        let Some(bits) = self.trees.get(&tree) else {
            return Vec::new();
        };
        (0..self.names.len())
            .filter(|&i| has_bit(bits, i))
            .map(|i| self.names[i].as_str())
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
        let mut union: Vec<u64> = Vec::new();
        for t in &self.used_trees {
            if let Some(bits) = self.trees.get(t) {
                if union.len() < bits.len() {
                    union.resize(bits.len(), 0);
                }
                for (u, b) in union.iter_mut().zip(bits) {
                    *u |= b;
                }
            }
        }
        let mut live: Vec<usize> = Vec::new();
        for (w, word) in union.iter().enumerate() {
            let mut x = *word;
            while x != 0 {
                live.push(w * 64 + x.trailing_zeros() as usize);
                x &= x - 1;
            }
        }
        live.sort_unstable();
        // Usually every name is live and the bitmaps are kept as they are.
        let identity = live.len() == self.names.len();
        let remap: Vec<usize> = if identity {
            Vec::new()
        } else {
            let mut r = vec![usize::MAX; self.names.len()];
            for (new, &old) in live.iter().enumerate() {
                r[old] = new;
            }
            r
        };
        let compact = |bits: &Vec<u64>| -> Vec<u64> {
            if identity {
                return bits.clone();
            }
            let mut out = vec![0u64; live.len().div_ceil(64)];
            for (old, &new) in remap.iter().enumerate() {
                if new != usize::MAX && has_bit(bits, old) {
                    out[new / 64] |= 1 << (new % 64);
                }
            }
            out
        };
        let mut out = format!("{MAGIC}\ndir {}\n", self.dir);
        for &i in &live {
            out.push_str("n ");
            out.push_str(&self.names[i]);
            out.push('\n');
        }
        let reference = self
            .used_trees
            .first()
            .and_then(|t| self.trees.get(t))
            .map(compact)
            .unwrap_or_default();
        let hex: Vec<String> = reference.iter().map(|w| format!("{w:x}")).collect();
        out.push_str(&format!("r {}\n", hex.join(",")));
        for t in &self.used_trees {
            let Some(bits) = self.trees.get(t) else {
                continue;
            };
            let bits = compact(bits);
            let mut diff: Vec<String> = Vec::new();
            for w in 0..bits.len().max(reference.len()) {
                let mut x =
                    bits.get(w).copied().unwrap_or(0) ^ reference.get(w).copied().unwrap_or(0);
                while x != 0 {
                    let b = x.trailing_zeros() as usize;
                    diff.push((w * 64 + b).to_string());
                    x &= x - 1;
                }
            }
            out.push_str(&format!("t {t} {}\n", diff.join(",")));
        }
        let mut commits: Vec<&ObjectId> = self.used_commits.iter().collect();
        commits.sort();
        for c in commits {
            if let Some(t) = self.commits.get(c) {
                let t = t.map_or("-".to_string(), |t| t.to_string());
                out.push_str(&format!("c {c} {t}\n"));
            }
        }
        // Best effort: a cache that cannot be written is rebuilt next time.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, out).is_ok() && std::fs::rename(&tmp, path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// Delta bases for gix's pack decoding, which this build of gix (without its
/// `max-performance` feature) does not cache at all: lane branches' trees
/// at the changeset directory are mostly deltas against the base branch's
/// tree, so without this every one of them inflates that base again. The
/// most recently used objects are kept, up to `LIMIT` bytes.
#[derive(Default)]
pub struct DeltaBases {
    /// (pack id, offset, kind, compressed size, data), most recent last.
    entries: Vec<(u32, u64, gix::object::Kind, usize, Vec<u8>)>,
    bytes: usize,
}

impl DeltaBases {
    const LIMIT: usize = 8 << 20;
    const ENTRIES: usize = 64;

    /// Give `repo` (a clone: handles share the object store) this cache.
    pub fn install(repo: &mut gix::Repository) {
        repo.objects.set_pack_cache(|| Box::<DeltaBases>::default());
    }
}

impl gix::odb::pack::cache::DecodeEntry for DeltaBases {
    fn put(
        &mut self,
        pack_id: u32,
        offset: u64,
        data: &[u8],
        kind: gix::object::Kind,
        compressed_size: usize,
    ) {
        if data.len() > Self::LIMIT / 4
            || self.entries.iter().any(|e| e.0 == pack_id && e.1 == offset)
        {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= Self::ENTRIES || self.bytes + data.len() > Self::LIMIT)
        {
            let old = self.entries.remove(0);
            self.bytes -= old.4.len();
        }
        self.bytes += data.len();
        self.entries
            .push((pack_id, offset, kind, compressed_size, data.to_vec()));
    }

    fn get(
        &mut self,
        pack_id: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix::object::Kind, usize)> {
        let i = self
            .entries
            .iter()
            .rposition(|e| e.0 == pack_id && e.1 == offset)?;
        let entry = self.entries.remove(i);
        out.clear();
        out.extend_from_slice(&entry.4);
        let found = (entry.2, entry.3);
        self.entries.push(entry);
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(c: &mut NameCache, t: ObjectId, names: &[&str]) {
        let mut bits = Vec::new();
        for n in names {
            let i = c.add_name(n);
            flip(&mut bits, i);
        }
        c.trees.insert(t, bits);
        c.used_trees.push(t);
    }

    fn raw_tree(names: &[&str]) -> Vec<u8> {
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_unstable();
        let mut out = Vec::new();
        for (n, name) in sorted.iter().enumerate() {
            let mode: &[u8] = if name.starts_with("dir") {
                b"40000"
            } else {
                b"100644"
            };
            out.extend_from_slice(mode);
            out.push(b' ');
            out.extend_from_slice(name.as_bytes());
            out.push(0);
            // Ids that repeat bytes of names and modes, to tempt a wrong alignment.
            out.extend((0..20).map(|k| b"0 .md\0"[(n + k) % 6]));
        }
        out
    }

    #[test]
    fn trees_read_by_difference_match_trees_read_whole() {
        let id = |n: u8| ObjectId::from_bytes_or_panic(&[n; 20]);
        let base: Vec<String> = (0..200).map(|i| format!("c{i:03}.md")).collect();
        let mut base: Vec<&str> = base.iter().map(String::as_str).collect();
        base.extend(["README.md", "dir-x", "notes.txt"]);
        let variants: Vec<Vec<&str>> = vec![
            base.clone(),
            [base.clone(), vec!["a-first.md"]].concat(),
            [base.clone(), vec!["zz-last.md"]].concat(),
            [base.clone(), vec!["c050a.md", "c120x.md"]].concat(),
            base.iter().copied().filter(|n| *n != "c100.md").collect(),
            base.iter()
                .copied()
                .filter(|n| !n.starts_with("c1"))
                .collect(),
            base.iter()
                .copied()
                .filter(|n| *n != "c000.md" && *n != "notes.txt")
                .collect(),
            [
                base.iter().copied().filter(|n| *n != "c007.md").collect(),
                vec!["c007.MD", "dir-c007.md"],
            ]
            .concat(),
            vec!["only.md"],
            vec![],
        ];
        let mut diffed = NameCache::empty(".changeset");
        let (bits, _) = diffed.parse_full(id(1), &raw_tree(&base), 20).unwrap();
        diffed.trees.insert(id(1), bits);
        for (n, v) in variants.iter().enumerate() {
            let data = raw_tree(v);
            let mut whole = NameCache::empty(".changeset");
            let (bits, _) = whole.parse_full(id(2), &data, 20).unwrap();
            whole.trees.insert(id(2), bits);
            let (bits, _) = diffed
                .by_difference(&data, 20)
                .unwrap_or_else(|| diffed.parse_full(id(3), &data, 20).unwrap());
            diffed.trees.insert(id(100 + n as u8), bits);
            let mut a = whole.names_of(id(2));
            let mut b = diffed.names_of(id(100 + n as u8));
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "variant {n}");
        }
        // Lanes that add a changeset are read by difference, not whole.
        assert!(diffed.by_difference(&raw_tree(&variants[3]), 20).is_some());
    }

    #[test]
    fn round_trip_keeps_names_per_tree() {
        let t1 = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let t2 = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        let t3 = ObjectId::from_hex(b"4444444444444444444444444444444444444444").unwrap();
        let c1 = ObjectId::from_hex(b"3333333333333333333333333333333333333333").unwrap();
        let mut c = NameCache::empty(".changeset");
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
        let text = std::fs::read_to_string(&path).unwrap();
        let back = NameCache::parse(&text, ".changeset").unwrap();
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
        assert!(NameCache::parse(&text, "other").is_none());
        // A damaged file is ignored, not trusted.
        let damaged = text.replace("\nn c5.md\n", "\n");
        assert!(NameCache::parse(&damaged, ".changeset").is_none());
    }
}
