//! The leader commands: fetch the lead record, decide with
//! [`crate::records::lead::transition`], publish the next version.
//!
//! With a remote, the remote's compare-and-swap is the arbiter between
//! machines: every command fetches the lead ref, decides on the published
//! record, writes the next version on top of it, and publishes it in one
//! atomic push whose lease is the value just fetched; only then does the
//! local ref move. A refused push means someone else moved the record first:
//! claims and takeovers report the winner (`LEAD_RACE_LOST`), leader-only
//! commands re-read and find out whether they are fenced. Offline (no remote
//! or `--offline`) the local CAS arbitrates the same way.
//!
//! `lead push` moves the given branches in the same atomic push as the
//! record, so the remote itself fences a stale leader. With a coordination
//! remote of its own (the code on `swarm.codeRemote`) that cannot be one
//! push: the record goes first, fenced at the coordination remote, and only
//! once it is published do the refspecs go to the code remote (see
//! [`push_code`]).

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::names;
use crate::records::lead::{self, lead_ref, read_at, Change, LeadRecord, Op, Transition, Verb};
use crate::session::Ctx;
use crate::store::records::{Publish, Record, Rejected, Txn};
use crate::store::remote::{self, Tip};
use crate::store::{JournalEntry, Store};

pub mod merge;
mod nearest;
mod view;

pub use nearest::nearest;
pub use view::{check, log, status, Check, Log, LogEntry, Status};

/// How many times a leader-only command re-reads and retries when the record
/// moved under it without fencing it (e.g. the same leader renewing elsewhere).
const MAX_ATTEMPTS: usize = 4;

/// What a leader command did. The JSON is the record's fields at the top
/// level plus `commit`, `published` and either `event` (a new version) or
/// `already` (an earlier run had published it).
#[derive(Debug, Clone, Serialize)]
pub struct Ran {
    #[serde(flatten)]
    pub record: LeadRecord,
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already: bool,
    pub published: bool,
    #[serde(skip)]
    pub plan: String,
    #[serde(skip)]
    pub actor: String,
    #[serde(skip)]
    pub verb: Verb,
    /// What changed (None when `already`).
    #[serde(skip)]
    pub change: Option<Change>,
    /// Kept here only (offline) while the remote's mirror, as last
    /// fetched, holds a newer leader record: who leads there, and why this
    /// one is stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}

/// Run a leader command against the arbiter (the remote, else the local
/// CAS), in the store's one publication ([`Publish`]).
pub fn run(ctx: &Ctx, plan: &str, op: Op) -> Result<Ran> {
    names::validate_name("plan", plan)?;
    let actor = ctx.actor()?;
    // `lead push` without a refspec publishes the base branch (`swarm.base`,
    // else the code remote's default branch): `main` or `master` alike.
    let op = match op {
        Op::Push { refspecs } if refspecs.is_empty() => {
            let branch = base_branch(ctx);
            Op::Push {
                refspecs: vec![branch],
            }
        }
        op => op,
    };
    let lease = validate(ctx, plan, &op)?;
    let cmd = Command {
        ctx,
        plan,
        actor: &actor,
        op: &op,
        now: ctx.store.clock.now(),
        lease,
    };
    let refname = lead_ref(plan);
    let plan_ref = crate::records::plan::plan_ref(plan);
    // A claim also needs the plan to exist (local, published or archived).
    let claim_refs = [refname.as_str(), plan_ref.as_str()];
    let refs: &[&str] = match op {
        Op::Claim { .. } => &claim_refs,
        _ => &claim_refs[..1],
    };
    let ran = Publish::new(&ctx.store, ctx.remote())
        .fetch(refs.iter().copied())
        .attempts(MAX_ATTEMPTS)
        .point("lead")
        // An offline write of this clone meanwhile: exit 3, both named.
        .strict()
        .exhausted(|lines| lead::push_rejected(plan, lines))
        .run(|txn| cmd.round(txn))?
        .then;
    push_code(ctx, plan, &op)?;
    let mut ran = ran;
    ran.stale = stale_against_mirror(ctx, plan, &ran);
    Ok(ran)
}

/// `lead push` with the code on a remote of its own: the refspecs go to
/// the code remote after the leader record was published (fenced) at the
/// coordination remote. The order matters: a stale leader is refused at
/// the record and moves nothing. What two remotes cannot give is the one
/// atomic push: a takeover that lands between the two steps is not seen by
/// the code remote (the window is one push long; docs/remote.md says so).
/// The code remote refusing leaves the record published (a journal entry
/// of a push that did not land): exit 3 with git's lines.
fn push_code(ctx: &Ctx, plan: &str, op: &Op) -> Result<()> {
    let (Op::Push { refspecs }, true) = (op, ctx.split_remotes()) else {
        return Ok(());
    };
    let Some(code) = ctx.code_remote() else {
        return Ok(());
    };
    match ctx.store.git.push_atomic(code, &[], refspecs)? {
        crate::git::PushOutcome::Ok => Ok(()),
        crate::git::PushOutcome::Rejected(lines) => Err(Error::new(
            Code::PushRejected,
            format!(
                "the leader record of plan '{plan}' is published, but the code remote '{code}' refused the push:\n  {}",
                lines.join("\n  ")
            ),
        )
        .hint("fetch the branch, bring yours up to date, then `git swarm lead push` again")),
    }
}

/// Check the arguments (the model's rules, then the lease and a push's
/// refspecs against config and git); returns the lease to grant.
fn validate(ctx: &Ctx, plan: &str, op: &Op) -> Result<SignedDuration> {
    if let Op::Push { .. } = op {
        if ctx.remote().is_none() || ctx.code_remote().is_none() {
            return Err(Error::new(
                Code::RemoteMissing,
                "lead push publishes to the shared remote and none is configured (or --offline was given)",
            )
            .hint("add one (`git remote add origin <url>`) or set swarm.remote"));
        }
    }
    lead::validate(op)?;
    let lease = match op.lease_flag() {
        Some(flag) => ctx.lease(flag, &lead::LEASE)?,
        None => SignedDuration::ZERO,
    };
    for spec in op.refspecs() {
        lead::check_push_target(plan, spec)?;
        let src = lead::refspec_source(spec);
        if !src.is_empty() && ctx.store.git.rev_parse(src)?.is_none() {
            return Err(Error::new(
                Code::Usage,
                format!("'{src}' (in refspec '{spec}') names no commit here"),
            )
            .hint(push_example(ctx)));
        }
    }
    Ok(lease)
}

/// The base branch as a branch name (`swarm.base` or the code remote's
/// default branch, without the remote's prefix: `origin/master` → `master`).
fn base_branch(ctx: &Ctx) -> String {
    let base = crate::session::lane::default_base(ctx);
    let strip = |r: &str| base.strip_prefix(&format!("{r}/")).map(str::to_string);
    ctx.code_remote()
        .or(ctx.settings.code_remote.as_deref())
        .and_then(strip)
        .or_else(|| base.strip_prefix("refs/heads/").map(str::to_string))
        .unwrap_or_else(|| base.clone())
}

/// The hint for a refspec naming nothing: an example with the base branch
/// only when the code remote has it (never a branch it lacks, which a push
/// would create).
fn push_example(ctx: &Ctx) -> String {
    let base = base_branch(ctx);
    let on_remote = ctx.code_remote().is_some_and(|r| {
        ctx.store
            .ref_target(&format!("refs/remotes/{r}/{base}"))
            .ok()
            .flatten()
            .is_some()
    });
    if on_remote {
        format!("push a branch, tag or commit that exists locally, e.g. HEAD:{base}; without a refspec `lead push` publishes {base}")
    } else {
        "push a branch, tag or commit that exists locally, to a branch the remote has (`git ls-remote --heads`); without a refspec `lead push` publishes the base branch".to_string()
    }
}

/// Refuse a command on a plan that does not exist: local, published or
/// archived by gc, any of them is the plan.
fn require_plan(ctx: &Ctx, plan: &str) -> Result<()> {
    let tip = remote::tip(
        &ctx.store,
        ctx.remote(),
        &crate::records::plan::plan_ref(plan),
    )?;
    if tip.base.is_none() {
        return Err(
            Error::new(Code::NotFound, format!("plan '{plan}' does not exist"))
                .hint("create it with `git swarm plan new <plan>` (claim first, then start lanes)"),
        );
    }
    Ok(())
}

/// What the arbiter holds, read once per attempt.
struct State {
    tip: Tip,
    record: Option<LeadRecord>,
    /// The journal entry of the record's tip commit.
    entry: Option<JournalEntry>,
    local_behind: bool,
}

impl State {
    fn load(store: &Store, plan: &str, tip: Tip) -> Result<State> {
        let (record, entry) = match tip.base {
            None => (None, None),
            Some(b) => (
                Some(read_at(store, plan, b)?),
                store.journal(b, Some(1))?.into_iter().next(),
            ),
        };
        Ok(State {
            local_behind: tip.local_behind(store)?,
            tip,
            record,
            entry,
        })
    }
}

/// The record's own line of versions (first parents), newest first, read
/// one version at a time.
struct History<'s> {
    store: &'s Store,
    plan: &'s str,
    /// The version to read next.
    next: Option<ObjectId>,
    /// The version read last, whose parent comes next.
    last: Option<ObjectId>,
    left: usize,
}

impl History<'_> {
    fn step(&mut self) -> Result<Option<LeadRecord>> {
        if let Some(last) = self.last.take() {
            let commit = self
                .store
                .repo
                .find_commit(last)
                .map_err(|e| Error::gix("could not read a lead record", e))?;
            self.next = commit.parent_ids().next().map(|p| p.detach());
        }
        let Some(cur) = self.next.take() else {
            return Ok(None);
        };
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        self.last = Some(cur);
        read_at(self.store, self.plan, cur).map(Some)
    }
}

impl Iterator for History<'_> {
    type Item = Result<LeadRecord>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step().transpose()
    }
}

/// One leader command as it runs.
struct Command<'a> {
    ctx: &'a Ctx,
    plan: &'a str,
    actor: &'a str,
    op: &'a Op,
    now: Timestamp,
    lease: SignedDuration,
}

impl Command<'_> {
    /// Read what the rule needs beyond the record and decide.
    fn decide(&self, state: &State) -> Result<Transition> {
        let store = &self.ctx.store;
        let record = state.record.as_ref();
        let last_led = if self.op.needs_history(record, self.actor) {
            let history = History {
                store,
                plan: self.plan,
                next: state.tip.base,
                last: None,
                left: 100_000,
            };
            lead::last_epoch_led(history, self.actor)?
        } else {
            None
        };
        let mut sources = Vec::new();
        for spec in self.op.refspecs() {
            let src = lead::refspec_source(spec);
            sources.push(if src.is_empty() {
                "(delete)".to_string()
            } else {
                store
                    .git
                    .rev_parse(src)?
                    .unwrap_or_else(|| "(unresolved)".into())
            });
        }
        let unseen = match &state.entry {
            Some(e) if state.local_behind => Some((e.event.as_str(), e.actor.as_str())),
            _ => None,
        };
        let newest = state
            .entry
            .as_ref()
            .map(|e| (e.event.as_str(), e.actor.as_str()));
        let facts = lead::Facts {
            plan: self.plan,
            commit: state.tip.base,
            unseen,
            newest,
            last_led,
            sources: &sources,
        };
        lead::transition(record, self.actor, self.op, self.now, self.lease, &facts)
    }

    /// One round of the publication (the refs are fetched already):
    /// decide, and write the next version for the round's push.
    fn round(&self, txn: &mut Txn<'_>) -> Result<Ran> {
        let (ctx, plan) = (self.ctx, self.plan);
        let store = &ctx.store;
        let refname = lead_ref(plan);
        if let Some(lost) = txn.rejected().cloned() {
            if let Some(ran) = self.after_rejection(txn, &lost)? {
                return Ok(ran);
            }
        }
        if let Op::Claim { .. } = self.op {
            require_plan(ctx, plan)?;
        }
        let tip = txn.tip(&refname)?;
        let state = State::load(store, plan, tip)?;
        let next = match self.decide(&state)? {
            Transition::Already => return self.done(&state),
            Transition::Write(next) => *next,
        };
        let tree = store.write_tree(&next.record.to_files()?)?;
        let parents: Vec<ObjectId> = tip.base.into_iter().collect();
        let commit = store.commit(tree, &parents, &next.event)?;
        failpoint::point("lead:objects");
        let summary = next.event.summary.clone();
        let ran = Ran {
            commit: Some(commit.to_string()),
            event: Some(next.event.kind),
            published: ctx.remote().is_some(),
            change: Some(next.change),
            ..self.ran(next.record)
        };
        txn.write_on(&refname, tip, commit, self.actor, &summary);
        // Two remotes: the refspecs go to the code remote after this (see
        // `push_code`).
        if !ctx.split_remotes() {
            txn.push_refspecs(self.op.refspecs());
        }
        Ok(ran)
    }

    /// The previous round's publish was refused and this round fetched the
    /// record again: who moved it? Another ref of the push (the record did
    /// not move) ends the command, as does a contest someone else won; an
    /// earlier run of ours that won completes it (Some); a leader-only
    /// command decides again (None).
    fn after_rejection(&self, txn: &mut Txn<'_>, lost: &Rejected) -> Result<Option<Ran>> {
        let (store, plan) = (&self.ctx.store, self.plan);
        let refname = lead_ref(plan);
        let after = txn.tip(&refname)?;
        let before = lost.before(&refname).unwrap_or(Tip::local(None));
        let (arbiter_value, before) = if txn.online() {
            (after.remote, before.remote)
        } else {
            (after.local, before.local)
        };
        if arbiter_value == before {
            // The record did not move: another ref of the push was refused.
            return Err(lead::push_rejected(plan, lost.lines()));
        }
        if !self.op.verb().contest() {
            return Ok(None);
        }
        // Our own earlier run may be the winner: a killed process leaves its
        // `git push` running, and it can land after this run fetched. Then
        // the command is complete.
        let state = State::load(store, plan, after)?;
        if let Ok(Transition::Already) = self.decide(&state) {
            return self.done(&state).map(Some);
        }
        let winner = after
            .base
            .and_then(|c| read_at(store, plan, c).ok().map(|w| (w, c)));
        Err(lead::race_lost(
            plan,
            self.op.verb(),
            winner.as_ref().map(|(w, c)| (w, *c)),
            txn.online(),
        ))
    }

    /// A previous run already published what this one would: catch the
    /// local ref up and report it.
    fn done(&self, state: &State) -> Result<Ran> {
        if let Some(base) = state.tip.base {
            remote::adopt(
                &self.ctx.store,
                &lead_ref(self.plan),
                base,
                self.actor,
                "lead: catch up",
            )?;
        }
        let rec = state.record.clone().expect("done implies a record");
        Ok(Ran {
            commit: state.tip.base.map(|c| c.to_string()),
            already: true,
            published: self.ctx.remote().is_some(),
            ..self.ran(rec)
        })
    }

    fn ran(&self, record: LeadRecord) -> Ran {
        Ran {
            record,
            commit: None,
            event: None,
            already: false,
            published: false,
            plan: self.plan.to_string(),
            actor: self.actor.to_string(),
            verb: self.op.verb(),
            change: None,
            stale: None,
        }
    }
}

/// An offline write (not published) while the mirror of the remote holds
/// a newer version of the leader record, naming someone else or a later
/// epoch: what the mirror says, for the command to report its result as
/// stale (`sync` will refuse it). None when published, or nothing newer is
/// known.
fn stale_against_mirror(ctx: &Ctx, plan: &str, ran: &Ran) -> Option<String> {
    if ran.published {
        return None;
    }
    let remote = ctx.settings.remote.as_deref()?;
    let mirrored = crate::store::mirror::mirror_ref(remote, &lead_ref(plan));
    let at = ctx.store.ref_target(&mirrored).ok()??;
    let there = read_at(&ctx.store, plan, at).ok()?;
    let leader = there.current_leader().unwrap_or("nobody");
    let newer = there.epoch > ran.record.epoch
        || (there.epoch == ran.record.epoch
            && there.current_leader() != ran.record.current_leader());
    newer.then(|| {
        format!(
            "stale: the mirror of '{remote}' (as last fetched) shows {leader} leading plan {plan} at epoch {}, past this clone's epoch {}; this was kept here only and `git swarm sync` will refuse it (`git swarm lead status --plan {plan}` after a sync shows the leader)",
            there.epoch, ran.record.epoch
        )
    })
}
