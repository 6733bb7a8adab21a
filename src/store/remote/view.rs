//! What read-only views know of the remote's records: the mirror as last
//! fetched, compared record by record with the local refs ([`super::tips_under`]).

use serde::Serialize;

use super::{live_tip, tips_under};
use crate::error::Result;
use crate::store::mirror::{ago, fetch_stamp, mirror_ref};
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

    /// "mirror of origin: fetched 5m ago (…)", and a pointer to `sync`
    /// when the mirror has what the local refs lack.
    pub fn text(&self, now: jiff::Timestamp) -> String {
        let age = match self
            .fetched_at
            .as_deref()
            .map(|t| (t, t.parse::<jiff::Timestamp>()))
        {
            Some((t, Ok(at))) => format!("fetched {} ago ({t})", ago(now, at)),
            Some((t, Err(_))) => format!("fetched at {t}"),
            None => "never fetched by `git swarm sync`".to_string(),
        };
        let mut out = format!(
            "shown: local records plus the mirror of {} ({age})\n",
            self.remote
        );
        if !self.ahead.is_empty() {
            let n = self.ahead.len();
            let shown: Vec<&str> = self.ahead.iter().take(3).map(String::as_str).collect();
            out.push_str(&format!(
                "the mirror has {n} record{} your local refs lack ({}{}): `git swarm sync` brings {} in\n",
                if n == 1 { "" } else { "s" },
                shown.join(", "),
                if n > 3 { ", …" } else { "" },
                if n == 1 { "it" } else { "them" }
            ));
        }
        out
    }
}
