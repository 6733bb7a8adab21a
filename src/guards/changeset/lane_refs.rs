//! The lane refs changeset-unique compares with (`refs/heads/feat/**` and
//! every `refs/remotes/**/feat/**`), without opening every loose ref file
//! on every commit: `<git common dir>/swarm/lane-refs.cache` keeps the list
//! read last time together with the stat data (mtime and ctime with
//! nanoseconds, size, inode, device) of `packed-refs` and of every directory
//! those refs can live in. git and gix change a loose ref only by creating
//! `<ref>.lock` and renaming it over the ref (or by unlinking it), which
//! changes the containing directory's mtime; a ref in a new subdirectory
//! first creates that directory, changing its parent's; packing rewrites
//! `packed-refs` the same way. So while every recorded stat is unchanged,
//! the list is what reading the refs would give.
//!
//! Racy timestamps, as git treats its index: a change in the same clock tick
//! as the recorded stat leaves the mtime equal. The cache therefore records
//! the filesystem's time taken *before* anything was stat'ed (the mtime of
//! the freshly created temporary cache file), and an entry whose mtime or
//! ctime is not strictly older than that time is unsure: the refs are read
//! again (and the cache rewritten). A directory that was absent is recorded
//! with its parent, so that one created and removed again after the scan
//! still shows. The cache is a [`cachefile`](crate::store::cachefile) with
//! a text body: a missing, damaged or foreign cache file is ignored, never
//! trusted, and a cache that cannot be written is not an error. Only refs
//! in the common directory matter: `refs/heads` and `refs/remotes` are
//! never per-worktree.

use std::fs::Metadata;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use crate::store::cachefile::{Format, Pending, Sealed};

const FORMAT: Format = Format::new(b"git-swarm lane-refs-cache\n", 2, 64 << 20);
const FILE: &str = "lane-refs.cache";

type GixResult<T> = std::result::Result<T, String>;

/// Stat data of one path; `None` fields mean "absent".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    size: u64,
    ino: u64,
    dev: u64,
    is_dir: bool,
}

#[cfg(unix)]
fn stamp_of(meta: &Metadata) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    Some(Stamp {
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
        size: meta.size(),
        ino: meta.ino(),
        dev: meta.dev(),
        is_dir: meta.is_dir(),
    })
}

/// Without unix stat data nothing is ever sure: the refs are always read.
#[cfg(not(unix))]
fn stamp_of(_meta: &Metadata) -> Option<Stamp> {
    None
}

/// What one path looks like now: `Ok(None)` absent, `Err` when unknowable
/// (a symbolic link is: what it points to is not what was stat'ed).
fn stat(path: &Path) -> Result<Option<Stamp>, ()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(()),
        Ok(meta) => stamp_of(&meta).map(Some).ok_or(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) => Err(()),
    }
}

/// One recorded path (relative to the common dir, `/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    path: String,
    stamp: Option<Stamp>,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Snapshot {
    /// The filesystem time before the scan began.
    scanned: (i64, i64),
    entries: Vec<Entry>,
    refs: Vec<(String, ObjectId)>,
}

impl Snapshot {
    fn render(&self) -> Sealed {
        let mut out = format!("s {} {}\n", self.scanned.0, self.scanned.1);
        for e in &self.entries {
            match &e.stamp {
                None => out.push_str(&format!("a {}\n", e.path)),
                Some(s) => out.push_str(&format!(
                    "e {} {} {} {} {} {} {} {} {} {}\n",
                    s.mtime.0,
                    s.mtime.1,
                    s.ctime.0,
                    s.ctime.1,
                    s.size,
                    s.ino,
                    s.dev,
                    u8::from(s.is_dir),
                    e.path.len(),
                    e.path
                )),
            }
        }
        for (name, id) in &self.refs {
            out.push_str(&format!("r {id} {name}\n"));
        }
        FORMAT.seal(out.as_bytes())
    }

    fn parse(bytes: &[u8]) -> Option<Snapshot> {
        let body = std::str::from_utf8(FORMAT.body(bytes)?).ok()?;
        let mut lines = body.lines();
        let mut s = Snapshot::default();
        let (sec, nsec) = lines.next()?.strip_prefix("s ")?.split_once(' ')?;
        s.scanned = (sec.parse().ok()?, nsec.parse().ok()?);
        for line in lines {
            let (kind, rest) = line.split_once(' ')?;
            match kind {
                "a" => s.entries.push(Entry {
                    path: rest.to_string(),
                    stamp: None,
                }),
                "e" => {
                    let mut f = rest.splitn(10, ' ');
                    let mut num = || f.next()?.parse::<i64>().ok();
                    let mtime = (num()?, num()?);
                    let ctime = (num()?, num()?);
                    let size = u64::try_from(num()?).ok()?;
                    let ino = f.next()?.parse().ok()?;
                    let dev = f.next()?.parse().ok()?;
                    let is_dir = f.next()? == "1";
                    let len: usize = f.next()?.parse().ok()?;
                    let path = f.next()?;
                    if path.len() != len {
                        return None;
                    }
                    s.entries.push(Entry {
                        path: path.to_string(),
                        stamp: Some(Stamp {
                            mtime,
                            ctime,
                            size,
                            ino,
                            dev,
                            is_dir,
                        }),
                    });
                }
                "r" => {
                    let (id, name) = rest.split_once(' ')?;
                    let id = ObjectId::from_hex(id.as_bytes()).ok()?;
                    s.refs.push((name.to_string(), id));
                }
                _ => return None,
            }
        }
        Some(s)
    }

    /// Every recorded path still looks the same, and each was already
    /// older than the scan when it was recorded.
    fn still_valid(&self, common: &Path) -> bool {
        self.entries.iter().all(|e| {
            let Ok(now) = stat(&common.join(&e.path)) else {
                return false;
            };
            now == e.stamp
                && e.stamp
                    .is_none_or(|s| s.mtime < self.scanned && s.ctime < self.scanned)
        })
    }
}

/// Does a ref under `refs/remotes/` name a lane branch (`<remote>/feat/…`)?
pub fn is_remote_lane(rest: &str) -> bool {
    rest.find("/feat/").is_some()
}

/// The directories lane refs can live in, stat'ed (with the parent of each
/// absent root), plus `packed-refs`.
fn scan_entries(common: &Path) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut record = |rel: &str| -> Option<Option<Stamp>> {
        let stamp = stat(&common.join(rel)).ok()?;
        entries.push(Entry {
            path: rel.to_string(),
            stamp,
        });
        Some(stamp)
    };
    record("packed-refs")?;
    let mut dirs: Vec<String> = Vec::new();
    for (root, parent) in [("refs/heads/feat", "refs/heads"), ("refs/remotes", "refs")] {
        match record(root)? {
            None => {
                record(parent)?;
            }
            Some(s) if s.is_dir => dirs.push(root.to_string()),
            Some(_) => {}
        }
    }
    // Every subdirectory, depth first: a ref file updated in a nested
    // directory changes that directory's mtime, not its parents'.
    while let Some(dir) = dirs.pop() {
        let read = match std::fs::read_dir(common.join(&dir)) {
            Ok(r) => r,
            // Removed since it was stat'ed: that stat no longer matches.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => return None,
        };
        for item in read {
            let item = item.ok()?;
            let kind = item.file_type().ok()?;
            if kind.is_symlink() {
                // A linked ref or directory: its changes are elsewhere.
                return None;
            }
            if !kind.is_dir() {
                continue;
            }
            let name = item.file_name();
            let name = name.to_str()?;
            let rel = format!("{dir}/{name}");
            if let Some(s) = record(&rel)? {
                if s.is_dir {
                    dirs.push(rel);
                }
            }
        }
    }
    Some(entries)
}

/// The filesystem's current time, as the mtime of a file created now (the
/// clock file times come from, which may lag the system clock); the file
/// is the temporary cache file, just created.
fn fs_now(pending: &Pending) -> Option<(i64, i64)> {
    Some(stamp_of(&pending.file()?.metadata().ok()?)?.mtime)
}

fn cache_path(repo: &gix::Repository) -> PathBuf {
    repo.common_dir().join("swarm").join(FILE)
}

/// Refs under `prefix` with the object they point to, without peeling;
/// symbolic refs are skipped.
fn direct_refs(repo: &gix::Repository, prefix: &str) -> GixResult<Vec<(String, ObjectId)>> {
    let platform = repo.references().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for r in platform.prefixed(prefix).map_err(|e| e.to_string())? {
        let r = r.map_err(|e| e.to_string())?;
        if let Some(id) = r.target().try_id() {
            out.push((r.name().as_bstr().to_string(), id.to_owned()));
        }
    }
    Ok(out)
}

/// Read the lane refs from the ref store.
fn read_refs(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>, (String, String)> {
    let mut out =
        direct_refs(repo, "refs/heads/feat/").map_err(|e| ("refs/heads/feat/".to_string(), e))?;
    for (name, id) in
        direct_refs(repo, "refs/remotes/").map_err(|e| ("refs/remotes/".to_string(), e))?
    {
        if is_remote_lane(&name["refs/remotes/".len()..]) {
            out.push((name, id));
        }
    }
    Ok(out)
}

/// The lane refs (local `refs/heads/feat/…` and remote-tracking
/// `refs/remotes/…/feat/…`) with their direct targets: from the cache when
/// its stat data proves it current, else read and cached. An error names
/// the prefix that could not be read.
pub fn lane_refs(repo: &gix::Repository) -> Result<Vec<(String, ObjectId)>, (String, String)> {
    let common = repo.common_dir();
    let path = cache_path(repo);
    if let Some(snapshot) = FORMAT.read(&path).and_then(|b| Snapshot::parse(&b)) {
        if snapshot.still_valid(common) {
            return Ok(snapshot.refs);
        }
    }
    // Time first, then stat, then read: a change after the stat carries a
    // time not older than `scanned`, so it cannot hide behind the stat.
    // (An uncommitted temporary file is removed when dropped.)
    let pending = FORMAT.begin(&path).ok();
    let scanned = pending.as_ref().and_then(fs_now);
    let entries = scanned.and_then(|_| scan_entries(common));
    let refs = read_refs(repo)?;
    match (pending, scanned, entries) {
        (Some(pending), Some(scanned), Some(entries)) => {
            let snapshot = Snapshot {
                scanned,
                entries,
                refs,
            };
            // Best effort: a cache that cannot be written is rebuilt next time.
            let _ = pending.commit(&snapshot.render());
            Ok(snapshot.refs)
        }
        _ => Ok(refs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        Snapshot {
            scanned: (1_700_000_000, 123_456_789),
            entries: vec![
                Entry {
                    path: "packed-refs".into(),
                    stamp: None,
                },
                Entry {
                    path: "refs/heads/feat/with space".into(),
                    stamp: Some(Stamp {
                        mtime: (1_699_999_999, 5),
                        ctime: (1_699_999_999, 6),
                        size: 4096,
                        ino: 77,
                        dev: 2049,
                        is_dir: true,
                    }),
                },
            ],
            refs: vec![(
                "refs/heads/feat/a".into(),
                ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap(),
            )],
        }
    }

    #[test]
    fn round_trip_and_damage_is_refused() {
        let s = sample();
        let bytes = s.render().into_bytes();
        assert_eq!(Snapshot::parse(&bytes), Some(sample()));
        // Torn at every length: never accepted.
        for cut in 0..bytes.len() {
            assert!(Snapshot::parse(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        // One changed byte: refused.
        let at = bytes.windows(6).position(|w| w == b"feat/a").unwrap() + 5;
        let mut edited = bytes.clone();
        edited[at] = b'b';
        assert!(Snapshot::parse(&edited).is_none());
    }

    #[test]
    fn an_entry_as_new_as_the_scan_is_unsure() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("refs/heads/feat")).unwrap();
        let entries = scan_entries(dir.path()).unwrap();
        let feat = entries
            .iter()
            .find(|e| e.path == "refs/heads/feat")
            .and_then(|e| e.stamp)
            .unwrap();
        let mut s = Snapshot {
            scanned: feat.mtime,
            entries: entries.clone(),
            refs: vec![],
        };
        assert!(!s.still_valid(dir.path()), "same tick must be unsure");
        s.scanned = (feat.mtime.0 + 1, 0);
        s.scanned = s.scanned.max((feat.ctime.0 + 1, 0));
        assert!(s.still_valid(dir.path()));
        // A directory that appears where one was recorded absent: changed.
        std::fs::create_dir_all(dir.path().join("refs/remotes")).unwrap();
        assert!(!s.still_valid(dir.path()));
    }
}
