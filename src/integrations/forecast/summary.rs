//! Keep a forecast's per-plan summary for `status` (see
//! [`crate::records::forecast`]): a forecast of every plan replaces the whole
//! summary; a `--plan P` forecast replaces P's part only (its pairs with
//! other plans' lanes were forecast, not all of theirs).

use std::collections::BTreeSet;

use super::heads::Remotes;
use super::{Forecast, Verdict};
use crate::records::forecast::{self, PlanForecast};
use crate::records::lane::{branch_of, lane_ref, wip::wip_ref};
use crate::session::Ctx;

pub fn keep(ctx: &Ctx, remotes: Remotes<'_>, f: &Forecast) -> std::io::Result<()> {
    let store = &ctx.store;
    let mut summary = match &f.plan {
        Some(_) => forecast::read(store),
        None => forecast::Summary::default(),
    };
    let refs = forecast::values(store, &watched(remotes, f));
    let plan_of = |feature: &str| {
        f.lanes
            .iter()
            .find(|l| l.feature == feature)
            .map(|l| l.plan.as_str())
    };
    let mut plans: BTreeSet<&str> = f.lanes.iter().map(|l| l.plan.as_str()).collect();
    plans.extend(f.skipped.iter().map(|s| s.plan.as_str()));
    plans.extend(f.plan.as_deref());
    let at = crate::clock::rfc3339(store.clock.now());
    let run = format!("{at} {}", f.plan.as_deref().unwrap_or("*"));
    for plan in plans {
        let mine = |feature: &str| plan_of(feature) == Some(plan);
        let pairs = f.pairs.iter().filter(|p| mine(&p.a) || mine(&p.b));
        let bases = f.bases.iter().filter(|b| mine(&b.lane));
        let entry = PlanForecast {
            conflicts: pairs
                .clone()
                .filter(|p| p.verdict == Verdict::Conflict)
                .count()
                + bases.filter(|b| b.verdict == Verdict::Conflict).count(),
            same_files: pairs.filter(|p| p.verdict == Verdict::SameFiles).count(),
            reserved: f.reserved.iter().filter(|r| mine(&r.lane)).count(),
            at: at.clone(),
            run: run.clone(),
        };
        summary.plans.insert(plan.to_string(), entry);
    }
    summary.keep_run(&run, refs);
    forecast::write(store, &summary)
}

/// The refs a forecast read its heads from: each lane's branch (here and
/// as fetched), snapshot and record (here and mirrored), and its base.
fn watched(remotes: Remotes<'_>, f: &Forecast) -> Vec<String> {
    let mut lanes: BTreeSet<(String, String)> = f
        .lanes
        .iter()
        .map(|l| (l.feature.clone(), l.branch.clone()))
        .collect();
    for p in &f.pairs {
        for name in [&p.a, &p.b] {
            if !f.lanes.iter().any(|l| &l.feature == name) {
                lanes.insert((name.clone(), branch_of(name)));
            }
        }
    }
    let mirrored = |r: &str| {
        remotes
            .records
            .map(|m| crate::store::mirror::mirror_ref(m, r))
    };
    let mut out = BTreeSet::new();
    for (feature, branch) in lanes {
        out.insert(format!("refs/heads/{branch}"));
        if let Some(r) = remotes.code {
            out.insert(format!("refs/remotes/{r}/{branch}"));
        }
        for r in [wip_ref(&feature), lane_ref(&feature)] {
            out.extend(mirrored(&r));
            out.insert(r);
        }
    }
    for l in &f.lanes {
        out.insert(format!("refs/heads/{}", l.base));
        out.insert(format!("refs/remotes/{}", l.base));
        if let Some(r) = remotes.code {
            out.insert(format!("refs/remotes/{r}/{}", l.base));
        }
    }
    out.into_iter().collect()
}
