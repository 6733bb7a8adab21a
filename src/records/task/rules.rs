//! What a claim, renew, release, block, done, cancel or recover does to a
//! task: [`decide`], pure.

use jiff::{SignedDuration, Timestamp};

use super::{event, invalid_transition, Claim, Status, TaskRecord};
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::store::yaml::Extra;
use crate::store::Event;

/// Whether the task's work is merged, as the operation found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// The task names no branch: nothing to verify.
    Unbound,
    /// Merged: `how` is `ancestry` (the branch is in its base) or
    /// `verdict` (a merged verdict note on its head).
    Merged { how: &'static str },
    /// Not merged, and why (names the branch and its base).
    NotMerged { why: String },
}

/// A command on a task's claim or status.
#[derive(Debug, Clone)]
pub enum Op {
    Claim {
        lease: SignedDuration,
    },
    Renew {
        lease: SignedDuration,
    },
    Release,
    Block {
        reason: Option<String>,
    },
    Done {
        work: Work,
        unverified: Option<String>,
    },
    Cancel,
    Recover {
        owner: String,
        reason: String,
        lease: SignedDuration,
    },
    /// The leader landed the task's branch (`lead merge`): the merge is the
    /// evidence, so the holder's claim does not matter. `commit` is the
    /// commit on the base that carries the work.
    Landed {
        commit: String,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Claim { .. } => "claim",
            Op::Renew { .. } => "renew",
            Op::Release => "release",
            Op::Block { .. } => "block",
            Op::Done { .. } => "done",
            Op::Cancel => "cancel",
            Op::Recover { .. } => "recover",
            Op::Landed { .. } => "done",
        }
    }
}

/// The outcome of [`decide`].
#[derive(Debug, Clone)]
pub enum Decision {
    /// Nothing to write: the task already is what the command asks (the
    /// same status again, or an earlier run of this command was published).
    Already,
    Write(Box<TaskRecord>, Event),
}

/// Decide a command on `task` by `actor` at `now`. `dep` answers the
/// status of each dependency (None: unknown to this clone).
pub fn decide(
    task: &TaskRecord,
    actor: &str,
    op: &Op,
    now: Timestamp,
    dep: &dyn Fn(&str) -> Option<Status>,
) -> Result<Decision> {
    let d = Decider { task, actor, now };
    match op {
        Op::Claim { lease } => d.claim(*lease, dep),
        Op::Renew { lease } => d.renew(*lease),
        Op::Release => d.release(),
        Op::Block { reason } => d.block(reason.as_deref()),
        Op::Done { work, unverified } => d.done(work, unverified.as_deref(), dep),
        Op::Cancel => d.cancel(),
        Op::Recover {
            owner,
            reason,
            lease,
        } => d.recover(owner, reason, *lease),
        Op::Landed { commit } => d.landed(commit, dep),
    }
}

struct Decider<'a> {
    task: &'a TaskRecord,
    actor: &'a str,
    now: Timestamp,
}

impl Decider<'_> {
    fn id(&self) -> &str {
        &self.task.id
    }

    fn next(&self) -> TaskRecord {
        let mut t = self.task.clone();
        t.updated_at = rfc3339(self.now);
        t
    }

    fn write(&self, rec: TaskRecord, kind: &str, summary: String) -> Result<Decision> {
        let ev = event(kind, self.actor, &rec, summary);
        Ok(Decision::Write(Box::new(rec), ev))
    }

    fn new_claim(&self, rec: &mut TaskRecord, holder: &str, lease: SignedDuration) -> Result<()> {
        rec.epoch += 1;
        rec.claim = Some(Claim {
            holder: holder.to_string(),
            lease_until: crate::clock::lease_end(self.now, lease, Code::LeaseInvalidDuration)?,
            claimed_at: rfc3339(self.now),
            epoch: rec.epoch,
            extra: Extra::new(),
        });
        rec.owner = Some(holder.to_string());
        rec.status = Status::InProgress;
        rec.blocked_reason = None;
        Ok(())
    }

    /// Every dependency is done, else `TASK_DEPENDENCY_NOT_READY`.
    fn deps_done(&self, to: Status, dep: &dyn Fn(&str) -> Option<Status>) -> Result<()> {
        let waiting: Vec<String> = self
            .task
            .depends_on
            .iter()
            .filter(|d| dep(d) != Some(Status::Done))
            .map(|d| match dep(d) {
                Some(s) => format!("{d} ({s})"),
                None => format!("{d} (unknown here)"),
            })
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            Code::TaskDependencyNotReady,
            format!(
                "task '{}' cannot become {to}: it depends on {}, not done yet",
                self.id(),
                waiting.join(", ")
            ),
        )
        .hint("finish the dependencies first; `git swarm task ready` lists what can start now")
        .with_detail(serde_json::json!({"task": self.id(), "waiting": waiting})))
    }

    /// The actor holds the claim; `live`: and it has not expired.
    fn holder(&self, verb: &str, live: bool) -> Result<&Claim> {
        let id = self.id();
        let Some(c) = &self.task.claim else {
            return Err(Error::new(
                Code::LeaseNotHolder,
                format!(
                    "nobody holds a claim on task '{id}' ({}): there is nothing to {verb}",
                    self.task.status
                ),
            )
            .hint(format!(
                "claim it first: `git swarm task claim {id} --plan {}`",
                self.task.plan
            )));
        };
        if c.holder != self.actor {
            let state = if c.live(self.now) {
                "until"
            } else {
                "expired at"
            };
            return Err(Error::new(
                Code::LeaseNotHolder,
                format!(
                    "{} holds the claim on task '{id}' ({state} {}), not you ({}): only the holder may {verb} it",
                    c.holder, c.lease_until, self.actor
                ),
            )
            .hint("ask the holder; once their lease expires, `git swarm task recover --reason …` takes it over")
            .with_detail(claim_detail(self.task)));
        }
        if live && !c.live(self.now) {
            return Err(lease_expired(self.task, c));
        }
        Ok(c)
    }

    fn claim(
        &self,
        lease: SignedDuration,
        dep: &dyn Fn(&str) -> Option<Status>,
    ) -> Result<Decision> {
        let (id, t) = (self.id(), self.task);
        if let Some(c) = &t.claim {
            if c.holder == self.actor && c.live(self.now) && t.status == Status::InProgress {
                return Ok(Decision::Already);
            }
            if c.holder != self.actor {
                if c.live(self.now) {
                    return Err(lease_held(t, c));
                }
                return Err(lease_expired(t, c));
            }
        }
        // The holder takes back their own expired claim while nobody recovered it.
        let own_expired = t.status == Status::InProgress && t.claim.is_some();
        if !own_expired && !transition_ok(t.status, Status::InProgress) {
            return Err(invalid_transition(id, t.status, Status::InProgress));
        }
        self.deps_done(Status::InProgress, dep)?;
        let mut rec = self.next();
        self.new_claim(&mut rec, self.actor, lease)?;
        let until = rec
            .claim
            .as_ref()
            .map(|c| c.lease_until.clone())
            .unwrap_or_default();
        self.write(
            rec,
            "task-claimed",
            format!("task {id}: claimed by {} until {until}", self.actor),
        )
    }

    fn renew(&self, lease: SignedDuration) -> Result<Decision> {
        self.holder("renew", true)?;
        let mut rec = self.next();
        let until = crate::clock::lease_end(self.now, lease, Code::LeaseInvalidDuration)?;
        if let Some(c) = rec.claim.as_mut() {
            c.lease_until = until.clone();
        }
        self.write(
            rec,
            "task-renewed",
            format!("task {}: lease renewed until {until}", self.id()),
        )
    }

    fn release(&self) -> Result<Decision> {
        if self.task.claim.is_none() && self.task.status == Status::Open {
            return Ok(Decision::Already);
        }
        self.holder("release", false)?;
        let mut rec = self.next();
        rec.claim = None;
        rec.status = Status::Open;
        self.write(
            rec,
            "task-released",
            format!("task {}: released by {}", self.id(), self.actor),
        )
    }

    fn block(&self, reason: Option<&str>) -> Result<Decision> {
        let t = self.task;
        if t.status == Status::Blocked {
            return Ok(Decision::Already);
        }
        if !transition_ok(t.status, Status::Blocked) {
            return Err(invalid_transition(self.id(), t.status, Status::Blocked));
        }
        if t.claim.is_some() {
            self.holder("block", true)?;
        }
        let mut rec = self.next();
        rec.claim = None;
        rec.status = Status::Blocked;
        rec.blocked_reason = reason.map(str::to_string);
        let why = reason.map(|r| format!(": {r}")).unwrap_or_default();
        self.write(
            rec,
            "task-blocked",
            format!("task {}: blocked{why}", self.id()),
        )
    }

    fn done(
        &self,
        work: &Work,
        unverified: Option<&str>,
        dep: &dyn Fn(&str) -> Option<Status>,
    ) -> Result<Decision> {
        let (id, t) = (self.id(), self.task);
        if t.status == Status::Done {
            return Ok(Decision::Already);
        }
        if !transition_ok(t.status, Status::Done) {
            return Err(invalid_transition(id, t.status, Status::Done));
        }
        self.holder("complete", true)?;
        self.deps_done(Status::Done, dep)?;
        let mut rec = self.next();
        let summary = match (work, unverified) {
            (Work::NotMerged { why }, None) => {
                return Err(Error::new(
                    Code::TaskNotMerged,
                    format!("task '{id}' is not done: {why}"),
                )
                .hint("merge the branch into its base (or record a merged verdict with `git swarm verify pr`), then run `task done` again")
                .hint("to record it anyway: `--unverified --reason <why>` (shown as done (unverified) everywhere)")
                .with_detail(serde_json::json!({"task": id, "branch": t.branch, "why": why})));
            }
            (Work::NotMerged { .. }, Some(reason)) => {
                rec.done_unverified = true;
                rec.done_reason = Some(reason.to_string());
                format!("task {id}: done (unverified: {reason})")
            }
            (Work::Merged { how }, _) => format!("task {id}: done (merged, by {how})"),
            (Work::Unbound, Some(reason)) => {
                rec.done_reason = Some(reason.to_string());
                format!("task {id}: done ({reason})")
            }
            (Work::Unbound, None) => format!("task {id}: done"),
        };
        rec.claim = None;
        rec.status = Status::Done;
        self.write(rec, "task-done", summary)
    }

    /// Done because the leader's merge queue landed the branch: no holder
    /// check (the leader is not the holder), the dependencies still count.
    fn landed(&self, commit: &str, dep: &dyn Fn(&str) -> Option<Status>) -> Result<Decision> {
        let (id, t) = (self.id(), self.task);
        if t.status == Status::Done {
            return Ok(Decision::Already);
        }
        if !transition_ok(t.status, Status::Done) {
            return Err(invalid_transition(id, t.status, Status::Done));
        }
        self.deps_done(Status::Done, dep)?;
        let mut rec = self.next();
        rec.claim = None;
        rec.status = Status::Done;
        let short = &commit[..commit.len().min(12)];
        self.write(
            rec,
            "task-done",
            format!("task {id}: done (landed by {} in {short})", self.actor),
        )
    }

    fn cancel(&self) -> Result<Decision> {
        let t = self.task;
        if t.status == Status::Cancelled {
            return Ok(Decision::Already);
        }
        if !transition_ok(t.status, Status::Cancelled) {
            return Err(invalid_transition(self.id(), t.status, Status::Cancelled));
        }
        if t.live_holder(self.now).is_some() {
            self.holder("cancel", true)?;
        }
        let mut rec = self.next();
        rec.claim = None;
        rec.status = Status::Cancelled;
        self.write(
            rec,
            "task-cancelled",
            format!("task {}: cancelled", self.id()),
        )
    }

    fn recover(&self, owner: &str, reason: &str, lease: SignedDuration) -> Result<Decision> {
        let (id, t) = (self.id(), self.task);
        let Some(c) = &t.claim else {
            return Err(invalid_transition(id, t.status, Status::InProgress).hint(
                "there is no claim to recover: `git swarm task claim` takes an unclaimed task",
            ));
        };
        if c.holder == owner && c.live(self.now) && t.recovery_reason.as_deref() == Some(reason) {
            return Ok(Decision::Already);
        }
        // The holder itself may hand its live claim over (a runner passing
        // a lost agent's claim to its successor); anyone else waits.
        if c.live(self.now) && c.holder != self.actor {
            return Err(Error::new(
                Code::LeaseNotExpired,
                format!(
                    "{} holds the claim on task '{id}' until {}: it has not expired",
                    c.holder, c.lease_until
                ),
            )
            .hint("wait for the lease to end, or ask the holder to `task release` it")
            .with_detail(claim_detail(t)));
        }
        let mut rec = self.next();
        rec.previous_owner = Some(c.holder.clone());
        rec.previous_lease_until = Some(c.lease_until.clone());
        rec.recovery_reason = Some(reason.to_string());
        self.new_claim(&mut rec, owner, lease)?;
        self.write(
            rec,
            "task-recovered",
            format!(
                "task {id}: recovered from {} for {owner}: {reason}",
                c.holder
            ),
        )
    }
}

fn transition_ok(from: Status, to: Status) -> bool {
    from != to && super::transition_allowed(from, to)
}

fn claim_detail(t: &TaskRecord) -> serde_json::Value {
    serde_json::json!({
        "task": t.id,
        "plan": t.plan,
        "holder": t.claim.as_ref().map(|c| &c.holder),
        "lease_until": t.claim.as_ref().map(|c| &c.lease_until),
        "epoch": t.epoch,
    })
}

/// `LEASE_HELD`: someone else holds a live claim.
pub fn lease_held(t: &TaskRecord, c: &Claim) -> Error {
    Error::new(
        Code::LeaseHeld,
        format!(
            "task '{}' is claimed by {} until {} (claim {})",
            t.id, c.holder, c.lease_until, c.epoch
        ),
    )
    .hint("take another task: `git swarm task ready`")
    .with_detail(claim_detail(t))
}

fn lease_expired(t: &TaskRecord, c: &Claim) -> Error {
    Error::new(
        Code::LeaseExpired,
        format!(
            "the claim of {} on task '{}' expired at {}",
            c.holder, t.id, c.lease_until
        ),
    )
    .hint(format!(
        "an expired claim is never taken silently: `git swarm task recover {} --plan {} --reason <why>` (the holder may `task claim` it again while nobody has)",
        t.id, t.plan
    ))
    .with_detail(claim_detail(t))
}

/// What `accept` does with the claim a handoff packet carries.
#[derive(Debug, Clone)]
pub enum HandOver {
    /// The claim moves to the successor: the next version.
    Move(Box<TaskRecord>, Event),
    /// The successor holds it already (a re-run).
    Already,
    /// It cannot move, and why (recovered by someone else, released, done).
    Lost(String),
}

/// Move the claim `from` holds on `task` to `to`, as an accepted handoff
/// (`packet`) does: the claim counter increases, `to` holds it with a
/// fresh lease, `from` is recorded as the previous owner. A claim that is
/// someone else's now (its lease expired and was recovered) is `Lost`.
pub fn hand_over(
    task: &TaskRecord,
    from: &str,
    to: &str,
    packet: &str,
    lease: SignedDuration,
    now: Timestamp,
) -> Result<HandOver> {
    let key = format!("{}/{}", task.plan, task.id);
    let Some(c) = &task.claim else {
        return Ok(HandOver::Lost(format!(
            "task {key}: nobody holds a claim on it now ({})",
            task.status
        )));
    };
    if c.holder == to {
        return Ok(HandOver::Already);
    }
    if c.holder != from {
        return Ok(HandOver::Lost(format!(
            "task {key}: claimed by {} now (claim {}), not {from}",
            c.holder, c.epoch
        )));
    }
    if task.status.terminal() {
        return Ok(HandOver::Lost(format!("task {key}: {}", task.status)));
    }
    let d = Decider {
        task,
        actor: to,
        now,
    };
    let mut rec = d.next();
    rec.previous_owner = Some(from.to_string());
    rec.previous_lease_until = Some(c.lease_until.clone());
    rec.recovery_reason = Some(format!("handed over by packet {packet}"));
    d.new_claim(&mut rec, to, lease)?;
    let until = rec
        .claim
        .as_ref()
        .map(|c| c.lease_until.clone())
        .unwrap_or_default();
    let summary = format!(
        "task {}: handed over from {from} to {to} (packet {packet}), claimed until {until}",
        task.id
    );
    let ev = event("task-handed-over", to, &rec, summary).trailer("Swarm-Packet", packet);
    Ok(HandOver::Move(Box::new(rec), ev))
}
