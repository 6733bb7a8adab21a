//! The remote: the atomic compare-and-swap push with leases, where a record
//! stands before a command publishes its next version ([`Tip`]), and THE
//! fetch → decide → publish retry loop ([`publish_loop`]) every command that
//! publishes at once is written with.
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
//! - Offline (`remote` None) the same loop arbitrates with the local CAS:
//!   [`Records::update`](super::kind::Records::update), `adopt`, the notes
//!   append and `gc`'s archive fold are this loop with `Fetch::Nothing`.

use gix::ObjectId;

use super::error::short;
use super::mirror::{fetch, fetch_refs, mirror_ref};
use super::Store;
use crate::error::{Code, Error, Result};
use crate::git::{PushOutcome, PushUpdate};

/// How many times a local-only loop (`adopt`, the notes append) retries
/// when another local process moved the ref under it.
pub const LOCAL_ATTEMPTS: usize = 20;

/// Publish ref updates in one atomic push with leases; on success move the
/// mirror refs too. A rejection is returned, not retried, so callers decide.
pub fn publish(
    store: &Store,
    remote: &str,
    updates: &[PushUpdate],
    extra: &[String],
) -> Result<PushOutcome> {
    let outcome = store.git.push_atomic(remote, updates, extra)?;
    if outcome == PushOutcome::Ok {
        crate::failpoint::point("publish:pushed");
        // The mirror is a cache of the remote: if another process holds its
        // lock, the next fetch corrects it, so a failure here is not one.
        let mirrors: Vec<(String, Option<ObjectId>)> = updates
            .iter()
            .map(|u| {
                let new = u
                    .new
                    .as_deref()
                    .and_then(|n| ObjectId::from_hex(n.as_bytes()).ok());
                (mirror_ref(remote, &u.refname), new)
            })
            .collect();
        let _ = store.force_many(&mirrors, "git-swarm", "mirror of a published push");
    }
    Ok(outcome)
}

/// Where one record stands before a command that publishes at once
/// (`lead`, `handoff`, `accept`) writes its next version. Read it after
/// fetching the ref with [`fetch_refs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tip {
    /// The local ref.
    pub local: Option<ObjectId>,
    /// The remote's value as just fetched (None offline or when absent there).
    pub remote: Option<ObjectId>,
    /// What the next version builds on: the published value, unless the
    /// local one descends from it (local changes not yet published).
    pub base: Option<ObjectId>,
    /// Whether a remote arbitrates (else the local CAS does).
    pub online: bool,
    /// `base` comes from a `gc` archive: the record has no live ref on
    /// either side, and its next version continues the archived history.
    pub archived: bool,
}

impl Tip {
    /// A record as the local CAS sees it offline: at `local`.
    pub fn local(local: Option<ObjectId>) -> Tip {
        Tip {
            local,
            remote: None,
            base: local,
            online: false,
            archived: false,
        }
    }

    /// The local ref does not hold the published value yet (it is missing or
    /// behind): e.g. a previous run was killed between its push and its
    /// local update.
    pub fn local_behind(&self, store: &Store) -> Result<bool> {
        match (self.local, self.base) {
            _ if self.archived => Ok(false),
            (_, None) => Ok(false),
            (None, Some(_)) => Ok(true),
            (Some(l), Some(b)) => Ok(l != b && store.is_ancestor(l, b)?),
        }
    }
}

pub fn tip(store: &Store, remote: Option<&str>, refname: &str) -> Result<Tip> {
    let mut tip = live_tip(store, remote, refname)?;
    if tip.base.is_none() {
        if let Some(archived) = super::archive::archived_tip(store, refname)? {
            tip.base = Some(archived);
            tip.archived = true;
        }
    }
    Ok(tip)
}

/// Every live record under `prefix` (`refs/swarm/lanes/`) known here, local
/// or in `remote`'s mirror, each with the newer of its two versions (the
/// published one unless the local one descends from it): the rule of every
/// read-only view and of checks made before publishing.
pub fn known_tips(
    store: &Store,
    remote: Option<&str>,
    prefix: &str,
) -> Result<Vec<(String, ObjectId)>> {
    let mut names = std::collections::BTreeSet::new();
    let mut add = |under: &str| -> Result<()> {
        for (r, _) in store.list_refs(under)? {
            names.insert(r[under.len()..].to_string());
        }
        Ok(())
    };
    add(prefix)?;
    if let Some(r) = remote {
        add(&mirror_ref(r, prefix))?;
    }
    let mut out = Vec::new();
    for name in names {
        if let Some(base) = live_tip(store, remote, &format!("{prefix}{name}"))?.base {
            out.push((name, base));
        }
    }
    Ok(out)
}

pub(crate) fn live_tip(store: &Store, remote: Option<&str>, refname: &str) -> Result<Tip> {
    let local = store.ref_target(refname)?;
    let published = match remote {
        Some(r) => store.ref_target(&mirror_ref(r, refname))?,
        None => None,
    };
    tip_of(store, remote.is_some(), local, published)
}

/// Every live record under `prefix` (e.g. `refs/swarm/tasks/`) known here,
/// local or in `remote`'s mirror, with its [`Tip`] (what read-only views
/// show: the newer of the two), by ref path below `prefix`, sorted. One
/// listing of each side, not two ref lookups per record.
pub fn tips_under(store: &Store, remote: Option<&str>, prefix: &str) -> Result<Vec<(String, Tip)>> {
    let mut both: std::collections::BTreeMap<String, (Option<ObjectId>, Option<ObjectId>)> =
        std::collections::BTreeMap::new();
    for (name, id) in store.list_refs(prefix)? {
        both.entry(name[prefix.len()..].to_string()).or_default().0 = Some(id);
    }
    if let Some(r) = remote {
        let mirrored = mirror_ref(r, prefix);
        for (name, id) in store.list_refs(&mirrored)? {
            both.entry(name[mirrored.len()..].to_string())
                .or_default()
                .1 = Some(id);
        }
    }
    both.into_iter()
        .map(|(path, (local, published))| {
            Ok((path, tip_of(store, remote.is_some(), local, published)?))
        })
        .collect()
}

/// The tip of a record whose local ref holds `local` and whose mirror
/// (when `online`) holds `published`.
fn tip_of(
    store: &Store,
    online: bool,
    local: Option<ObjectId>,
    published: Option<ObjectId>,
) -> Result<Tip> {
    if !online {
        return Ok(Tip::local(local));
    }
    let base = match (local, published) {
        (l, None) => l,
        (None, r) => r,
        (Some(l), Some(r)) => {
            if l != r && store.is_ancestor(r, l)? {
                Some(l)
            } else {
                Some(r)
            }
        }
    };
    Ok(Tip {
        local,
        remote: published,
        base,
        online: true,
        archived: false,
    })
}

/// The outcome of [`publish_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Ok,
    /// The arbiter (the remote's lease, or the local CAS) refused: someone
    /// moved the record first. Carries git's lines when a push was refused.
    Rejected(Vec<String>),
}

/// Publish `new` (a descendant of `tip.base`) as the next version of
/// `refname`. With a remote: one atomic push with `--force-with-lease` at
/// the value just fetched (plus `extra` refspecs in the same push), and only
/// then the local ref. Offline: a local CAS from the local value.
/// `point` names the failpoints (`<point>:pushed`, between push and local ref).
#[allow(clippy::too_many_arguments)]
pub fn publish_record(
    store: &Store,
    remote: Option<&str>,
    refname: &str,
    tip: &Tip,
    new: ObjectId,
    extra: &[String],
    actor: &str,
    reason: &str,
    point: &str,
) -> Result<Published> {
    let record = Publish {
        refname,
        tip,
        new,
        actor,
        reason,
        point,
    };
    publish_records(store, remote, &record, &[], extra)
}

/// One record version to publish at once (see [`publish_record`]).
pub struct Publish<'a> {
    pub refname: &'a str,
    pub tip: &'a Tip,
    pub new: ObjectId,
    pub actor: &'a str,
    pub reason: &'a str,
    pub point: &'a str,
}

/// [`publish_record`] with companion records that must travel in the same
/// atomic push (each with its lease at the value fetched), e.g. the lane
/// record with the packet that hands it over: the remote takes all or
/// nothing. Offline the companions are left to the caller. After the push,
/// each companion's local ref is moved forward; one that holds a local
/// change the pushed value lacks is left for `sync` to join.
pub fn publish_records(
    store: &Store,
    remote: Option<&str>,
    record: &Publish<'_>,
    companions: &[PushUpdate],
    extra: &[String],
) -> Result<Published> {
    let Publish {
        refname,
        tip,
        new,
        actor,
        reason,
        point,
    } = *record;
    match remote {
        Some(r) => {
            let mut updates = vec![PushUpdate {
                refname: refname.to_string(),
                new: Some(new.to_string()),
                expected: tip.remote.map(|e| e.to_string()),
            }];
            updates.extend(companions.iter().cloned());
            match publish(store, r, &updates, extra)? {
                PushOutcome::Ok => {}
                PushOutcome::Rejected(lines) => return Ok(Published::Rejected(lines)),
            }
            if !point.is_empty() {
                crate::failpoint::point(&format!("{point}:pushed"));
            }
            adopt(store, refname, new, actor, reason)?;
            for c in companions {
                let Some(id) = c
                    .new
                    .as_deref()
                    .and_then(|n| ObjectId::from_hex(n.as_bytes()).ok())
                else {
                    continue;
                };
                // Published already; a local ref that diverged is `sync`'s to join.
                match adopt(store, &c.refname, id, actor, reason) {
                    Err(e) if e.code == Code::CasFailed => {}
                    other => other?,
                }
            }
            Ok(Published::Ok)
        }
        None => match store.try_cas(refname, tip.local, Some(new), actor, reason) {
            Ok(()) => Ok(Published::Ok),
            Err(e) if e.is_lost_race() => Ok(Published::Rejected(vec![Error::from(e).message])),
            Err(e) => Err(e.into()),
        },
    }
}

/// Point the local ref at a value the remote has published, when the local
/// ref is absent or behind it (an ancestor of it). A local ref holding
/// anything else has a local write the published value does not contain
/// (e.g. a concurrent `--offline` command in this clone): it is left as it
/// is and the command fails with `CAS_FAILED` naming both values, for `sync`
/// to reconcile. A CAS loop, so a concurrent local writer is never lost
/// mid-update.
pub fn adopt(store: &Store, refname: &str, new: ObjectId, actor: &str, reason: &str) -> Result<()> {
    let looped = publish_loop(store, None, Fetch::Nothing, LOCAL_ATTEMPTS, |round| {
        let tip = round.tip(refname)?;
        match tip.local {
            Some(local) if local == new => return Ok(Step::Done(())),
            Some(local) if !store.is_ancestor(local, new)? => {
                return Err(Error::new(
                    Code::CasFailed,
                    format!(
                        "{refname}: the remote has {} but the local ref holds {}, a local change the published value does not contain; the local ref was left as it is",
                        short(new),
                        short(local)
                    ),
                )
                .hint("run `git swarm sync` to reconcile the two")
                .with_detail(serde_json::json!({
                    "ref": refname,
                    "published": new.to_string(),
                    "local": local.to_string(),
                })));
            }
            _ => {}
        }
        Ok(Step::Publish(Next::new(
            refname,
            tip,
            new,
            actor,
            reason,
            (),
        )))
    })?;
    match looped {
        Looped::Published(()) | Looped::Done(()) => Ok(()),
        Looped::Exhausted(_) => Err(Error::new(
            Code::CasFailed,
            format!(
                "{refname} kept changing locally; the remote has {}",
                short(new)
            ),
        )
        .hint("run `git swarm sync` to catch up")),
    }
}

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
    /// Push these leased updates in one atomic push (the local refs are
    /// already where they should be); offline there is nothing to push.
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
    for attempt in 1..=attempts {
        round.attempt = attempt;
        match (remote, fetch_first) {
            (Some(r), Fetch::Refs(refs)) => fetch_refs(store, r, refs)?,
            (Some(r), Fetch::Mirror) => fetch(store, r)?,
            _ => {}
        }
        let rejection = match decide(&round)? {
            Step::Done(then) => return Ok(Looped::Done(then)),
            Step::Publish(next) => {
                let record = Publish {
                    refname: &next.refname,
                    tip: &next.tip,
                    new: next.new,
                    actor: &next.actor,
                    reason: &next.reason,
                    point: next.point,
                };
                match publish_records(store, remote, &record, &next.companions, &next.extra)? {
                    Published::Ok => return Ok(Looped::Published(next.then)),
                    Published::Rejected(lines) => Rejection {
                        refname: Some(next.refname),
                        before: Some(next.tip),
                        lines,
                    },
                }
            }
            Step::Push { updates, then } => {
                let Some(r) = remote else {
                    return Ok(Looped::Published(then));
                };
                match publish(store, r, &updates, &[])? {
                    PushOutcome::Ok => return Ok(Looped::Published(then)),
                    PushOutcome::Rejected(lines) => Rejection {
                        refname: None,
                        before: None,
                        lines,
                    },
                }
            }
        };
        round.rejected = Some(rejection);
    }
    Ok(Looped::Exhausted(round.rejected.take().unwrap_or(
        Rejection {
            refname: None,
            before: None,
            lines: Vec::new(),
        },
    )))
}
