//! `git swarm forecast`: which live lanes would conflict with each other,
//! or with their base, if merged now — before any PR exists. Every pair of
//! active lanes (records local or mirrored; branches local or fetched from
//! the other machines) and each lane against its base's current tip is
//! merged in memory (`git merge-tree --write-tree`); results are cached by
//! (merge base, tree A, tree B) under `<common dir>/swarm/cache/forecast/`.
//!
//!
//! A lane's head is its branch, or its published snapshot of uncommitted
//! work (`refs/swarm/wip/<feature>`) while that sits on the branch's head;
//! a snapshot the branch moved past is ignored and flagged stale. Lanes
//! whose changes touch someone else's reserved paths are listed
//! ([`reserved`]). Each run keeps a per-plan summary for `status`
//! ([`crate::records::forecast`]); [`pushed`] is the pre-push hook's check.

mod heads;
mod hunks;
mod merge_cache;
mod pushed;
mod reserved;
mod run;
mod summary;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::session::Ctx;

pub use heads::{HeadSource, LaneHead, Skipped, WipView};
pub use pushed::{pushed, PushConflict};
pub use reserved::Reserved;

/// What one merge forecasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Merges cleanly and the two sides touch no file in common.
    Clean,
    /// Merges cleanly, but both sides change the same files (a softer warning).
    SameFiles,
    /// git would stop with conflicts.
    Conflict,
}

/// One conflicting path: the kinds of conflict git named and the first
/// conflicting hunk of each side (short; empty when there are no markers,
/// e.g. modify/delete or binary files).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ConflictPath {
    pub path: String,
    pub kinds: Vec<String>,
    /// The first side's lines (lane `a`, or the base in a base check).
    pub ours: Vec<String>,
    /// The second side's lines (lane `b`, or the lane in a base check).
    pub theirs: Vec<String>,
}

/// The outcome of merging two commits: what is cached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Outcome {
    pub conflicts: Vec<ConflictPath>,
    /// Files both sides changed that merged without conflict.
    pub same_files: Vec<String>,
}

impl Outcome {
    pub fn verdict(&self) -> Verdict {
        if !self.conflicts.is_empty() {
            Verdict::Conflict
        } else if !self.same_files.is_empty() {
            Verdict::SameFiles
        } else {
            Verdict::Clean
        }
    }
}

/// How a result was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// `git merge-tree` ran.
    Merged,
    /// Read from the cache.
    Cached,
    /// One side contains the other: clean without merging.
    Trivial,
}

/// Two lanes forecast against each other.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub a: String,
    pub b: String,
    pub verdict: Verdict,
    pub conflicts: Vec<ConflictPath>,
    pub same_files: Vec<String>,
    pub via: Via,
}

/// A lane forecast against its base's current tip.
#[derive(Debug, Clone, Serialize)]
pub struct BaseCheck {
    pub lane: String,
    pub base: String,
    pub base_commit: String,
    /// The base has commits the lane does not (it moved since the lane forked).
    pub base_moved: bool,
    pub verdict: Verdict,
    pub conflicts: Vec<ConflictPath>,
    pub same_files: Vec<String>,
    pub via: Via,
}

/// `git swarm forecast`'s result.
#[derive(Debug, Clone, Serialize)]
pub struct Forecast {
    pub plan: Option<String>,
    /// Whether lane records and branches were fetched from the remote first.
    pub fetched: bool,
    pub lanes: Vec<LaneHead>,
    /// Active lanes with no branch here or on the remote (nothing to merge).
    pub skipped: Vec<Skipped>,
    pub pairs: Vec<Pair>,
    pub bases: Vec<BaseCheck>,
    /// `git merge-tree` runs this forecast made.
    pub merged: usize,
    /// Results read from the cache.
    pub cached: usize,
    /// Merges that were not needed (one side contains the other).
    pub trivial: usize,
    /// Pairs and base checks forecast to conflict.
    pub conflicts: usize,
    /// Pairs that touch the same files without conflicting.
    pub same_files: usize,
    /// Lanes whose changes touch a path someone else reserved.
    pub reserved: Vec<Reserved>,
    /// Lanes whose snapshot the branch moved past (ignored).
    pub stale_snapshots: Vec<String>,
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// `git swarm forecast [--plan P]`: fetches first unless offline.
pub fn forecast(ctx: &Ctx, plan: Option<&str>) -> Result<Forecast> {
    forecast_fetching(ctx, plan, !ctx.offline())
}

/// The forecast over what was fetched before (the dashboard, whose own
/// fetches are paced by its server).
pub fn forecast_fetched(ctx: &Ctx, plan: Option<&str>) -> Result<Forecast> {
    forecast_fetching(ctx, plan, false)
}

fn forecast_fetching(ctx: &Ctx, plan: Option<&str>, fetch: bool) -> Result<Forecast> {
    crate::git::version::require(crate::git::version::Need::MergeTreeWriteTree)?;
    if let Some(p) = plan {
        crate::names::validate_name("plan", p)?;
    }
    let mut warnings = Vec::new();
    // Offline, what was fetched before (remote-tracking branches, the
    // mirror) still counts; only the fetch is skipped.
    let remote = ctx.settings.remote.clone();
    let remotes = heads::Remotes::of(ctx);
    let fetched = match (&remote, fetch) {
        (Some(r), true) => match heads::fetch(ctx, r, remotes.code) {
            Ok(()) => ctx.store.run.reach.unreached().as_deref() != Some(r.as_str()),
            Err(e) => {
                warnings.push(format!(
                    "could not fetch from {r} ({}); forecasting over what was fetched before",
                    e.message
                ));
                false
            }
        },
        _ => false,
    };
    let (all, skipped, mut notes) = heads::live(ctx, remotes, fetched)?;
    warnings.append(&mut notes);
    if let Some(p) = plan {
        let known = all.iter().any(|l| l.plan == p)
            || skipped.iter().any(|s| s.plan == p)
            || plan_known(ctx, remote.as_deref(), p)?;
        if !known {
            return Err(Error::new(Code::NotFound, format!("no plan '{p}' here"))
                .hint("list plans with `git swarm plan list`"));
        }
    }
    let in_plan = |l: &LaneHead| plan.is_none_or(|p| l.plan == p);
    let mut jobs = Vec::new();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            if in_plan(a) || in_plan(b) {
                jobs.push(Some(run::Job::pair(a, b)));
            }
        }
    }
    for l in all.iter().filter(|l| in_plan(l)) {
        jobs.push(run::Job::base(l));
    }
    let done = run::run(ctx, jobs, &mut warnings)?;
    let lanes: Vec<LaneHead> = all.into_iter().filter(|l| in_plan(l)).collect();
    let reserved = reserved::check(ctx, remote.as_deref(), &lanes, &mut warnings)?;
    let stale_snapshots = stale(&lanes);
    let mut f = Forecast {
        plan: plan.map(str::to_string),
        fetched,
        lanes,
        skipped: skipped
            .into_iter()
            .filter(|s| plan.is_none_or(|p| s.plan == p))
            .collect(),
        pairs: Vec::new(),
        bases: Vec::new(),
        merged: 0,
        cached: 0,
        trivial: 0,
        conflicts: 0,
        same_files: 0,
        reserved,
        stale_snapshots,
        warnings,
    };
    for (job, outcome, via) in done {
        f.add(job, outcome, via);
    }
    if let Err(e) = summary::keep(ctx, remotes, &f) {
        f.warnings.push(format!(
            "could not keep the forecast summary for `status` ({e})"
        ));
    }
    Ok(f)
}

impl Forecast {
    /// Count one merge's answer and file it as a pair or a base check.
    fn add(&mut self, job: run::Job, outcome: Outcome, via: Via) {
        let f = self;
        match via {
            Via::Merged => f.merged += 1,
            Via::Cached => f.cached += 1,
            Via::Trivial => f.trivial += 1,
        }
        let verdict = outcome.verdict();
        if verdict == Verdict::Conflict {
            f.conflicts += 1;
        }
        match job.kind {
            run::Kind::Pair { a, b } => {
                if verdict == Verdict::SameFiles {
                    f.same_files += 1;
                }
                f.pairs.push(Pair {
                    a,
                    b,
                    verdict,
                    conflicts: outcome.conflicts,
                    same_files: outcome.same_files,
                    via,
                });
            }
            run::Kind::Base {
                lane,
                base,
                base_moved,
            } => f.bases.push(BaseCheck {
                lane,
                base,
                base_commit: job.ours.to_string(),
                base_moved,
                verdict,
                conflicts: outcome.conflicts,
                same_files: outcome.same_files,
                via,
            }),
        }
    }
}

/// The lanes whose snapshot the branch moved past.
fn stale(lanes: &[LaneHead]) -> Vec<String> {
    lanes
        .iter()
        .filter(|l| {
            l.snapshot
                .as_ref()
                .is_some_and(|s| s.standing == crate::records::lane::wip::Standing::Stale)
        })
        .map(|l| l.feature.clone())
        .collect()
}

/// Whether plan `p` has a record here or in the mirror.
fn plan_known(ctx: &Ctx, remote: Option<&str>, p: &str) -> Result<bool> {
    let local = crate::records::plan::plan_ref(p);
    let mut refs = vec![local.clone()];
    if let Some(r) = remote {
        refs.push(crate::store::mirror::mirror_ref(r, &local));
    }
    for r in refs {
        if ctx.store.git.resolve(&r)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The lanes a forecast names in conflict, for a short summary.
pub fn conflicting_lanes(f: &Forecast) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in f.pairs.iter().filter(|p| p.verdict == Verdict::Conflict) {
        out.insert(p.a.clone());
        out.insert(p.b.clone());
    }
    for b in f.bases.iter().filter(|b| b.verdict == Verdict::Conflict) {
        out.insert(b.lane.clone());
    }
    out
}
