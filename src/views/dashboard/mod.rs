//! The dashboard's view model (`git swarm serve`, `state --html`): one
//! read-only picture of the swarm, gathered from the same refs every
//! command reads — each record at the newer of its local and mirrored
//! version, as `status` reads them — and never written. Plans as a tree
//! with their leaders, every task in a board column with its
//! dependencies, lanes with their last report and uncommitted work,
//! reservations with the lease left, message threads per plan (open
//! questions and escalations first), the newest verify verdict per pull
//! request and the records not published yet. The forecast is its own
//! operation; the CLI puts the two side by side.

mod read;
mod threads;
mod watch;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::records::lane::{LaneRecord, LastReport};
use crate::records::lead::LeadRecord;
use crate::records::message::Message;
use crate::records::note::Note;
use crate::records::plan::PlanDoc;
use crate::records::reservation::stored;
use crate::records::task::{Status as TaskStatus, TaskRecord};
use crate::session::Ctx;
use crate::store::yaml::Unreadable;

pub use threads::{MessageView, Thread};
pub use watch::{remote_round, RemoteWatch};

/// The whole picture.
#[derive(Debug, Clone, Serialize)]
pub struct Dashboard {
    /// The shared remote, when there is one.
    pub remote: Option<String>,
    /// When the picture was read (RFC 3339); leases are shown against it.
    pub now: String,
    /// When the remote's records were last fetched here (any command's
    /// whole-mirror fetch), if known.
    pub fetched_at: Option<String>,
    pub plans: Vec<PlanNode>,
    pub tasks: Vec<TaskView>,
    pub lanes: Vec<LaneView>,
    pub reservations: Vec<ReservationView>,
    pub threads: Vec<Thread>,
    pub verdicts: Vec<VerdictView>,
    /// Local records the remote does not have yet (refs), when there is a remote.
    pub unpublished: Vec<String>,
    pub unreadable: Vec<Unreadable>,
}

/// A plan and its children.
#[derive(Debug, Clone, Serialize)]
pub struct PlanNode {
    pub plan: String,
    pub title: String,
    pub status: String,
    pub parent: Option<String>,
    pub leader: Option<String>,
    pub epoch: Option<u64>,
    pub lease_until: Option<String>,
    /// Seconds of the leader's lease left (negative: expired).
    pub lease_left_secs: Option<i64>,
    pub children: Vec<PlanNode>,
}

/// Where a task stands on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Column {
    /// Open, unclaimed, every dependency done.
    Ready,
    /// Open, but a dependency is not done yet.
    Waiting,
    InProgress,
    Blocked,
    DoneUnverified,
    Done,
    Cancelled,
}

impl Column {
    pub const ALL: [Column; 7] = [
        Column::Ready,
        Column::Waiting,
        Column::InProgress,
        Column::Blocked,
        Column::DoneUnverified,
        Column::Done,
        Column::Cancelled,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Column::Ready => "ready",
            Column::Waiting => "waiting",
            Column::InProgress => "in-progress",
            Column::Blocked => "blocked",
            Column::DoneUnverified => "done-unverified",
            Column::Done => "done",
            Column::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskView {
    pub plan: String,
    pub id: String,
    pub title: String,
    pub column: Column,
    pub holder: Option<String>,
    pub lease: Option<Lease>,
    pub blocked_reason: Option<String>,
    pub depends_on: Vec<String>,
}

/// A lease: when it ends, how much is left and how long it was.
#[derive(Debug, Clone, Serialize)]
pub struct Lease {
    pub until: String,
    /// Negative when expired.
    pub left_secs: i64,
    /// From the grant to the end (0 when unknown).
    pub total_secs: i64,
}

impl Lease {
    fn of(from: &str, until: &str, now: jiff::Timestamp) -> Lease {
        let at = |s: &str| s.parse::<jiff::Timestamp>().ok();
        let end = at(until);
        let left_secs = end.map_or(0, |e| e.duration_since(now).as_secs());
        let total_secs = match (at(from), end) {
            (Some(f), Some(e)) => e.duration_since(f).as_secs().max(0),
            _ => 0,
        };
        Lease {
            until: until.to_string(),
            left_secs,
            total_secs,
        }
    }
    /// The part of the lease left, 0..=1 (for a bar).
    pub fn fraction_left(&self) -> f64 {
        if self.left_secs <= 0 {
            0.0
        } else if self.total_secs <= 0 {
            1.0
        } else {
            (self.left_secs as f64 / self.total_secs as f64).clamp(0.0, 1.0)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LaneView {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub state: String,
    pub last_report: Option<LastReport>,
    /// Uncommitted paths in its worktree, when the worktree is in this clone.
    pub dirty: Option<usize>,
    /// Where its worktree is: present, missing, elsewhere.
    pub worktree: String,
    /// Its published snapshot of uncommitted work (`refs/swarm/wip/<lane>`).
    pub snapshot: Option<String>,
    /// What its sessions spent (this clone's records and the journals').
    pub spend: Option<crate::integrations::capacity::spend::Totals>,
    /// Its agent as the runner recorded it in the pool's lease.
    pub agent: Option<crate::views::agents::LaneAgent>,
    /// Its task's claim lapsed and no runner holds it: the agent is gone.
    pub orphaned: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReservationView {
    pub id: String,
    pub holder: String,
    pub paths: Vec<String>,
    pub shared: bool,
    pub task: Option<String>,
    pub lease: Lease,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    pub repo: String,
    pub number: u64,
    pub state: String,
    pub at: String,
    pub head_sha: Option<String>,
    pub confirmed_on_base: bool,
}

/// Gather the picture. Reads only: the mirror as last fetched counts, and
/// nothing is fetched here (the caller decides when to reach the remote).
pub fn gather(ctx: &Ctx) -> Result<Dashboard> {
    let store = &ctx.store;
    let remote = ctx.settings.remote.as_deref();
    let now = store.clock.now();
    let mut unreadable = Vec::new();

    let plans: Vec<PlanDoc> = read::known::<PlanDoc>(store, remote, "plan", &mut unreadable)?
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let leads: BTreeMap<String, LeadRecord> =
        read::known::<LeadRecord>(store, remote, "lead", &mut unreadable)?
            .into_iter()
            .collect();
    let plans = tree(
        plans
            .into_iter()
            .map(|d| {
                let lead = leads.get(&d.record.plan);
                plan_node(d, lead, now)
            })
            .collect(),
    );

    let tasks = tasks(
        read::views::<TaskRecord, TaskFields>(store, remote, "task", &mut unreadable)?
            .into_iter()
            .map(|f| task_view(f, now))
            .collect(),
    );

    let lanes = lanes(ctx, remote, &mut unreadable)?;
    let reservations = reservations(store, remote, now, &mut unreadable)?;
    let messages = read::views::<Message, MessageView>(store, remote, "message", &mut unreadable)?;
    let threads = threads::threads(messages);
    let verdicts = verdicts(store)?;
    let unpublished = match remote {
        Some(r) => read::unpublished(store, r)?,
        None => Vec::new(),
    };
    let fetched_at = match remote {
        Some(r) => crate::store::remote::MirrorView::read(store, r, &[])?.fetched_at,
        None => None,
    };
    Ok(Dashboard {
        remote: remote.map(str::to_string),
        now: crate::clock::rfc3339(now),
        fetched_at,
        plans,
        tasks,
        lanes,
        reservations,
        threads,
        verdicts,
        unpublished,
        unreadable,
    })
}

fn plan_node(d: PlanDoc, lead: Option<&LeadRecord>, now: jiff::Timestamp) -> PlanNode {
    let r = d.record;
    let lease_until = lead.and_then(|l| l.lease_until.clone());
    PlanNode {
        plan: r.plan,
        title: r.title,
        status: r.status.as_str().to_string(),
        parent: r.parent,
        leader: lead.and_then(|l| l.current_leader()).map(str::to_string),
        epoch: lead.map(|l| l.epoch),
        lease_left_secs: lease_until
            .as_deref()
            .and_then(|u| u.parse::<jiff::Timestamp>().ok())
            .map(|u| u.duration_since(now).as_secs()),
        lease_until,
        children: Vec::new(),
    }
}

/// Children under their parents; a plan whose parent is unknown (or in a
/// cycle) stays a root.
fn tree(flat: Vec<PlanNode>) -> Vec<PlanNode> {
    let names: BTreeSet<String> = flat.iter().map(|p| p.plan.clone()).collect();
    let mut kids: BTreeMap<String, Vec<PlanNode>> = BTreeMap::new();
    let mut roots = Vec::new();
    let parent_of: BTreeMap<String, Option<String>> = flat
        .iter()
        .map(|p| (p.plan.clone(), p.parent.clone()))
        .collect();
    // A parent chain that comes back to the plan is a cycle: root it.
    let cyclic = |name: &str| {
        let mut cur = parent_of.get(name).cloned().flatten();
        for _ in 0..=names.len() {
            match cur {
                Some(p) if p == name => return true,
                Some(p) => cur = parent_of.get(&p).cloned().flatten(),
                None => return false,
            }
        }
        true
    };
    for p in flat {
        match p.parent.clone() {
            Some(parent) if names.contains(&parent) && !cyclic(&p.plan) => {
                kids.entry(parent).or_default().push(p)
            }
            _ => roots.push(p),
        }
    }
    fn attach(node: &mut PlanNode, kids: &mut BTreeMap<String, Vec<PlanNode>>) {
        node.children = kids.remove(&node.plan).unwrap_or_default();
        node.children.sort_by(|a, b| a.plan.cmp(&b.plan));
        for c in &mut node.children {
            attach(c, kids);
        }
    }
    roots.sort_by(|a, b| a.plan.cmp(&b.plan));
    for r in &mut roots {
        attach(r, &mut kids);
    }
    roots
}

/// The fields of a task the page shows, named as the record names them
/// (read with `Records::view_at`: the rest is skipped, not decoded).
#[derive(Deserialize)]
struct TaskFields {
    plan: String,
    id: String,
    title: String,
    status: TaskStatus,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    claim: Option<ClaimFields>,
    #[serde(default)]
    blocked_reason: Option<String>,
    #[serde(default)]
    done_unverified: bool,
}

#[derive(Deserialize)]
struct ClaimFields {
    holder: String,
    lease_until: String,
    claimed_at: String,
}

impl From<TaskRecord> for TaskFields {
    fn from(r: TaskRecord) -> TaskFields {
        TaskFields {
            plan: r.plan,
            id: r.id,
            title: r.title,
            status: r.status,
            depends_on: r.depends_on,
            claim: r.claim.map(|c| ClaimFields {
                holder: c.holder,
                lease_until: c.lease_until,
                claimed_at: c.claimed_at,
            }),
            blocked_reason: r.blocked_reason,
            done_unverified: r.done_unverified,
        }
    }
}

/// A task's view as it is read, and whether it is open with nobody
/// holding it (ready once its dependencies are done: see [`tasks`]).
fn task_view(r: TaskFields, now: jiff::Timestamp) -> (TaskView, bool) {
    // As `Claim::live`: an unreadable lease is expired.
    let live = |c: &ClaimFields| {
        c.lease_until
            .parse::<jiff::Timestamp>()
            .is_ok_and(|u| now < u)
    };
    let free = r.status == TaskStatus::Open && !r.claim.as_ref().is_some_and(live);
    let column = match r.status {
        TaskStatus::Open => Column::Waiting,
        TaskStatus::InProgress => Column::InProgress,
        TaskStatus::Blocked => Column::Blocked,
        TaskStatus::Done if r.done_unverified => Column::DoneUnverified,
        TaskStatus::Done => Column::Done,
        _ => Column::Cancelled,
    };
    let claim = r.claim.filter(|_| column == Column::InProgress);
    let view = TaskView {
        lease: claim
            .as_ref()
            .map(|c| Lease::of(&c.claimed_at, &c.lease_until, now)),
        holder: claim.map(|c| c.holder),
        blocked_reason: r.blocked_reason.filter(|_| column == Column::Blocked),
        plan: r.plan,
        id: r.id,
        title: r.title,
        column,
        depends_on: r.depends_on,
    };
    (view, free)
}

/// Open tasks nobody holds whose dependencies are all done (verified or
/// not) move from waiting to ready.
fn tasks(read: Vec<(TaskView, bool)>) -> Vec<TaskView> {
    let done: std::collections::HashSet<(&str, &str)> = read
        .iter()
        .filter(|(v, _)| matches!(v.column, Column::Done | Column::DoneUnverified))
        .map(|(v, _)| (v.plan.as_str(), v.id.as_str()))
        .collect();
    let ready: Vec<bool> = read
        .iter()
        .map(|(v, free)| {
            *free
                && v.depends_on
                    .iter()
                    .all(|d| done.contains(&(v.plan.as_str(), d.as_str())))
        })
        .collect();
    drop(done);
    read.into_iter()
        .zip(ready)
        .map(|((mut v, _), ready)| {
            if ready {
                v.column = Column::Ready;
            }
            v
        })
        .collect()
}

fn lanes(
    ctx: &Ctx,
    remote: Option<&str>,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<LaneView>> {
    let store = &ctx.store;
    let records = read::known::<LaneRecord>(store, remote, "lane", unreadable)?;
    let snapshots = read::snapshot_tips(store, remote)?;
    let worktrees = store.git.worktree_paths()?;
    let mut spent = crate::integrations::capacity::spend::summary(
        &crate::integrations::capacity::spend::known(store, remote),
    )
    .lanes;
    let agents = crate::views::agents::read(store, remote, store.clock.now(), unreadable)?;
    let mut out = Vec::new();
    let mut packets: Option<Vec<crate::records::packet::OpenPacket>> = None;
    for (feature, mut r) in records {
        if !r.is_active() {
            continue;
        }
        if r.last_report
            .as_ref()
            .is_some_and(|l| l.kind == crate::records::lane::LastReportKind::Blocked)
        {
            let known = match &mut packets {
                Some(p) => p,
                None => packets.insert(
                    crate::records::packet::open_packets(store, remote)
                        .map(|(p, _)| p)
                        .unwrap_or_default(),
                ),
            };
            super::clear_stale_blocked(store, remote, &mut r, known);
        }
        let lane = crate::records::lane::Lane {
            feature: feature.clone(),
            record: r.clone(),
            commit: gix::ObjectId::null(gix::hash::Kind::Sha1),
        };
        let (dirty, worktree) = match crate::session::lane::inspect(ctx, &lane, &worktrees) {
            Ok(st) => {
                let here = st.worktree == crate::records::lane::Worktree::Present;
                let dirty = here.then(|| st.dirty.len() + usize::from(st.plan_unsaved));
                (dirty, format!("{:?}", st.worktree).to_lowercase())
            }
            Err(_) => (None, "unknown".to_string()),
        };
        out.push(LaneView {
            spend: spent.remove(&feature),
            agent: agents.by_lane.get(&feature).cloned(),
            orphaned: agents.is_orphaned(&feature),
            snapshot: snapshots.get(&feature).cloned(),
            feature,
            plan: r.plan,
            owner: r.owner,
            branch: r.branch,
            state: r.state.to_string(),
            last_report: r.last_report,
            dirty,
            worktree,
        });
    }
    Ok(out)
}

fn reservations(
    store: &crate::store::Store,
    remote: Option<&str>,
    now: jiff::Timestamp,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<ReservationView>> {
    let ledger = stored::known_readable(store, remote, unreadable)?;
    Ok(ledger
        .entries
        .into_iter()
        .filter(|e| e.released_at.is_none())
        .map(|e| ReservationView {
            lease: Lease::of(&e.created_at, &e.lease_until, now),
            paths: e.paths.iter().map(|p| p.to_string()).collect(),
            id: e.id,
            holder: e.holder,
            shared: e.shared,
            task: e.task,
        })
        .collect())
}

/// The newest verdict per pull request, from the notes.
fn verdicts(store: &crate::store::Store) -> Result<Vec<VerdictView>> {
    let Some(tip) = store.ref_target(crate::store::notes::NOTES_REF)? else {
        return Ok(Vec::new());
    };
    let mut newest: BTreeMap<(String, u64), VerdictView> = BTreeMap::new();
    for (_, lines) in store.all_notes(tip)? {
        for note in Note::parse_all(&lines) {
            if let Note::Verdict {
                state,
                repo,
                number,
                head_sha,
                confirmed_on_base,
                at,
                ..
            } = note
            {
                let key = (repo.clone(), number);
                if newest.get(&key).is_some_and(|seen| seen.at >= at) {
                    continue;
                }
                newest.insert(
                    key,
                    VerdictView {
                        repo,
                        number,
                        state,
                        at,
                        head_sha,
                        confirmed_on_base,
                    },
                );
            }
        }
    }
    Ok(newest.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, parent: Option<&str>) -> PlanNode {
        PlanNode {
            plan: name.into(),
            title: String::new(),
            status: "active".into(),
            parent: parent.map(str::to_string),
            leader: None,
            epoch: None,
            lease_until: None,
            lease_left_secs: None,
            children: Vec::new(),
        }
    }

    #[test]
    fn plans_hang_under_parents_and_cycles_and_orphans_are_roots() {
        let roots = tree(vec![
            node("b", Some("a")),
            node("a", None),
            node("c", Some("b")),
            node("x", Some("y")),
            node("y", Some("x")),
            node("o", Some("gone")),
        ]);
        let names: Vec<&str> = roots.iter().map(|n| n.plan.as_str()).collect();
        assert_eq!(names, ["a", "o", "x", "y"]);
        assert_eq!(roots[0].children[0].plan, "b");
        assert_eq!(roots[0].children[0].children[0].plan, "c");
    }

    #[test]
    fn a_lease_bar_is_the_part_left() {
        let now: jiff::Timestamp = "2026-01-01T00:30:00Z".parse().unwrap();
        let l = Lease::of("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", now);
        assert_eq!((l.left_secs, l.total_secs), (1800, 3600));
        assert!((l.fraction_left() - 0.5).abs() < 1e-9);
        let gone = Lease::of("2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z", now);
        assert!(gone.left_secs < 0);
        assert_eq!(gone.fraction_left(), 0.0);
    }
}
