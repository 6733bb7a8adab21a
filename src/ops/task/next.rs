//! `task claim --next`: claim the first ready task (of a plan, or of every
//! plan) without a herd. The first round claims the first task `task
//! ready` lists. A round that loses at the remote (another clone claimed
//! that task first) never tries that task again, and picks its next
//! candidate from what the round's fetch already showed — no new fetch,
//! no pause — spread over the remaining ready tasks by the claimant's
//! address, so the losers of one race do not all race again for one id.
//! Only when the view it fetched holds no other candidate does a round
//! fetch again, after the store's jittered pause.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use jiff::SignedDuration;

use super::{statuses, Ran};
use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::names;
use crate::records::task::{self, Decision, Known, Op, Status, TaskRecord};
use crate::session::Ctx;
use crate::store::records::Publish;
use crate::store::Event;

/// Rounds of a `claim --next` (each a push; those on the view already
/// fetched cost no fetch).
const NEXT_ATTEMPTS: usize = 12;

/// Claim the first ready task of `plan` (None: of every plan).
pub fn claim_next(ctx: &Ctx, plan: Option<&str>, lease: Option<&str>) -> Result<Ran> {
    let actor = ctx.actor()?;
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
    }
    let lease = ctx.lease(lease, &task::LEASE)?;
    let store = &ctx.store;
    let now = store.clock.now();
    let prefix = match plan {
        Some(p) => task::plan_prefix(p),
        None => task::PREFIX.to_string(),
    };
    let scope = plan.map(|p| format!(" of plan '{p}'")).unwrap_or_default();
    let mut lost: Vec<String> = Vec::new();
    let mut tried: Option<String> = None;
    let outcome = Publish::new(store, ctx.remote())
        .fetch([prefix])
        .attempts(NEXT_ATTEMPTS)
        .point("task")
        .exhausted(|lines| {
            Error::new(
                Code::PushRejected,
                format!(
                    "every ready task{scope} this clone tried was claimed by another first ({NEXT_ATTEMPTS} attempts): {}",
                    lines.join("; ")
                ),
            )
            .hint("run the command again")
        })
        .run(|txn| {
            if let (Some(t), Some(_)) = (tried.take(), txn.rejected()) {
                lost.push(t);
            }
            let (tasks, _) = task::known(store, ctx.remote(), plan)?;
            let candidates = ready(&tasks, now, &lost);
            if candidates.is_empty() {
                return Err(no_ready_task(&scope, &lost));
            }
            // The first ready task first; after a loss, one of the others
            // this view shows, spread by who asks and how often it lost.
            let pick = if lost.is_empty() {
                0
            } else {
                spread(&actor, lost.len()) % candidates.len()
            };
            let k = candidates[pick];
            let name = format!("{}/{}", k.key.plan, k.key.id);
            let (record, event) = claim_of(&tasks, k, &actor, lease, now)?;
            let commit = txn.write(&k.key, &record, &event)?;
            failpoint::point("task:objects");
            if candidates.len() > 1 {
                txn.keep_view_if_lost();
            }
            tried = Some(name);
            Ok(Ran {
                command: "claim",
                plan: k.key.plan.clone(),
                id: k.key.id.clone(),
                task: record.to_json(now),
                commit: Some(commit.to_string()),
                event: Some(event.kind.clone()),
                already: false,
                published: false,
                released: Vec::new(),
                still_reserved: Vec::new(),
                lost_to_others: lost.clone(),
                ended: Vec::new(),
                warnings: Vec::new(),
                record,
            })
        })?;
    Ok(Ran {
        published: outcome.publication.is_published(),
        ..outcome.then
    })
}

/// `NO_READY_TASK`: none ready in `scope`, naming those others claimed
/// first.
fn no_ready_task(scope: &str, lost: &[String]) -> Error {
    let also = if lost.is_empty() {
        String::new()
    } else {
        format!("; claimed by others first: {}", lost.join(", "))
    };
    Error::new(
        Code::NoReadyTask,
        format!("no task{scope} is ready to claim{also}"),
    )
    .hint("`git swarm task list` shows the tasks and who holds them; `git swarm task new` adds one")
}

/// The claim of ready task `k` by `actor` (its dependencies read among the
/// `tasks` of its plan): its next record and event.
fn claim_of(
    tasks: &[Known],
    k: &Known,
    actor: &str,
    lease: SignedDuration,
    now: jiff::Timestamp,
) -> Result<(TaskRecord, Event)> {
    let plan_of = k.key.plan.as_str();
    let st = statuses(
        &tasks
            .iter()
            .filter(|t| t.key.plan == plan_of)
            .cloned()
            .collect::<Vec<_>>(),
    );
    let dep = |d: &str| st.get(d).copied();
    match task::decide(&k.record, actor, &Op::Claim { lease }, now, &dep)? {
        Decision::Write(rec, ev) => Ok((*rec, ev)),
        // A ready task has no live claim: never already ours.
        Decision::Already => Err(Error::new(
            Code::CasFailed,
            format!(
                "task {}/{} was ready and already claimed",
                k.key.plan, k.key.id
            ),
        )),
    }
}

/// The ready tasks among `tasks` (in `task ready`'s order), less those
/// named in `lost` (plan/id).
fn ready<'k>(tasks: &'k [Known], now: jiff::Timestamp, lost: &[String]) -> Vec<&'k Known> {
    let mut done: BTreeMap<&str, BTreeMap<&str, Status>> = BTreeMap::new();
    for k in tasks {
        done.entry(k.key.plan.as_str())
            .or_default()
            .insert(k.key.id.as_str(), k.record.status);
    }
    tasks
        .iter()
        .filter(|k| {
            let st = &done[k.key.plan.as_str()];
            k.record.ready(now, |d| st.get(d) == Some(&Status::Done))
                && !lost.contains(&format!("{}/{}", k.key.plan, k.key.id))
        })
        .collect()
}

/// A number that differs between claimants and between their rounds.
fn spread(actor: &str, round: usize) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (actor, round).hash(&mut h);
    usize::try_from(h.finish() % (usize::MAX as u64)).unwrap_or(0)
}
