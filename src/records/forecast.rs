//! The last forecast's summary, per plan, kept next to the forecast cache
//! (`<common dir>/swarm/cache/forecast/summary.json`) so that `status` can
//! show the number of forecast conflicts without merging or fetching: how
//! many, when, and over which heads (the refs the forecast read, with their
//! values then). `status` compares those refs with their values now — a
//! few ref lookups — and says when lanes moved since. Like the cache, the
//! file may be deleted at any time; an unreadable one is no summary.

use std::collections::{BTreeMap, BTreeSet};
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
    /// The run it came from: a key of [`Summary::runs`].
    pub run: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub plans: BTreeMap<String, PlanForecast>,
    /// Per forecast run still named by a plan: every ref it read a head
    /// from, with its value then ("" when absent). Kept once per run, not
    /// per plan, so the file grows with the lanes, not lanes × plans.
    pub runs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Summary {
    /// Record a run's refs under `run` and drop the runs no plan names.
    pub fn keep_run(&mut self, run: &str, refs: BTreeMap<String, String>) {
        self.runs.insert(run.to_string(), refs);
        let named: BTreeSet<&String> = self.plans.values().map(|p| &p.run).collect();
        self.runs.retain(|r, _| named.contains(r));
    }
}

pub fn read(store: &Store) -> Summary {
    crate::fsutil::read_limited(&dir(store).join(FILE), crate::fsutil::Follow::No, 16 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Replace the summary.
pub fn write(store: &Store, summary: &Summary) -> std::io::Result<()> {
    put_json(&dir(store), FILE, summary)
}

/// Write `value` as JSON to `dir/name`: to a temporary file renamed into
/// place, so a reader sees the whole file or none.
pub fn put_json(dir: &Path, name: &str, value: &impl Serialize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// The current value of each ref, as [`Summary::runs`] records it: the
/// id the ref names, not peeled (peeling reads the object; a moved ref
/// names another id either way), "" when absent or symbolic.
pub fn values(store: &Store, refs: &[String]) -> BTreeMap<String, String> {
    refs.iter()
        .map(|r| {
            let v = store
                .repo
                .try_find_reference(r.as_str())
                .ok()
                .flatten()
                .and_then(|found| found.target().try_id().map(|id| id.to_string()));
            (r.clone(), v.unwrap_or_default())
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

/// Each plan's last forecast, with whether its heads moved since. Plans
/// forecast together share their refs: each is looked up once.
pub fn last(store: &Store) -> BTreeMap<String, Seen> {
    let summary = read(store);
    let names: BTreeSet<String> = summary
        .runs
        .values()
        .flat_map(|refs| refs.keys().cloned())
        .collect();
    let now = values(store, &names.into_iter().collect::<Vec<_>>());
    let moved: BTreeMap<&String, bool> = summary
        .runs
        .iter()
        .map(|(run, refs)| (run, refs.iter().any(|(r, v)| now.get(r) != Some(v))))
        .collect();
    summary
        .plans
        .iter()
        .map(|(plan, p)| {
            let moved = moved.get(&p.run).copied().unwrap_or(true);
            let seen = Seen {
                conflicts: p.conflicts,
                same_files: p.same_files,
                reserved: p.reserved,
                at: p.at.clone(),
                moved,
            };
            (plan.clone(), seen)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_no_plan_names_any_more_is_dropped() {
        let mut s = Summary::default();
        let plan = |run: &str| PlanForecast {
            run: run.into(),
            ..PlanForecast::default()
        };
        let refs = |v: &str| BTreeMap::from([("refs/heads/feat/a".to_string(), v.to_string())]);
        s.plans.insert("p".into(), plan("1 *"));
        s.plans.insert("q".into(), plan("1 *"));
        s.keep_run("1 *", refs("a"));
        // A --plan p run replaces p's part; q still names the first run.
        s.plans.insert("p".into(), plan("2 p"));
        s.keep_run("2 p", refs("b"));
        assert_eq!(s.runs.len(), 2);
        // A full run names neither.
        s.plans.insert("p".into(), plan("3 *"));
        s.plans.insert("q".into(), plan("3 *"));
        s.keep_run("3 *", refs("c"));
        assert_eq!(s.runs.keys().collect::<Vec<_>>(), ["3 *"]);
    }
}
