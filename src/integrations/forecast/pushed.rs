//! The pre-push hook's forecast: a pushed lane branch merged in memory with
//! every other live lane's head, as this clone knows them (local branches,
//! remote-tracking branches and snapshots as last fetched: no fetch), the
//! forecast cache answering what it already knows. The hook only warns.

use std::collections::{HashMap, HashSet};

use gix::ObjectId;
use serde::Serialize;

use super::heads::{self, LaneHead};
use super::run::{self, Kind};
use super::Verdict;
use crate::error::Result;
use crate::session::Ctx;

/// A pushed lane head forecast to conflict with a sibling lane.
#[derive(Debug, Clone, Serialize)]
pub struct PushConflict {
    /// The lane being pushed.
    pub lane: String,
    /// The sibling lane it conflicts with.
    pub with: String,
    pub paths: Vec<String>,
}

/// The lane branches among git's pre-push lines (`<local ref> <local sha>
/// <remote ref> <remote sha>`): (branch, pushed commit); deletions left out.
fn lane_pushes(input: &str) -> Vec<(String, ObjectId)> {
    let mut out = Vec::new();
    for line in input.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, sha, remote_ref, _] = f[..] else {
            continue;
        };
        let Ok(id) = ObjectId::from_hex(sha.as_bytes()) else {
            continue;
        };
        if id.is_null() {
            continue;
        }
        if let Some(branch) = remote_ref.strip_prefix("refs/heads/") {
            if branch.starts_with("feat/") {
                out.push((branch.to_string(), id));
            }
        }
    }
    out
}

/// `hook pre-push`: the conflicts of each pushed lane head with the other
/// live lanes. Cheap when nothing pushed is a lane branch (no record read).
pub fn pushed(ctx: &Ctx, input: &str) -> Result<Vec<PushConflict>> {
    let pushes = lane_pushes(input);
    if pushes.is_empty() {
        return Ok(Vec::new());
    }
    if !crate::git::version::has(crate::git::version::Need::MergeTreeWriteTree) {
        return Ok(Vec::new());
    }
    let (all, _, _) = heads::live(ctx, heads::Remotes::of(ctx), false)?;
    let mut jobs = Vec::new();
    for (branch, id) in &pushes {
        let Some(lane) = all.iter().find(|l| &l.branch == branch) else {
            continue;
        };
        let pushed = LaneHead {
            head_id: *id,
            ..lane.clone()
        };
        for other in all.iter().filter(|o| o.feature != lane.feature) {
            jobs.push(Some(run::Job::pair(&pushed, other)));
        }
    }
    let mut warnings = Vec::new();
    let mut out = Vec::new();
    let mut own: HashMap<ObjectId, Option<HashSet<String>>> = HashMap::new();
    for (job, outcome, _) in run::run(ctx, jobs, &mut warnings)? {
        if outcome.verdict() != Verdict::Conflict {
            continue;
        }
        let Kind::Pair { a, b } = job.kind else {
            continue;
        };
        let lane = all.iter().find(|l| l.feature == a);
        let own = match own.entry(job.ours) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(own_changes(ctx, job.ours, lane.and_then(|l| l.base_id))?)
            }
        };
        // A conflict in a path the pushed lane never changed is between its
        // base and the other lane (the other lane's base check shows it).
        let paths: Vec<String> = outcome
            .conflicts
            .into_iter()
            .map(|c| c.path)
            .filter(|p| own.as_ref().is_none_or(|own| own.contains(p)))
            .collect();
        if !paths.is_empty() {
            out.push(PushConflict {
                lane: a,
                with: b,
                paths,
            });
        }
    }
    Ok(out)
}

/// The paths the lane at `head` changed since it last took its base:
/// `head` against its merge base with the base's tip. None when the base
/// is not known here (every conflict then counts).
fn own_changes(
    ctx: &Ctx,
    head: ObjectId,
    base: Option<ObjectId>,
) -> Result<Option<HashSet<String>>> {
    let Some(base) = base else { return Ok(None) };
    let Some(fork) = ctx.store.merge_base(head, base)? else {
        return Ok(None);
    };
    let listed = ctx.store.git.run([
        "diff",
        "--name-only",
        "--no-renames",
        "-z",
        &fork.to_string(),
        &head.to_string(),
    ])?;
    Ok(Some(
        listed
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lane_branches_that_are_not_deleted() {
        let a = "1".repeat(40);
        let z = "0".repeat(40);
        let input = format!(
            "refs/heads/feat/x {a} refs/heads/feat/x {z}\n\
             refs/heads/main {a} refs/heads/main {z}\n\
             (delete) {z} refs/heads/feat/y {a}\n\
             garbage\n"
        );
        let got = lane_pushes(&input);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "feat/x");
    }
}
