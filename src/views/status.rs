//! `git swarm status`: the plans as a tree (children under their parent),
//! each with its leader and epoch and its lanes — read straight from the
//! refs, the way a successor arriving on a fresh machine would see them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::Result;
use crate::records::packet::OpenPacket;
use crate::records::plan::{self, Plan, PlanDoc, Status};
use crate::records::{lane, lead};
use crate::session::Ctx;
use crate::store::records::Records;
use crate::store::yaml::Unreadable;
use crate::store::Store;

#[derive(Debug, Clone, Serialize)]
pub struct PlanStatus {
    pub plan: String,
    pub title: String,
    pub status: Status,
    pub parent: Option<String>,
    pub leader: Option<String>,
    pub epoch: Option<u64>,
    pub lease_until: Option<String>,
    pub lanes: Vec<LaneStatus>,
    /// Handoff packets of this plan that nobody has accepted yet.
    pub open_packets: Vec<OpenPacket>,
    pub children: Vec<PlanStatus>,
    /// The plan's tasks, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<PlanTasks>,
    /// Live path reservations held by the owners of this plan's lanes.
    #[serde(skip_serializing_if = "is_zero")]
    pub reservations: usize,
    /// The last forecast covering this plan (`git swarm forecast`), as kept
    /// in the forecast cache: status itself never merges or fetches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forecast: Option<crate::records::forecast::Seen>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A plan's tasks as `status` shows them: ready (open, unclaimed, every
/// dependency done), in progress (holder, lease left), blocked, done.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanTasks {
    pub ready: Vec<String>,
    pub in_progress: Vec<TaskClaim>,
    pub blocked: Vec<String>,
    pub done: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskClaim {
    pub id: String,
    pub holder: Option<String>,
    /// The lane working on it (`lane new --task`).
    pub lane: Option<String>,
    pub lease_left_secs: i64,
    pub expired: bool,
}

/// Every plan's tasks, by plan.
fn plan_tasks(
    tasks: &[crate::records::task::Known],
    now: jiff::Timestamp,
) -> BTreeMap<String, PlanTasks> {
    use crate::records::task::Status as T;
    let done: BTreeSet<(String, String)> = tasks
        .iter()
        .filter(|k| k.record.status == T::Done)
        .map(|k| (k.key.plan.clone(), k.key.id.clone()))
        .collect();
    let mut out: BTreeMap<String, PlanTasks> = BTreeMap::new();
    for k in tasks {
        let (plan, id, r) = (&k.key.plan, k.key.id.clone(), &k.record);
        let entry = out.entry(plan.clone()).or_default();
        match r.status {
            T::Open if r.ready(now, |d| done.contains(&(plan.clone(), d.to_string()))) => {
                entry.ready.push(id)
            }
            T::InProgress => entry.in_progress.push(TaskClaim {
                id,
                holder: r.claim.as_ref().map(|c| c.holder.clone()),
                lane: r.lane.clone(),
                lease_left_secs: r.claim.as_ref().map_or(0, |c| c.left(now).as_secs()),
                expired: r.claim.as_ref().is_none_or(|c| !c.live(now)),
            }),
            T::Blocked => entry.blocked.push(id),
            T::Done => entry.done.push(if r.done_unverified {
                format!("{id} (unverified)")
            } else {
                id
            }),
            _ => {}
        }
    }
    out
}

fn attach_tasks(nodes: &mut [PlanStatus], tasks: &mut BTreeMap<String, PlanTasks>) {
    for n in nodes {
        n.tasks = tasks.remove(&n.plan);
        attach_tasks(&mut n.children, tasks);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LaneStatus {
    pub feature: String,
    pub owner: Option<String>,
    pub branch: Option<String>,
    pub state: Option<String>,
    /// The lane's last report when it is `blocked` (someone must act).
    pub blocked: Option<crate::records::lane::LastReport>,
    /// The capacity line of the lane's last report (its last verdict).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
    /// What the lane's sessions spent (this clone's and the journals').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend: Option<crate::integrations::capacity::spend::Totals>,
    /// The lane's agent as its runner recorded it in the pool's lease
    /// (`git swarm run`): account, host, machine, pid, session, tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<super::agents::LaneAgent>,
    /// Its task is in progress, its claim lapsed and no runner holds a
    /// live lease for it: the agent is gone (`task recover` takes it over).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub orphaned: bool,
}

/// Every record under `prefix` known here, local or in the mirror, each at
/// the newer of its two versions (the rule of every read-only view).
fn newest(
    store: &Store,
    remote: Option<&str>,
    prefix: &str,
) -> Result<Vec<(String, gix::ObjectId)>> {
    Ok(crate::store::remote::tips_under(store, remote, prefix)?
        .into_iter()
        .filter_map(|(name, tip)| tip.base.map(|base| (name, base)))
        .collect())
}

/// The ref names under `prefix`, without it.
fn names_under(store: &Store, prefix: &str) -> Result<BTreeSet<String>> {
    Ok(store
        .list_refs(prefix)?
        .into_iter()
        .map(|(r, _)| r[prefix.len()..].to_string())
        .collect())
}

/// The plans known here, each at its newest version, and those unreadable.
fn read_plans(
    store: &Store,
    remote: Option<&str>,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    let versions = newest(store, remote, plan::PREFIX)?;
    let read = Records::<PlanDoc>::new(store).at_many(&versions);
    for ((name, _), v) in versions.iter().zip(read) {
        match v {
            Ok(v) => plans.push(Plan::from(v)),
            Err(e) => unreadable.push(Unreadable::new("plan", name, &plan::plan_ref(name), &e)),
        }
    }
    Ok(plans)
}

/// The active lanes known here, by plan, each at its newest version.
fn read_lanes(
    store: &Store,
    remote: Option<&str>,
    packets: &[OpenPacket],
    unreadable: &mut Vec<Unreadable>,
) -> Result<BTreeMap<String, Vec<LaneStatus>>> {
    let mut by_plan: BTreeMap<String, Vec<LaneStatus>> = BTreeMap::new();
    let versions = newest(store, remote, lane::PREFIX)?;
    let read = Records::<crate::records::lane::LaneRecord>::new(store).at_many(&versions);
    for ((feature, _), v) in versions.iter().zip(read) {
        let mut lane = match v {
            Ok(v) => crate::records::lane::Lane::from(v),
            Err(e) => {
                unreadable.push(Unreadable::new(
                    "lane",
                    feature,
                    &lane::lane_ref(feature),
                    &e,
                ));
                continue;
            }
        };
        if !lane.record.is_active() {
            continue;
        }
        super::clear_stale_blocked(store, remote, &mut lane.record, packets);
        let blocked = lane.record.open_blocked().cloned();
        by_plan
            .entry(lane.record.plan.clone())
            .or_default()
            .push(LaneStatus {
                feature: lane.feature,
                owner: Some(lane.record.owner),
                branch: Some(lane.record.branch),
                state: Some(lane.record.state.to_string()),
                capacity: lane
                    .record
                    .last_report
                    .as_ref()
                    .and_then(|r| r.capacity.clone()),
                blocked,
                spend: None,
                agent: None,
                orphaned: false,
            });
    }
    Ok(by_plan)
}

/// One plan's node (without children yet), with its leader as known here:
/// looked up only for plans in `led`, those with a leader record here or on
/// the remote (else it would search the gc archive per plan).
fn node(
    store: &Store,
    remote: Option<&str>,
    p: &Plan,
    led: &BTreeSet<String>,
    lanes: Vec<LaneStatus>,
    open_packets: Vec<OpenPacket>,
    unreadable: &mut Vec<Unreadable>,
) -> PlanStatus {
    let name = &p.record.plan;
    let lead = if led.contains(name) {
        crate::records::lead::known(store, remote, name).unwrap_or_else(|e| {
            unreadable.push(Unreadable::new("lead", name, &lead::lead_ref(name), &e));
            None
        })
    } else {
        None
    };
    PlanStatus {
        plan: name.clone(),
        title: p.record.title.clone(),
        status: p.record.status.clone(),
        parent: p.record.parent.clone(),
        leader: lead
            .as_ref()
            .and_then(|l| l.current_leader())
            .map(str::to_string),
        epoch: lead.as_ref().map(|l| l.epoch),
        lease_until: lead.as_ref().and_then(|l| l.lease_until.clone()),
        lanes,
        open_packets,
        tasks: None,
        children: Vec::new(),
        reservations: 0,
        forecast: None,
    }
}

/// Plans with their leaders and active lanes, each record the newer of the
/// local and the mirrored (last fetched) version. A record that cannot be
/// read is returned as such (name, ref, why), not a silent gap in the
/// picture, and not a failure that hides every other record.
pub fn collect(
    store: &Store,
    remote: Option<&str>,
    only: Option<&str>,
    packets: Vec<OpenPacket>,
) -> Result<(Vec<PlanStatus>, Vec<Unreadable>)> {
    let mut unreadable = Vec::new();
    let plans = read_plans(store, remote, &mut unreadable)?;
    let mut lanes_by_plan = read_lanes(store, remote, &packets, &mut unreadable)?;
    let mut led = names_under(store, lead::PREFIX)?;
    if let Some(r) = remote {
        led.extend(names_under(
            store,
            &crate::store::mirror::mirror_ref(r, lead::PREFIX),
        )?);
    }
    // Each plan's packets in one pass (a partition per plan was quadratic).
    let mut packets_by_plan: BTreeMap<String, Vec<OpenPacket>> = BTreeMap::new();
    for k in packets {
        packets_by_plan.entry(k.plan.clone()).or_default().push(k);
    }
    let mut flat: BTreeMap<String, PlanStatus> = BTreeMap::new();
    for p in &plans {
        let lanes = lanes_by_plan.remove(&p.record.plan).unwrap_or_default();
        let mine = packets_by_plan.remove(&p.record.plan).unwrap_or_default();
        let n = node(store, remote, p, &led, lanes, mine, &mut unreadable);
        flat.insert(p.record.plan.clone(), n);
    }
    let mut roots = tree(flat);
    if let Some(only) = only {
        roots = find(roots, only).into_iter().collect();
    }
    Ok((roots, unreadable))
}

/// How many parents up a plan's chain has (at most 65: a cycle stops there).
fn depth(name: &str, flat: &BTreeMap<String, PlanStatus>) -> usize {
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
}

/// Attach children to parents, deepest first, so the tree is built
/// bottom-up; a plan whose parent is unknown stays a root.
fn tree(mut flat: BTreeMap<String, PlanStatus>) -> Vec<PlanStatus> {
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
    flat.into_values().collect()
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

/// What `status` shows: its `Serialize` is the JSON (`unreadable` is added
/// by the CLI, as for every listing).
#[derive(Debug, Serialize)]
pub struct StatusView {
    pub remote: Option<String>,
    pub plans: Vec<PlanStatus>,
    pub mirror: Option<crate::store::remote::MirrorView>,
    /// Local changes (records, archive moves, notes) the remote does not
    /// have yet, as last fetched: the next command that reaches it, or
    /// `sync`, publishes them.
    pub unpublished: usize,
    /// Under a push budget (`swarm.pushBudget`): what waits in this
    /// clone's queue, since when, and from when the next command publishes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queued: Option<crate::store::remote::budget::Queue>,
    /// Live path reservations in the whole repository.
    #[serde(skip_serializing_if = "is_zero")]
    pub reservations: usize,
    /// Tokens and cost per lane, task (`<plan>/<id>`), agent and plan:
    /// the sessions this clone recorded (the hooks, the runner) and those
    /// the plans' journals carry (published by every clone's lanes).
    pub spend: crate::integrations::capacity::spend::Summary,
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
    /// When it was read (the mirror's age is shown against it).
    #[serde(skip)]
    pub now: jiff::Timestamp,
}

impl StatusView {
    /// Open packets and blocked lanes in the whole tree.
    pub fn attention(&self) -> (usize, usize) {
        fn tally(nodes: &[PlanStatus], open: &mut usize, blocked: &mut usize) {
            for n in nodes {
                *open += n.open_packets.len();
                *blocked += n.lanes.iter().filter(|l| l.blocked.is_some()).count();
                tally(&n.children, open, blocked);
            }
        }
        let (mut open, mut blocked) = (0, 0);
        tally(&self.plans, &mut open, &mut blocked);
        (open, blocked)
    }
}

/// `git swarm status [--plan P]`
pub fn status(ctx: &Ctx, only: Option<&str>) -> Result<StatusView> {
    // The whole mirror first (one fetch; a remote that cannot be reached
    // leaves what was fetched before, with one warning), so that what
    // another clone published shows here without `sync`. Read-only: the
    // mirror as last fetched counts, `--offline` or not.
    if let Some(r) = ctx.remote() {
        crate::store::mirror::fetch(&ctx.store, r)?;
    }
    let remote = ctx.settings.remote.as_deref();
    let (packets, unreadable_packets) =
        crate::records::packet::open_packets(&ctx.store, ctx.settings.remote.as_deref())?;
    let (mut roots, mut unreadable) = collect(&ctx.store, remote, only, packets)?;
    let holders = live_reservations(&ctx.store, remote, &mut unreadable)?;
    count_reservations(&mut roots, &holders);
    attach_forecast(&mut roots, &mut crate::records::forecast::last(&ctx.store));
    unreadable.extend(unreadable_packets);
    let now = ctx.store.clock.now();
    // The tasks once, for their plans and for the lanes' agents.
    let (all_tasks, bad) = crate::records::task::known(&ctx.store, remote, None)?;
    unreadable.extend(bad);
    attach_tasks(&mut roots, &mut plan_tasks(&all_tasks, now));
    if let Some(p) = only {
        if roots.is_empty() {
            plan::require(&ctx.store, p)?;
        }
    }
    let mirror = remote
        .map(|r| {
            crate::store::remote::MirrorView::read(
                &ctx.store,
                r,
                &[plan::PREFIX, lane::PREFIX, lead::PREFIX],
            )
        })
        .transpose()?;
    let unpublished = match remote {
        Some(r) => crate::store::remote::pending(&ctx.store, r)?.count(),
        None => 0,
    };
    let queued = match remote {
        Some(r) => crate::store::remote::budget::queue(&ctx.store, r)?,
        None => None,
    };
    let sessions = crate::integrations::capacity::spend::known(&ctx.store, remote);
    let spend = crate::integrations::capacity::spend::summary(&sessions);
    attach_spend(&mut roots, &spend);
    let agents = super::agents::with_tasks(&ctx.store, remote, &all_tasks, now, &mut unreadable)?;
    attach_agents(&mut roots, &agents);
    Ok(StatusView {
        spend,
        remote: ctx.settings.remote.clone(),
        plans: roots,
        mirror,
        unpublished,
        queued,
        reservations: holders.len(),
        unreadable,
        now: ctx.store.clock.now(),
    })
}

/// The holder of each live reservation (the ledger as known here).
fn live_reservations(
    store: &Store,
    remote: Option<&str>,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<String>> {
    let ledger = crate::records::reservation::stored::known_readable(store, remote, unreadable)?;
    let now = store.clock.now();
    Ok(ledger
        .entries
        .iter()
        .filter(|e| e.live(now))
        .map(|e| e.holder.clone())
        .collect())
}

fn attach_agents(nodes: &mut [PlanStatus], agents: &super::agents::Agents) {
    for n in nodes {
        for l in &mut n.lanes {
            l.agent = agents.by_lane.get(&l.feature).cloned();
            l.orphaned = agents.is_orphaned(&l.feature);
        }
        attach_agents(&mut n.children, agents);
    }
}

fn attach_spend(nodes: &mut [PlanStatus], spend: &crate::integrations::capacity::spend::Summary) {
    for n in nodes {
        for l in &mut n.lanes {
            l.spend = spend.lanes.get(&l.feature).cloned();
        }
        attach_spend(&mut n.children, spend);
    }
}

fn attach_forecast(
    nodes: &mut [PlanStatus],
    seen: &mut BTreeMap<String, crate::records::forecast::Seen>,
) {
    for n in nodes {
        n.forecast = seen.remove(&n.plan);
        attach_forecast(&mut n.children, seen);
    }
}

/// Each plan's count: the live reservations held by its lanes' owners.
fn count_reservations(nodes: &mut [PlanStatus], holders: &[String]) {
    for n in nodes {
        let owners: BTreeSet<&str> = n.lanes.iter().filter_map(|l| l.owner.as_deref()).collect();
        n.reservations = holders
            .iter()
            .filter(|h| owners.contains(h.as_str()))
            .count();
        count_reservations(&mut n.children, holders);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, parent: Option<&str>) -> PlanStatus {
        PlanStatus {
            plan: name.into(),
            title: String::new(),
            status: Status::Active,
            parent: parent.map(str::to_string),
            leader: None,
            epoch: None,
            lease_until: None,
            lanes: Vec::new(),
            open_packets: Vec::new(),
            children: Vec::new(),
            tasks: None,
            reservations: 0,
            forecast: None,
        }
    }

    #[test]
    fn children_hang_under_their_parents_and_orphans_stay_roots() {
        let flat: BTreeMap<String, PlanStatus> = [
            node("a", None),
            node("b", Some("a")),
            node("c", Some("b")),
            node("d", Some("a")),
            node("e", Some("gone")),
        ]
        .into_iter()
        .map(|n| (n.plan.clone(), n))
        .collect();
        let roots = tree(flat);
        let names: Vec<&str> = roots.iter().map(|n| n.plan.as_str()).collect();
        assert_eq!(names, ["a", "e"]);
        let kids: Vec<&str> = roots[0].children.iter().map(|n| n.plan.as_str()).collect();
        assert_eq!(kids, ["b", "d"]);
        assert_eq!(roots[0].children[0].children[0].plan, "c");
        assert_eq!(find(roots, "c").map(|n| n.plan), Some("c".to_string()));
    }

    #[test]
    fn a_parent_cycle_does_not_hang() {
        let flat: BTreeMap<String, PlanStatus> = [node("x", Some("y")), node("y", Some("x"))]
            .into_iter()
            .map(|n| (n.plan.clone(), n))
            .collect();
        assert!(depth("x", &flat) > 64);
        let _ = tree(flat);
    }

    #[test]
    fn long_titles_are_cut_to_one_line() {
        assert_eq!(cut("a  b\nc", 10), "a b c");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
        assert_eq!(cut("abcde", 5), "abcde");
    }
}
