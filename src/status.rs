//! `git swarm status`: the plans as a tree (children under their parent),
//! each with its leader and epoch and its lanes — read straight from the
//! refs, the way a successor arriving on a fresh machine would see them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::output::Output;
use crate::plan::{self, Plan};
use crate::store::record::{self, Unreadable};
use crate::store::Store;

#[derive(Debug, Clone, Serialize)]
pub struct PlanStatus {
    pub plan: String,
    pub title: String,
    pub status: String,
    pub parent: Option<String>,
    pub leader: Option<String>,
    pub epoch: Option<u64>,
    pub lease_until: Option<String>,
    pub lanes: Vec<LaneStatus>,
    pub children: Vec<PlanStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LaneStatus {
    pub feature: String,
    pub owner: Option<String>,
    pub branch: Option<String>,
    pub state: Option<String>,
}

/// Plans with their leaders (the newer of the local and the published
/// record) and active lanes. A record that does not parse is an error, not
/// a silent gap in the picture.
pub fn collect(
    store: &Store,
    remote: Option<&str>,
    only: Option<&str>,
) -> Result<(Vec<PlanStatus>, Vec<Unreadable>)> {
    let (plans, mut unreadable): (Vec<Plan>, _) = plan::all(store)?;
    let (lanes, bad_lanes) = crate::lane::all(store)?;
    unreadable.extend(bad_lanes);
    let mut lanes_by_plan: BTreeMap<String, Vec<LaneStatus>> = BTreeMap::new();
    for lane in lanes {
        if !lane.record.is_active() {
            continue;
        }
        lanes_by_plan
            .entry(lane.record.plan.clone())
            .or_default()
            .push(LaneStatus {
                feature: lane.feature,
                owner: Some(lane.record.owner),
                branch: Some(lane.record.branch),
                state: Some(lane.record.state),
            });
    }
    // Leader records that exist here or on the remote, listed once: a plan
    // without one is not looked up (that would search the gc archive per plan).
    let mut led: std::collections::BTreeSet<String> = store
        .list_refs("refs/swarm/lead/")?
        .into_iter()
        .map(|(r, _)| r.trim_start_matches("refs/swarm/lead/").to_string())
        .collect();
    if let Some(r) = remote {
        let prefix = crate::sync::mirror_ref(r, "refs/swarm/lead/");
        led.extend(
            store
                .list_refs(&prefix)?
                .into_iter()
                .map(|(name, _)| name.trim_start_matches(&prefix).to_string()),
        );
    }
    let mut flat: BTreeMap<String, PlanStatus> = BTreeMap::new();
    for p in &plans {
        let lead = if led.contains(&p.record.plan) {
            match crate::lead::known(store, remote, &p.record.plan) {
                Ok(lead) => lead,
                Err(e) => {
                    let refname = format!("refs/swarm/lead/{}", p.record.plan);
                    unreadable.push(Unreadable::new("lead", &p.record.plan, &refname, &e));
                    None
                }
            }
        } else {
            None
        };
        flat.insert(
            p.record.plan.clone(),
            PlanStatus {
                plan: p.record.plan.clone(),
                title: p.record.title.clone(),
                status: p.record.status.clone(),
                parent: p.record.parent.clone(),
                leader: lead
                    .as_ref()
                    .and_then(|l| l.current_leader())
                    .map(str::to_string),
                epoch: lead.as_ref().map(|l| l.epoch),
                lease_until: lead.as_ref().and_then(|l| l.lease_until.clone()),
                lanes: lanes_by_plan.remove(&p.record.plan).unwrap_or_default(),
                children: Vec::new(),
            },
        );
    }
    // Attach children to parents, deepest first, so the tree is built bottom-up.
    let depth = |name: &str, flat: &BTreeMap<String, PlanStatus>| {
        let mut d = 0;
        let mut cur = flat.get(name).and_then(|p| p.parent.clone());
        while let Some(p) = cur {
            d += 1;
            if d > 64 {
                break;
            }
            cur = flat.get(&p).and_then(|x| x.parent.clone());
        }
        d
    };
    let mut order: Vec<(usize, String)> =
        flat.keys().map(|k| (depth(k, &flat), k.clone())).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (d, name) in order {
        if d == 0 {
            continue;
        }
        let node = flat.remove(&name).expect("present");
        let parent = node.parent.clone().unwrap_or_default();
        match flat.get_mut(&parent) {
            Some(p) => {
                p.children.push(node);
                p.children.sort_by(|a, b| a.plan.cmp(&b.plan));
            }
            None => {
                flat.insert(name, node);
            }
        }
    }
    let mut roots: Vec<PlanStatus> = flat.into_values().collect();
    if let Some(only) = only {
        roots = find(roots, only).into_iter().collect();
    }
    Ok((roots, unreadable))
}

fn find(nodes: Vec<PlanStatus>, name: &str) -> Option<PlanStatus> {
    for n in nodes {
        if n.plan == name {
            return Some(n);
        }
        if let Some(found) = find(n.children, name) {
            return Some(found);
        }
    }
    None
}

fn render(nodes: &[PlanStatus], indent: usize, out: &mut String) {
    for n in nodes {
        let pad = "  ".repeat(indent);
        let lead = match (&n.leader, n.epoch) {
            (Some(l), Some(e)) => format!("lead {l} (epoch {e})"),
            (None, Some(e)) => format!("no leader (epoch {e})"),
            _ => "no leader".to_string(),
        };
        out.push_str(&format!(
            "{pad}{} [{}] — {} — {lead}\n",
            n.plan, n.status, n.title
        ));
        for lane in &n.lanes {
            out.push_str(&format!(
                "{pad}  lane {} on {} owner {}{}\n",
                lane.feature,
                lane.branch.as_deref().unwrap_or("?"),
                lane.owner.as_deref().unwrap_or("-"),
                lane.state
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            ));
        }
        render(&n.children, indent + 1, out);
    }
}

pub fn status(ctx: &Ctx, only: Option<&str>) -> Result<Output> {
    if let Some(p) = only {
        plan::require(&ctx.store, p)?;
    }
    let (roots, unreadable) = collect(&ctx.store, ctx.remote(), only)?;
    let mut text = String::new();
    if roots.is_empty() && unreadable.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    render(&roots, 0, &mut text);
    let json = serde_json::json!({
        "remote": ctx.settings.remote,
        "plans": roots,
    });
    Ok(record::report_unreadable(
        Output::new(json, text),
        &unreadable,
    ))
}
