//! Run a forecast's merges: trivial ones (one side contains the other) are
//! answered without merging, cached ones from the cache, the rest by
//! `git merge-tree` in parallel worker threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use gix::ObjectId;

use super::heads::LaneHead;
use super::{hunks, merge_cache, ConflictPath, Outcome, Via};
use crate::error::Result;
use crate::git::MergeReport;
use crate::session::Ctx;

/// What is merged: lane `a` with lane `b`, or a lane's base tip with the lane.
#[derive(Debug, Clone)]
pub enum Kind {
    Pair {
        a: String,
        b: String,
    },
    Base {
        lane: String,
        base: String,
        base_moved: bool,
    },
}

/// One merge to forecast: `ours` is the first side, `theirs` the second.
#[derive(Debug, Clone)]
pub struct Job {
    pub ours: ObjectId,
    pub theirs: ObjectId,
    pub kind: Kind,
}

impl Job {
    pub fn pair(a: &LaneHead, b: &LaneHead) -> Job {
        Job {
            ours: a.head_id,
            theirs: b.head_id,
            kind: Kind::Pair {
                a: a.feature.clone(),
                b: b.feature.clone(),
            },
        }
    }

    /// None when the lane's base cannot be resolved here.
    pub fn base(l: &LaneHead) -> Option<Job> {
        Some(Job {
            ours: l.base_id?,
            theirs: l.head_id,
            kind: Kind::Base {
                lane: l.feature.clone(),
                base: l.base.clone(),
                base_moved: false,
            },
        })
    }
}

/// Every job with its outcome and how it was obtained, in job order.
pub fn run(
    ctx: &Ctx,
    jobs: Vec<Option<Job>>,
    warnings: &mut Vec<String>,
) -> Result<Vec<(Job, Outcome, Via)>> {
    let store = &ctx.store;
    let dir = merge_cache::dir(store);
    // `--no-cache` (or GIT_SWARM_NO_CACHE) neither reads nor writes it.
    let use_cache = store.cache.enabled();
    let mut out: Vec<Option<(Job, Outcome, Via)>> = Vec::new();
    let mut pending: Vec<(usize, String)> = Vec::new();
    let mut jobs_kept = Vec::new();
    let mut trees = std::collections::HashMap::new();
    for mut job in jobs.into_iter().flatten() {
        // One merge base per job answers all: trivial (one side contains
        // the other), whether a base moved, and the cache key.
        let base = store.merge_base(job.ours, job.theirs)?;
        if let Kind::Base { base_moved, .. } = &mut job.kind {
            *base_moved = base != Some(job.ours);
        }
        let i = jobs_kept.len();
        jobs_kept.push(job.clone());
        if base == Some(job.ours) || base == Some(job.theirs) {
            out.push(Some((job, Outcome::default(), Via::Trivial)));
            continue;
        }
        let mut tree = |c: ObjectId| -> Result<ObjectId> {
            if let Some(t) = trees.get(&c) {
                return Ok(*t);
            }
            let t = store.commit_tree(c)?;
            trees.insert(c, t);
            Ok(t)
        };
        let key = merge_cache::key(base, tree(job.ours)?, tree(job.theirs)?);
        let cached = if use_cache {
            merge_cache::get(&dir, &key)
        } else {
            None
        };
        match cached {
            Some(outcome) => out.push(Some((job, outcome, Via::Cached))),
            None => {
                out.push(None);
                pending.push((i, key));
            }
        }
    }
    let reports = merge_all(ctx, &jobs_kept, &pending)?;
    let mut unwritable = false;
    for ((i, key), report) in pending.into_iter().zip(reports) {
        let outcome = outcome_of(ctx, &report);
        if use_cache && merge_cache::put(&dir, &key, &outcome).is_err() {
            unwritable = true;
        }
        out[i] = Some((jobs_kept[i].clone(), outcome, Via::Merged));
    }
    if unwritable {
        warnings.push(format!(
            "could not write the forecast cache in {}; the next forecast merges again",
            dir.display()
        ));
    }
    Ok(out.into_iter().flatten().collect())
}

/// `git merge-tree` for each pending job, `workers` at a time.
fn merge_all(ctx: &Ctx, jobs: &[Job], pending: &[(usize, String)]) -> Result<Vec<MergeReport>> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(pending.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<MergeReport>>>> = Mutex::new(vec![None; pending.len()]);
    let git = ctx.store.git.clone();
    let pairs: Vec<(String, String)> = pending
        .iter()
        .map(|(i, _)| (jobs[*i].ours.to_string(), jobs[*i].theirs.to_string()))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let git = git.clone();
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some((ours, theirs)) = pairs.get(k) else {
                        break;
                    };
                    let r = git.merge_tree_report(ours, theirs);
                    results.lock().expect("no worker panics holding it")[k] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no worker panics holding it")
        .into_iter()
        .map(|r| r.expect("every pending merge ran"))
        .collect()
}

/// A merge report as a forecast outcome: each conflicting path with its
/// first hunk per side (read from the merged tree's markers).
fn outcome_of(ctx: &Ctx, report: &MergeReport) -> Outcome {
    let tree = ObjectId::from_hex(report.tree.as_bytes()).ok();
    let conflicts: Vec<ConflictPath> = report
        .conflicts
        .iter()
        .map(|(path, kinds)| {
            let text = tree.and_then(|t| blob_in_tree(ctx, t, path));
            let (ours, theirs) = text.map(|t| hunks::first_hunk(&t)).unwrap_or_default();
            ConflictPath {
                path: path.clone(),
                kinds: kinds.clone(),
                ours,
                theirs,
            }
        })
        .collect();
    let same_files = report
        .auto_merged
        .iter()
        .filter(|p| !report.conflicts.iter().any(|(c, _)| c == *p))
        .cloned()
        .collect();
    Outcome {
        conflicts,
        same_files,
    }
}

/// The text of `path` in tree `tree`, if it is a blob there.
fn blob_in_tree(ctx: &Ctx, tree: ObjectId, path: &str) -> Option<String> {
    let tree = ctx.store.repo.find_tree(tree).ok()?;
    let entry = tree.lookup_entry_by_path(path).ok()??;
    let obj = entry.object().ok()?;
    Some(String::from_utf8_lossy(&obj.data).into_owned())
}
