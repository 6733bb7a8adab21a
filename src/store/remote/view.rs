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
        Ok(MirrorView {
            remote: remote.to_string(),
            fetched_at,
            ahead,
        })
    }
}
