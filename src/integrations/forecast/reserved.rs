//! Lanes whose changes touch a path someone else reserved: each lane's
//! changed paths (its head, snapshot included, against its merge base with
//! the base) judged against the reservation ledger as this clone knows it,
//! by the rule the guards use (`records::reservation::judge`: a live,
//! exclusive entry of another holder covering the path).

use serde::Serialize;

use super::heads::LaneHead;
use crate::error::Result;
use crate::records::reservation::{judge, stored, Ledger, Verdict};
use crate::session::Ctx;

/// A lane changing a path another holder reserved.
#[derive(Debug, Clone, Serialize)]
pub struct Reserved {
    pub lane: String,
    pub owner: String,
    pub path: String,
    /// The reservation's id, holder, task and lease end.
    pub reservation: String,
    pub holder: String,
    pub task: Option<String>,
    pub until: String,
}

/// The ledger as known here (local, or the mirror when newer); None when
/// there is none. An unreadable one is a warning, not a failed forecast.
fn ledger(ctx: &Ctx, remote: Option<&str>, warnings: &mut Vec<String>) -> Result<Option<Ledger>> {
    match stored::known(&ctx.store, remote) {
        Ok(l) if l.entries.is_empty() => Ok(None),
        Ok(l) => Ok(Some(l)),
        Err(e) => {
            warnings.push(format!(
                "the reservations ledger cannot be read ({}); reserved paths are not forecast",
                e.message
            ));
            Ok(None)
        }
    }
}

/// Every (lane, path) where a lane's change meets someone else's live
/// exclusive reservation.
pub fn check(
    ctx: &Ctx,
    remote: Option<&str>,
    lanes: &[LaneHead],
    warnings: &mut Vec<String>,
) -> Result<Vec<Reserved>> {
    let Some(ledger) = ledger(ctx, remote, warnings)? else {
        return Ok(Vec::new());
    };
    let now = ctx.store.clock.now();
    if !ledger.entries.iter().any(|e| e.live(now) && !e.shared) {
        return Ok(Vec::new());
    }
    let ic = ctx
        .store
        .repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false);
    let mut out = Vec::new();
    for l in lanes {
        let Some(base) = l.base_id else { continue };
        let Some(fork) = ctx.store.merge_base(base, l.head_id)? else {
            continue;
        };
        for path in changed(ctx, fork, l.head_id)? {
            if let Verdict::Blocked(e) = judge(&ledger, &l.owner, &path, now, ic) {
                out.push(Reserved {
                    lane: l.feature.clone(),
                    owner: l.owner.clone(),
                    path,
                    reservation: e.id.clone(),
                    holder: e.holder.clone(),
                    task: e.task.clone(),
                    until: e.lease_until.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The paths changed between two commits (both sides of a rename).
fn changed(ctx: &Ctx, from: gix::ObjectId, to: gix::ObjectId) -> Result<Vec<String>> {
    let out = ctx.store.git.run([
        "diff-tree",
        "-r",
        "-z",
        "--name-only",
        "--no-renames",
        &from.to_string(),
        &to.to_string(),
    ])?;
    Ok(out
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect())
}
