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
    /// Handoff packets of this plan that nobody has accepted yet.
    pub open_packets: Vec<crate::packet::OpenPacket>,
    pub children: Vec<PlanStatus>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LaneStatus {
    pub feature: String,
    pub owner: Option<String>,
    pub branch: Option<String>,
    pub state: Option<String>,
    /// The lane's last report when it is `blocked` (someone must act).
    pub blocked: Option<crate::lane::LastReport>,
}

/// Every record under `prefix` known here, local or in the mirror, each at
/// the newer of its two versions (the rule of every read-only view).
fn newest(
    store: &Store,
    remote: Option<&str>,
    prefix: &str,
) -> Result<Vec<(String, gix::ObjectId)>> {
    let mut names: std::collections::BTreeSet<String> = store
        .list_refs(prefix)?
        .into_iter()
        .map(|(r, _)| r[prefix.len()..].to_string())
        .collect();
    if let Some(r) = remote {
        let mirrored = crate::sync::mirror_ref(r, prefix);
        names.extend(
            store
                .list_refs(&mirrored)?
                .into_iter()
                .map(|(r, _)| r[mirrored.len()..].to_string()),
        );
    }
    let mut out = Vec::new();
    for name in names {
        let tip = crate::sync::tip(store, remote, &format!("{prefix}{name}"))?;
        if let Some(base) = tip.base {
            out.push((name, base));
        }
    }
    Ok(out)
}

/// Plans with their leaders and active lanes, each record the newer of the
/// local and the mirrored (last fetched) version. A record that cannot be
/// read is returned as such (name, ref, why), not a silent gap in the
/// picture, and not a failure that hides every other record.
pub fn collect(
    store: &Store,
    remote: Option<&str>,
    only: Option<&str>,
    mut packets: Vec<crate::packet::OpenPacket>,
) -> Result<(Vec<PlanStatus>, Vec<Unreadable>)> {
    let mut unreadable = Vec::new();
    let mut plans: Vec<Plan> = Vec::new();
    for (name, id) in newest(store, remote, "refs/swarm/plans/")? {
        match store
            .read_commit(id)
            .and_then(|rec| plan::from_record(&name, rec))
        {
            Ok(p) => plans.push(p),
            Err(e) => unreadable.push(Unreadable::new(
                "plan",
                &name,
                &format!("refs/swarm/plans/{name}"),
                &e,
            )),
        }
    }
    let mut lanes = Vec::new();
    for (feature, id) in newest(store, remote, "refs/swarm/lanes/")? {
        match crate::lane::at(store, &feature, id) {
            Ok(l) => lanes.push(l),
            Err(e) => unreadable.push(Unreadable::new(
                "lane",
                &feature,
                &format!("refs/swarm/lanes/{feature}"),
                &e,
            )),
        }
    }
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
                blocked: lane.record.last_report.filter(|r| r.kind == "blocked"),
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
                open_packets: {
                    let (mine, rest) = packets.into_iter().partition(|k| k.plan == p.record.plan);
                    packets = rest;
                    mine
                },
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

/// Titles longer than this are cut (with '…') in the human view, so one
/// plan stays one line; `--json` and `plan show` have the whole title.
pub const TITLE_WIDTH: usize = 48;

/// `text` cut to `width` characters, ending in '…' when cut.
pub fn cut(text: &str, width: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= width {
        return one_line;
    }
    let mut s: String = one_line.chars().take(width.saturating_sub(1)).collect();
    s.push('…');
    s
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
            n.plan,
            n.status,
            cut(&n.title, TITLE_WIDTH)
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
            if let Some(r) = &lane.blocked {
                out.push_str(&format!(
                    "{pad}    {} (reported by {} at {})\n",
                    cut(&r.text, 72),
                    r.by,
                    r.at
                ));
            }
        }
        for p in &n.open_packets {
            out.push_str(&format!(
                "{pad}  packet {} open: {} by {}{} — `git swarm accept {}`\n",
                p.id,
                p.reason,
                p.author,
                p.branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default(),
                p.id
            ));
        }
        render(&n.children, indent + 1, out);
    }
}

pub fn status(ctx: &Ctx, only: Option<&str>) -> Result<Output> {
    // Read-only: the mirror as last fetched counts, `--offline` or not.
    let remote = ctx.settings.remote.as_deref();
    let (packets, unreadable_packets) = crate::packet::open_packets(ctx)?;
    let (roots, mut unreadable) = collect(&ctx.store, remote, only, packets)?;
    unreadable.extend(unreadable_packets);
    if let Some(p) = only {
        if roots.is_empty() {
            plan::require(&ctx.store, p)?;
        }
    }
    let mut text = String::new();
    if roots.is_empty() && unreadable.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    render(&roots, 0, &mut text);
    let (mut open, mut blocked) = (0, 0);
    fn tally(nodes: &[PlanStatus], open: &mut usize, blocked: &mut usize) {
        for n in nodes {
            *open += n.open_packets.len();
            *blocked += n.lanes.iter().filter(|l| l.blocked.is_some()).count();
            tally(&n.children, open, blocked);
        }
    }
    tally(&roots, &mut open, &mut blocked);
    if open + blocked > 0 {
        text.push_str(&format!(
            "needs attention: {}, {}\n",
            crate::output::count(open, "open packet", "open packets"),
            crate::output::count(blocked, "blocked lane", "blocked lanes")
        ));
    }
    let mirror = remote
        .map(|r| {
            crate::sync::MirrorView::read(
                &ctx.store,
                r,
                &["refs/swarm/plans/", "refs/swarm/lanes/", "refs/swarm/lead/"],
            )
        })
        .transpose()?;
    if let Some(m) = &mirror {
        text.push_str(&m.text(ctx.store.clock.now()));
    }
    let json = serde_json::json!({
        "remote": ctx.settings.remote,
        "plans": roots,
        "mirror": mirror,
    });
    Ok(record::report_unreadable(
        Output::new(json, text),
        &unreadable,
    ))
}
