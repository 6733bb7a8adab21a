//! What read-only views know of the remote's records: the mirror as last
//! fetched, compared record by record with the local refs ([`super::tips_under`]).

use serde::Serialize;

use super::{live_tip, tips_under};
use crate::error::Result;
use crate::store::mirror::{fetch_stamp, mirror_ref};
use crate::store::Store;

/// What read-only views (`status`, `lead status`, `packets`) know of the
/// remote's records: the last fetched mirror, how old it is, and which
/// records it has that the local refs lack (missing here, or behind).
/// Every such view shows local plus mirror, the newer of the two per
/// record, `--offline` or not (offline only means: no fetch first).
#[derive(Debug, Clone, Serialize)]
pub struct MirrorView {
    pub remote: String,
    /// When `sync` last fetched the whole mirror (None: unknown or never).
    pub fetched_at: Option<String>,
    /// Local refs (`refs/swarm/…`) the mirror has newer or alone.
    pub ahead: Vec<String>,
    /// This clone was told already of every one of `ahead` at the version
    /// the mirror has now (since the fetch that brought it): the text
    /// leaves the notice out, so it is said once per fetch, not after
    /// every command.
    #[serde(skip)]
    pub announced: bool,
}

impl MirrorView {
    pub fn read(store: &Store, remote: &str, prefixes: &[&str]) -> Result<MirrorView> {
        let fetched_at = std::fs::read_to_string(fetch_stamp(store, remote))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let root = mirror_ref(remote, "refs/swarm/");
        let mut ahead = Vec::new();
        for prefix in prefixes {
            // A prefix ends in `/`; anything else names one ref exactly.
            let exact = !prefix.ends_with('/');
            if !exact {
                // Both sides listed once, not two ref lookups per record.
                for (path, tip) in tips_under(store, Some(remote), prefix)? {
                    if tip.remote.is_some() && tip.local_behind(store)? {
                        ahead.push(format!("{prefix}{path}"));
                    }
                }
                continue;
            }
            for (mirrored, _) in store.list_refs(&mirror_ref(remote, prefix))? {
                let local = format!("refs/swarm/{}", &mirrored[root.len()..]);
                if exact && local != *prefix {
                    continue;
                }
                if live_tip(store, Some(remote), &local)?.local_behind(store)? {
                    ahead.push(local);
                }
            }
        }
        ahead.sort();
        let announced = announce(store, remote, &ahead);
        Ok(MirrorView {
            remote: remote.to_string(),
            fetched_at,
            ahead,
            announced,
        })
    }
}

/// Where the mirror versions this clone was told it lacks are kept: one
/// `<ref> <mirror commit>` a line (a cache: losing it only repeats a notice).
fn announced_file(store: &Store, remote: &str) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join(format!("mirror-announced-{remote}"))
}

/// Whether every one of `ahead`, at the mirror's version now, was
/// announced before; remembers them as announced from now on (and forgets
/// the versions the mirror has moved past).
fn announce(store: &Store, remote: &str, ahead: &[String]) -> bool {
    if ahead.is_empty() {
        return true;
    }
    let tip = |local: &str| {
        store
            .ref_target(&mirror_ref(remote, local))
            .ok()
            .flatten()
            .map(|id| id.to_string())
    };
    let path = announced_file(store, remote);
    let before: std::collections::BTreeSet<(String, String)> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect();
    let now: Vec<(String, String)> = ahead
        .iter()
        .filter_map(|r| tip(r).map(|c| (r.clone(), c)))
        .collect();
    if now.iter().all(|e| before.contains(e)) {
        return true;
    }
    let mut keep: std::collections::BTreeSet<(String, String)> = before
        .into_iter()
        .filter(|(r, c)| tip(r).as_deref() == Some(c.as_str()))
        .collect();
    keep.extend(now);
    let text: String = keep.iter().map(|(r, c)| format!("{r} {c}\n")).collect();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&path, text);
    false
}
