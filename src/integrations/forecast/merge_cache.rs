//! The forecast cache: one small JSON file per merge, named by the merge
//! base and the two trees, under `<common dir>/swarm/cache/forecast/`.
//! Entries never change (the key fixes the answer); each is a
//! [`cachefile`](crate::store::cachefile) holding its own key, so an
//! unreadable, torn, copied or edited entry is a miss; the directory may be
//! deleted at any time, and `--no-cache` neither reads nor writes it.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Outcome;
use crate::store::cachefile::Format;
use crate::store::Store;

/// Bump when [`Outcome`]'s meaning changes: old entries are then misses.
const VERSION: &str = "v2";

pub fn dir(store: &Store) -> PathBuf {
    crate::records::forecast::dir(store)
}

/// `v1-<merge base>-<tree ours>-<tree theirs>` (`none` without a merge base).
pub fn key(base: Option<ObjectId>, ours: ObjectId, theirs: ObjectId) -> String {
    let base = base.map_or("none".to_string(), |b| b.to_string());
    format!("{VERSION}-{base}-{ours}-{theirs}")
}

/// An entry as stored: its key and its answer, as JSON in a cache file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    key: String,
    outcome: Outcome,
}

/// An entry's file; an entry larger than 16 MiB is neither read nor kept.
const FORMAT: Format = Format::new(b"git-swarm forecast entry\n", 1, 16 << 20);

pub fn get(dir: &Path, key: &str) -> Option<Outcome> {
    let bytes = FORMAT.read(&dir.join(key))?;
    let entry: Entry = serde_json::from_slice(FORMAT.body(&bytes)?).ok()?;
    (entry.key == key).then_some(entry.outcome)
}

/// Write an entry (whole, or not at all).
pub fn put(dir: &Path, key: &str, outcome: &Outcome) -> std::io::Result<()> {
    let entry = Entry {
        key: key.to_string(),
        outcome: outcome.clone(),
    };
    let body = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    FORMAT.write(&dir.join(key), &FORMAT.seal(&body))
}
