//! A plan's journal: how lanes, packets and messages write in a plan (an
//! entry appended to the plan's chain, on its newest head known here), and
//! taking a plan another clone published.

use gix::ObjectId;

use super::{plan_ref, Store};
use crate::error::{Code, Error, Result};
use crate::store::records::{Publish, Txn};
use crate::store::remote::Tip;
use crate::store::Event;

/// The plan's local head, and the head to build on: the local one, unless
/// it is missing or behind the remote's published one (never dropping
/// unpublished local saves). Part of [`journal`]; `accept` checks contracts
/// against it too.
pub fn newest_head(
    store: &Store,
    remote: Option<&str>,
    plan: &str,
) -> Result<(Option<ObjectId>, Option<ObjectId>)> {
    let refname = plan_ref(plan);
    let local = store.ref_target(&refname)?;
    let published = match remote {
        Some(r) => store.ref_target(&crate::store::mirror::mirror_ref(r, &refname))?,
        None => None,
    };
    let base = match (local, published) {
        (None, p) => p,
        (Some(l), Some(p)) if l != p && store.is_ancestor(l, p)? => Some(p),
        (l, _) => l,
    };
    Ok((local, base))
}

/// A plan another clone published and this one has not taken yet: fetch
/// it and catch the local ref up (as `sync` would), so that a command
/// naming it works without a `sync` first. Offline, or when the remote
/// cannot be reached, nothing changes (the command then says what is
/// missing).
pub fn catch_up(store: &Store, remote: Option<&str>, plan: &str) -> Result<()> {
    let refname = plan_ref(plan);
    let Some(remote) = remote else {
        return Ok(());
    };
    if store.ref_target(&refname)?.is_some() {
        return Ok(());
    }
    if crate::store::mirror::fetch_refs(store, remote, &[&refname]).is_err() {
        return Ok(());
    }
    let mirrored = crate::store::mirror::mirror_ref(remote, &refname);
    if let Some(published) = store.ref_target(&mirrored)? {
        crate::store::remote::adopt(
            store,
            &refname,
            published,
            "git-swarm",
            "take the published plan",
        )?;
    }
    Ok(())
}

/// How many times [`journal`] re-reads a plan that another writer moved.
const JOURNAL_ATTEMPTS: usize = 20;

/// Append `event` to the plan's journal: a commit with the plan's own tree
/// whose parent is the plan's head, moved in with a compare-and-swap. This
/// is how lanes and packets write in a plan.
///
/// - `on: Some(head)`: exactly on that head, the one the caller decided on
///   (e.g. "this plan has no executor"); a plan that moved since is
///   `CAS_FAILED` (exit 3) and nothing is written.
/// - `on: None`: on the newest head known here (the local ref, or the
///   remote's published one when the local ref is missing or behind it, so
///   unpublished local saves are never dropped), re-read and tried again
///   when another writer wins.
///
/// `once`: a trailer (`("Swarm-Packet", id)`) that makes the entry
/// idempotent: when the journal already has an entry of this kind carrying
/// it, nothing is written (a local ref behind that entry catches up).
///
/// Returns the commit written, or None when `once` found the entry there.
///
/// The store's one publish operation run locally ([`Publish`] without a remote),
/// not `Records::update`: the new version's parent may be the published
/// head rather than the local ref, and its tree is the head's, byte for byte.
pub fn journal(
    store: &Store,
    remote: Option<&str>,
    plan: &str,
    event: &Event,
    on: Option<ObjectId>,
    once: Option<(&str, &str)>,
) -> Result<Option<ObjectId>> {
    let refname = plan_ref(plan);
    let attempts = if on.is_some() { 1 } else { JOURNAL_ATTEMPTS };
    let exhausted = |lines: &[String]| match on {
        // On the head the caller decided on: the lost race itself.
        Some(_) => Error::new(Code::CasFailed, lines.join("\n"))
            .hint("run the command again: it will start from the new value"),
        None => Error::new(
            Code::CasFailed,
            format!("plan '{plan}' kept changing; its journal entry was not written"),
        )
        .hint("run the command again: it completes what is missing"),
    };
    let done = Publish::new(store, None)
        .attempts(attempts)
        .exhausted(exhausted)
        .run(|txn| {
            let (local, base) = match on {
                Some(head) => (Some(head), Some(head)),
                None => newest_head(store, remote, plan)?,
            };
            let Some(base) = base else {
                return Err(Error::new(
                    Code::NotFound,
                    format!("plan '{plan}' does not exist here"),
                )
                .hint("run `git swarm sync` to fetch the shared plans"));
            };
            journal_step(txn, &refname, event, Tip::local(local), base, once)
        })?;
    Ok(done.then)
}

/// One round of [`journal`] on `base`, moving the ref from `tip.local`.
fn journal_step(
    txn: &mut Txn<'_>,
    refname: &str,
    event: &Event,
    tip: Tip,
    base: ObjectId,
    once: Option<(&str, &str)>,
) -> Result<Option<ObjectId>> {
    let store = txn.store();
    let actor = &event.actor;
    if let Some((key, value)) = once {
        let found = store.journal(base, None)?.iter().any(|e| {
            e.event == event.kind && e.trailers.get(key).map(String::as_str) == Some(value)
        });
        if found && tip.local != Some(base) {
            txn.write_on(refname, tip, base, actor, "catch up");
        }
        if found {
            return Ok(None);
        }
    }
    let tree = store.commit_tree(base)?;
    let commit = store.commit(tree, &[base], event)?;
    txn.write_on(refname, tip, commit, actor, &event.summary);
    Ok(Some(commit))
}
