//! The lane a packet hands over: its next record version travels in the
//! same atomic push as the acceptance; a re-run catches the local lane ref
//! up to the published one.

use std::path::Path;

use super::Asked;
use crate::error::{Code, Error, Result};
use crate::git::PushUpdate;
use crate::names;
use crate::records::packet::Packet;
use crate::session::Ctx;
use crate::store::remote;

/// The lane the packet hands over, as the next version of its record, to
/// publish in the same atomic push as the acceptance: so `accept` either
/// moves the lane or records nothing. A packet that names a lane whose
/// record has not reached this clone is refused (`PACKET_LANE_MISSING`)
/// rather than accepted with the lane left behind. Offline, the lane is
/// moved locally after the acceptance (see `lane::hand_over`).
pub(super) fn lane_move(
    s: &Asked<'_>,
    packet: &Packet,
    checkout: &Path,
) -> Result<Vec<PushUpdate>> {
    let Some(branch) = packet.branch.as_deref() else {
        return Ok(Vec::new());
    };
    let feature = packet
        .lane
        .clone()
        .or_else(|| branch.strip_prefix("feat/").map(str::to_string))
        .filter(|f| names::is_valid_name(f));
    let Some(feature) = feature else {
        return Ok(Vec::new());
    };
    let refname = crate::records::lane::lane_ref(&feature);
    let tip = remote::tip(s.store, s.remote, &refname)?;
    let Some(base) = tip.base else {
        if packet.lane.is_some() {
            return Err(lane_missing(packet, &feature));
        }
        return Ok(Vec::new());
    };
    if s.remote.is_none() || tip.archived {
        return Ok(Vec::new());
    }
    let new = crate::records::lane::handover_commit(
        s.store, &feature, base, branch, &s.actor, &packet.id, checkout,
    )?;
    Ok(new
        .map(|id| PushUpdate {
            refname,
            new: Some(id.to_string()),
            expected: tip.remote.map(|r| r.to_string()),
        })
        .into_iter()
        .collect())
}

/// Move the local lane ref up to the published one when it is missing or
/// behind (a run interrupted between its push and its local update).
pub(super) fn catch_up(s: &Asked<'_>, packet: &Packet, actor: &str) -> Result<bool> {
    let (Some(remote), Some(feature)) = (s.remote, packet.lane.as_deref()) else {
        return Ok(false);
    };
    catch_up_ref(
        s.store,
        remote,
        &crate::records::lane::lane_ref(feature),
        actor,
    )
}

/// Move the local `refname` up to the version published at `remote` when it
/// is missing or behind it; whether it moved.
pub(super) fn catch_up_ref(
    store: &crate::store::Store,
    remote: &str,
    refname: &str,
    actor: &str,
) -> Result<bool> {
    let tip = remote::tip(store, Some(remote), refname)?;
    match (tip.remote, tip.local_behind(store)?) {
        (Some(published), true) => {
            remote::adopt(store, refname, published, actor, "accept: catch up")?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn lane_missing(packet: &Packet, feature: &str) -> Error {
    Error::new(
        Code::PacketLaneMissing,
        format!(
            "packet {} hands over lane {feature}, whose record has not reached this clone; nothing was recorded",
            packet.id
        ),
    )
    .hint(format!(
        "ask {} to run `git swarm sync` (it publishes the lane record), then accept again",
        packet.author
    ))
    .hint("offline: `git swarm sync` first, to fetch it")
}

/// `accept --lane F`: the one open packet that hands over lane F (the
/// packets fetched first), as `<plan>/<id>`.
pub fn open_packet_of(ctx: &Ctx, feature: &str) -> Result<String> {
    names::validate_name("feature", feature)?;
    crate::store::mirror::fetch_refs_from(
        &ctx.store,
        ctx.remote(),
        &[crate::records::packet::PREFIX],
    )?;
    let branch = crate::records::lane::branch_of(feature);
    let (open, _) =
        crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())?;
    let found: Vec<String> = open
        .into_iter()
        .filter(|p| p.branch.as_deref() == Some(branch.as_str()))
        .map(|p| format!("{}/{}", p.plan, p.id))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => settled_packet_of(ctx, feature, &branch),
        many => Err(Error::new(
            Code::Usage,
            format!(
                "several open packets hand over lane {feature}: {}",
                many.join(", ")
            ),
        )
        .hint("name one: `git swarm accept <plan>/<packet-id>`")),
    }
}

/// `accept --lane F` when no open packet hands over lane F: the newest
/// packet of the lane that the actor accepted, so that a re-run after an
/// interrupted acceptance completes it (as `accept <id>` does) and a re-run
/// after a completed one is a no-op; else `NOT_FOUND` saying who accepted
/// the lane's last packet, or that none hands it over.
fn settled_packet_of(ctx: &Ctx, feature: &str, branch: &str) -> Result<String> {
    use crate::records::packet::PacketVersion;
    use crate::store::records::Records;
    let actor = ctx.actor()?;
    let (known, _) = Records::<PacketVersion>::new(&ctx.store).known(ctx.remote())?;
    let mut accepted: Vec<(String, String, String)> = known
        .into_iter()
        .map(|k| k.value)
        .filter(|v| v.packet.branch.as_deref() == Some(branch))
        .filter_map(|v| {
            let acc = v.acceptance?;
            Some((
                acc.accepted_at,
                acc.accepted_by,
                format!("{}/{}", v.packet.plan, v.packet.id),
            ))
        })
        .collect();
    accepted.sort();
    if let Some((_, _, id)) = accepted.iter().rev().find(|(_, by, _)| *by == actor) {
        return Ok(id.clone());
    }
    match accepted.last() {
        Some((at, by, id)) => Err(Error::new(
            Code::NotFound,
            format!(
                "no open packet hands over lane {feature}: its last packet, {id}, was accepted by {by} at {at}"
            ),
        )
        .hint(format!(
            "`git swarm lane list` shows who holds lane {feature} now; ask {by} to hand it off"
        ))),
        None => Err(Error::new(
            Code::NotFound,
            format!("no packet hands over lane {feature}"),
        )
        .hint("the lane's owner writes one with `git swarm handoff`; `git swarm sync` fetches the shared ones")),
    }
}
