//! THE fetch → decide → publish retry loop ([`publish_loop`]) every
//! command that publishes at once is written with.
//!
//! # The publish loop
//!
//! A command that changes a shared record does, in one loop: fetch the refs
//! it reads into the mirror; decide from what it sees (the [`Tip`] of each
//! record); publish the result — online one atomic push where every ref
//! carries the value just fetched as its lease, offline a local
//! compare-and-swap — and when another writer won meanwhile (the push was
//! refused, the CAS lost), fetch again and decide again, a bounded number of
//! times. The decision is the caller's closure; everything else is here:
//!
//! ```no_run
//! use git_swarm::error::{Code, Error, Result};
//! use git_swarm::store::remote::{publish_loop, Fetch, Looped, Next, Step};
//! use git_swarm::store::{Event, Store};
//!
//! fn bump(store: &Store, remote: Option<&str>, refname: &str) -> Result<()> {
//!     let refs = [refname];
//!     let looped = publish_loop(store, remote, Fetch::Refs(&refs), 4, |round| {
//!         let tip = round.tip(refname)?; // local, published, and what to build on
//!         if round.rejected.is_some() {
//!             // A lost race: `tip` is fresh; decide again (or give up with an error).
//!         }
//!         let Some(base) = tip.base else {
//!             return Ok(Step::Done("nothing to bump"));
//!         };
//!         let tree = store.commit_tree(base)?;
//!         let event = Event::new("bump", "ann", "bump");
//!         let new = store.commit(tree, &[base], &event)?;
//!         Ok(Step::Publish(
//!             Next::new(refname, tip, new, "ann", "bump", "bumped").point("bump"),
//!         ))
//!     })?;
//!     match looped {
//!         Looped::Published(_) | Looped::Done(_) => Ok(()),
//!         // The caller keeps its own error for a race lost every time.
//!         Looped::Exhausted(lost) => Err(Error::new(
//!             Code::PushRejected,
//!             format!("the remote kept changing: {}", lost.lines.join("; ")),
//!         )),
//!     }
//! }
//! ```
//!
//! - [`Fetch`] says what each round fetches first (`Refs` for the records
//!   the decision reads, `Mirror` for the whole mirror as `sync` does,
//!   `Nothing` for a local-only loop).
//! - The closure returns [`Step::Done`] (nothing to write, e.g. a previous
//!   run completed the command), [`Step::Publish`] (one record version —
//!   [`Next`] — with companion records and extra refspecs that travel in the
//!   same atomic push, and the failpoint name), or [`Step::Push`] (leased
//!   updates alone, for `sync`).
//! - After a lost race, [`Round::rejected`] tells the closure what was
//!   refused and what the record held before; the closure may return an
//!   error of its own from there (e.g. "accepted by someone else").
//! - Between rounds lost at the remote the loop pauses a jittered,
//!   exponential backoff ([`crate::git::net::backoff`]), so that writers
//!   that lost together do not come back together.
//! - Under a push budget the first round's push carries what the clone
//!   queued ([`super::budget::carry`]).
//! - Offline (`remote` None) the same loop arbitrates with the local CAS:
//!   [`Records::update`](super::kind::Records::update), `adopt`, the notes
//!   append and `gc`'s archive fold are this loop with `Fetch::Nothing`.

use gix::ObjectId;

use super::land::{land, Landed, Landing, Write};
use super::{fetch, fetch_refs, tip, PushUpdate, Tip};
use crate::error::Result;
use crate::store::mirror::gone;
use crate::store::Store;

/// What each round of [`publish_loop`] fetches into the mirror first.
#[derive(Debug, Clone, Copy)]
pub enum Fetch<'a> {
    /// Nothing: a local-only loop, or the caller fetched already.
    Nothing,
    /// These local refs (a ref, or a prefix ending in `/`), when online.
    Refs(&'a [&'a str]),
    /// The whole mirror (`sync`), stamping the time of the fetch.
    Mirror,
}

/// One version of one record to publish, as a [`Step::Publish`] names it.
#[derive(Debug, Clone)]
pub struct Next<T> {
    pub refname: String,
    /// Where the record stood when the version was decided: its lease.
    pub tip: Tip,
    /// The new version (a descendant of `tip.base`).
    pub new: ObjectId,
    /// Other refs in the same atomic push, each with its own lease.
    pub companions: Vec<PushUpdate>,
    /// Plain refspecs pushed along (e.g. `lead push`'s branches).
    pub extra: Vec<String>,
    pub actor: String,
    pub reason: String,
    /// Failpoint prefix (`<point>:pushed`); empty for none.
    pub point: &'static str,
    /// What the loop returns once this version is published.
    pub then: T,
}

impl<T> Next<T> {
    pub fn new(refname: &str, tip: Tip, new: ObjectId, actor: &str, reason: &str, then: T) -> Self {
        Next {
            refname: refname.to_string(),
            tip,
            new,
            companions: Vec::new(),
            extra: Vec::new(),
            actor: actor.to_string(),
            reason: reason.to_string(),
            point: "",
            then,
        }
    }
    pub fn companions(mut self, companions: Vec<PushUpdate>) -> Self {
        self.companions = companions;
        self
    }
    pub fn extra(mut self, extra: Vec<String>) -> Self {
        self.extra = extra;
        self
    }
    pub fn point(mut self, point: &'static str) -> Self {
        self.point = point;
        self
    }
}

/// What the closure of [`publish_loop`] decided in one round.
pub enum Step<T> {
    /// Publish one record version; on success the loop returns `then`.
    Publish(Next<T>),
    /// Push these leased updates of independent records (the local refs
    /// are already where they should be), in atomic batches of at most
    /// `swarm.pushBatch` refs ([`publish_batched`]); offline there is
    /// nothing to push.
    Push { updates: Vec<PushUpdate>, then: T },
    /// Nothing (more) to publish.
    Done(T),
}

/// A publication the arbiter refused: someone moved a record first.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The record the refused step published (None for a [`Step::Push`]).
    pub refname: Option<String>,
    /// Where that record stood when the refused version was decided.
    pub before: Option<Tip>,
    /// git's lines for a refused push, or the lost CAS's message.
    pub lines: Vec<String>,
}

/// One round of [`publish_loop`], as its closure sees it.
pub struct Round<'s> {
    store: &'s Store,
    remote: Option<&'s str>,
    /// 1 for the first round.
    pub attempt: usize,
    /// What the previous round lost, if it lost a race.
    pub rejected: Option<Rejection>,
}

impl Round<'_> {
    /// Where `refname` stands now (after this round's fetch).
    pub fn tip(&self, refname: &str) -> Result<Tip> {
        tip(self.store, self.remote, refname)
    }
    /// Whether a remote arbitrates (else the local CAS does).
    pub fn online(&self) -> bool {
        self.remote.is_some()
    }
    /// Fetch more refs into the mirror (online; offline a no-op), e.g. a
    /// prefix to look for a free name after a lost race.
    pub fn fetch(&self, refs: &[&str]) -> Result<()> {
        match self.remote {
            Some(r) => fetch_refs(self.store, r, refs),
            None => Ok(()),
        }
    }
}

/// How [`publish_loop`] ended.
#[derive(Debug)]
pub enum Looped<T> {
    /// A step was published; its `then`.
    Published(T),
    /// The closure found nothing to publish.
    Done(T),
    /// Every attempt lost a race; the last refusal. Map it to the
    /// command's own error.
    Exhausted(Rejection),
}

/// THE fetch → decide → publish loop (see the module docs): at most
/// `attempts` rounds, each fetching `fetch`, asking `decide`, and publishing
/// what it returns; a lost race starts the next round.
pub fn publish_loop<T>(
    store: &Store,
    remote: Option<&str>,
    fetch_first: Fetch<'_>,
    attempts: usize,
    mut decide: impl FnMut(&Round<'_>) -> Result<Step<T>>,
) -> Result<Looped<T>> {
    let mut round = Round {
        store,
        remote,
        attempt: 0,
        rejected: None,
    };
    // A remote that cannot be reached, in a process that keeps its writes
    // then (`mirror::keep_writes_when_unreachable`): from the round that
    // found out, the loop is offline (the local CAS arbitrates), as with
    // `--offline`. Going offline does not use up an attempt.
    let offline_now = |round: &mut Round<'_>| match round.remote {
        Some(r) if gone(r) => {
            round.remote = None;
            true
        }
        _ => false,
    };
    let mut attempt = 0;
    while attempt < attempts {
        attempt += 1;
        round.attempt = attempt;
        offline_now(&mut round);
        match (round.remote, fetch_first) {
            (Some(r), Fetch::Refs(refs)) => fetch_refs(store, r, refs)?,
            (Some(r), Fetch::Mirror) => fetch(store, r)?,
            _ => {}
        }
        offline_now(&mut round);
        // The one push step ([`super::land`]): the record's version, its
        // companions and refspecs along (offline: its local CAS alone);
        // independent updates in batches.
        let (landing, before, then) = match decide(&round)? {
            Step::Done(then) => return Ok(Looped::Done(then)),
            Step::Publish(next) => {
                let landing = Landing {
                    writes: vec![Write {
                        refname: next.refname.clone(),
                        tip: next.tip,
                        new: next.new,
                        actor: next.actor,
                        reason: next.reason,
                    }],
                    along: next.companions,
                    extra: next.extra,
                    point: next.point.to_string(),
                    carry: round.rejected.is_none(),
                    strict: true,
                    ..Landing::default()
                };
                let landing = match round.remote {
                    Some(_) => landing,
                    None => Landing {
                        along: Vec::new(),
                        extra: Vec::new(),
                        ..landing
                    },
                };
                (landing, Some((next.refname, next.tip)), next.then)
            }
            Step::Push { updates, then } => {
                let landing = Landing {
                    independent: updates,
                    ..Landing::default()
                };
                (landing, None, then)
            }
        };
        let rejection = match land(store, round.remote, &landing)? {
            Landed::Done => return Ok(Looped::Published(then)),
            Landed::Lost(lines) => Rejection {
                refname: before.as_ref().map(|(r, _)| r.clone()),
                before: before.map(|(_, t)| t),
                lines,
            },
            Landed::Unreachable => {
                offline_now(&mut round);
                attempt -= 1;
                continue;
            }
        };
        round.rejected = Some(rejection);
        // Lost at the remote: the winners of this round are still pushing
        // their next steps, and every loser fetching again at once would
        // collide again. A jittered pause spreads them (offline, the local
        // CAS retries at once: the other writer is a process beside it).
        if round.remote.is_some() && attempt < attempts {
            crate::git::net::backoff(u32::try_from(attempt).unwrap_or(u32::MAX));
        }
    }
    Ok(Looped::Exhausted(round.rejected.take().unwrap_or(
        Rejection {
            refname: None,
            before: None,
            lines: Vec::new(),
        },
    )))
}
