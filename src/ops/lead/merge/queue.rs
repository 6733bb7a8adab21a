//! Which lanes the queue takes and in what order: the lanes of the plan,
//! their branches fetched, each ready or waiting, ordered by the conflict
//! forecast.

use super::*;

/// The plan's active lanes (only the named ones when some are named; a
/// name the plan has no active lane of is refused).
pub(super) fn lanes(ctx: &Ctx, plan: &str, features: &[String]) -> Result<Vec<Lane>> {
    let (lanes, _) = lane::known(&ctx.store, ctx.remote())?;
    let mut lanes: Vec<Lane> = lanes
        .into_iter()
        .filter(|l| l.record.is_active() && of_plan(ctx, &l.record, plan))
        .collect();
    for f in features {
        if !lanes.iter().any(|l| &l.feature == f) {
            return Err(Error::new(
                Code::NotFound,
                format!("plan '{plan}' has no active lane '{f}'"),
            )
            .hint(format!("`git swarm lane list` shows the lanes; `git swarm lead merge --plan {plan}` takes every ready one")));
        }
    }
    if !features.is_empty() {
        lanes.retain(|l| features.contains(&l.feature));
    }
    Ok(lanes)
}

/// The lanes' branches and bases fetched as the code remote has them, each
/// lane ready or waiting, the ready ones in landing order with the
/// conflicting pairs among them.
pub(super) fn take(
    git: &Git,
    code: &str,
    lanes: Vec<Lane>,
    named: &[String],
) -> Result<(Vec<Item>, Vec<Waiting>, Vec<Pair>)> {
    let mut specs: Vec<String> = Vec::new();
    for l in &lanes {
        let b = base_branch(&l.record.base, code);
        specs.push(format!("+refs/heads/{b}:refs/remotes/{code}/{b}"));
        specs.push(format!(
            "+refs/heads/{0}:refs/remotes/{code}/{0}",
            l.record.branch
        ));
    }
    specs.sort();
    specs.dedup();
    fetch_each(git, code, &specs);
    let mut items = Vec::new();
    let mut waiting = Vec::new();
    for l in lanes {
        let is_named = named.contains(&l.feature);
        match ready(git, code, l, is_named)? {
            Ok(item) => items.push(item),
            Err(w) => waiting.push(w),
        }
    }
    let pairs = forecast_pairs(git, &items);
    order(&mut items, &pairs);
    Ok((items, waiting, pairs))
}

/// Whether the lane works for `plan`: its task is one of the plan's, or it
/// runs on the plan itself or on a child plan of it.
fn of_plan(ctx: &Ctx, rec: &lane::LaneRecord, plan: &str) -> bool {
    if rec.plan == plan {
        return true;
    }
    if let Some((p, _)) = rec.task.as_deref().and_then(|t| t.split_once('/')) {
        return p == plan;
    }
    crate::records::plan::load(&ctx.store, &rec.plan)
        .ok()
        .flatten()
        .is_some_and(|p| p.record.parent.as_deref() == Some(plan))
}

/// The branch at the code remote a lane's base names (`origin/main` →
/// `main`, `refs/heads/main` → `main`).
pub fn base_branch(base: &str, code: &str) -> String {
    let b = base.strip_prefix("refs/remotes/").unwrap_or(base);
    let b = b.strip_prefix(&format!("{code}/")).unwrap_or(b);
    b.strip_prefix("refs/heads/").unwrap_or(b).to_string()
}

/// Fetch each refspec on its own: a lane whose branch was never pushed
/// must not stop the others (it is reported as waiting).
fn fetch_each(git: &Git, code: &str, specs: &[String]) {
    if git.fetch(code, specs).is_ok() {
        return;
    }
    for s in specs {
        let _ = git.fetch(code, std::slice::from_ref(s));
    }
}

/// A lane is ready when its branch is at the code remote with work beyond
/// its base and its last report is `PR open` or `done` (or it was named).
fn ready(
    git: &Git,
    code: &str,
    lane: Lane,
    named: bool,
) -> Result<std::result::Result<Item, Waiting>> {
    let feature = lane.feature.clone();
    let wait = |why: String| {
        Ok(Err(Waiting {
            lane: feature.clone(),
            why,
        }))
    };
    let base = base_branch(&lane.record.base, code);
    let tracking = format!("refs/remotes/{code}/{base}");
    let pushed = format!("refs/remotes/{code}/{}", lane.record.branch);
    let Some(head) = git.rev_parse(&pushed)? else {
        return wait(format!(
            "its branch {} is not on {code} (push it: `git push {code} {}`)",
            lane.record.branch, lane.record.branch
        ));
    };
    if git.rev_parse(&tracking)?.is_none() {
        return wait(format!("its base {base} is not on {code}"));
    }
    if head == lane.record.base_commit {
        return wait(format!(
            "its branch {} has no commits beyond its base",
            lane.record.branch
        ));
    }
    let report = lane.record.last_report.as_ref().map(|r| r.kind.clone());
    let reported = matches!(
        report,
        Some(LastReportKind::PrOpen) | Some(LastReportKind::Done)
    );
    if !reported && !named {
        let last = lane
            .record
            .last_report
            .as_ref()
            .map(|r| format!("'{}'", r.text))
            .unwrap_or_else(|| "none".into());
        return wait(format!(
            "its last report is {last}, not `PR open` or `done` (the lane reports `git swarm report done`, or name it: `git swarm lead merge {feature}`)"
        ));
    }
    Ok(Ok(Item {
        lane,
        head,
        base,
        tracking,
    }))
}

/// A pair of lanes that `git merge-tree` says conflict, and their paths.
pub(super) struct Pair {
    a: String,
    b: String,
    paths: Vec<String>,
}

/// The conflict forecast between the ready lanes' heads (the same
/// `git merge-tree` the forecast runs).
fn forecast_pairs(git: &Git, items: &[Item]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        for y in &items[i + 1..] {
            if let Ok(r) = git.merge_tree_report(&x.head, &y.head) {
                if !r.conflicts.is_empty() {
                    out.push(Pair {
                        a: x.lane.feature.clone(),
                        b: y.lane.feature.clone(),
                        paths: r.conflicts.into_iter().map(|(p, _)| p).collect(),
                    });
                }
            }
        }
    }
    out
}

/// The lanes that conflict with nothing first, then by how many lanes
/// they conflict with, then by name.
fn order(items: &mut [Item], pairs: &[Pair]) {
    let count = |f: &str| pairs.iter().filter(|p| p.a == f || p.b == f).count();
    items.sort_by(|x, y| {
        (count(&x.lane.feature), &x.lane.feature).cmp(&(count(&y.lane.feature), &y.lane.feature))
    });
}

pub(super) fn pairs_of(pairs: &[Pair], f: &str) -> Vec<String> {
    pairs
        .iter()
        .filter(|p| p.a == f || p.b == f)
        .map(|p| format!("{} × {} ({})", p.a, p.b, p.paths.join(", ")))
        .collect()
}
