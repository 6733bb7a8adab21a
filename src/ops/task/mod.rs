//! The task commands. Every write — create, update, claim, renew, release,
//! block, done, cancel, recover — runs in the store's one fetch → decide →
//! publish loop: it fetches the plan's task refs, decides on the published
//! record with [`crate::records::task::decide`], writes the next version on
//! top of it and publishes it in one atomic push whose lease is the value
//! just fetched; only then does the local ref move. Of several clones
//! claiming one task at once the remote takes exactly one push; the others
//! fetch again, find the winner's claim and fail with `LEASE_HELD` (exit 3).
//! Offline (no remote, or `--offline`) the local CAS arbitrates and the
//! result says it is not published.

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::names;
use crate::records::task::{self, Decision, Op, Status, TaskRecord};
use crate::session::Ctx;

mod batch;
mod fields;
mod next;
mod publish;
mod resolve;
mod view;
mod work;

pub(crate) use publish::publish;
use publish::publish_releasing;
pub use resolve::{named, resolve_plan};
pub(crate) use resolve::{not_found, statuses};
use work::work;

pub use batch::{create_many, parse as parse_task_file, Created};
pub use fields::{create, update, Fields, NewTask};
pub use next::claim_next;
pub use view::{list, ready, show, Listed, Shown};

/// How many times a task command re-reads and decides again after the
/// remote refused its push (someone moved a task of the plan first).
const MAX_ATTEMPTS: usize = 5;

/// The rounds of a `task done` whose push also releases the task's
/// reservations on the one reservation ledger, which every reservation of
/// the repository moves: as many as a `release` has (12). After them the
/// done goes alone for its own [`MAX_ATTEMPTS`] rounds, and says what it
/// left held. (Seven were too few: in the swarm simulation's step of 20
/// dones at one instant, 9 of the 20 releases fell back.)
const RELEASE_ROUNDS: usize = 12;

/// What a task command did.
#[derive(Debug, Clone, Serialize)]
pub struct Ran {
    pub command: &'static str,
    pub plan: String,
    pub id: String,
    pub task: serde_json::Value,
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Nothing was written: the task already was what the command asked.
    pub already: bool,
    /// Published to the shared remote (false: local only).
    pub published: bool,
    /// `task done`: the reservations of the task released in its push.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<String>,
    /// `task done`: the reservations of the task still held, because the
    /// reservation ledger kept changing (release them with `release`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub still_reserved: Vec<String>,
    /// `task claim --next`: the ready tasks (plan/id) other clones claimed
    /// first, one lost push each, before this one was taken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_to_others: Vec<String>,
    /// `task done` on merged work: what the lane's end closed (`lane F`,
    /// `plan C`; see [`crate::ops::lane::end`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<String>,
    /// What the lane's end could not close, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub record: TaskRecord,
}

/// A claim, renew, release, block, done, cancel or recover on task `id`.
pub fn act(ctx: &Ctx, plan: Option<&str>, id: &str, op: OpArgs) -> Result<Ran> {
    let actor = ctx.actor()?;
    let plan = resolve_plan(ctx, plan, id)?;
    let lease = match &op {
        OpArgs::Claim { lease } | OpArgs::Renew { lease } | OpArgs::Recover { lease, .. } => {
            Some(ctx.lease(lease.as_deref(), &task::LEASE)?)
        }
        _ => None,
    };
    op.validate()?;
    let now = ctx.store.clock.now();
    let command = op.name();
    // A done releases the task's reservations in its own push.
    let release_for = matches!(op, OpArgs::Done { .. }).then_some(actor.as_str());
    let done = matches!(op, OpArgs::Done { .. });
    let mut ran = publish_releasing(ctx, &plan, id, command, release_for, |current, tasks| {
        let cur = current.ok_or_else(|| not_found(Some(&plan), id, tasks))?;
        let lease = lease.unwrap_or_default();
        let op = match &op {
            OpArgs::Claim { .. } => Op::Claim { lease },
            OpArgs::Renew { .. } => Op::Renew { lease },
            OpArgs::Release => Op::Release,
            OpArgs::Block { reason } => Op::Block {
                reason: reason.clone(),
            },
            OpArgs::Done { unverified, base } => Op::Done {
                work: work(ctx, &cur.record, base.as_deref())?,
                unverified: unverified.clone(),
            },
            OpArgs::Cancel => Op::Cancel,
            OpArgs::Recover { owner, reason, .. } => Op::Recover {
                owner: owner.clone().unwrap_or_else(|| actor.clone()),
                reason: reason.clone(),
                lease,
            },
        };
        let st = statuses(tasks);
        let dep = |d: &str| st.get(d).copied();
        match task::decide(&cur.record, &actor, &op, now, &dep)? {
            Decision::Already => Ok(None),
            Decision::Write(rec, ev) => Ok(Some((*rec, ev))),
        }
    })?;
    if done {
        end_lane(ctx, &mut ran);
    }
    Ok(ran)
}

/// A task done on merged work (not `--unverified`, not a task without a
/// branch) ends its lane: the lane record and its child plan are closed
/// ([`crate::ops::lane::end`], the mechanism `lead merge` uses). Run again
/// (the task already done), it closes what an interrupted run left.
fn end_lane(ctx: &Ctx, ran: &mut Ran) {
    let rec = &ran.record;
    if rec.status != Status::Done || rec.done_unverified || rec.branch.is_none() {
        return;
    }
    let Some(feature) = rec.lane.as_deref() else {
        return;
    };
    let Ok(lane) = crate::records::lane::require_newest(&ctx.store, ctx.remote(), feature) else {
        return;
    };
    let own = format!("{}/{}", ran.plan, ran.id);
    if !lane.record.is_active() || lane.record.task.as_deref() != Some(own.as_str()) {
        return;
    }
    failpoint::point("task-done:lane-end");
    let ended = crate::ops::lane::end::end(ctx, &lane, &ran.plan);
    ran.ended = ended.closed;
    ran.warnings = ended.warnings;
}

/// `lead merge` landed task `id` of `plan` in `commit`: mark it done on
/// the leader's word (no holder check; the merge is the evidence).
pub fn landed(ctx: &Ctx, plan: &str, id: &str, commit: &str) -> Result<Ran> {
    let actor = ctx.actor()?;
    let now = ctx.store.clock.now();
    let op = Op::Landed {
        commit: commit.to_string(),
    };
    publish_releasing(ctx, plan, id, "done", None, |current, tasks| {
        let cur = current.ok_or_else(|| not_found(Some(plan), id, tasks))?;
        let st = statuses(tasks);
        let dep = |d: &str| st.get(d).copied();
        match task::decide(&cur.record, &actor, &op, now, &dep)? {
            Decision::Already => Ok(None),
            Decision::Write(rec, ev) => Ok(Some((*rec, ev))),
        }
    })
}

/// A task command's arguments, as the CLI passes them.
#[derive(Debug, Clone)]
pub enum OpArgs {
    Claim {
        lease: Option<String>,
    },
    Renew {
        lease: Option<String>,
    },
    Release,
    Block {
        reason: Option<String>,
    },
    Done {
        unverified: Option<String>,
        base: Option<String>,
    },
    Cancel,
    Recover {
        owner: Option<String>,
        reason: String,
        lease: Option<String>,
    },
}

impl OpArgs {
    pub fn name(&self) -> &'static str {
        match self {
            OpArgs::Claim { .. } => "claim",
            OpArgs::Renew { .. } => "renew",
            OpArgs::Release => "release",
            OpArgs::Block { .. } => "block",
            OpArgs::Done { .. } => "done",
            OpArgs::Cancel => "cancel",
            OpArgs::Recover { .. } => "recover",
        }
    }

    fn validate(&self) -> Result<()> {
        match self {
            OpArgs::Recover { owner, reason, .. } => {
                if let Some(o) = owner {
                    names::validate_address(o)?;
                }
                if reason.trim().is_empty() {
                    return Err(
                        Error::new(Code::Usage, "task recover needs a non-empty --reason").hint(
                            "say why the claim is taken over, e.g. --reason \"ann's machine died\"",
                        ),
                    );
                }
                crate::secret::check_fields("the recovery", &[("--reason", reason)])
            }
            OpArgs::Block { reason: Some(r) } => {
                crate::secret::check_fields("the block", &[("--reason", r)])
            }
            OpArgs::Done {
                unverified: Some(r),
                ..
            } => {
                if r.trim().is_empty() {
                    return Err(Error::new(
                        Code::Usage,
                        "--unverified needs a non-empty --reason",
                    ));
                }
                crate::secret::check_fields("the done", &[("--reason", r)])
            }
            _ => Ok(()),
        }
    }
}
