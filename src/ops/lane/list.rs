//! `lane list`: every lane with where it stands in this clone.

use serde::Serialize;

use crate::error::Result;
use crate::records::lane::{self, LaneState};
use crate::session::lane::inspect;
use crate::session::Ctx;
use crate::store::yaml::Unreadable;

/// The lanes `lane list` shows.
#[derive(Serialize)]
pub struct LaneList {
    pub lanes: Vec<LaneState>,
    /// Removed lanes left out (without `--all`).
    #[serde(skip)]
    pub removed_hidden: usize,
    /// What each listed lane's sessions spent (this clone's records and
    /// the plans' journals), by lane.
    pub spend: std::collections::BTreeMap<String, crate::integrations::capacity::spend::Totals>,
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

/// `lane list`
pub fn list(ctx: &Ctx, include_removed: bool) -> Result<LaneList> {
    // The lanes as the remote has them now (a remote that cannot be
    // reached: what this clone knows, with the one warning line).
    crate::store::mirror::fetch_refs_from(&ctx.store, ctx.remote(), &[lane::PREFIX])?;
    let worktrees = ctx.store.git.worktree_paths()?;
    let mut lanes = Vec::new();
    let mut removed_hidden = 0;
    // Local and mirror, newest wins: the read `status` shows.
    let (all, unreadable) = lane::known(&ctx.store, ctx.settings.remote.as_deref())?;
    // Open packets, read once and only when a lane has a `blocked` report.
    let mut packets: Option<Vec<crate::records::packet::OpenPacket>> = None;
    let remote = ctx.settings.remote.as_deref();
    for mut lane in all {
        if !lane.record.is_active() && !include_removed {
            removed_hidden += 1;
            continue;
        }
        if lane
            .record
            .last_report
            .as_ref()
            .is_some_and(|r| r.kind == lane::LastReportKind::Blocked)
        {
            let known = match &mut packets {
                Some(p) => p,
                None => packets.insert(
                    crate::records::packet::open_packets(&ctx.store, remote)
                        .map(|(p, _)| p)
                        .unwrap_or_default(),
                ),
            };
            crate::views::clear_stale_blocked(&ctx.store, remote, &mut lane.record, known);
        }
        lanes.push(inspect(ctx, &lane, &worktrees)?);
    }
    let sessions =
        crate::integrations::capacity::spend::known(&ctx.store, ctx.settings.remote.as_deref());
    let mut spend = crate::integrations::capacity::spend::summary(&sessions).lanes;
    spend.retain(|l, _| lanes.iter().any(|s| s.feature == *l));
    Ok(LaneList {
        lanes,
        removed_hidden,
        spend,
        unreadable,
    })
}
