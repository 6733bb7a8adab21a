//! The remote: the atomic compare-and-swap push with leases ([`publish`]),
//! where a record stands before a command publishes its next version
//! ([`Tip`], [`tip`], [`tips_under`]), adopting a published value locally
//! ([`adopt`]), and THE push step of a publication ([`land`]: the leased
//! push, the local refs after it, offline one local CAS of every ref) that
//! [`crate::store::records::Publish`] runs each round.

mod batch;
pub mod budget;
pub mod land;
mod pending;
mod view;

pub use batch::{publish_batched, push_batch};
pub use pending::{not_published, pending, publish_pending, Flushed, Pending};
pub use view::MirrorView;

use gix::ObjectId;

use super::error::short;
use super::mirror::mirror_ref;
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
            return Err(super::mirror::unreachable_error(store, remote, e));
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
/// fetching the ref with [`fetch_refs`](crate::store::mirror::fetch_refs).
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
    /// Under `swarm.trust=require`: the untrusted version passed over to
    /// reach `base`, the newest trusted one below it (the listings still
    /// name it `UNTRUSTED` until a trusted write replaces it).
    pub skipped: Option<ObjectId>,
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
            skipped: None,
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
    tip_of(store, refname, remote.is_some(), local, published)
}

/// Every live record under `prefix` (e.g. `refs/swarm/tasks/`) known here,
/// local or in `remote`'s mirror, with its [`Tip`] (what read-only views
/// show: the newer of the two), by ref path below `prefix`, sorted. One
/// listing of each side, not two ref lookups per record.
pub fn tips_under(store: &Store, remote: Option<&str>, prefix: &str) -> Result<Vec<(String, Tip)>> {
    // Both listings come sorted by name: joined in one pass, each name
    // cut to its path below the prefix in place (a swarm keeps tens of
    // thousands of records).
    let below = |listed: Vec<(String, ObjectId)>, cut: usize| {
        listed.into_iter().map(move |(mut name, id)| {
            name.drain(..cut);
            (name, id)
        })
    };
    let mut local = below(store.list_refs(prefix)?, prefix.len()).peekable();
    let mut mirrored = match remote {
        Some(r) => {
            let m = mirror_ref(r, prefix);
            below(store.list_refs(&m)?, m.len()).collect::<Vec<_>>()
        }
        None => Vec::new(),
    }
    .into_iter()
    .peekable();
    let mut out = Vec::new();
    loop {
        let (path, l, p) = match (local.peek(), mirrored.peek()) {
            (None, None) => break,
            (Some(_), None) => {
                let (path, id) = local.next().expect("peeked");
                (path, Some(id), None)
            }
            (None, Some(_)) => {
                let (path, id) = mirrored.next().expect("peeked");
                (path, None, Some(id))
            }
            (Some((a, _)), Some((b, _))) => match a.cmp(b) {
                std::cmp::Ordering::Less => {
                    let (path, id) = local.next().expect("peeked");
                    (path, Some(id), None)
                }
                std::cmp::Ordering::Greater => {
                    let (path, id) = mirrored.next().expect("peeked");
                    (path, None, Some(id))
                }
                std::cmp::Ordering::Equal => {
                    let (path, l) = local.next().expect("peeked");
                    let (_, p) = mirrored.next().expect("peeked");
                    (path, Some(l), Some(p))
                }
            },
        };
        out.push((path, tip_of(store, prefix, remote.is_some(), l, p)?));
    }
    Ok(out)
}

/// The tip of a record whose local ref holds `local` and whose mirror
/// (when `online`) holds `published`; `refname` is its ref (or one under
/// the same namespace).
fn tip_of(
    store: &Store,
    refname: &str,
    online: bool,
    local: Option<ObjectId>,
    published: Option<ObjectId>,
) -> Result<Tip> {
    let mut tip = if online {
        let base = match (local, published) {
            (l, None) => l,
            (None, r) => r,
            (Some(l), Some(r)) => {
                // Under swarm.trust=require a published version that is not
                // trusted is no base over a local one it does not contain:
                // the local one is, and the next write replaces the
                // untrusted one at the remote (its lease is it).
                if l != r
                    && (store.is_ancestor(r, l)?
                        || (store.refused(refname, r)?.is_some() && !store.is_ancestor(l, r)?))
                {
                    Some(l)
                } else {
                    Some(r)
                }
            }
        };
        Tip {
            local,
            remote: published,
            base,
            online: true,
            archived: false,
            skipped: None,
        }
    } else {
        Tip::local(local)
    };
    // An untrusted version on top of trusted history is passed over: the
    // newest trusted one is read and built on (a record with no trusted
    // version at all stays at its tip, unreadable as before).
    if let Some(base) = tip.base {
        if let Some(trusted) = store.trusted_version(refname, base)? {
            if trusted != base {
                tip.base = Some(trusted);
                tip.skipped = Some(base);
            }
        }
    }
    Ok(tip)
}

/// Point the local ref at a value the remote has published, when the local
/// ref is absent or behind it (an ancestor of it); one that already
/// contains it (a later write here built on it) is left as it is, with
/// nothing to reconcile. A local ref holding anything else has a local write the published value does not contain
/// (e.g. a concurrent `--offline` command in this clone): it is left as it
/// is and the command fails with `CAS_FAILED` naming both values, for `sync`
/// to reconcile. A CAS loop, so a concurrent local writer is never lost
/// mid-update.
pub fn adopt(store: &Store, refname: &str, new: ObjectId, actor: &str, reason: &str) -> Result<()> {
    let step = |local: Option<ObjectId>| {
        match local {
        Some(local) if local == new => Ok(None),
        // A later write here built on the published version (e.g. a second
        // renewal while this one was pushing): nothing to reconcile.
        Some(local) if store.is_ancestor(new, local)? => Ok(None),
        Some(local) if !store.is_ancestor(local, new)? => Err(Error::new(
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
        }))),
        _ => Ok(Some((new, actor.to_string(), reason.to_string()))),
    }
    };
    let exhausted = || {
        Error::new(
            Code::CasFailed,
            format!(
                "{refname} kept changing locally; the remote has {}",
                short(new)
            ),
        )
        .hint("run `git swarm sync` to catch up")
    };
    store
        .cas_loop(refname, LOCAL_ATTEMPTS, step, exhausted)
        .map(drop)
}
