//! Each lane's agent, as the runners recorded it in the pool's leases
//! (`refs/swarm/pool/<account>`: account, host, machine, pid, session,
//! started, last event, tokens), and the lanes whose agent is gone:
//! `orphaned` when the lane's task is still in progress, its claim is no
//! longer renewed (lapsed), and no account holds a live lease for the lane
//! (its runner's lease lapsed, or was freed without the task moving).
//! `status`, `state`, the dashboard and `git swarm run` read this.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde::Serialize;

use crate::error::Result;
use crate::records::pool::{self, Account};
use crate::records::task::{self, Status};
use crate::store::yaml::Unreadable;
use crate::store::Store;

/// A lane's agent as its runner last recorded it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LaneAgent {
    pub account: String,
    pub host: String,
    /// The runner holding the account: `<address>@<machine>#<pid>`.
    pub runner: String,
    pub machine: String,
    pub plan: Option<String>,
    pub task: Option<String>,
    pub pid: u32,
    pub session: Option<String>,
    pub started: String,
    pub last_event: String,
    pub last_event_at: String,
    /// Input + cache read + cache write + output tokens so far.
    pub tokens: u64,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Until when the account's lease runs.
    pub lease_until: String,
    /// The lease has not lapsed.
    pub live: bool,
}

impl LaneAgent {
    /// One line for `status` and `state`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} on {} ({}), {} pid {}",
            self.host, self.account, self.runner, self.machine, self.pid
        );
        if let Some(id) = &self.session {
            s.push_str(&format!(", session {id}"));
        }
        s.push_str(&format!(
            ", started {}, last {} {}, {} tokens",
            self.started, self.last_event, self.last_event_at, self.tokens
        ));
        if let Some(c) = self.cost_usd {
            s.push_str(&format!(", ${c:.4}"));
        }
        if !self.live {
            s.push_str(&format!(", lease lapsed at {}", self.lease_until));
        }
        s
    }
}

/// What is known of the lanes' agents.
#[derive(Debug, Clone, Default)]
pub struct Agents {
    /// Each lane's agent: the live lease naming it, else the newest lapsed
    /// one still on record.
    pub by_lane: BTreeMap<String, LaneAgent>,
    /// Lanes whose task is in progress with a lapsed claim and no live lease.
    pub orphaned: BTreeSet<String>,
    /// Every in-progress task on a lane: lane → (plan, task id).
    pub lane_tasks: BTreeMap<String, (String, String)>,
}

impl Agents {
    pub fn is_orphaned(&self, lane: &str) -> bool {
        self.orphaned.contains(lane)
    }
}

fn agent_of(a: &Account, now: Timestamp) -> Option<(String, LaneAgent)> {
    let l = a.lease.as_ref()?;
    let lane = l.lane.clone()?;
    if l.role != "lane" && !l.role.is_empty() {
        return None;
    }
    let run = l.agent.clone().unwrap_or_default();
    let tokens =
        run.input_tokens + run.cache_read_tokens + run.cache_write_tokens + run.output_tokens;
    Some((
        lane,
        LaneAgent {
            account: a.account.clone(),
            host: a.host.to_string(),
            runner: l.holder.clone(),
            machine: l.machine.clone(),
            plan: l.plan.clone(),
            task: l.task.clone(),
            pid: run.pid,
            session: run.session,
            started: if run.started.is_empty() {
                l.leased_at.clone()
            } else {
                run.started
            },
            last_event: run.last_event,
            last_event_at: run.last_event_at,
            tokens,
            input_tokens: run.input_tokens,
            cache_read_tokens: run.cache_read_tokens,
            cache_write_tokens: run.cache_write_tokens,
            output_tokens: run.output_tokens,
            cost_usd: run.cost_usd,
            lease_until: l.until.clone(),
            live: a.live_lease(now).is_some(),
        },
    ))
}

/// From the accounts and the tasks known here.
pub fn derive(accounts: &[Account], tasks: &[task::Known], now: Timestamp) -> Agents {
    let mut out = Agents::default();
    for a in accounts {
        let Some((lane, agent)) = agent_of(a, now) else {
            continue;
        };
        let better = match out.by_lane.get(&lane) {
            None => true,
            Some(old) => (agent.live, &agent.started) > (old.live, &old.started),
        };
        if better {
            out.by_lane.insert(lane, agent);
        }
    }
    for k in tasks {
        let r = &k.record;
        if r.status != Status::InProgress {
            continue;
        }
        let Some(lane) = r.lane.clone() else {
            continue;
        };
        out.lane_tasks
            .insert(lane.clone(), (k.key.plan.clone(), k.key.id.clone()));
        let claim_live = r.claim.as_ref().is_some_and(|c| c.live(now));
        let agent_live = out.by_lane.get(&lane).is_some_and(|a| a.live);
        if !claim_live && !agent_live {
            out.orphaned.insert(lane);
        }
    }
    out
}

/// Read the pool and the tasks (local, or the mirror as last fetched).
pub fn read(
    store: &Store,
    remote: Option<&str>,
    now: Timestamp,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Agents> {
    let (tasks, bad) = task::known(store, remote, None)?;
    unreadable.extend(bad);
    with_tasks(store, remote, &tasks, now, unreadable)
}

/// [`read`] with the tasks already read (`status` reads them once).
pub fn with_tasks(
    store: &Store,
    remote: Option<&str>,
    tasks: &[task::Known],
    now: Timestamp,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Agents> {
    let (accounts, bad) = pool::known(store, remote)?;
    unreadable.extend(bad);
    Ok(derive(&accounts, tasks, now))
}
