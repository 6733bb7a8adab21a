//! `lane list`: every lane with where it stands in this clone.

use serde::Serialize;

use crate::error::Result;
use crate::records::lane::{self, LaneState};
use crate::session::lane::inspect;
use crate::session::Ctx;
use crate::store::record::Unreadable;

/// The lanes `lane list` shows.
#[derive(Serialize)]
pub struct LaneList {
    pub lanes: Vec<LaneState>,
    /// Removed lanes left out (without `--all`).
    #[serde(skip)]
    pub removed_hidden: usize,
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

/// `lane list`
pub fn list(ctx: &Ctx, include_removed: bool) -> Result<LaneList> {
    let worktrees = ctx.store.git.worktree_paths()?;
    let mut lanes = Vec::new();
    let mut removed_hidden = 0;
    // Local and mirror, newest wins: the read `status` shows.
    let (all, unreadable) = lane::known(&ctx.store, ctx.settings.remote.as_deref())?;
    for lane in all {
        if !lane.record.is_active() && !include_removed {
            removed_hidden += 1;
            continue;
        }
        lanes.push(inspect(ctx, &lane, &worktrees)?);
    }
    Ok(LaneList {
        lanes,
        removed_hidden,
        unreadable,
    })
}
