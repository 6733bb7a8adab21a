//! How a live dashboard reaches the remote, the way `wait` does: one `git
//! ls-remote` of the swarm refs and notes per round, and a fetch into the
//! mirror only when that answer changed (or differs from the mirror). The
//! caller spaces the rounds (at most one per `swarm.waitCeiling`).

use serde::Serialize;

use crate::session::Ctx;
use crate::store::fingerprint::ROOT;
use crate::store::{mirror, notes::NOTES_REF};

/// What the watcher knows of the remote between rounds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RemoteWatch {
    #[serde(skip)]
    last: Option<Vec<(String, String)>>,
    /// When the remote last answered (RFC 3339).
    pub reached_at: Option<String>,
    /// Why the last round could not reach it, if it could not.
    pub error: Option<String>,
    pub queries: u64,
    pub fetches: u64,
}

/// One round: ask the remote, fetch when its answer changed. True when the
/// mirror was fetched (the picture may have changed). Offline or without a
/// remote, nothing happens. An unreachable remote is kept as `error`.
pub fn remote_round(ctx: &Ctx, w: &mut RemoteWatch) -> bool {
    let Some(r) = ctx.remote() else {
        return false;
    };
    w.queries += 1;
    let seen = match ctx.store.git.ls_remote(r, &[ROOT, NOTES_REF]) {
        Ok(seen) => seen,
        Err(e) => {
            w.error = Some(e.message);
            return false;
        }
    };
    w.reached_at = Some(crate::clock::rfc3339(ctx.store.clock.now()));
    w.error = None;
    if w.last.as_ref() == Some(&seen) {
        return false;
    }
    let differs = w.last.is_some() || mirror_differs(ctx, r, &seen);
    let fetched = differs
        && match mirror::fetch(&ctx.store, r) {
            Ok(()) => {
                w.fetches += 1;
                true
            }
            Err(e) => {
                w.error = Some(e.message);
                return false;
            }
        };
    w.last = Some(seen);
    fetched
}

/// Whether the remote's answer differs from the mirror this clone holds.
fn mirror_differs(ctx: &Ctx, r: &str, seen: &[(String, String)]) -> bool {
    let mirrored = ctx
        .store
        .list_refs(&mirror::mirror_ref(r, ROOT))
        .unwrap_or_default()
        .len()
        + usize::from(
            ctx.store
                .ref_target(&mirror::mirror_ref(r, NOTES_REF))
                .ok()
                .flatten()
                .is_some(),
        );
    mirrored != seen.len()
        || seen.iter().any(|(name, id)| {
            ctx.store
                .ref_target(&mirror::mirror_ref(r, name))
                .ok()
                .flatten()
                .map(|t| t.to_string())
                .as_deref()
                != Some(id.as_str())
        })
}
