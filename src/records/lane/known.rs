//! The lanes this clone knows and the lane record's writes outside `lane
//! new`: reads over the store's generic ones ([`Records`]), and handing a
//! lane over after an accepted handoff.

use std::collections::BTreeMap;
use std::path::Path;

use gix::ObjectId;

use super::{handed, Lane, LaneRecord};
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::fsutil::same_path;
use crate::store::records::{Record, Records, Update};
use crate::store::yaml::Unreadable;
use crate::store::{Event, Store};

fn records(store: &Store) -> Records<'_, LaneRecord> {
    Records::new(store)
}

/// Every lane known here (local, or `remote`'s mirror as last fetched),
/// each at its newer version: what `status`, `lane list` and `lane prune`
/// all show, so they never disagree on a lane's owner.
pub fn known(store: &Store, remote: Option<&str>) -> Result<(Vec<Lane>, Vec<Unreadable>)> {
    let (good, bad) = records(store).known(remote)?;
    Ok((good.into_iter().map(Lane::from).collect(), bad))
}

/// The lane record of `feature`, if it exists.
pub fn load(store: &Store, feature: &str) -> Result<Option<Lane>> {
    Ok(records(store).load(&feature.to_string())?.map(Lane::from))
}

/// A lane as one version of its record (e.g. the mirror's) has it.
pub fn at(store: &Store, feature: &str, commit: ObjectId) -> Result<Lane> {
    records(store)
        .at(&feature.to_string(), commit)
        .map(Lane::from)
}

/// Every lane record that can be read, sorted by feature, and those that
/// cannot (one bad record must not hide every other lane).
pub fn all(store: &Store) -> Result<(Vec<Lane>, Vec<Unreadable>)> {
    let (good, bad) = records(store).all()?;
    Ok((good.into_iter().map(Lane::from).collect(), bad))
}

/// The lane of `feature`; `NOT_FOUND` when it has no record.
pub fn require(store: &Store, feature: &str) -> Result<Lane> {
    crate::names::validate_name("feature", feature)?;
    records(store)
        .require(
            &feature.to_string(),
            "list lanes with `git swarm lane list`",
        )
        .map(Lane::from)
}

/// [`require`] at the newer of the local and the mirrored version (as last
/// fetched through `remote`): what `status` and `lane list` show.
pub fn require_newest(store: &Store, remote: Option<&str>, feature: &str) -> Result<Lane> {
    let local = require(store, feature);
    let refname = LaneRecord::refname(&feature.to_string());
    let tip = crate::store::remote::tip(store, remote, &refname)?;
    match (local, tip.base) {
        (Ok(l), Some(b)) if b != l.commit && !tip.archived => at(store, feature, b),
        (Err(e), Some(b)) if e.code == Code::NotFound && !tip.archived => at(store, feature, b),
        (other, _) => other,
    }
}

/// Each active lane's owner and path, as this clone has them.
pub fn holders(store: &Store) -> BTreeMap<String, (String, String)> {
    all(store)
        .map(|(lanes, _)| lanes)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.record.is_active())
        .map(|l| (l.feature, (l.record.owner, l.record.path)))
        .collect()
}

/// The lane record `current` handed to `new_owner` working at `checkout`.
fn handed_at(
    feature: &str,
    current: &LaneRecord,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
    now: &str,
) -> Option<(LaneRecord, Event)> {
    let here = std::fs::canonicalize(checkout).unwrap_or_else(|_| checkout.to_path_buf());
    let moved = !same_path(Path::new(&current.path), &here);
    let here = here.display().to_string();
    handed(feature, current, new_owner, packet, &here, moved, now)
}

/// After a successor accepts a handoff, the lane whose branch the packet
/// names belongs to them: rewrite the lane's owner (a new version of its
/// record; `sync` publishes it). Idempotent. Returns whether it wrote.
/// When the successor accepts in another checkout (another clone), the lane
/// now lives there: its `path` follows, so commands run in that checkout know
/// the lane and the old worktree no longer speaks for it.
pub fn hand_over(
    store: &Store,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<bool> {
    let Some(lane) = all(store)?
        .0
        .into_iter()
        .find(|l| l.record.is_active() && l.record.branch == branch)
    else {
        return Ok(false);
    };
    let feature = lane.feature;
    let wrote = records(store).update(&feature, |current| {
        let Some(cur) = current.filter(|c| c.value.is_active() && c.value.branch == branch) else {
            return Ok(Update::Keep);
        };
        let now = rfc3339(store.clock.now());
        Ok(
            match handed_at(&feature, &cur.value, new_owner, packet, checkout, &now) {
                Some((record, event)) => Update::Write(record, event),
                None => Update::Keep,
            },
        )
    });
    match wrote {
        Ok(id) => Ok(id.is_some()),
        Err(e) if e.code == Code::CasFailed => Err(Error::new(
            Code::CasFailed,
            "the lane record kept changing; its owner was not updated",
        )
        .hint("run `git swarm accept` again: it completes what is missing")),
        Err(e) => Err(e),
    }
}

/// For `accept` with a remote: the next version of the lane record at
/// `base` (the newest version known here) that hands the lane to
/// `new_owner` at `checkout`, so it is published in the same atomic push as
/// the acceptance. None when the lane is not active on `branch`, or is
/// theirs there already.
pub fn handover_commit(
    store: &Store,
    feature: &str,
    base: ObjectId,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<Option<ObjectId>> {
    let current = at(store, feature, base)?.record;
    if !current.is_active() || current.branch != branch {
        return Ok(None);
    }
    let now = rfc3339(store.clock.now());
    let Some((record, event)) = handed_at(feature, &current, new_owner, packet, checkout, &now)
    else {
        return Ok(None);
    };
    let tree = store.write_tree(&record.to_files()?)?;
    Ok(Some(store.commit(tree, &[base], &event)?))
}

/// A lane taken over after its agent was lost without a packet (`git
/// swarm run` recovering it): the owner becomes `new_owner` and, when the
/// successor works in another checkout (another clone), the lane's path
/// follows it, so commands there know the lane. Published at once (one
/// leased push; offline, the local compare-and-swap). Returns whether it
/// wrote (nothing when the lane is already so, or no longer active).
pub fn recover(
    store: &Store,
    remote: Option<&str>,
    feature: &str,
    new_owner: &str,
    why: &str,
    checkout: &Path,
) -> Result<bool> {
    let here = std::fs::canonicalize(checkout).unwrap_or_else(|_| checkout.to_path_buf());
    let mut wrote = false;
    records(store).publish(remote, &feature.to_string(), |current| {
        wrote = false;
        let Some(cur) = current.filter(|c| c.value.is_active()) else {
            return Ok(Update::Keep);
        };
        let moved = !same_path(Path::new(&cur.value.path), &here);
        if cur.value.owner == new_owner && !moved {
            return Ok(Update::Keep);
        }
        let mut record = cur.value.clone();
        let previous = std::mem::replace(&mut record.owner, new_owner.to_string());
        if moved {
            record.path = here.display().to_string();
        }
        record.updated_at = rfc3339(store.clock.now());
        let event = Event::new(
            "lane-recovered",
            new_owner,
            format!("lane {feature}: taken over from {previous} by {new_owner}: {why}"),
        )
        .trailer("Swarm-Lane", feature.to_string());
        wrote = true;
        Ok(Update::Write(record, event))
    })?;
    Ok(wrote)
}
