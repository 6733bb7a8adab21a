//! Reading a changeset-directory tree into a bitmap over the name table,
//! from the raw tree bytes. Lane branches' directories are the base's plus
//! a few names, so the first tree read whole is kept as a reference and a
//! later one is read by difference: the bytes both share at the start and
//! at the end are the reference's entries, and only those between are
//! parsed.

use gix::ObjectId;

use super::bits::{clear, set};
use super::delta::Known;
use super::table::NameTable;
use crate::guards::changeset::dir::GixResult;

/// One raw tree entry at `at`: (end, is a tree, file name); `None` if
/// the bytes are no whole entry.
pub fn raw_entry(data: &[u8], at: usize, hash_len: usize) -> Option<(usize, bool, &[u8])> {
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
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
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
pub fn common_suffix(a: &[u8], b: &[u8], limit: usize) -> usize {
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

/// A tree's raw bytes and where each entry lies in them, with its name's
/// index when it is a changeset name, and its bitmap.
struct Reference {
    id: ObjectId,
    data: Vec<u8>,
    /// (start, end, name index)
    entries: Vec<(usize, usize, Option<usize>)>,
    bits: Vec<u64>,
}

/// What a tree read gives: its bitmap over the name table.
pub type Read = Vec<u64>;

/// Reads trees one after another, remembering what speeds up the next.
#[derive(Default)]
pub struct Reader {
    /// The name indices of the last tree read whole, in tree order.
    last_order: Vec<usize>,
    /// The first tree read whole, kept raw to compare others with.
    reference: Option<Reference>,
    /// Where the pack keeps the reference (looked up on first use).
    known: Option<Known>,
}

impl Reader {
    /// The raw tree `id` when its pack stores it as a delta against the
    /// reference (see `delta`): built from the reference in memory.
    pub fn delta_of_reference(&mut self, repo: &gix::Repository, id: ObjectId) -> Option<Vec<u8>> {
        let reference = self.reference.as_ref()?;
        let known = self
            .known
            .get_or_insert_with(|| Known::new(repo, reference.id));
        known.delta_of(id, &reference.data)
    }

    /// The bitmap of the tree `id` with raw bytes `data`.
    pub fn read(
        &mut self,
        table: &mut NameTable,
        id: ObjectId,
        data: &[u8],
        hash_len: usize,
    ) -> GixResult<Read> {
        if let Some(found) = self.by_difference(table, data, hash_len) {
            return Ok(found);
        }
        self.parse_full(table, id, data, hash_len)
    }

    /// Every entry of a raw tree; the first tree read whole (the base's,
    /// usually) is kept as the reference for the others.
    pub fn parse_full(
        &mut self,
        table: &mut NameTable,
        id: ObjectId,
        data: &[u8],
        hash_len: usize,
    ) -> GixResult<Read> {
        let mut bits: Vec<u64> = Vec::new();
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
                if let Some(i) = table.changeset_index(name, &previous, &mut cursor) {
                    order.push(i);
                    set(&mut bits, i);
                    index = Some(i);
                }
            }
            entries.push((at, end, index));
            at = end;
        }
        self.last_order = order;
        if self.reference.is_none() {
            self.reference = Some(Reference {
                id,
                data: data.to_vec(),
                entries,
                bits: bits.clone(),
            });
        }
        Ok(bits)
    }

    /// A tree that differs from the reference in a few entries; `None` when
    /// there is no reference or the shared parts do not fall on entry
    /// boundaries (then the tree is read whole).
    pub fn by_difference(
        &self,
        table: &mut NameTable,
        data: &[u8],
        hash_len: usize,
    ) -> Option<Read> {
        let reference = self.reference.as_ref()?;
        let (k1, k2, p, q) = differing_span(reference, data)?;
        let mut bits = reference.bits.clone();
        for e in &reference.entries[k1..k2] {
            if let Some(i) = e.2 {
                clear(&mut bits, i);
            }
        }
        let mut at = p;
        let mut cursor = 0;
        while at < q {
            let (end, is_tree, name) = raw_entry(data, at, hash_len)?;
            if end > q {
                return None;
            }
            if !is_tree {
                if let Some(i) = table.changeset_index(name, &[], &mut cursor) {
                    set(&mut bits, i);
                }
            }
            at = end;
        }
        (at == q).then_some(bits)
    }
}

/// Where `data` differs from the reference: the reference's entries
/// `k1..k2` are replaced by the bytes `p..q` of `data`; `None` when the
/// shared start and end do not fall on the reference's entry boundaries.
fn differing_span(reference: &Reference, data: &[u8]) -> Option<(usize, usize, usize, usize)> {
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
    Some((k1, k2, p, q))
}

#[cfg(test)]
mod tests {
    use super::super::bits::ones;
    use super::*;

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

    fn names<'t>(table: &'t NameTable, bits: &[u64]) -> Vec<&'t str> {
        let mut v: Vec<&str> = ones(bits).map(|i| table.names[i].as_str()).collect();
        v.sort_unstable();
        v
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
        let mut table = NameTable::default();
        let mut diffed = Reader::default();
        diffed
            .parse_full(&mut table, id(1), &raw_tree(&base), 20)
            .unwrap();
        for (n, v) in variants.iter().enumerate() {
            let data = raw_tree(v);
            let mut whole_table = NameTable::default();
            let whole = Reader::default()
                .parse_full(&mut whole_table, id(2), &data, 20)
                .unwrap();
            let bits = diffed
                .by_difference(&mut table, &data, 20)
                .unwrap_or_else(|| diffed.parse_full(&mut table, id(3), &data, 20).unwrap());
            assert_eq!(
                names(&whole_table, &whole),
                names(&table, &bits),
                "variant {n}"
            );
        }
        // Lanes that add a changeset are read by difference, not whole.
        assert!(diffed
            .by_difference(&mut table, &raw_tree(&variants[3]), 20)
            .is_some());
    }

    #[test]
    fn raw_entries_and_shared_ends() {
        let data = raw_tree(&["a.md", "dir-b"]);
        let (end, is_tree, name) = raw_entry(&data, 0, 20).unwrap();
        assert_eq!((is_tree, name), (false, &b"a.md"[..]));
        let (end2, is_tree, name) = raw_entry(&data, end, 20).unwrap();
        assert_eq!((is_tree, name, end2), (true, &b"dir-b"[..], data.len()));
        // Cut short, or not at an entry: no entry.
        assert!(raw_entry(&data[..end - 1], 0, 20).is_none());
        assert!(raw_entry(b"9x a.md\0", 0, 0).is_none());
        let long = vec![7u8; 600];
        let mut other = long.clone();
        other[300] = 8;
        assert_eq!(common_prefix(&long, &other), 300);
        assert_eq!(common_suffix(&long, &other, 600), 299);
        assert_eq!(common_suffix(&long, &other, 100), 100);
        assert_eq!(common_prefix(b"abc", b"abd"), 2);
    }
}
