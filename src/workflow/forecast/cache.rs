//! The forecast cache: one small JSON file per merge, named by the merge
//! base and the two trees, under `<common dir>/swarm/cache/forecast/`.
//! Entries never change (the key fixes the answer); an unreadable entry
//! is a miss, and the directory may be deleted at any time.

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Outcome;
use crate::store::Store;

/// Bump when [`Outcome`]'s meaning changes: old entries are then misses.
const VERSION: &str = "v1";

pub fn dir(store: &Store) -> PathBuf {
    crate::ctx::forecast::dir(store)
}

/// `v1-<merge base>-<tree ours>-<tree theirs>` (`none` without a merge base).
pub fn key(base: Option<ObjectId>, ours: ObjectId, theirs: ObjectId) -> String {
    let base = base.map_or("none".to_string(), |b| b.to_string());
    format!("{VERSION}-{base}-{ours}-{theirs}")
}

pub fn get(dir: &Path, key: &str) -> Option<Outcome> {
    let path = dir.join(key);
    let bytes = crate::fsutil::read_limited(&path, crate::fsutil::Follow::No, 16 << 20).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Write an entry (whole, or not at all).
pub fn put(dir: &Path, key: &str, outcome: &Outcome) -> std::io::Result<()> {
    crate::ctx::forecast::put_json(dir, key, outcome)
}
