//! THE publish operation, for records of any kinds: [`Publish`]. Every
//! command that publishes at once is one (`lead`, `sync`, `renew`, the task
//! commands, `reserve`, `handoff`, `accept`, `lane new`…).
//!
//! One round: fetch the refs the decision reads into the mirror
//! ([`Publish::fetch`], or the whole mirror, [`Txn::fetch_mirror`]); let
//! the caller's closure read each record where it stands now
//! ([`Txn::current`]: the published version, or the local one when it
//! descends from it) and write the next versions it decides
//! ([`Txn::write`], any number of records of any kinds, with what travels
//! along online: [`Txn::push_along`], [`Txn::push_refspecs`]); then the
//! one push step, [`remote::land`]: every version of the round in ONE
//! atomic push whose leases are the values just fetched (the first round
//! carrying this clone's queued writes under a push budget), then the local
//! refs. A lease that no longer holds (another clone won the race) starts
//! the next round from a fresh fetch after a jittered pause, so the closure
//! decides again on what the winner wrote ([`Txn::rejected`] says what was
//! refused and what each written record held then: a contest lost, or a
//! fence, is the closure's error to return). Without a remote (none, or
//! `--offline`), or when it cannot be reached, one local compare-and-swap
//! transaction of every ref arbitrates (all move, or none), and the outcome
//! says why it is not published ([`Publication::Kept`]). Records that need
//! not move together (`sync`'s) go in [`Txn::push_independent`]'s batches,
//! alone in their round: a refused batch leaves the earlier ones published,
//! and the next round reconciles from a fresh fetch.
//!
//! [`Records::publish`](super::Records::publish) is this operation for one
//! record; a command whose refs must move together (a handoff's packet,
//! lane and snapshot) writes them all in one closure.
//!
//! # A toy kind with a published command
//!
//! What a new kind needs, file by file: its records file, its operation, its
//! CLI module, and one registration line in `records::kinds()` (plus the
//! subcommand's line in the CLI's command list). Nothing in `src/store/`:
//!
//! ```
//! use std::process::Command;
//! use clap::Parser;
//! use serde::Serialize;
//! use git_swarm::error::{Code, Error, Result};
//! use git_swarm::store::records::{AnyKind, Diverged, Files, KindOf, Record, Records, ScopedKey, Update};
//! use git_swarm::store::{Event, Store};
//!
//! // ---- src/records/tally.rs: the kind ----------------------------------------
//! #[derive(Debug, Clone)]
//! pub struct Tally {
//!     pub yes: u64,
//! }
//! impl Record for Tally {
//!     const NAMESPACE: &'static str = "tallies"; // refs/swarm/tallies/<plan>/<id>
//!     const KIND: &'static str = "tally";
//!     const DIVERGED: Diverged = Diverged::MergeJournals;
//!     type Key = ScopedKey;
//!     fn to_files(&self) -> Result<Files> {
//!         Ok(Files::from([("tally".to_string(), self.yes.to_string().into_bytes())]))
//!     }
//!     fn from_files(files: &Files, _key: &ScopedKey, what: &str) -> Result<Self> {
//!         let yes = files.get("tally").and_then(|b| String::from_utf8_lossy(b).parse().ok());
//!         let yes = yes.ok_or_else(|| Error::new(Code::RecordInvalid, format!("{what}: no tally")))?;
//!         Ok(Tally { yes })
//!     }
//! }
//!
//! // ---- src/records/mod.rs: the one registration line in `kinds()` ------------
//! static TALLY: KindOf<Tally> = KindOf::new();
//!
//! // ---- src/ops/tally.rs: the decision, published at once ---------------------
//! #[derive(Debug, Serialize)]
//! pub struct Voted {
//!     pub tally: String,
//!     pub yes: u64,
//!     pub published: bool,
//! }
//! pub fn vote(store: &Store, remote: Option<&str>, key: &ScopedKey, by: &str) -> Result<Voted> {
//!     let mut yes = 0;
//!     // Fetched first; decided on the freshest version; one leased push;
//!     // decided again on the winner's version after a lost race.
//!     let written = Records::<Tally>::new(store).publish(remote, key, |current| {
//!         yes = current.map_or(0, |c| c.value.yes) + 1;
//!         Ok(Update::Write(Tally { yes }, Event::new("vote", by, format!("{key}: {yes} yes"))))
//!     })?;
//!     let published = written.publication.is_published();
//!     Ok(Voted { tally: key.to_string(), yes, published })
//! }
//!
//! // ---- src/cli/commands/tally.rs: the arguments and the rendering ------------
//! /// Vote yes on a tally.
//! #[derive(Debug, Parser)]
//! pub struct VoteArgs {
//!     pub plan: String,
//!     pub id: String,
//!     #[arg(long)]
//!     pub json: bool,
//! }
//! pub fn run(store: &Store, remote: Option<&str>, args: VoteArgs, by: &str) -> Result<String> {
//!     let voted = vote(store, remote, &ScopedKey::new(args.plan, args.id), by)?;
//!     Ok(match args.json {
//!         true => serde_json::to_string(&voted).expect("plain fields"),
//!         false => format!("{}: {} yes", voted.tally, voted.yes),
//!     })
//! }
//!
//! // ---- using it: a bare remote and two clones --------------------------------
//! let tmp = tempfile::tempdir().unwrap();
//! let git = |args: &[&str]| {
//!     let ok = Command::new("git").args(args).current_dir(tmp.path()).output().unwrap();
//!     assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
//! };
//! git(&["init", "--quiet", "--bare", "remote.git"]);
//! git(&["clone", "--quiet", "remote.git", "a"]);
//! git(&["clone", "--quiet", "remote.git", "b"]);
//! let a = Store::open(&tmp.path().join("a")).unwrap();
//! let b = Store::open(&tmp.path().join("b")).unwrap();
//! let cmd = |line: &[&str]| VoteArgs::try_parse_from(line).unwrap();
//!
//! assert_eq!(run(&a, Some("origin"), cmd(&["vote", "p", "lunch"]), "ann").unwrap(), "p/lunch: 1 yes");
//! // b never fetched: it decides on what a published.
//! assert_eq!(
//!     run(&b, Some("origin"), cmd(&["vote", "p", "lunch", "--json"]), "bob").unwrap(),
//!     r#"{"tally":"p/lunch","yes":2,"published":true}"#
//! );
//! // Offline: written here, said so; the listing of a (local, or the
//! // mirror when newer) sees b's vote once fetched.
//! assert_eq!(run(&a, None, cmd(&["vote", "p", "dinner"]), "ann").unwrap(), "p/dinner: 1 yes");
//! git_swarm::store::mirror::fetch(&a, "origin").unwrap();
//! let (known, unreadable) = Records::<Tally>::new(&a).known(Some("origin")).unwrap();
//! let yes: Vec<(String, u64)> = known.iter().map(|v| (v.key.to_string(), v.value.yes)).collect();
//! assert_eq!(yes, [("p/dinner".to_string(), 1), ("p/lunch".to_string(), 2)]);
//! assert!(unreadable.is_empty());
//! // `sync` and `gc` take it from the registration.
//! let kinds: &[&dyn AnyKind] = &[&TALLY];
//! let synced = git_swarm::store::reconcile::reconcile(&a, kinds, "origin", "ann").unwrap();
//! assert_eq!(synced.updates.len(), 1, "the offline vote is what sync publishes");
//! ```

use std::collections::BTreeMap;

use gix::ObjectId;

use serde::Serialize;

use super::{Record, Records, Versioned};
use crate::error::{Code, Error, Result};
use crate::git::PushUpdate;
use crate::store::mirror::{fetch, fetch_refs, gone, note_unreachable};
use crate::store::remote::land::{land, Landed, Landing, Write};
use crate::store::remote::{self, adopt, not_published, Tip};
use crate::store::{Event, Store};

/// How many rounds [`Records::publish`] runs before giving up on a remote
/// (or a local ref) that keeps changing.
pub const PUBLISH_ATTEMPTS: usize = 5;

/// Where a written record went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Publication {
    /// Published at this remote in one atomic push.
    Published { remote: String },
    /// Written in this clone only, for this reason.
    Kept { why: String },
}

impl Publication {
    /// The one warning of a write kept in this clone (None: published).
    pub fn warning(&self) -> Option<String> {
        match self {
            Publication::Published { .. } => None,
            Publication::Kept { why } => Some(not_published(why)),
        }
    }
    pub fn is_published(&self) -> bool {
        matches!(self, Publication::Published { .. })
    }
}

pub use crate::store::mirror::OFFLINE;

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
    strict: bool,
    exhausted: Option<Exhausted<'s>>,
}

/// What the previous round decided and the arbiter refused.
#[derive(Debug, Clone)]
pub struct Rejected {
    lines: Vec<String>,
    before: Vec<(String, Tip)>,
}

impl Rejected {
    /// git's lines for the refused push, or the lost CAS's message.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }
    /// Where `refname` stood when the refused round decided on it (its
    /// lease): compared with where it stands now, whether it moved.
    pub fn before(&self, refname: &str) -> Option<Tip> {
        self.before
            .iter()
            .find(|(r, _)| r == refname)
            .map(|(_, t)| *t)
    }
}

/// One round of a [`Publish`], as its closure sees it.
pub struct Txn<'s> {
    store: &'s Store,
    remote: Option<&'s str>,
    attempt: usize,
    rejected: Option<Rejected>,
    tips: BTreeMap<String, Tip>,
    landing: Landing,
    keep_view: bool,
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
            strict: false,
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

    /// A local ref that cannot move to the version just published (it
    /// holds a local change that version lacks, e.g. an `--offline` write
    /// of this clone meanwhile) fails the command with `CAS_FAILED` naming
    /// both, once published; by default it is left for `sync` to join.
    pub fn strict(mut self) -> Self {
        self.strict = true;
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
        let mut round = Rounds {
            remote: self.remote,
            why: OFFLINE.to_string(),
            lost: Vec::new(),
            rejected: None,
            keep_view: false,
            attempt: 0,
        };
        while round.attempt < self.attempts {
            round.attempt += 1;
            round.fetch(store, &refs)?;
            let publication = match round.remote {
                Some(r) => Publication::Published {
                    remote: r.to_string(),
                },
                None => Publication::Kept {
                    why: round.why.clone(),
                },
            };
            let mut txn = Txn {
                store,
                remote: round.remote,
                attempt: round.attempt,
                rejected: round.rejected.take(),
                tips: BTreeMap::new(),
                landing: Landing::default(),
                keep_view: false,
            };
            let then = decide(&mut txn)?;
            let commits: Vec<(String, ObjectId)> = txn
                .landing
                .writes
                .iter()
                .map(|w| (w.refname.clone(), w.new))
                .collect();
            if txn.landing.is_empty() || self.landed(&mut round, txn)? {
                return Ok(Outcome {
                    then,
                    commits,
                    publication,
                });
            }
        }
        Err(self.exhausted_error(&round.lost))
    }

    /// Land what one round's closure wrote (`remote::land`); true when it
    /// landed, false when the round lost or the remote stopped answering
    /// (`round` then says how the next one starts).
    fn landed(&self, round: &mut Rounds<'s>, txn: Txn<'s>) -> Result<bool> {
        let kept_view = txn.keep_view;
        let mut landing = txn.landing;
        landing.point = self.point.to_string();
        landing.strict = self.strict;
        // Under a push budget, what this clone queued rides along in
        // the first round's push (`remote::land`).
        landing.carry = txn.rejected.is_none();
        match land(self.store, round.remote, &landing)? {
            Landed::Done => return Ok(true),
            Landed::Lost(lines) => {
                round.lost.clone_from(&lines);
                round.rejected = Some(Rejected {
                    lines,
                    before: landing
                        .writes
                        .iter()
                        .map(|w| (w.refname.clone(), w.tip))
                        .collect(),
                });
                // Lost at the remote: a jittered pause before fetching
                // again, so the losers spread out (offline the other
                // writer is a process beside this one: at once).
                // A round that kept its view goes on at once to
                // another ref than the one it lost.
                round.keep_view = kept_view;
                if round.remote.is_some() && round.attempt < self.attempts && !kept_view {
                    self.store
                        .git
                        .net()
                        .backoff(u32::try_from(round.attempt).unwrap_or(u32::MAX));
                }
            }
            // It stopped answering since the fetch: kept, as offline
            // (the next round arbitrates locally, and does not count
            // as an attempt).
            Landed::Unreachable => {
                round.why = format!(
                    "remote '{}' could not be reached",
                    round.remote.unwrap_or_default()
                );
                round.remote = None;
                round.attempt -= 1;
            }
        }
        Ok(false)
    }

    /// The error of a publication that lost every round (`lost`: git's
    /// lines of the last refusal): the command's own, or `CAS_FAILED`.
    fn exhausted_error(&self, lost: &[String]) -> Error {
        match &self.exhausted {
            Some(error) => error(lost),
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
        }
    }
}

/// What a [`Publish::run`] carries from one round to the next.
struct Rounds<'s> {
    /// The remote that arbitrates (None: offline, the local CAS does).
    remote: Option<&'s str>,
    /// Why a write is kept in this clone once offline.
    why: String,
    /// git's lines of the last refusal.
    lost: Vec<String>,
    /// What the previous round decided and the arbiter refused.
    rejected: Option<Rejected>,
    /// The previous round lost and kept its view: no fetch this round.
    keep_view: bool,
    /// The rounds run so far, this one included.
    attempt: usize,
}

impl Rounds<'_> {
    /// The fetch that starts a round: offline from now on when the remote
    /// was found unreachable (earlier in this process, or by this fetch).
    fn fetch(&mut self, store: &Store, refs: &[&str]) -> Result<()> {
        // Found unreachable earlier in this process: offline from now
        // on (with nothing to fetch, no push waits for it to time out).
        if self.remote.is_some_and(|r| gone(store, r)) {
            self.why = store.run.reach.kept_why();
            self.remote = None;
        }
        // A round that lost and kept its view decides again on what
        // its fetch showed (`Txn::keep_view_if_lost`): no fetch.
        if let (Some(r), false, false) = (
            self.remote,
            refs.is_empty(),
            std::mem::take(&mut self.keep_view),
        ) {
            match fetch_refs(store, r, refs) {
                Ok(()) if !gone(store, r) => {}
                Ok(()) => {
                    self.why = store.run.reach.kept_why();
                    self.remote = None;
                }
                // Kept only by a command that keeps its writes then
                // (`mirror::Reach::keep_writes_when_unreachable`); the
                // arbitrations (claim, reserve, accept…) fail instead.
                Err(e) if note_unreachable(store, r, &e) => {
                    self.why = format!("remote '{r}' could not be reached");
                    self.remote = None;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
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
    /// What the previous round decided and the arbiter refused, if it
    /// lost a race: this round decides again on a fresh fetch.
    pub fn rejected(&self) -> Option<&Rejected> {
        self.rejected.as_ref()
    }
    /// Should this round lose at the remote, decide the next round at once
    /// on the view this round's fetch gave — no pause, no fetch — because
    /// it will write another ref than the one it lost (`task claim
    /// --next`: another task it saw ready). Without it a lost round is
    /// followed by a jittered pause and a fresh fetch.
    pub fn keep_view_if_lost(&mut self) {
        self.keep_view = true;
    }

    /// Whether a remote arbitrates (else the local CAS does).
    pub fn online(&self) -> bool {
        self.remote.is_some()
    }

    /// Fetch more refs into the mirror (online; offline a no-op), e.g. a
    /// prefix to look for a free name after a lost race.
    pub fn fetch(&self, refs: &[&str]) -> Result<()> {
        crate::store::mirror::fetch_refs_from(self.store, self.remote, refs)
    }

    /// Fetch the remote's whole mirror (online; offline a no-op), as
    /// `sync` does each round, stamping the time of the fetch. (A tip
    /// this round read already stays what it read.)
    pub fn fetch_mirror(&self) -> Result<()> {
        match self.remote {
            Some(r) => fetch(self.store, r),
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
        let writes = &mut self.landing.writes;
        writes.retain(|w| w.refname != refname);
        writes.push(Write {
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
            self.landing.along.push(update);
        }
    }

    /// Plain refspecs in the round's push (online; offline dropped), e.g.
    /// `lead push`'s branches, fenced by the record written with them.
    pub fn push_refspecs(&mut self, refspecs: &[String]) {
        if self.remote.is_some() {
            self.landing.extra.extend(refspecs.iter().cloned());
        }
    }

    /// Leased updates of independent records whose local refs are already
    /// where they should be (`sync`'s), pushed in atomic batches of at
    /// most `swarm.pushBatch` refs (online; offline there is nothing to
    /// push). A refused batch leaves the earlier ones published and starts
    /// the next round, which decides again from a fresh fetch. A round
    /// that pushes these writes nothing else.
    pub fn push_independent(&mut self, updates: Vec<PushUpdate>) {
        if self.remote.is_some() {
            self.landing.independent.extend(updates);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::testkit::{self, git, N};

    /// Both kinds' records bumped in one round (by `by`: two clones that
    /// decide alike still write two commits).
    fn bump_both(txn: &mut Txn<'_>, key: &String, by: &str) -> Result<(u64, u64)> {
        let c = txn.current::<N<0>>(key)?.map_or(0, |v| v.value.0) + 1;
        let s = txn.current::<N<1>>(key)?.map_or(0, |v| v.value.0) + 10;
        txn.write(key, &N::<0>(c), &Event::new("bump", by, "bump"))?;
        txn.write(key, &N::<1>(s), &Event::new("bump", by, "bump"))?;
        Ok((c, s))
    }

    #[test]
    fn records_of_two_kinds_move_together_online_and_offline() {
        let (_tmp, stores) = testkit::clones(2);
        let mut stores = stores.into_iter();
        let (a, b) = (stores.next().unwrap(), stores.next().unwrap());
        let key = "k".to_string();
        let refs = [N::<0>::refname(&key), N::<1>::refname(&key)];
        let publish = |store| Publish::new(store, Some("origin")).fetch(refs.clone());

        // One push of both.
        let done = publish(&a).run(|txn| bump_both(txn, &key, "ann")).unwrap();
        assert_eq!((done.then, done.commits.len()), ((1, 10), 2));
        assert!(done.publication.is_published());

        // b loses a race on one of the two: the whole push is refused, and
        // the next round decides on what a published.
        let mut seen = Vec::new();
        let done = publish(&b)
            .run(|txn| {
                seen.push(txn.rejected().is_some());
                if txn.attempt() == 1 {
                    publish(&a)
                        .run(|t| {
                            let s = t.current::<N<1>>(&key)?.unwrap().value.0 + 10;
                            t.write(&key, &N::<1>(s), &Event::new("bump", "ann", "bump"))
                        })
                        .unwrap();
                }
                bump_both(txn, &key, "bob")
            })
            .unwrap();
        assert_eq!(seen, [false, true]);
        assert_eq!(done.then, (2, 30), "decided again on the winner's score");

        // Offline: one local CAS transaction of both refs; a ref another
        // local writer moved meanwhile fails both, and the round is re-run.
        let local = |store: &Store| {
            let c = Records::<N<0>>::new(store)
                .load(&key)
                .unwrap()
                .unwrap()
                .value
                .0;
            let s = Records::<N<1>>::new(store)
                .load(&key)
                .unwrap()
                .unwrap()
                .value
                .0;
            (c, s)
        };
        let before = local(&b);
        let mut rounds = 0;
        let done = Publish::new(&b, None)
            .run(|txn| {
                rounds += 1;
                let decided = bump_both(txn, &key, "bob")?;
                if rounds == 1 {
                    Records::<N<1>>::new(&b)
                        .update(&key, |_| {
                            Ok(super::super::Update::Write(
                                N(100),
                                Event::new("set", "ann", "set"),
                            ))
                        })
                        .unwrap();
                    assert_eq!(local(&b), (before.0, 100), "nothing moved yet");
                }
                Ok(decided)
            })
            .unwrap();
        assert_eq!(rounds, 2);
        assert_eq!(done.then, (before.0 + 1, 110));
        assert_eq!(local(&b), (before.0 + 1, 110));
        assert!(!done.publication.is_published());
    }

    /// The two records of a round offline, and a local writer that moves
    /// the second between the round's read and its landing: that round
    /// moves neither (never the first without its companion), the next
    /// decides again on what the other writer left and moves both.
    #[test]
    fn offline_companion_refs_move_all_or_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "--quiet", "a"]);
        let a = Store::open(&tmp.path().join("a")).unwrap();
        let key = "k".to_string();
        let ev = || Event::new("set", "ann", "set");
        Records::<N<0>>::new(&a).create(&key, &N(1), &ev()).unwrap();
        Records::<N<1>>::new(&a)
            .create(&key, &N(10), &ev())
            .unwrap();
        let local = |store: &Store| {
            let c = Records::<N<0>>::new(store).load(&key).unwrap().unwrap();
            let s = Records::<N<1>>::new(store).load(&key).unwrap().unwrap();
            (c.value.0, s.value.0)
        };
        let mut seen = Vec::new();
        Publish::new(&a, None)
            .run(|txn| {
                seen.push(local(&a));
                let c = txn.current::<N<0>>(&key)?.unwrap().value.0;
                let s = txn.current::<N<1>>(&key)?.unwrap().value.0;
                txn.write(&key, &N::<0>(c + 1), &ev())?;
                txn.write(&key, &N::<1>(s + 10), &ev())?;
                if txn.attempt() == 1 {
                    Records::<N<1>>::new(&a)
                        .update(&key, |_| Ok(super::super::Update::Write(N(100), ev())))
                        .unwrap();
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(
            seen,
            [(1, 10), (1, 100)],
            "the first ref did not move alone"
        );
        assert_eq!(local(&a), (2, 110));
    }
}
