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

use crate::error::{Code, Error, Result};
use crate::store::remote::land::{land, Landed, Landing};
use crate::store::remote::{not_published, Tip};
use crate::store::Store;

mod rounds;
#[cfg(test)]
mod tests;
mod view;

use rounds::Rounds;

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
