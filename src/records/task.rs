//! The task record (`refs/swarm/tasks/<plan>/<id>`, `task.yaml`,
//! `swarm-task/v1`): one chain per task, so `git log` of the ref is the
//! task's audit trail. A task has a status, dependencies on other tasks of
//! its plan, and at most one active claim with a lease, which the shared
//! remote arbitrates (see `crate::ops::task`).
//!
//! The rules are pure functions here: [`transition_allowed`] (the status
//! graph), [`check_graph`] (unknown dependencies and cycles) and
//! [`decide`] (what a claim, renew, release, block, done, cancel or recover
//! does to a record given who acts, when, and the facts the operation read).

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use gix::ObjectId;

use crate::clock::rfc3339;
use crate::config::LeaseSetting;
use crate::error::{Code, Error, Result};
use crate::store::records::{self, Diverged, Files, Record, Records, ScopedKey};
use crate::store::yaml::{self, Extra, Unreadable};
use crate::store::{Event, Store};

mod rules;
#[cfg(test)]
mod tests;

pub use rules::{decide, hand_over, Decision, HandOver, Op, Work};

pub const SCHEMA: &str = "swarm-task/v1";
pub const RECORD_FILE: &str = "task.yaml";
/// The lease when neither `--lease` nor `git config swarm.taskLease` sets one.
pub const DEFAULT_LEASE: &str = "30m";
/// The lease a task command asks for: its `--lease` flag, else `git config
/// swarm.taskLease`, else 30 minutes.
pub const LEASE: LeaseSetting = LeaseSetting {
    key: "swarm.taskLease",
    default: DEFAULT_LEASE,
    parse: parse_lease,
};

/// Where every task ref lives.
pub const PREFIX: &str = "refs/swarm/tasks/";

/// `refs/swarm/tasks/<plan>/<id>`.
pub fn task_ref(plan: &str, id: &str) -> String {
    format!("refs/swarm/tasks/{plan}/{id}")
}

/// One task as this clone sees it ([`known`], [`known_one`]).
#[derive(Debug, Clone)]
pub struct Known {
    pub key: TaskKey,
    pub record: TaskRecord,
    pub commit: ObjectId,
    /// The local ref holds this version (else only the mirror does, or the
    /// local ref is ahead: not published yet).
    pub local: Option<ObjectId>,
    pub published: Option<ObjectId>,
}

impl From<records::Known<TaskRecord>> for Known {
    fn from(k: records::Known<TaskRecord>) -> Self {
        Known {
            key: k.version.key,
            record: k.version.value,
            commit: k.version.commit,
            local: k.tip.local,
            published: k.tip.remote,
        }
    }
}

/// Every task (of `plan`, or of all plans), local and in `remote`'s mirror,
/// the newest of the two; and those that cannot be read
/// ([`Records::known_under`]).
pub fn known(
    store: &Store,
    remote: Option<&str>,
    plan: Option<&str>,
) -> Result<(Vec<Known>, Vec<Unreadable>)> {
    let under = plan.map(|p| format!("{p}/")).unwrap_or_default();
    let (known, bad) = Records::<TaskRecord>::new(store).known_under(remote, &under)?;
    Ok((known.into_iter().map(Known::from).collect(), bad))
}

/// The task `id` of `plan`, as this clone knows it ([`Records::known_one`]).
pub fn known_one(
    store: &Store,
    remote: Option<&str>,
    plan: &str,
    id: &str,
) -> Result<Option<Known>> {
    let key = TaskKey::new(plan, id);
    let found = Records::<TaskRecord>::new(store).known_one(remote, &key)?;
    Ok(found.map(Known::from))
}

/// The refs of every task of a plan (a prefix).
pub fn plan_prefix(plan: &str) -> String {
    format!("refs/swarm/tasks/{plan}/")
}

/// A task's key: its plan and its id within the plan.
pub type TaskKey = ScopedKey;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    InProgress,
    Blocked,
    Done,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Blocked => "blocked",
            Status::Done => "done",
            Status::Cancelled => "cancelled",
        }
    }
    pub fn parse(text: &str) -> Result<Status> {
        Ok(match text {
            "open" => Status::Open,
            "in_progress" | "in-progress" => Status::InProgress,
            "blocked" => Status::Blocked,
            "done" => Status::Done,
            "cancelled" | "canceled" => Status::Cancelled,
            _ => {
                return Err(
                    Error::new(Code::Usage, format!("'{text}' is not a task status"))
                        .hint("use open, in_progress, blocked, done or cancelled"),
                )
            }
        })
    }
    pub fn terminal(self) -> bool {
        matches!(self, Status::Done | Status::Cancelled)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The status graph: open → in_progress | blocked | cancelled;
/// in_progress → open | blocked | done | cancelled; blocked → open |
/// in_progress | cancelled; done and cancelled are terminal. Writing the
/// same status again is a no-op (allowed here, written by nobody).
pub fn transition_allowed(from: Status, to: Status) -> bool {
    use Status::*;
    from == to
        || matches!(
            (from, to),
            (Open, InProgress | Blocked | Cancelled)
                | (InProgress, Open | Blocked | Done | Cancelled)
                | (Blocked, Open | InProgress | Cancelled)
        )
}

/// `TASK_INVALID_TRANSITION` for `from` → `to`.
pub fn invalid_transition(id: &str, from: Status, to: Status) -> Error {
    let hint = if from.terminal() {
        format!("{from} is terminal: create a new task instead")
    } else {
        "open → in_progress | blocked | cancelled; in_progress → open | blocked | done | cancelled; blocked → open | in_progress | cancelled".to_string()
    };
    Error::new(
        Code::TaskInvalidTransition,
        format!("task '{id}' is {from}; it cannot become {to}"),
    )
    .hint(hint)
    .with_detail(serde_json::json!({"task": id, "from": from, "to": to}))
}

/// The active claim on a task.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claim {
    pub holder: String,
    pub lease_until: String,
    pub claimed_at: String,
    /// The task's claim counter when this claim was made.
    pub epoch: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Claim {
    pub fn until(&self) -> Option<Timestamp> {
        self.lease_until.parse().ok()
    }
    /// Live until its lease ends (an unreadable lease is expired).
    pub fn live(&self, now: Timestamp) -> bool {
        self.until().is_some_and(|u| now < u)
    }
    /// The time left, zero once expired.
    pub fn left(&self, now: Timestamp) -> SignedDuration {
        self.until()
            .map(|u| u.duration_since(now).max(SignedDuration::ZERO))
            .unwrap_or(SignedDuration::ZERO)
    }
}

/// The task record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaskRecord {
    pub schema: String,
    pub plan: String,
    pub id: String,
    pub title: String,
    pub status: Status,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub files_hint: Vec<String>,
    #[serde(default)]
    pub acceptance: Vec<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub lane: Option<String>,
    #[serde(default)]
    pub claim: Option<Claim>,
    /// Increases with every claim (claim and recover).
    #[serde(default)]
    pub epoch: u64,
    #[serde(default)]
    pub previous_owner: Option<String>,
    #[serde(default)]
    pub previous_lease_until: Option<String>,
    #[serde(default)]
    pub recovery_reason: Option<String>,
    #[serde(default)]
    pub blocked_reason: Option<String>,
    /// Done on the holder's word (`task done --unverified --reason`).
    #[serde(default)]
    pub done_unverified: bool,
    #[serde(default)]
    pub done_reason: Option<String>,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl TaskRecord {
    pub fn new(plan: &str, id: &str, title: &str, now: Timestamp) -> TaskRecord {
        TaskRecord {
            schema: SCHEMA.into(),
            plan: plan.into(),
            id: id.into(),
            title: title.into(),
            status: Status::Open,
            owner: None,
            depends_on: Vec::new(),
            files_hint: Vec::new(),
            acceptance: Vec::new(),
            branch: None,
            lane: None,
            claim: None,
            epoch: 0,
            previous_owner: None,
            previous_lease_until: None,
            recovery_reason: None,
            blocked_reason: None,
            done_unverified: false,
            done_reason: None,
            created_at: rfc3339(now),
            updated_at: rfc3339(now),
            extra: Extra::new(),
        }
    }

    /// The holder of a live claim.
    pub fn live_holder(&self, now: Timestamp) -> Option<&str> {
        self.claim
            .as_ref()
            .filter(|c| c.live(now))
            .map(|c| c.holder.as_str())
    }

    /// `done`, `done (unverified)`, `in_progress`, …
    pub fn status_label(&self) -> String {
        if self.status == Status::Done && self.done_unverified {
            "done (unverified)".into()
        } else {
            self.status.to_string()
        }
    }

    /// Open, unclaimed, and every dependency done (`deps_done` answers for
    /// each): the queue an idle agent takes from.
    pub fn ready(&self, now: Timestamp, deps_done: impl Fn(&str) -> bool) -> bool {
        self.status == Status::Open
            && self.live_holder(now).is_none()
            && self.depends_on.iter().all(|d| deps_done(d))
    }

    pub fn to_json(&self, now: Timestamp) -> serde_json::Value {
        let mut json = serde_json::to_value(self).expect("a task record serialises");
        json["status_label"] = serde_json::json!(self.status_label());
        if let Some(c) = &self.claim {
            json["claim"]["live"] = serde_json::json!(c.live(now));
            json["claim"]["lease_left_secs"] = serde_json::json!(c.left(now).as_secs());
        }
        json
    }
}

/// Parse a task from its YAML.
pub fn parse_record(bytes: &[u8], key: &TaskKey, what: &str) -> Result<TaskRecord> {
    let rec: TaskRecord = yaml::parse(bytes, "swarm-task", what)?;
    let mut addresses = vec![("owner", rec.owner.as_deref().unwrap_or(""))];
    if let Some(c) = &rec.claim {
        addresses.push(("claim.holder", c.holder.as_str()));
    }
    let mut names = vec![("plan", rec.plan.as_str()), ("id", rec.id.as_str())];
    names.extend(rec.depends_on.iter().map(|d| ("depends_on", d.as_str())));
    yaml::check_identities(what, &names, &addresses)?;
    if rec.plan != key.plan || rec.id != key.id {
        return Err(Error::new(
            Code::RecordInvalid,
            format!("{what} names task {}/{}, not {key}", rec.plan, rec.id),
        ));
    }
    Ok(rec)
}

impl Record for TaskRecord {
    const NAMESPACE: &'static str = "tasks";
    const KIND: &'static str = "task";
    /// A claim or a status change is never merged away: the published
    /// version wins and the local one is reported as superseded.
    const DIVERGED: Diverged = Diverged::PublishedWinsIfRelated;
    type Key = TaskKey;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        yaml::yaml_file(RECORD_FILE, self)
    }
    fn from_files(files: &Files, key: &TaskKey, what: &str) -> Result<Self> {
        let bytes = yaml::the_file(files, RECORD_FILE, what)?;
        parse_record(bytes, key, what)
    }
    /// A done or cancelled task of a closed plan.
    fn is_finished(&self, key: &TaskKey, finished_elsewhere: &dyn Fn(&str, &str) -> bool) -> bool {
        self.status.terminal() && finished_elsewhere("plans", &key.plan)
    }
}

/// A lease length: positive (`LEASE_INVALID_DURATION` otherwise).
pub fn parse_lease(text: &str, source: &str) -> Result<SignedDuration> {
    let bad = || {
        Error::new(
            Code::LeaseInvalidDuration,
            format!("{source} '{text}' is not a positive duration"),
        )
        .hint("use a number and a unit: 45s, 30m, 2h, 1d, or combined like 1h30m")
    };
    match crate::clock::parse_duration(text) {
        Ok(d) if d.is_positive() => Ok(d),
        _ => Err(bad()),
    }
}

/// Refuse dependencies the plan does not have, and cycles. `graph` holds
/// every task of the plan with its dependencies, `id`'s own entry included
/// as it would be written.
pub fn check_graph(id: &str, graph: &BTreeMap<String, Vec<String>>) -> Result<()> {
    let deps = graph.get(id).map(Vec::as_slice).unwrap_or(&[]);
    let unknown: Vec<&String> = deps.iter().filter(|d| !graph.contains_key(*d)).collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return Err(Error::new(
            Code::TaskUnknownDependency,
            format!(
                "task '{id}' depends on {}, which the plan does not have",
                names.join(", ")
            ),
        )
        .hint("create the dependency first (`git swarm task new`), or fix --depends-on")
        .with_detail(serde_json::json!({"task": id, "unknown": names})));
    }
    if let Some(cycle) = find_cycle(id, graph) {
        return Err(Error::new(
            Code::TaskDependencyCycle,
            format!("the dependencies would form a cycle: {}", cycle.join(" → ")),
        )
        .hint("a task cannot depend on itself, directly or through others")
        .with_detail(serde_json::json!({"task": id, "cycle": cycle})));
    }
    Ok(())
}

/// Every dependency cycle of a plan's `graph`, each once (starting at its
/// smallest task), e.g. `[a, b, a]`: none of its tasks can ever be ready.
pub fn cycles(graph: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut on_one = BTreeSet::new();
    for id in graph.keys() {
        if on_one.contains(id) {
            continue;
        }
        if let Some(cycle) = find_cycle(id, graph) {
            on_one.extend(cycle.iter().cloned());
            found.push(cycle);
        }
    }
    found
}

/// A path from `id` back to `id`, if its dependencies reach it.
fn find_cycle(id: &str, graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<(String, Vec<String>)> = vec![(id.to_string(), vec![id.to_string()])];
    while let Some((node, path)) = stack.pop() {
        for dep in graph.get(&node).into_iter().flatten() {
            if dep == id {
                let mut cycle = path.clone();
                cycle.push(id.to_string());
                return Some(cycle);
            }
            if seen.insert(dep.clone()) {
                let mut p = path.clone();
                p.push(dep.clone());
                stack.push((dep.clone(), p));
            }
        }
    }
    None
}

/// The journal event of a task change.
pub fn event(kind: &str, actor: &str, rec: &TaskRecord, summary: String) -> Event {
    let mut ev = Event::new(kind, actor, summary)
        .trailer("Swarm-Plan", rec.plan.clone())
        .trailer("Swarm-Task", rec.id.clone());
    if rec.epoch > 0 {
        ev = ev.epoch(rec.epoch);
    }
    ev
}
