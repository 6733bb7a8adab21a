//! The ledger as the reservations guard reads it, on every commit: only the
//! fields a decision needs ([`Held`]), kept in a deletable cache,
//! `<git common dir>/swarm/reservations.cache`, keyed by the commit of the
//! shard (or of the one-ref ledger of older clones) they were read from. A
//! commit never changes, so an entry is never stale: a new version is a new
//! commit, read from its YAML once and added.
//! The file carries a checksum over everything before it; a missing, torn,
//! edited or foreign file is ignored (read from the objects again), never
//! trusted, and a cache that cannot be written is not an error. It holds
//! only the versions the last run read (each part `load` chose, the local
//! one or the mirrored one), so it stays the size of the reservations.

use std::path::PathBuf;

use gix::ObjectId;

use crate::error::Result;
use crate::guards::findings::unreadable;
use crate::records::reservation::shard::{merge, Part, Stored, SHARDS};
use crate::records::reservation::{parse_ledger, Pattern, RECORD_FILE};
use crate::store::cachefile::{Format, Reader, Sealed, Writer};

use super::RESERVATIONS;

const FILE: &str = "reservations.cache";
/// A cache larger than 4 MiB is not read (the shards' live entries are far
/// smaller).
const FORMAT: Format = Format::new(b"git-swarm reservations-cache\n", 2, 4 << 20);

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

impl Stored for Held {
    fn id(&self) -> &str {
        &self.id
    }
    fn paths(&self) -> &[Pattern] {
        &self.paths
    }
    fn released(&self) -> bool {
        self.released
    }
}

impl Version {
    /// The parts read, merged as every reader merges them
    /// ([`crate::records::reservation::shard::merge`]).
    pub fn merged(read: &[(Part, Version)]) -> Version {
        let legacy = read.iter().find(|(p, _)| *p == Part::Legacy);
        let mut parts: Vec<Option<&[Held]>> = vec![None; SHARDS];
        for (p, v) in read {
            if let Part::Shard(i) = p {
                parts[*i] = Some(&v.entries);
            }
        }
        let legacy_entries = legacy.map_or(&[][..], |(_, v)| &v.entries[..]);
        Version {
            next: legacy.map_or(1, |(_, v)| v.next),
            entries: merge(legacy_entries, &parts),
        }
    }
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
        let stored = FORMAT
            .read(&path)
            .and_then(|b| parse(&b))
            .unwrap_or_default();
        Cache {
            path,
            stored,
            used: Vec::new(),
            missed: false,
        }
    }

    /// The version of the part `refname` at commit `tip`.
    pub fn at(&mut self, repo: &gix::Repository, tip: ObjectId, refname: &str) -> Result<Version> {
        self.used.push(tip);
        if let Some((_, v)) = self.stored.iter().find(|(id, _)| *id == tip) {
            return Ok(v.clone());
        }
        let v = read_objects(repo, tip, refname)?;
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
        // Best effort: a cache that cannot be written is rebuilt next time.
        let _ = FORMAT.write(&self.path, &render(&keep));
    }
}

/// The ledger commit's `reservations.yaml`, parsed (and checked) as every
/// reader of the record does.
fn read_objects(repo: &gix::Repository, tip: ObjectId, refname: &str) -> Result<Version> {
    let what = || format!("{refname}:{RECORD_FILE}");
    let fail = |e: &dyn std::fmt::Display| {
        unreadable(RESERVATIONS, what(), e).hint(
            "a ledger nobody can read stops this guard in every clone: `git swarm reservations --repair --reason <why>` publishes its last readable version",
        )
    };
    let commit = repo.find_commit(tip).map_err(|e| fail(&e))?;
    let tree = commit.tree().map_err(|e| fail(&e))?;
    let entry = tree
        .lookup_entry_by_path(RECORD_FILE)
        .map_err(|e| fail(&e))?
        .ok_or_else(|| fail(&"the file is missing"))?;
    let blob = entry.object().map_err(|e| fail(&e))?;
    let ledger = parse_ledger(&blob.data, &what()).map_err(|e| fail(&e.message))?;
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

/// A count, then per version: the commit id, `next`, and the entries
/// (strings length-prefixed, flags in one byte), in a [`FORMAT`] file.
fn render(versions: &[&(ObjectId, Version)]) -> Sealed {
    let mut w = Writer::new(&FORMAT);
    w.u32(versions.len());
    for (id, v) in versions {
        w.id(id);
        w.u64(v.next);
        w.u32(v.entries.len());
        for e in &v.entries {
            w.str(&e.id);
            w.str(&e.holder);
            w.u8(u8::from(e.shared) | u8::from(e.released) << 1 | u8::from(e.task.is_some()) << 2);
            w.str(e.task.as_deref().unwrap_or(""));
            w.str(&e.lease_until);
            w.u32(e.paths.len());
            for p in &e.paths {
                w.str(p.as_str());
            }
        }
    }
    w.seal()
}

fn parse(bytes: &[u8]) -> Option<Vec<(ObjectId, Version)>> {
    let mut r = Reader::open(bytes, &FORMAT)?;
    let mut out = Vec::new();
    for _ in 0..r.u32()? {
        let id = r.id()?;
        let next = r.u64()?;
        let mut entries = Vec::new();
        for _ in 0..r.u32()? {
            let id = r.str()?.to_string();
            let holder = r.str()?.to_string();
            let flags = r.u8()?;
            let task = r.str()?.to_string();
            let lease_until = r.str()?.to_string();
            let paths = (0..r.u32()?)
                .map(|_| r.str().map(|p| Pattern(p.to_string())))
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
    r.done().then_some(out)
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
        let bytes = render(&s.iter().collect::<Vec<_>>()).into_bytes();
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
