//! The ledger as the reservations guard reads it, on every commit: only the
//! fields a decision needs ([`Held`]), kept in a deletable cache,
//! `<git common dir>/swarm/reservations.cache`, keyed by the ledger commit
//! they were read from. A commit never changes, so an entry is never stale:
//! a new ledger version is a new commit, read from its YAML once and added.
//! The file carries a checksum over everything before it; a missing, torn,
//! edited or foreign file is ignored (read from the objects again), never
//! trusted, and a cache that cannot be written is not an error. It holds
//! only the versions the last run read (the local ledger and the last
//! fetched one), so it stays the size of two ledgers.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::error::Result;
use crate::guard::findings::unreadable;
use crate::model::reservation::{parse_ledger, Pattern, LEDGER_REF, RECORD_FILE};

use super::RESERVATIONS;

const MAGIC: &[u8] = b"git-swarm reservations-cache v1\n";
const FILE: &str = "reservations.cache";
/// A cache larger than this is not read (two ledgers are far smaller).
const MAX_BYTES: u64 = 4 << 20;

/// One reservation, as far as the guard looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub id: String,
    pub holder: String,
    pub paths: Vec<Pattern>,
    pub shared: bool,
    pub released: bool,
    pub task: Option<String>,
    pub lease_until: String,
}

/// One ledger version: its id counter and its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub next: u64,
    pub entries: Vec<Held>,
}

/// The ledger at commit `tip`, from the cache when it has that commit.
pub struct Cache {
    path: PathBuf,
    stored: Vec<(ObjectId, Version)>,
    used: Vec<ObjectId>,
    missed: bool,
}

impl Cache {
    pub fn load(repo: &gix::Repository) -> Cache {
        let path = repo.common_dir().join("swarm").join(FILE);
        let stored = read_file(&path).unwrap_or_default();
        Cache {
            path,
            stored,
            used: Vec::new(),
            missed: false,
        }
    }

    /// The ledger version at commit `tip`.
    pub fn at(&mut self, repo: &gix::Repository, tip: ObjectId) -> Result<Version> {
        self.used.push(tip);
        if let Some((_, v)) = self.stored.iter().find(|(id, _)| *id == tip) {
            return Ok(v.clone());
        }
        let v = read_objects(repo, tip)?;
        self.stored.push((tip, v.clone()));
        self.missed = true;
        Ok(v)
    }

    /// Write the versions used in this run back, when one was missing.
    pub fn save(&self) {
        if !self.missed {
            return;
        }
        let keep: Vec<&(ObjectId, Version)> = self
            .stored
            .iter()
            .filter(|(id, _)| self.used.contains(id))
            .collect();
        let bytes = render(&keep);
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, &self.path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// The ledger commit's `reservations.yaml`, parsed (and checked) as every
/// reader of the record does.
fn read_objects(repo: &gix::Repository, tip: ObjectId) -> Result<Version> {
    let what = || format!("{LEDGER_REF}:{RECORD_FILE}");
    let fail = |e: &dyn std::fmt::Display| unreadable(RESERVATIONS, what(), e);
    let commit = repo.find_commit(tip).map_err(|e| fail(&e))?;
    let tree = commit.tree().map_err(|e| fail(&e))?;
    let entry = tree
        .lookup_entry_by_path(RECORD_FILE)
        .map_err(|e| fail(&e))?
        .ok_or_else(|| fail(&"the file is missing"))?;
    let blob = entry.object().map_err(|e| fail(&e))?;
    let ledger = parse_ledger(&blob.data).map_err(|e| fail(&e.message))?;
    Ok(Version {
        next: ledger.next,
        entries: ledger
            .entries
            .into_iter()
            .map(|e| Held {
                id: e.id,
                holder: e.holder,
                paths: e.paths,
                shared: e.shared,
                released: e.released_at.is_some(),
                task: e.task,
                lease_until: e.lease_until,
            })
            .collect(),
    })
}

/// 64-bit FNV-1a: enough to tell a torn or edited file from a whole one.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// `MAGIC`, a count, then per version: the commit id (length-prefixed),
/// `next`, the entries (strings length-prefixed, flags as bytes), and the
/// checksum of everything before it.
fn render(versions: &[&(ObjectId, Version)]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(versions.len() as u32).to_le_bytes());
    for (id, v) in versions {
        out.push(id.as_bytes().len() as u8);
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(&v.next.to_le_bytes());
        out.extend_from_slice(&(v.entries.len() as u32).to_le_bytes());
        for e in &v.entries {
            put_str(&mut out, &e.id);
            put_str(&mut out, &e.holder);
            out.push(
                u8::from(e.shared) | u8::from(e.released) << 1 | u8::from(e.task.is_some()) << 2,
            );
            put_str(&mut out, e.task.as_deref().unwrap_or(""));
            put_str(&mut out, &e.lease_until);
            out.extend_from_slice(&(e.paths.len() as u32).to_le_bytes());
            for p in &e.paths {
                put_str(&mut out, p.as_str());
            }
        }
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// A cursor over the file's bytes; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<String> {
        let n = self.u32()?;
        Some(std::str::from_utf8(self.take(n)?).ok()?.to_string())
    }
}

fn parse(bytes: &[u8]) -> Option<Vec<(ObjectId, Version)>> {
    let body = bytes.get(..bytes.len().checked_sub(8)?)?;
    let sum = u64::from_le_bytes(bytes[body.len()..].try_into().ok()?);
    if sum != checksum(body) {
        return None;
    }
    let mut r = Reader(body.strip_prefix(MAGIC)?);
    let count = r.u32()?;
    let mut out = Vec::new();
    for _ in 0..count {
        let len = usize::from(r.u8()?);
        let id = ObjectId::try_from(r.take(len)?).ok()?;
        let next = r.u64()?;
        let n = r.u32()?;
        let mut entries = Vec::new();
        for _ in 0..n {
            let id = r.str()?;
            let holder = r.str()?;
            let flags = r.u8()?;
            let task = r.str()?;
            let lease_until = r.str()?;
            let paths = (0..r.u32()?)
                .map(|_| r.str().map(Pattern))
                .collect::<Option<Vec<_>>>()?;
            entries.push(Held {
                id,
                holder,
                paths,
                shared: flags & 1 != 0,
                released: flags & 2 != 0,
                task: (flags & 4 != 0).then_some(task),
                lease_until,
            });
        }
        out.push((id, Version { next, entries }));
    }
    r.0.is_empty().then_some(out)
}

fn read_file(path: &Path) -> Option<Vec<(ObjectId, Version)>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut bytes).ok()?;
    parse(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<(ObjectId, Version)> {
        let held = |id: &str, task: Option<&str>, shared, released| Held {
            id: id.into(),
            holder: "ann".into(),
            paths: vec![Pattern("src/".into()), Pattern("docs/*.md".into())],
            shared,
            released,
            task: task.map(str::to_string),
            lease_until: "2026-01-01T02:00:00Z".into(),
        };
        vec![
            (
                ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap(),
                Version {
                    next: 7,
                    entries: vec![
                        held("r1", Some("T7"), false, false),
                        held("r2", Some(""), true, true),
                    ],
                },
            ),
            (
                ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap(),
                Version {
                    next: 1,
                    entries: vec![],
                },
            ),
        ]
    }

    #[test]
    fn round_trip_and_damage_is_refused() {
        let s = sample();
        let bytes = render(&s.iter().collect::<Vec<_>>());
        assert_eq!(parse(&bytes), Some(sample()));
        // Torn at every length: never accepted.
        for cut in 0..bytes.len() {
            assert!(parse(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        // Any one byte changed: refused.
        for at in 0..bytes.len() {
            let mut edited = bytes.clone();
            edited[at] ^= 0x20;
            assert!(parse(&edited).is_none(), "byte {at} changed");
        }
        // Bytes after a whole file: refused too.
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(parse(&longer).is_none());
    }
}
