//! The forecast cache: one small JSON file per merge, named by the merge
//! base and the two trees, under `<common dir>/swarm/cache/forecast/`.
//! Entries never change (the key fixes the answer); each holds its own key
//! and a checksum of its answer, so an unreadable, torn, copied or edited
//! entry is a miss; the directory may be deleted at any time, and
//! `--no-cache` neither reads nor writes it.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Outcome;
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

/// An entry as stored: its key, its answer, and a checksum of both.
#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    key: String,
    sum: String,
    outcome: serde_json::Value,
}

fn sum(key: &str, outcome: &serde_json::Value) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(key.as_bytes());
    h.update([0]);
    h.update(outcome.to_string().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub fn get(dir: &Path, key: &str) -> Option<Outcome> {
    let path = dir.join(key);
    let bytes = crate::fsutil::read_limited(&path, crate::fsutil::Follow::No, 16 << 20).ok()?;
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    if entry.key != key || entry.sum != sum(key, &entry.outcome) {
        return None;
    }
    serde_json::from_value(entry.outcome).ok()
}

/// Write an entry (whole, or not at all).
pub fn put(dir: &Path, key: &str, outcome: &Outcome) -> std::io::Result<()> {
    let outcome = serde_json::to_value(outcome).map_err(std::io::Error::other)?;
    let entry = Entry {
        key: key.to_string(),
        sum: sum(key, &outcome),
        outcome,
    };
    crate::records::forecast::put_json(dir, key, &entry)
}
