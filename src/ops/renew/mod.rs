//! `git swarm renew`: one push renews everything the actor holds — the
//! leases of their task claims (every plan) and of their reservations —
//! in one atomic push, each ref leased on the value just fetched, in the
//! store's one publication ([`Publish`]; offline one local compare-and-swap
//! of every ref, all or none). An agent that holds three claims
//! and two reservations makes one push, not five. The agent's post-tool-use
//! hook renews this way once any of its holdings is past half its lease.
//!
//! `--due` decides first from what this clone knows, with no network
//! ([`due`]): most runs, after a tool use, find nothing due and cost
//! nothing. Under a push budget a claim past half its lease is renewed in
//! this clone and queued, to ride the clone's next push with its messages;
//! a holding with less than a quarter of its published lease left is
//! pushed at once, with everything else held.
//!
//! Leader leases are not renewed here: a leader record is fenced by its
//! epoch, and one atomic push would let a fenced leader's refusal stop the
//! renewal of every claim with it (`lead renew` renews it).

use std::collections::BTreeSet;

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::records::reservation::shard::{self, Shards};
use crate::records::reservation::{self as reservation, stored, Ledger, Request};
use crate::records::task::{self as task, plan_prefix, task_ref, Decision, Op, Status};
use crate::session::Ctx;
use crate::store::records::{Publish, Record, Txn};
use crate::store::remote::Tip;
use crate::store::Event;

mod due;

use due::Step;

/// How many rounds a renewal re-reads and decides again after the remote
/// refused its push (someone moved one of the records first): as many as
/// a reservation's, since the one ledger is in the push.
const ATTEMPTS: usize = 12;

/// What `renew` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Renewed {
    pub holder: String,
    /// The claims renewed, as `plan/id`.
    pub tasks: Vec<String>,
    /// The reservations renewed, by id.
    pub reservations: Vec<String>,
    /// Until when each kind now runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_lease_until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation_lease_until: Option<String>,
    /// Holdings not renewed, and why (an expired claim is not renewed
    /// silently: `task recover` names a holder and a reason).
    pub skipped: Vec<String>,
    /// Nothing was due (with `--due`), or nothing is held.
    pub nothing: bool,
    /// Renewed in this clone and queued under `swarm.pushBudget` (the
    /// claims only): they ride the clone's next push. (The JSON's `queued`
    /// is the queue itself, added at the edge as for every queued write.)
    #[serde(skip)]
    pub queued: bool,
    /// With `--due` and nothing due: when the first holding comes due
    /// (half its lease left; a quarter under `swarm.pushBudget`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_from: Option<String>,
    pub published: bool,
}

fn reservation_lease(ctx: &Ctx) -> Result<SignedDuration> {
    ctx.lease(None, &crate::records::reservation::LEASE)
}

/// `git swarm renew [--due]`: renew every claim and reservation the actor
/// holds in one push. With `due_only`, only what [`due`] decides: all of
/// them in one push once one is due, the claims in this clone (queued)
/// under a push budget while a quarter of each published lease is left,
/// or nothing.
pub fn renew(ctx: &Ctx, due_only: bool) -> Result<Renewed> {
    let me = ctx.actor()?;
    let store = &ctx.store;
    let now = store.clock.now();
    let task_lease = ctx.lease(None, &crate::records::task::LEASE)?;
    let res_lease = reservation_lease(ctx)?;
    let ignore_case = store
        .repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false);
    let budget_remote = match ctx.remote() {
        Some(remote) if crate::config::push_budget(store).is_ok_and(|b| b.is_some()) => {
            Some(remote.to_string())
        }
        _ => None,
    };
    let mut r = Renewal {
        ctx,
        me,
        now,
        task_lease,
        res_lease,
        ignore_case,
        plans: BTreeSet::new(),
        budget_remote,
    };
    // The plans where this clone knows a claim of mine: their tasks are
    // fetched, not every plan's.
    let (known, _) = crate::records::task::known(store, ctx.remote(), None)?;
    r.plans = known
        .iter()
        .filter(|k| r.mine(&k.record))
        .map(|k| k.key.plan.clone())
        .collect();
    let mine: Vec<&task::Known> = known.iter().filter(|k| r.mine(&k.record)).collect();
    let step = if due_only { r.step(&mine)? } else { Step::Push };
    match step {
        Step::Nothing(due_from) => Ok(r.nothing(due_from)),
        Step::Queue => r.queue(&mine),
        Step::Push => r.push(),
    }
}

impl Renewal<'_> {
    /// Nothing renewed: nothing held, or (with `--due`) nothing due yet.
    fn nothing(&self, due_from: Option<Timestamp>) -> Renewed {
        Renewed {
            holder: self.me.clone(),
            nothing: true,
            due_from: due_from.map(crate::clock::rfc3339),
            ..Renewed::default()
        }
    }

    /// Renew the claims in this clone (the local compare-and-swap, as
    /// offline) and queue them for the budget's next push; each local ref
    /// first catches up with what the remote published, so the queued
    /// version descends from it and goes as a fast-forward.
    fn queue(&self, mine: &[&task::Known]) -> Result<Renewed> {
        let store = &self.ctx.store;
        let remote = self
            .budget_remote
            .as_deref()
            .expect("queued under a budget");
        for k in mine {
            let refname = task_ref(&k.key.plan, &k.key.id);
            let tip = crate::store::remote::tip(store, Some(remote), &refname)?;
            if let (true, Some(published)) = (tip.local_behind(store)?, tip.base) {
                crate::store::remote::adopt(
                    store,
                    &refname,
                    published,
                    "git-swarm",
                    "catch up with the remote",
                )?;
            }
        }
        // The queue's age first: a run killed after its write still
        // leaves a queue the window publishes (an empty one is forgotten).
        crate::store::remote::budget::mark_queued(store, remote);
        let done = Publish::new(store, None)
            .attempts(ATTEMPTS)
            .point("renew")
            .run(|txn| self.round(txn, Holdings::Claims))?;
        let mut out = done.then;
        out.queued = !out.nothing;
        Ok(out)
    }

    /// Renew everything held, in one push.
    fn push(&self) -> Result<Renewed> {
        let store = &self.ctx.store;
        let mut fetch: Vec<String> = self.plans.iter().map(|p| plan_prefix(p)).collect();
        fetch.push(shard::PREFIX.to_string());
        let exhausted = |lines: &[String]| {
            let why = "your claims and reservations kept changing at the remote";
            Error::new(
                Code::PushRejected,
                format!("{why} ({ATTEMPTS} attempts): {}", lines.join("; ")),
            )
        };
        let done = Publish::new(store, self.ctx.remote())
            .fetch(fetch)
            .attempts(ATTEMPTS)
            .point("renew")
            // An offline write of this clone meanwhile: exit 3, both named.
            .strict()
            .exhausted(exhausted)
            .run(|txn| self.round(txn, Holdings::All))?;
        Ok(done.then)
    }
}

/// What a round renews.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Holdings {
    /// Every claim and reservation held.
    All,
    /// The claims only (queued under a push budget).
    Claims,
}

/// What a renewal decides on: who renews, when, the two leases, the
/// repository's case rule, and the plans where a claim of theirs is known.
struct Renewal<'c> {
    ctx: &'c Ctx,
    me: String,
    now: Timestamp,
    task_lease: SignedDuration,
    res_lease: SignedDuration,
    ignore_case: bool,
    plans: BTreeSet<String>,
    /// The remote whose push budget applies (`swarm.pushBudget`), if any.
    budget_remote: Option<String>,
}

/// A claim's next version, decided: its ref, the lease it is written on,
/// the record and its event.
type Decided = (String, Tip, task::TaskRecord, Event);

impl Renewal<'_> {
    /// A task in progress claimed by the one renewing.
    fn mine(&self, r: &task::TaskRecord) -> bool {
        r.status == Status::InProgress && r.claim.as_ref().is_some_and(|c| c.holder == self.me)
    }

    /// One round of the publication: decide every renewal, then write them
    /// (or nothing, when nothing is held).
    fn round(&self, txn: &mut Txn, what: Holdings) -> Result<Renewed> {
        let mut out = Renewed {
            holder: self.me.clone(),
            published: txn.online(),
            ..Renewed::default()
        };
        let decided = self.claims(txn, &mut out)?;
        let (before, renewed_ledger) = match what {
            Holdings::All => {
                let before = stored::current(txn)?;
                let renewed = self.reservations(&before, &mut out);
                (before, renewed)
            }
            Holdings::Claims => (Shards::default(), None),
        };
        if decided.is_empty() && renewed_ledger.is_none() {
            out.tasks.clear();
            out.reservations.clear();
            out.task_lease_until = None;
            out.reservation_lease_until = None;
            out.nothing = true;
            out.published = false;
            return Ok(out);
        }
        self.write(
            txn,
            &out,
            decided,
            renewed_ledger.map(|l| (before, l)),
            what,
        )?;
        crate::failpoint::point("renew:objects");
        Ok(out)
    }

    /// The renewal of each claim of the one renewing in the fetched plans,
    /// read where it stands in `txn`; a claim that cannot be renewed is
    /// skipped, named.
    fn claims(&self, txn: &mut Txn, out: &mut Renewed) -> Result<Vec<Decided>> {
        let (store, me, now) = (&self.ctx.store, &self.me, self.now);
        let mut decided: Vec<Decided> = Vec::new();
        for plan in &self.plans {
            let (tasks, _) = crate::records::task::known(store, self.ctx.remote(), Some(plan))?;
            for k in tasks.iter().filter(|k| self.mine(&k.record)) {
                let name = format!("{}/{}", k.key.plan, k.key.id);
                let op = Op::Renew {
                    lease: self.task_lease,
                };
                let (rec, event) = match task::decide(&k.record, me, &op, now, &|_| None) {
                    Ok(Decision::Write(rec, event)) => (*rec, event),
                    Ok(Decision::Already) => continue,
                    Err(e) => {
                        out.skipped.push(format!("task {name}: {}", e.message));
                        continue;
                    }
                };
                let refname = task_ref(&k.key.plan, &k.key.id);
                let tip = txn.tip(&refname)?;
                out.task_lease_until = rec.claim.as_ref().map(|c| c.lease_until.clone());
                out.tasks.push(name);
                decided.push((refname, tip, rec, event));
            }
        }
        Ok(decided)
    }

    /// The reservations `before` with every live one of the one renewing
    /// renewed (None: none was); one that cannot be is skipped, named.
    fn reservations(&self, before: &Shards, out: &mut Renewed) -> Option<Ledger> {
        let (me, now) = (&self.me, self.now);
        let mut ledger = before.merged();
        let held: Vec<reservation::Entry> = ledger
            .entries
            .iter()
            .filter(|e| e.holder == *me && e.released_at.is_none() && e.live(now))
            .cloned()
            .collect();
        for e in &held {
            let req = Request {
                holder: me.clone(),
                paths: e.paths.clone(),
                shared: e.shared,
                task: None,
                reason: None,
                lease: self.res_lease,
            };
            match reservation::reserve(&mut ledger, &req, now, self.ignore_case) {
                Ok(renewed) => {
                    out.reservation_lease_until = Some(renewed.lease_until);
                    out.reservations.push(renewed.id);
                }
                Err(err) => out
                    .skipped
                    .push(format!("reservation {}: {}", e.id, err.message)),
            }
        }
        (!out.reservations.is_empty()).then_some(ledger)
    }

    /// Write every renewed claim and the shards of the renewed ledger in
    /// the round: one push of every ref (offline one local compare-and-swap
    /// of every ref, all or none).
    fn write(
        &self,
        txn: &mut Txn,
        out: &Renewed,
        decided: Vec<Decided>,
        ledger: Option<(Shards, Ledger)>,
        what: Holdings,
    ) -> Result<()> {
        let (store, me) = (&self.ctx.store, &self.me);
        let summary = format!(
            "{me} renews {} claim(s) and {} reservation(s)",
            out.tasks.len(),
            out.reservations.len()
        );
        for (refname, tip, rec, event) in decided {
            let tree = store.write_tree(&rec.to_files()?)?;
            let parents: Vec<ObjectId> = tip.base.into_iter().collect();
            let new = store.commit(tree, &parents, &event)?;
            txn.write_on(&refname, tip, new, me, &summary);
        }
        let wrote = match ledger {
            Some((before, ledger)) => {
                let what = format!("{me} renews {}", out.reservations.join(" "));
                let event = Event::new("reservations-renewed", me, what);
                stored::write(txn, &before, &ledger, &event)?
            }
            None => None,
        };
        // No shard changed (a rerun of a renewal whose push landed): each
        // local shard behind the published one moves up to it.
        if wrote.is_none() && what == Holdings::All {
            stored::catch_up(txn)?;
        }
        Ok(())
    }
}
