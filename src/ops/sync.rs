//! `git swarm sync`: reconcile local swarm refs with the shared remote.
//!
//! Fetch `refs/swarm/*` and `refs/notes/swarm` into
//! `refs/swarm-remotes/<remote>/…`, reconcile every ref as its kind says
//! ([`crate::store::reconcile`], with the kinds of `crate::records::kinds()`),
//! and publish everything that must go out in atomic pushes of at most
//! `swarm.pushBatch` refs where each ref carries the value we expect the
//! remote to hold; a lost race is retried from a fresh fetch a bounded
//! number of times (the store's one publication,
//! [`crate::store::records::Publish`], whose rounds fetch the whole mirror and
//! push independent records).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::session::Ctx;
use crate::store::archive::{self, GcReport};
use crate::store::reconcile::{reconcile, Conflict, Fenced, Lost, Moved, Reconciled};
use crate::store::records::Publish;
use crate::store::Store;

const MAX_ATTEMPTS: usize = 5;

#[derive(Debug, Clone, Serialize, Default)]
pub struct SyncReport {
    pub remote: String,
    /// Local refs fast-forwarded (or created) from the remote.
    pub pulled: Vec<String>,
    /// Refs pushed to the remote.
    pub pushed: Vec<String>,
    /// Refs where both sides moved and a merge commit joined them.
    pub merged: Vec<String>,
    /// Leader records where the local divergent record was fenced by the published one.
    pub fenced: Vec<Fenced>,
    /// Packets whose local acceptance lost to the one published first.
    pub superseded: Vec<Fenced>,
    /// Records whose local writes were not joined (a lane handed over
    /// since, written here for its old owner): sync fails naming them.
    pub moved: Vec<Moved>,
    /// Records created independently on both sides: left untouched locally.
    pub conflicts: Vec<Conflict>,
    /// Notes about content that could not be merged automatically.
    pub warnings: Vec<String>,
    /// Writes of this clone that could not be kept on the published
    /// version (sync exits 3 naming them; each local version is kept
    /// under `refs/swarm-lost/`).
    pub lost: Vec<Lost>,
    /// Live refs removed (here or on the remote) because `gc` archived them.
    pub archived: Vec<String>,
    /// What `gc` folded first when the live ref count passed swarm.gcThreshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcReport>,
    pub attempts: usize,
    pub pushes: usize,
}

impl SyncReport {
    /// Add one round's findings, keeping each fact once (a retry starts
    /// from a fresh fetch: what it finds again is the same fact).
    fn absorb(&mut self, round: Reconciled) {
        fn merge<T: Serialize>(into: &mut Vec<T>, from: Vec<T>) {
            for item in from {
                let key = serde_json::to_string(&item).expect("serialisable");
                if !into
                    .iter()
                    .any(|x| serde_json::to_string(x).expect("serialisable") == key)
                {
                    into.push(item);
                }
            }
        }
        merge(&mut self.pulled, round.pulled);
        merge(&mut self.merged, round.merged);
        merge(&mut self.fenced, round.fenced);
        merge(&mut self.superseded, round.superseded);
        merge(&mut self.moved, round.moved);
        merge(&mut self.conflicts, round.conflicts);
        merge(&mut self.warnings, round.warnings);
        merge(&mut self.lost, round.lost);
        merge(&mut self.archived, round.archived);
    }
}

/// `progress` hears what sync is doing (the CLI shows it on a TTY).
pub fn sync(ctx: &Ctx, actor: &str, progress: &mut dyn FnMut(&str)) -> Result<SyncReport> {
    let before = crate::records::lane::holders(&ctx.store);
    let mut report = sync_rounds(ctx, actor, progress)?;
    report.warnings.extend(unbacked_moves(&ctx.store, &before));
    Ok(report)
}

fn sync_rounds(ctx: &Ctx, actor: &str, progress: &mut dyn FnMut(&str)) -> Result<SyncReport> {
    let remote = ctx.remote().ok_or_else(|| {
        Error::new(
            Code::RemoteMissing,
            "sync needs a remote and none is configured",
        )
        .hint(
            "add one (`git remote add origin <url>`) or set swarm.remote; --offline disables sync",
        )
    })?;
    let store = &ctx.store;
    let mut report = SyncReport {
        remote: remote.to_string(),
        gc: gc_first(store, actor, progress)?,
        ..Default::default()
    };
    let kinds = crate::records::kinds();
    let exhausted = |_: &[String]| {
        Error::new(
            Code::PushRejected,
            format!("the remote kept changing: {MAX_ATTEMPTS} sync attempts lost the race"),
        )
        .hint("run `git swarm sync` again")
    };
    let pushed = Publish::new(store, Some(remote))
        .attempts(MAX_ATTEMPTS)
        .exhausted(exhausted)
        .run(|txn| {
            report.attempts = txn.attempt();
            progress(&format!("fetching swarm refs from {remote}…"));
            txn.fetch_mirror()?;
            let mut this_round = reconcile(store, kinds, remote, actor)?;
            let updates = std::mem::take(&mut this_round.updates);
            report.absorb(this_round);
            if updates.is_empty() {
                return Ok(Vec::new());
            }
            crate::failpoint::point("sync:reconciled");
            let batch = crate::store::remote::push_batch(store, remote);
            let pushes = updates.len().div_ceil(batch.min(updates.len()).max(1));
            let how = match pushes {
                1 => "one atomic push".to_string(),
                n => format!("{n} atomic pushes of at most {batch} refs"),
            };
            progress(&format!(
                "publishing {} to {remote} in {how}…",
                crate::text::count(updates.len(), "ref", "refs")
            ));
            report.pushes += pushes;
            // Deletions (records gc archived) are reported as `archived`.
            let pushed: Vec<String> = updates
                .iter()
                .filter(|u| u.new.is_some())
                .map(|u| u.refname.clone())
                .collect();
            txn.push_independent(updates);
            Ok(pushed)
        })?
        .then;
    report.pushed.extend(pushed);
    report.pushed.sort();
    report.pushed.dedup();
    Ok(report)
}

/// Past `swarm.gcThreshold` live refs, `gc` runs first.
fn gc_first(
    store: &Store,
    actor: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<GcReport>> {
    if archive::live_refs(store)?.len() <= crate::config::gc_threshold(store) {
        return Ok(None);
    }
    progress("more live swarm refs than swarm.gcThreshold: running gc first…");
    let age = crate::config::gc_age(store)?;
    archive::gc(store, crate::records::kinds(), actor, age, false).map(Some)
}

/// After `sync`: the lanes whose record now names another owner or path
/// than `before` without an accepted handoff backing it, one warning each.
/// Such a move is not honoured by `lane prune`.
fn unbacked_moves(store: &Store, before: &BTreeMap<String, (String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (feature, (owner, path)) in crate::records::lane::holders(store) {
        let Some((old_owner, old_path)) = before.get(&feature) else {
            continue;
        };
        if *old_owner == owner && crate::fsutil::same_path(Path::new(old_path), Path::new(&path)) {
            continue;
        }
        if crate::records::packet::backs_lane(store, None, &feature, &owner, &path).unwrap_or(false)
        {
            continue;
        }
        out.push(format!(
            "lane {feature} now names {owner} at {path} (was {old_owner} at {old_path}) without an accepted handoff: `lane prune` and `lane rm` keep this clone's worktree; check `git log {}`",
            crate::records::lane::lane_ref(&feature)
        ));
    }
    out
}
