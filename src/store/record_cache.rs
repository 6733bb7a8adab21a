//! The record cache: parsed record values kept on disk, keyed by the commit
//! that holds them.
//!
//! A record at a given commit never changes, so a value read once is good
//! for as long as the commit exists: the cache is never stale by
//! construction and never invalidated, only bounded. It lives under
//! `<common dir>/swarm/cache/records/<namespace>/<x>`, where `x` is the
//! first hex digit of the commit id: 16 shards per kind, so one record
//! read touches a sixteenth of its kind and a whole listing 16 files (on
//! this machine's file system creating a file costs ~0.15 ms: 256 shards
//! made a cold listing pay ~80 ms for files alone). An entry is
//! keyed by the commit id *and* the record's key (a forged ref may hold one
//! commit under two keys) and holds the kind's own encoding of the parsed
//! value ([`Record::to_cache`](super::records::Record::to_cache)), so a warm
//! listing neither inflates objects nor parses YAML. Only values that read
//! cleanly are kept; an unreadable record is read (and reported) every time.
//!
//! Safety: a shard is a [`cachefile`](super::cachefile), written whole to a
//! temporary file and renamed into place, so a reader sees the old file or
//! the new one; two writers at once leave one of the two, each valid (the
//! loser's new entries are only read again next time). Every shard carries
//! a checksum and names the build that wrote it: a torn, truncated or
//! edited shard, or one from another build, is ignored and rewritten, never
//! trusted. Temporary files a killed process left behind are removed by a
//! later write.
//!
//! Bound: each kind keeps at most `swarm.recordCacheLimit` bytes of values
//! (default 64 MiB), a sixteenth of it per shard; when a shard is rewritten the
//! entries read in this run come first and the rest are kept while they fit.
//! `GIT_SWARM_NO_CACHE=1` (or `--no-cache`) bypasses it: the same output.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use gix::ObjectId;
use sha2::{Digest, Sha256};

use super::cachefile::{self, Format, Reader, Sealed, Writer};

/// A shard file: its version bumped whenever its layout changes; read up to
/// 1 GiB (far above any bound a cache keeps); crash tests kill a writer
/// half-way through one at `cache:write`.
const FORMAT: Format =
    Format::new(b"git-swarm record cache\n", 2, 1 << 30).failpoint("cache:write");
/// The default bound of one kind's cache, in bytes of values.
pub const DEFAULT_LIMIT: u64 = 64 * 1024 * 1024;
/// Shards per kind.
const SHARDS: u64 = 16;

/// One cached value: the record version (commit, key path), the kind's
/// tags for it, and the encoded value.
#[derive(Debug, Clone)]
struct Entry {
    commit: ObjectId,
    path: String,
    tags: u8,
    value: Vec<u8>,
}

impl Entry {
    fn size(&self) -> u64 {
        (self.value.len() + self.path.len() + self.commit.as_bytes().len() + 8) as u64
    }
}

/// Where one entry of a shard file lies in its bytes.
#[derive(Debug, Clone, Copy)]
struct Slot {
    commit: ObjectId,
    path: (usize, usize),
    tags: u8,
    value: (usize, usize),
    /// Read in this run (kept first when the shard is rewritten).
    used: bool,
    /// Replaced by a value added in this run (undecodable here).
    dropped: bool,
}

/// One shard as read from disk (its bytes, not copied per entry), plus
/// what this run added to it.
#[derive(Default)]
struct Shard {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// The first slot of each commit (a commit under two keys is scanned for).
    index: gix::hashtable::HashMap<ObjectId, usize>,
    added: Vec<Entry>,
    /// The first entry of `added` of each commit.
    added_index: gix::hashtable::HashMap<ObjectId, usize>,
}

impl Shard {
    fn path(&self, slot: &Slot) -> &str {
        std::str::from_utf8(&self.bytes[slot.path.0..slot.path.1]).unwrap_or("")
    }
    fn value(&self, slot: &Slot) -> &[u8] {
        &self.bytes[slot.value.0..slot.value.1]
    }
    /// The slot of the record at `commit` under `path`.
    fn find(&self, commit: ObjectId, path: &str) -> Option<usize> {
        let first = *self.index.get(&commit)?;
        if self.path(&self.slots[first]) == path {
            return Some(first).filter(|&at| !self.slots[at].dropped);
        }
        (first + 1..self.slots.len()).find(|&at| {
            let s = &self.slots[at];
            s.commit == commit && !s.dropped && self.path(s) == path
        })
    }
    /// The entry this run added for the record at `commit` under `path`.
    fn added_at(&self, commit: ObjectId, path: &str) -> Option<usize> {
        let first = *self.added_index.get(&commit)?;
        (first..self.added.len()).find(|&at| {
            let e = &self.added[at];
            e.commit == commit && e.path == path
        })
    }
    fn entry(&self, slot: &Slot) -> Entry {
        Entry {
            commit: slot.commit,
            path: self.path(slot).to_string(),
            tags: slot.tags,
            value: self.value(slot).to_vec(),
        }
    }
}

/// The record cache of one repository (see the module docs); `Store` holds one.
pub struct RecordCache {
    /// `<common dir>/swarm/cache/records`; None when bypassed.
    root: Option<PathBuf>,
    /// Bytes of values per shard.
    shard_limit: u64,
    shards: Mutex<HashMap<(&'static str, u8), Shard>>,
}

impl RecordCache {
    /// The cache under `common_dir`, bounded to `limit` bytes per kind;
    /// bypassed when `GIT_SWARM_NO_CACHE` is set to anything but `0`.
    pub fn new(common_dir: &Path, limit: u64) -> RecordCache {
        let bypassed =
            std::env::var_os("GIT_SWARM_NO_CACHE").is_some_and(|v| v != "0" && !v.is_empty());
        RecordCache {
            root: (!bypassed).then(|| common_dir.join("swarm").join("cache").join("records")),
            shard_limit: limit / SHARDS,
            shards: Mutex::new(HashMap::new()),
        }
    }

    /// Read and write nothing from now on (`--no-cache`).
    pub fn bypass(&mut self) {
        self.root = None;
    }

    pub fn enabled(&self) -> bool {
        self.root.is_some()
    }

    /// The value cached for the record at `commit` under `path` of kind
    /// `namespace`, through `decode`; None when absent or undecodable.
    pub fn lookup<T>(
        &self,
        namespace: &'static str,
        commit: ObjectId,
        path: &str,
        decode: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Option<T> {
        self.with_shard(namespace, commit, |shard| {
            if let Some(at) = shard.added_at(commit, path) {
                return decode(&shard.added[at].value);
            }
            let at = shard.find(commit, path)?;
            let value = decode(shard.value(&shard.slots[at]));
            shard.slots[at].used |= value.is_some();
            value
        })
    }

    /// The kind's tags of the record at `commit` under `path`
    /// ([`Record::cache_tags`](super::records::Record::cache_tags)), when
    /// cached: what a listing filters on without decoding the value.
    pub fn tags(&self, namespace: &'static str, commit: ObjectId, path: &str) -> Option<u8> {
        self.with_shard(namespace, commit, |shard| {
            if let Some(at) = shard.added_at(commit, path) {
                return Some(shard.added[at].tags);
            }
            let at = shard.find(commit, path)?;
            shard.slots[at].used = true;
            Some(shard.slots[at].tags)
        })
    }

    fn with_shard<T>(
        &self,
        namespace: &'static str,
        commit: ObjectId,
        f: impl FnOnce(&mut Shard) -> Option<T>,
    ) -> Option<T> {
        let root = self.root.as_ref()?;
        let mut shards = self.shards.lock().ok()?;
        let byte = shard_of(commit);
        let shard = shards
            .entry((namespace, byte))
            .or_insert_with(|| read_shard(root, namespace, byte));
        f(shard)
    }

    /// Keep `value` (and the kind's `tags`) for the record at `commit`
    /// under `path`; written by [`RecordCache::flush`].
    pub fn insert(
        &self,
        namespace: &'static str,
        commit: ObjectId,
        path: &str,
        tags: u8,
        value: Vec<u8>,
    ) {
        let _ = self.with_shard(namespace, commit, |shard| {
            if let Some(at) = shard.find(commit, path) {
                // Present but without a value this build decodes (tags
                // only, or another encoding): replaced by the new one.
                shard.slots[at].dropped = true;
            }
            let entry = Entry {
                commit,
                path: path.to_string(),
                tags,
                value,
            };
            match shard.added_at(commit, path) {
                Some(at) => shard.added[at] = entry,
                None => {
                    shard.added_index.entry(commit).or_insert(shard.added.len());
                    shard.added.push(entry);
                }
            }
            Some(())
        });
    }

    /// Write every shard this run added to. Errors are ignored: a cache
    /// that cannot be written only makes the next run read the records.
    pub fn flush(&self) {
        let Some(root) = self.root.as_ref() else {
            return;
        };
        let Ok(mut shards) = self.shards.lock() else {
            return;
        };
        let mut dirs = Vec::new();
        for ((namespace, byte), shard) in shards.iter_mut() {
            if shard.added.is_empty() {
                continue;
            }
            let dir = root.join(namespace);
            if std::fs::create_dir_all(&dir).is_err() {
                continue;
            }
            let kept = bounded(shard, self.shard_limit);
            let file = encode_shard(namespace, *byte, &kept);
            let _ = FORMAT.write(&dir.join(format!("{byte:x}")), &file);
            // Written: the shard in memory is now the one on disk (a second
            // flush in the same run writes only what comes after).
            *shard = parse_shard(file.into_bytes(), namespace, *byte).unwrap_or_default();
            for slot in &mut shard.slots {
                slot.used = true;
            }
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for dir in dirs {
            cachefile::remove_stale_temps(&dir);
        }
    }
}

impl Drop for RecordCache {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The shard of a commit: the first hex digit of its id.
fn shard_of(commit: ObjectId) -> u8 {
    commit.as_bytes()[0] >> 4
}

/// What identifies the build that writes a shard: the format, the version,
/// and the executable's size and modification time, so that a build whose
/// record types differ never reads another's values.
fn build_id() -> &'static [u8; 16] {
    static ID: OnceLock<[u8; 16]> = OnceLock::new();
    ID.get_or_init(|| {
        let mut h = Sha256::new();
        h.update(b"git-swarm record cache");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        if let Some(meta) = std::env::current_exe()
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
        {
            h.update(meta.len().to_le_bytes());
            if let Ok(t) = meta.modified() {
                let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                h.update(since.as_nanos().to_le_bytes());
            }
        }
        let mut id = [0u8; 16];
        id.copy_from_slice(&h.finalize()[..16]);
        id
    })
}

/// The entries to write: those added and read in this run first, then the
/// others while the shard stays within `limit` bytes.
fn bounded(shard: &Shard, limit: u64) -> Vec<Entry> {
    let kept = |used: bool| {
        shard
            .slots
            .iter()
            .filter(move |s| s.used == used && !s.dropped)
            .map(|s| shard.entry(s))
    };
    let mut out = Vec::new();
    let mut size = 0u64;
    for e in shard
        .added
        .iter()
        .cloned()
        .chain(kept(true))
        .chain(kept(false))
    {
        if size + e.size() > limit {
            continue;
        }
        size += e.size();
        out.push(e);
    }
    out
}

/// A shard file, or an empty shard when it is absent, torn, edited or
/// written by another build.
fn read_shard(root: &Path, namespace: &str, byte: u8) -> Shard {
    let path = root.join(namespace).join(format!("{byte:x}"));
    FORMAT
        .read(&path)
        .and_then(|bytes| parse_shard(bytes, namespace, byte))
        .unwrap_or_default()
}

fn parse_shard(bytes: Vec<u8>, namespace: &str, byte: u8) -> Option<Shard> {
    let mut r = Reader::open(&bytes, &FORMAT)?;
    let head = header(namespace, byte);
    if r.take(head.len())? != head {
        return None;
    }
    let count = r.u32()?;
    let mut slots = Vec::with_capacity(count.min(r.len() / 8));
    let mut index = gix::hashtable::HashMap::default();
    for _ in 0..count {
        let commit = r.id()?;
        let path_len = r.u16()?;
        let path_at = r.at();
        std::str::from_utf8(r.take(path_len)?).ok()?;
        let tags = r.u8()?;
        let value_len = r.u32()?;
        let value_at = r.at();
        r.take(value_len)?;
        if shard_of(commit) != byte {
            return None;
        }
        index.entry(commit).or_insert(slots.len());
        slots.push(Slot {
            commit,
            path: (path_at, path_at + path_len),
            tags,
            value: (value_at, value_at + value_len),
            used: false,
            dropped: false,
        });
    }
    if !r.done() {
        return None;
    }
    Some(Shard {
        bytes,
        slots,
        index,
        added: Vec::new(),
        added_index: Default::default(),
    })
}

/// What opens the body of shard `byte` of kind `namespace`: a shard copied
/// to another name is as foreign as one from another build.
fn header(namespace: &str, byte: u8) -> Vec<u8> {
    let mut out = build_id().to_vec();
    out.push(namespace.len() as u8);
    out.extend_from_slice(namespace.as_bytes());
    out.push(byte);
    out
}

fn encode_shard(namespace: &str, byte: u8, entries: &[Entry]) -> Sealed {
    let entries: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.path.len() <= u16::MAX as usize && e.value.len() <= u32::MAX as usize)
        .collect();
    let mut w = Writer::new(&FORMAT);
    w.reserve(4 + entries.iter().map(|e| e.size() as usize).sum::<usize>());
    w.raw(&header(namespace, byte));
    w.u32(entries.len());
    for e in entries {
        w.id(&e.commit);
        w.u16(e.path.len());
        w.raw(e.path.as_bytes());
        w.u8(e.tags);
        w.u32(e.value.len());
        w.raw(&e.value);
    }
    w.seal()
}

/// `to_cache` and `from_cache` of a kind whose serde form is its whole
/// value: write `crate::store::record_cache::json_cache!();` in its `impl Record`.
macro_rules! json_cache {
    () => {
        fn to_cache(&self) -> Option<Vec<u8>> {
            $crate::store::record_cache::encode(self)
        }
        fn from_cache(bytes: &[u8]) -> Option<Self> {
            $crate::store::record_cache::decode(bytes)
        }
    };
}
pub(crate) use json_cache;

/// The cache encoding of a kind whose value is a serde type: JSON, kept
/// only when it gives the value back exactly (JSON has no tagged values,
/// non-finite numbers or non-string keys, which unknown YAML fields may
/// hold); compared as YAML values, the form records are written in.
pub fn encode<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> Option<Vec<u8>> {
    let bytes = serde_json::to_vec(value).ok()?;
    let back: T = serde_json::from_slice(&bytes).ok()?;
    let same = serde_yaml_ng::to_value(value).ok()? == serde_yaml_ng::to_value(&back).ok()?;
    same.then_some(bytes)
}

/// The value [`encode`] kept.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8, path: &str, value: &[u8]) -> Entry {
        let mut id = [0u8; 20];
        id[0] = 0x7a;
        id[19] = n;
        Entry {
            commit: ObjectId::try_from(&id[..]).unwrap(),
            path: path.into(),
            tags: n,
            value: value.to_vec(),
        }
    }

    #[test]
    fn a_shard_reads_back_and_any_damage_is_refused() {
        let a = entry(1, "p", b"{\"x\":1}");
        let b = entry(2, "p/q", b"[]");
        let bytes = encode_shard("plans", 7, &[a.clone(), b.clone()]).into_bytes();
        let back = parse_shard(bytes.clone(), "plans", 7).expect("reads back");
        assert_eq!(back.slots.len(), 2);
        assert_eq!(back.find(b.commit, "p/q"), Some(1));
        assert_eq!(back.find(b.commit, "p"), None, "keyed by commit and path");
        let slot = &back.slots[1];
        assert_eq!(
            (back.path(slot), back.value(slot), slot.tags),
            ("p/q", &b"[]"[..], 2)
        );
        assert!(
            parse_shard(bytes.clone(), "lanes", 7).is_none(),
            "another kind's"
        );
        assert!(
            parse_shard(bytes.clone(), "plans", 8).is_none(),
            "another shard's"
        );
        for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                parse_shard(bytes[..cut].to_vec(), "plans", 7).is_none(),
                "cut at {cut}"
            );
        }
        for at in [0, 30, 40, bytes.len() / 2, bytes.len() - 1] {
            let mut edited = bytes.clone();
            edited[at] ^= 1;
            assert!(parse_shard(edited, "plans", 7).is_none(), "edited at {at}");
        }
    }

    #[test]
    fn the_bound_keeps_what_this_run_added_and_read_first() {
        let old: Vec<Entry> = (0..4).map(|n| entry(n, "p", &[b'x'; 100])).collect();
        let mut shard =
            parse_shard(encode_shard("plans", 7, &old).into_bytes(), "plans", 7).unwrap();
        shard.slots[3].used = true;
        shard.added.push(entry(9, "p", &[b'y'; 100]));
        let kept = bounded(&shard, 3 * 129);
        let ids: Vec<u8> = kept.iter().map(|e| e.commit.as_bytes()[19]).collect();
        assert_eq!(ids, [9, 3, 0]);
    }

    #[test]
    fn values_json_cannot_give_back_are_not_cached() {
        let plain: serde_yaml_ng::Value = serde_yaml_ng::from_str("a: 1\nb: [x, 2.5]\n").unwrap();
        assert!(encode(&plain).is_some());
        for lossy in ["a: .nan\n", "1: one\n", "a: !tag x\n"] {
            let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(lossy).unwrap();
            assert!(encode(&v).is_none(), "{lossy}");
        }
    }
}
