//! One executor per plan across machines: with a remote, `lane new` reads
//! the lane records the remote has before it starts (so a lane another
//! machine published refuses this one), and once the lane is made here it
//! publishes the plan's `lane-started` entry and the lane record in one
//! atomic push, the plan ref leased at the value just fetched. Two machines
//! starting a lane of one plan at once both lease the same plan head: the
//! remote takes one push, and the other, fetching again, finds the
//! winner's lane and undoes its own start (`PLAN_HAS_EXECUTOR`). The same
//! compare-and-swap on the plan ref that arbitrates two starts in one clone
//! arbitrates them between clones.
//!
//! When the remote cannot be reached, or the plan or the lane record
//! changed both here and there in a way one entry cannot bridge, the lane
//! stays local with a warning and `sync` publishes it, as before. Not a
//! start that takes a task (`--task`): its claim is the remote's to decide,
//! as `task claim`'s is, so a remote that cannot be reached (or a push that
//! fails) refuses it with nothing kept; `--offline` decides it here.

use gix::ObjectId;

use crate::error::{Code, Error, Result};
use crate::records::lane::{self, check_start, Lane};
use crate::records::plan::plan_ref;
use crate::session::Ctx;
use crate::store::mirror::mirror_ref;
use crate::store::records::{Publish, Txn};
use crate::store::remote::{tips_under, Tip};
use crate::store::Event;

const LANES: &str = lane::PREFIX;

/// How many times a start is re-published after the plan moved on the
/// remote for another reason (a report, a save) while it was pushing.
const ATTEMPTS: usize = 5;

/// Fetch the plan and the lane records from the remote into the mirror,
/// before the start is checked. A failure is a warning: the start goes on
/// with what this clone knows, and `sync` publishes it.
pub fn fetch_first(ctx: &Ctx, plan: &str, warnings: &mut Vec<String>) {
    let Some(remote) = ctx.remote() else { return };
    let refs = [plan_ref(plan), LANES.to_string()];
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    if let Err(e) = crate::store::mirror::fetch_refs(&ctx.store, remote, &refs) {
        warnings.push(format!(
            "could not read the lanes on '{remote}' ({}): the start was checked against this clone's lane records only",
            e.message
        ));
    }
}

/// Every readable lane known here, each at its newest version (the local
/// record, or the remote's as last fetched when the local one is missing or
/// behind it). Unreadable records are skipped, as the start check skips
/// them.
pub fn known_lanes(ctx: &Ctx) -> Result<Vec<Lane>> {
    let mut lanes = Vec::new();
    for (feature, tip) in tips_under(&ctx.store, ctx.remote(), LANES)? {
        let Some(id) = tip.base else { continue };
        if let Ok(lane) = crate::records::lane::at(&ctx.store, &feature, id) {
            lanes.push(lane);
        }
    }
    Ok(lanes)
}

/// What publishing the start came to.
pub enum Outcome {
    /// No remote (or `--offline`): local, as every offline write is.
    Offline,
    /// The remote has the lane and its plan entry.
    Published,
    /// Left for `sync`, with the reason.
    Local(String),
}

/// The start as written here: the lane record and the plan entry.
pub struct Written<'a> {
    pub feature: &'a str,
    pub plan: &'a str,
    pub lane: ObjectId,
    /// The local lane record before this start (None: a new feature).
    pub lane_before: Option<ObjectId>,
    /// The `lane-started` entry on the plan, the head it was written on,
    /// and the event it records.
    pub entry: ObjectId,
    pub entry_on: ObjectId,
    pub event: &'a Event,
    /// `--task`: the claim travels in the same push.
    pub task: Option<&'a super::task::Taking>,
}

/// Publish the start (see the module docs). `Err(PLAN_HAS_EXECUTOR)` when
/// another machine's lane of the plan was published first: the lane and
/// plan refs are put back here, and the caller removes the worktree and
/// branch it made. With `--task` the claim is the remote's to decide: a
/// task it will not let this owner claim, or a push that fails (the remote
/// cannot be reached, or refused), undoes the start the same way.
pub fn publish(ctx: &Ctx, w: &Written<'_>) -> Result<Outcome> {
    let Some(remote) = ctx.remote() else {
        return Ok(Outcome::Offline);
    };
    let mut round = Round {
        ctx,
        w,
        remote,
        plan_refname: plan_ref(w.plan),
        lane_refname: lane::lane_ref(w.feature),
        task_refname: w.task.map(super::task::Taking::refname),
        entry: w.entry,
        entry_on: w.entry_on,
        refused: false,
    };
    let published = Publish::new(&ctx.store, Some(remote))
        .attempts(ATTEMPTS)
        .point("lane")
        .exhausted(|lines| {
            Error::new(
                Code::CasFailed,
                format!("the remote kept changing ({})", lines.join("; ")),
            )
        })
        .run(|txn| round.decide(txn));
    let Round {
        entry,
        entry_on,
        refused,
        ..
    } = round;
    match published {
        Ok(done) => Ok(match done.then {
            None => Outcome::Published,
            Some(why) => Outcome::Local(why),
        }),
        Err(e) if refused || matches!(e.code, Code::PlanHasExecutor | Code::LaneExists) => Err(e),
        // The claim is not kept undecided by the remote (`--task` refuses
        // as `task claim` does): the start is undone, unless the push went
        // through and only a local step after it failed (the start is the
        // remote's then, and `sync` catches up).
        Err(e) if w.task.is_some() && !pushed(ctx, remote, w.plan, entry) => {
            let undone = undo(ctx, w, entry, entry_on);
            Err(e.hint(if undone {
                "nothing was kept: the lane's worktree, branch, lane record and plan are gone"
            } else {
                "this start was undone, but another command moved the lane or plan ref meanwhile"
            }))
        }
        // The remote could not be reached, or refused for another reason:
        // the lane is started here and `sync` publishes it.
        Err(e) => Ok(Outcome::Local(e.message)),
    }
}

/// One publication of a start, across its rounds: the refs it pushes, the
/// plan entry as last written (it is written again when the plan moved on
/// the remote), and whether its own check refused it.
struct Round<'a> {
    ctx: &'a Ctx,
    w: &'a Written<'a>,
    remote: &'a str,
    plan_refname: String,
    lane_refname: String,
    task_refname: Option<String>,
    entry: ObjectId,
    entry_on: ObjectId,
    /// Refused by this start's own check (another executor, the task
    /// held): the start is undone already, and the error is this.
    refused: bool,
}

impl Round<'_> {
    /// One round: the start refused for a rival executor, left local (the
    /// reason) when the remote cannot take it, else the plan entry, the
    /// lane record and the claim written for one atomic push.
    fn decide(&mut self, txn: &mut Txn<'_>) -> Result<Option<String>> {
        let (ctx, w) = (self.ctx, self.w);
        let store = &ctx.store;
        // The first round decides on what `fetch_first` read a moment
        // ago (the push's lease still arbitrates); a lost round fetches
        // again.
        if txn.rejected().is_some() {
            let mut fetch = vec![self.plan_refname.as_str(), LANES];
            fetch.extend(self.task_refname.as_deref());
            txn.fetch(&fetch)?;
        }
        // The push found the remote gone (a start without a task keeps
        // its writes then): the start stays here, as when the first
        // fetch found it.
        if !txn.online() {
            return Ok(Some(ctx.store.run.reach.kept_why()));
        }
        let lane_published = store.ref_target(&mirror_ref(self.remote, &self.lane_refname))?;
        if let Some(rival) = self.rival(lane_published)? {
            return Err(self.refuse_for(&rival));
        }
        let tip = txn.tip(&self.plan_refname)?;
        if let Some(why) = self.entry_on_published(tip)? {
            return Ok(Some(why.to_string()));
        }
        if let Some(p) = lane_published {
            if !store.is_ancestor(p, w.lane)? {
                return Ok(Some(
                    "the lane record changed on the remote too".to_string(),
                ));
            }
        }
        // The plan's entry, the lane record and the claim: one atomic
        // push, each leased at the value fetched.
        let actor = &w.event.actor;
        txn.write_on(&self.plan_refname, tip, self.entry, actor, "lane started");
        let lane_tip = txn.tip(&self.lane_refname)?;
        txn.write_on(&self.lane_refname, lane_tip, w.lane, actor, "lane started");
        self.write_claim(txn)?;
        Ok(None)
    }

    /// Another lane of the plan, or this very feature started on another
    /// machine (a published record, `lane_published`, this one does not
    /// descend from): the remote has an executor.
    fn rival(&self, lane_published: Option<ObjectId>) -> Result<Option<Lane>> {
        let (ctx, w) = (self.ctx, self.w);
        let store = &ctx.store;
        let mut same = None;
        if let Some(p) = lane_published.filter(|p| *p != w.lane) {
            if !store.is_ancestor(p, w.lane)? {
                same = crate::records::lane::at(store, w.feature, p)
                    .ok()
                    .filter(|l| l.record.is_active());
            }
        }
        Ok(match same {
            Some(l) => Some(l),
            None => known_lanes(ctx)?.into_iter().find(|l| {
                l.feature != w.feature && l.record.is_active() && l.record.plan == w.plan
            }),
        })
    }

    /// The start undone for `rival`'s executor, and the start check's
    /// refusal (`PLAN_HAS_EXECUTOR`) saying whether the undo was whole.
    fn refuse_for(&mut self, rival: &Lane) -> Error {
        let w = self.w;
        let undone = undo(self.ctx, w, self.entry, self.entry_on);
        self.refused = true;
        let err = check_start(std::slice::from_ref(rival), w.feature, w.plan, false)
            .err()
            .unwrap_or_else(|| Error::new(Code::PlanHasExecutor, "the plan has an executor"));
        err.hint(if undone {
            "this start was undone: its worktree, branch, lane record and plan entry are gone"
        } else {
            "this start was undone, but another command moved the lane or plan ref meanwhile: its entry may stay in the plan's journal until `git swarm sync` (the lane itself is gone)"
        })
    }

    /// The plan entry on the plan's `tip`: written again on top when the
    /// plan moved on the remote after the head it was written on; the
    /// reason the start stays local when it cannot be.
    fn entry_on_published(&mut self, tip: Tip) -> Result<Option<&'static str>> {
        let store = &self.ctx.store;
        if tip.local != Some(self.entry) {
            return Ok(Some("the plan changed here while the lane was starting"));
        }
        if let Some(published) = tip.remote.filter(|p| *p != self.entry) {
            if !store.is_ancestor(published, self.entry)? {
                // The plan moved on the remote after the head this entry
                // was written on (a report, a save): write it again on top.
                if !store.is_ancestor(self.entry_on, published)? {
                    return Ok(Some("the plan changed both here and on the remote"));
                }
                let tree = store.commit_tree(published)?;
                let again = store.commit(tree, &[published], self.w.event)?;
                let why = "lane start written again on the published plan";
                let actor = &self.w.event.actor;
                store.cas(
                    &self.plan_refname,
                    Some(self.entry),
                    Some(again),
                    actor,
                    why,
                )?;
                (self.entry, self.entry_on) = (again, published);
            }
        }
        Ok(None)
    }

    /// `--task`: the claim's next version written for the same push; a
    /// claim the remote will not let this owner make undoes the start.
    fn write_claim(&mut self, txn: &mut Txn<'_>) -> Result<()> {
        let w = self.w;
        let (Some(t), Some(r)) = (w.task, self.task_refname.as_deref()) else {
            return Ok(());
        };
        let tip = txn.tip(r)?;
        match super::task::next_version(self.ctx, t, &tip) {
            Ok(Some(claim)) => {
                txn.write_on(r, tip, claim, &w.event.actor, "lane new: task claimed")
            }
            Ok(None) => {}
            Err(e) => {
                let undone = undo(self.ctx, w, self.entry, self.entry_on);
                self.refused = true;
                return Err(e.hint(if undone {
                    "this start was undone: its worktree, branch, lane record and plan are gone"
                } else {
                    "this start was undone, but another command moved the lane or plan ref meanwhile"
                }));
            }
        }
        Ok(())
    }
}

/// Whether the remote has the plan at `entry` (as the mirror says after
/// this clone's last push or fetch).
fn pushed(ctx: &Ctx, remote: &str, plan: &str, entry: ObjectId) -> bool {
    let mirrored = ctx.store.ref_target(&mirror_ref(remote, &plan_ref(plan)));
    matches!(mirrored, Ok(Some(at)) if at == entry)
}

/// Put the lane record and the plan back where they were before the start;
/// false when another local command moved either ref meanwhile.
fn undo(ctx: &Ctx, w: &Written<'_>, entry: ObjectId, entry_on: ObjectId) -> bool {
    let store = &ctx.store;
    let actor = &w.event.actor;
    let why = "lane start undone: another lane of the plan was published first";
    let lane_ref = lane::lane_ref(w.feature);
    let lane = store.cas(&lane_ref, Some(w.lane), w.lane_before, actor, why);
    let plan = store.cas(&plan_ref(w.plan), Some(entry), Some(entry_on), actor, why);
    lane.is_ok() && plan.is_ok()
}
