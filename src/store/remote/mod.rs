//! The remote: the atomic compare-and-swap push with leases ([`publish`],
//! [`publish_records`]), where a record stands before a command publishes
//! its next version ([`Tip`], [`tip`], [`tips_under`]), and adopting a
//! published value locally ([`adopt`]). THE fetch → decide → publish retry
//! loop every command that publishes at once is written with is
//! [`publish_loop`] (its own module, re-exported here).

mod batch;
pub mod budget;
mod pending;
mod publish_loop;
mod view;

pub use batch::{publish_batched, push_batch};
pub use pending::{not_published, pending, publish_pending, Flushed, Pending};
pub use publish_loop::{publish_loop, Fetch, Looped, Next, Rejection, Round, Step};
pub use view::MirrorView;

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
    let outcome = match store.git.push_atomic(remote, updates, extra) {
        Ok(outcome) => outcome,
        Err(e) => {
            super::mirror::note_unreachable(store, remote, &e);
            return Err(e);
        }
    };
    super::mirror::stamp_reached(store, remote);
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
                // A branch that travels with records (a handoff's) is
                // mirrored where git keeps it: the remote-tracking branch.
                let mirror = match u.refname.strip_prefix("refs/heads/") {
                    Some(b) => format!("refs/remotes/{remote}/{b}"),
                    None => mirror_ref(remote, &u.refname),
                };
                (mirror, new)
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

/// The outcome of [`publish_records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Ok,
    /// The arbiter (the remote's lease, or the local CAS) refused: someone
    /// moved the record first. Carries git's lines when a push was refused.
    Rejected(Vec<String>),
}

/// One record version to publish at once (see [`publish_records`]).
pub struct Publish<'a> {
    pub refname: &'a str,
    pub tip: &'a Tip,
    pub new: ObjectId,
    pub actor: &'a str,
    pub reason: &'a str,
    pub point: &'a str,
}

/// Publish `record.new` (a descendant of `tip.base`) as the next version
/// of `record.refname`. With a remote: one atomic push with
/// `--force-with-lease` at the value just fetched (plus `extra` refspecs in
/// the same push), and only then the local ref. Offline: a local CAS from
/// the local value. `point` names the failpoints (`<point>:pushed`, between
/// push and local ref). `companions`: records that must travel in the same
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
