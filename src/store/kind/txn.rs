//! THE publish operation, for records of any kinds: [`Publish`].
//!
//! One round: fetch the refs the decision reads into the mirror; let the
//! caller's closure read each record where it stands now
//! ([`Txn::current`]: the published version, or the local one when it
//! descends from it) and write the next versions it decides
//! ([`Txn::write`], any number of records of any kinds); publish every
//! version of the round in ONE atomic push whose leases are the values just
//! fetched, then move the local refs. A lease that no longer holds (another
//! clone won the race) starts the next round from a fresh fetch, so the
//! closure decides again on what the winner wrote ([`Txn::rejected`] says
//! what was refused). Without a remote (none, or `--offline`), or when it
//! cannot be reached, one local compare-and-swap transaction of every ref
//! arbitrates, and the outcome says why it is not published
//! ([`Publication::Kept`]). Records that need not move together
//! ([`Publish::independent`]) go in the atomic batches of
//! `swarm.pushBatch` refs instead (`remote::publish_batched`).
//!
//! [`Records::publish`](super::Records::publish) is this operation for one
//! record; a command whose refs must move together (a handoff's packet,
//! lane and snapshot) writes them all in one closure.

use std::collections::BTreeMap;

use gix::ObjectId;

use super::{Publication, Record, Records, Versioned, OFFLINE, PUBLISH_ATTEMPTS};
use crate::error::{Code, Error, Result};
use crate::git::{PushOutcome, PushUpdate};
use crate::store::mirror::{fetch_refs, gone, is_unreachable, kept_why};
use crate::store::remote::{self, adopt, Tip};
use crate::store::{Event, Store};

/// The command's own error for a publication that lost every round.
type Exhausted<'s> = Box<dyn Fn(&[String]) -> Error + 's>;

/// One publication of records of any kinds (see the module docs): built
/// with the refs to fetch, run with the closure that decides.
pub struct Publish<'s> {
    store: &'s Store,
    remote: Option<&'s str>,
    fetch: Vec<String>,
    attempts: usize,
    point: &'static str,
    independent: bool,
    exhausted: Option<Exhausted<'s>>,
}

/// One version the closure wrote, published at the end of the round.
struct Write {
    refname: String,
    tip: Tip,
    new: ObjectId,
    actor: String,
    reason: String,
}

/// One round of a [`Publish`], as its closure sees it.
pub struct Txn<'s> {
    store: &'s Store,
    remote: Option<&'s str>,
    attempt: usize,
    rejected: Option<Vec<String>>,
    tips: BTreeMap<String, Tip>,
    writes: Vec<Write>,
    along: Vec<PushUpdate>,
}

/// What a [`Publish`] did.
#[derive(Debug, Clone)]
pub struct Outcome<T> {
    /// What the closure returned in the round that ended it.
    pub then: T,
    /// The new version of each record written, by ref name (empty: the
    /// closure wrote nothing).
    pub commits: Vec<(String, ObjectId)>,
    /// Where they went (for nothing written: where it would have gone).
    pub publication: Publication,
}

impl<'s> Publish<'s> {
    /// A publication at `remote` (None: offline, the local CAS arbitrates).
    pub fn new(store: &'s Store, remote: Option<&'s str>) -> Self {
        Publish {
            store,
            remote,
            fetch: Vec::new(),
            attempts: PUBLISH_ATTEMPTS,
            point: "record",
            independent: false,
            exhausted: None,
        }
    }

    /// Refs (or prefixes ending in `/`) each round fetches first.
    pub fn fetch<S: Into<String>>(mut self, refs: impl IntoIterator<Item = S>) -> Self {
        self.fetch.extend(refs.into_iter().map(Into::into));
        self
    }

    /// How many rounds before giving up (default [`PUBLISH_ATTEMPTS`]).
    pub fn attempts(mut self, attempts: usize) -> Self {
        self.attempts = attempts;
        self
    }

    /// The failpoint prefix: `<point>:pushed` between the push and the
    /// local refs (default `record`).
    pub fn point(mut self, point: &'static str) -> Self {
        self.point = point;
        self
    }

    /// The records written need not move together: push them in atomic
    /// batches of `swarm.pushBatch` refs rather than in one push.
    pub fn independent(mut self) -> Self {
        self.independent = true;
        self
    }

    /// The command's own error when every round lost a race (given git's
    /// lines of the last refusal); by default `CAS_FAILED` naming the refs.
    pub fn exhausted(mut self, error: impl Fn(&[String]) -> Error + 's) -> Self {
        self.exhausted = Some(Box::new(error));
        self
    }

    /// Run it: at most `attempts` rounds of fetch, `decide`, publish.
    pub fn run<T>(self, mut decide: impl FnMut(&mut Txn<'s>) -> Result<T>) -> Result<Outcome<T>> {
        let store = self.store;
        let refs: Vec<&str> = self.fetch.iter().map(String::as_str).collect();
        let mut remote = self.remote;
        let mut why = OFFLINE.to_string();
        let mut lost: Vec<String> = Vec::new();
        let mut rejected = None;
        let mut attempt = 0;
        while attempt < self.attempts {
            attempt += 1;
            if let (Some(r), false) = (remote, refs.is_empty()) {
                match fetch_refs(store, r, &refs) {
                    Ok(()) if !gone(r) => {}
                    Ok(()) => {
                        why = kept_why();
                        remote = None;
                    }
                    Err(e) if is_unreachable(&e) => {
                        why = format!("remote '{r}' could not be reached");
                        remote = None;
                    }
                    Err(e) => return Err(e),
                }
            }
            let publication = match remote {
                Some(r) => Publication::Published {
                    remote: r.to_string(),
                },
                None => Publication::Kept { why: why.clone() },
            };
            let mut txn = Txn {
                store,
                remote,
                attempt,
                rejected: rejected.take(),
                tips: BTreeMap::new(),
                writes: Vec::new(),
                along: Vec::new(),
            };
            let then = decide(&mut txn)?;
            let commits: Vec<(String, ObjectId)> = txn
                .writes
                .iter()
                .map(|w| (w.refname.clone(), w.new))
                .collect();
            let done = |then| Outcome {
                then,
                commits: commits.clone(),
                publication: publication.clone(),
            };
            if txn.writes.is_empty() && txn.along.is_empty() {
                return Ok(done(then));
            }
            match remote {
                Some(r) => {
                    let mut updates: Vec<PushUpdate> = txn
                        .writes
                        .iter()
                        .map(|w| PushUpdate {
                            refname: w.refname.clone(),
                            new: Some(w.new.to_string()),
                            expected: w.tip.remote.map(|e| e.to_string()),
                        })
                        .collect();
                    updates.extend(txn.along.iter().cloned());
                    let pushed = if self.independent {
                        remote::publish_batched(store, r, &updates)
                    } else {
                        remote::publish(store, r, &updates, &[])
                    };
                    match pushed {
                        Ok(PushOutcome::Ok) => {}
                        Ok(PushOutcome::Rejected(lines)) => {
                            lost.clone_from(&lines);
                            rejected = Some(lines);
                            continue;
                        }
                        // It stopped answering since the fetch: kept, as
                        // offline (the next round arbitrates locally, and
                        // does not count as an attempt).
                        Err(e) if gone(r) || is_unreachable(&e) => {
                            why = format!("remote '{r}' could not be reached");
                            remote = None;
                            attempt -= 1;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    crate::failpoint::point(&format!("{}:pushed", self.point));
                    let along = txn.along.iter().filter_map(|u| {
                        let new = ObjectId::from_hex(u.new.as_deref()?.as_bytes()).ok()?;
                        let (actor, reason) = txn
                            .writes
                            .first()
                            .map_or(("git-swarm", "published along"), |w| {
                                (&w.actor[..], &w.reason[..])
                            });
                        Some((&u.refname[..], new, actor, reason))
                    });
                    let written = txn
                        .writes
                        .iter()
                        .map(|w| (&w.refname[..], w.new, &w.actor[..], &w.reason[..]));
                    for (refname, new, actor, reason) in written.chain(along) {
                        // Published already; a local ref holding a change
                        // the pushed version lacks is `sync`'s to join.
                        match adopt(store, refname, new, actor, reason) {
                            Err(e) if e.code == Code::CasFailed => {}
                            other => other?,
                        }
                    }
                    return Ok(done(then));
                }
                None => {
                    let edits: Vec<(String, Option<ObjectId>, ObjectId)> = txn
                        .writes
                        .iter()
                        .map(|w| (w.refname.clone(), w.tip.local, w.new))
                        .collect();
                    let (actor, reason) = txn
                        .writes
                        .first()
                        .map_or(("git-swarm", ""), |w| (&w.actor[..], &w.reason[..]));
                    match store.try_cas_many(&edits, actor, reason) {
                        Ok(()) => return Ok(done(then)),
                        Err(e) if e.is_lost_race() => {
                            lost = vec![Error::from(e).message];
                            rejected = Some(lost.clone());
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Err(match &self.exhausted {
            Some(error) => error(&lost),
            None => Error::new(
                Code::CasFailed,
                format!(
                    "{} kept changing under {} attempts to write it; nothing was overwritten{}",
                    self.fetch.join(", "),
                    self.attempts,
                    if lost.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lost.join("; "))
                    }
                ),
            )
            .hint("run the command again: it starts from the new value"),
        })
    }
}

impl<'s> Txn<'s> {
    /// The store the round works in.
    pub fn store(&self) -> &'s Store {
        self.store
    }
    /// 1 for the first round.
    pub fn attempt(&self) -> usize {
        self.attempt
    }
    /// git's lines (or the lost CAS's message) when the previous round
    /// lost a race: what was decided then did not publish.
    pub fn rejected(&self) -> Option<&[String]> {
        self.rejected.as_deref()
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

    /// Where `refname` stands in this round (after its fetch); a write of
    /// it takes the lease read here.
    pub fn tip(&mut self, refname: &str) -> Result<Tip> {
        if let Some(tip) = self.tips.get(refname) {
            return Ok(*tip);
        }
        let tip = remote::tip(self.store, self.remote, refname)?;
        self.tips.insert(refname.to_string(), tip);
        Ok(tip)
    }

    /// The record where it stands now (None: absent, or archived by `gc`:
    /// a write then continues the archived history). One that cannot be
    /// read fails the round with its error: never taken for absent.
    pub fn current<R: Record>(&mut self, key: &R::Key) -> Result<Option<Versioned<R>>> {
        let tip = self.tip(&R::refname(key))?;
        match tip.base {
            Some(base) if !tip.archived => Records::<R>::new(self.store).at(key, base).map(Some),
            _ => Ok(None),
        }
    }

    /// [`Txn::current`], first moving a local ref that is missing or behind
    /// what the remote published forward to it (a run killed between its
    /// push and its local update), as `sync` would.
    pub fn current_caught_up<R: Record>(&mut self, key: &R::Key) -> Result<Option<Versioned<R>>> {
        let refname = R::refname(key);
        let tip = self.tip(&refname)?;
        if let (true, Some(published)) = (tip.local_behind(self.store)?, tip.base) {
            match adopt(
                self.store,
                &refname,
                published,
                "git-swarm",
                "catch up with the remote",
            ) {
                Err(e) if e.code == Code::CasFailed => {}
                other => other?,
            }
        }
        self.current(key)
    }

    /// Write `value` as the record's next version (on the one this round
    /// read): its commit now, its ref with the round's push.
    pub fn write<R: Record>(&mut self, key: &R::Key, value: &R, event: &Event) -> Result<ObjectId> {
        let refname = R::refname(key);
        let tip = self.tip(&refname)?;
        let tree = self.store.write_tree(&value.to_files()?)?;
        let parents: Vec<ObjectId> = tip.base.into_iter().collect();
        let new = self.store.commit(tree, &parents, event)?;
        self.write_commit(&refname, new, &event.actor, &event.summary)?;
        Ok(new)
    }

    /// Publish `new`, a commit the caller built on `refname`'s tip of this
    /// round (e.g. a version whose tree is not a record's files), with the
    /// round's push.
    pub fn write_commit(
        &mut self,
        refname: &str,
        new: ObjectId,
        actor: &str,
        reason: &str,
    ) -> Result<()> {
        let tip = self.tip(refname)?;
        self.write_on(refname, tip, new, actor, reason);
        Ok(())
    }

    /// [`Txn::write_commit`] with the lease the caller decided on (e.g. a
    /// head it was handed, which the ref must still hold).
    pub fn write_on(&mut self, refname: &str, tip: Tip, new: ObjectId, actor: &str, reason: &str) {
        self.writes.retain(|w| w.refname != refname);
        self.writes.push(Write {
            refname: refname.to_string(),
            tip,
            new,
            actor: actor.to_string(),
            reason: reason.to_string(),
        });
    }

    /// A leased update that travels in the round's push only (online;
    /// offline it is dropped), its local ref moved forward after the push
    /// like the writes': e.g. a plan-wide version that makes two
    /// racing changes decided on one graph refuse each other.
    pub fn push_along(&mut self, update: PushUpdate) {
        if self.remote.is_some() {
            self.along.push(update);
        }
    }
}
