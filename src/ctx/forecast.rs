//! The last forecast's summary, per plan, kept next to the forecast cache
//! (`<common dir>/swarm/cache/forecast/summary.json`) so that `status` can
//! show the number of forecast conflicts without merging or fetching: how
//! many, when, and over which heads (the refs the forecast read, with their
//! values then). `status` compares those refs with their values now — a
//! few ref lookups — and says when lanes moved since. Like the cache, the
//! file may be deleted at any time; an unreadable one is no summary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::store::Store;

const FILE: &str = "summary.json";

/// The forecast cache directory (the summary lives in it too).
pub fn dir(store: &Store) -> PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("cache")
        .join("forecast")
}

/// One plan's part of the last forecast that covered it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanForecast {
    /// Pairs with a lane of the plan, and its lanes' base checks, forecast
    /// to conflict.
    pub conflicts: usize,
    /// Of those pairs, the ones touching the same files without conflict.
    pub same_files: usize,
    /// Changed paths of the plan's lanes that someone else reserved.
    pub reserved: usize,
    /// When the forecast ran (RFC 3339).
    pub at: String,
    /// Every ref the forecast read a head from, with its value then ("" when
    /// absent).
    pub refs: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub plans: BTreeMap<String, PlanForecast>,
}

pub fn read(store: &Store) -> Summary {
    std::fs::read(dir(store).join(FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Replace the summary.
pub fn write(store: &Store, summary: &Summary) -> std::io::Result<()> {
    put_json(&dir(store), FILE, summary)
}

/// Write `value` as JSON to `dir/name`: to a temporary file renamed into
/// place, so a reader sees the whole file or none (the cache entries too).
pub fn put_json(dir: &Path, name: &str, value: &impl Serialize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The current value of each ref, as [`PlanForecast::refs`] records it.
pub fn values(store: &Store, refs: &[String]) -> BTreeMap<String, String> {
    refs.iter()
        .map(|r| {
            let v = store.ref_target(r).ok().flatten();
            (r.clone(), v.map(|v| v.to_string()).unwrap_or_default())
        })
        .collect()
}

/// What `status` shows of a plan's last forecast.
#[derive(Debug, Clone, Serialize)]
pub struct Seen {
    pub conflicts: usize,
    pub same_files: usize,
    pub reserved: usize,
    pub at: String,
    /// A ref the forecast read a head from has moved since: run it again.
    pub moved: bool,
}

/// Each plan's last forecast, with whether its heads moved since.
pub fn last(store: &Store) -> BTreeMap<String, Seen> {
    read(store)
        .plans
        .into_iter()
        .map(|(plan, p)| {
            let names: Vec<String> = p.refs.keys().cloned().collect();
            let moved = values(store, &names) != p.refs;
            let seen = Seen {
                conflicts: p.conflicts,
                same_files: p.same_files,
                reserved: p.reserved,
                at: p.at,
                moved,
            };
            (plan, seen)
        })
        .collect()
}
