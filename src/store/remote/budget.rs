//! The push budget (`swarm.pushBudget`, e.g. `6/min`): writes nobody races
//! for (messages, reports, plan saves, lane snapshots) stay in this clone,
//! queued, and are published with the clone's next push — a command that
//! publishes at once carries them in its atomic push ([`carry`]) — or by
//! the first git-swarm command that runs once the window (the unit over the
//! count: 10 s for `6/min`) has passed since the oldest of them was queued
//! ([`flush_if_due`]). There is no daemon: with no command after it, a
//! queued write waits for the next one (or `sync`).
//!
//! The queue is the pending mechanism ([`super::pending`]): a queued write
//! is a local ref the remote's mirror lacks, durable from the moment it is
//! written, so a process killed at any point loses nothing — the next
//! command finds it pending and publishes it. The one thing kept beside the
//! refs is when the oldest was queued (`.git/swarm/queued-<remote>`), a
//! cache: lost, the next queued write starts the window again.

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::{pending, publish_pending, Flushed, PushUpdate};
use crate::clock::rfc3339;
use crate::error::Result;
use crate::fsutil::Lock;
use crate::store::Store;

/// The budget, when one is set: its text (`6/min`) and its window.
pub fn budget(store: &Store) -> Result<Option<(String, SignedDuration)>> {
    crate::config::push_budget(store)
}

fn stamp(store: &Store, remote: &str) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join(format!("queued-{remote}"))
}

/// When the oldest write still queued for `remote` was queued.
pub fn queued_since(store: &Store, remote: &str) -> Option<Timestamp> {
    std::fs::read_to_string(stamp(store, remote))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Note that a write was queued now (the oldest stays the one noted).
pub fn mark_queued(store: &Store, remote: &str) {
    if queued_since(store, remote).is_some() {
        return;
    }
    let path = stamp(store, remote);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, rfc3339(store.clock.now()));
}

/// Forget the queue's age once nothing is pending any more.
pub fn settle(store: &Store, remote: &str) -> Result<()> {
    if queued_since(store, remote).is_some() && pending(store, remote)?.updates.is_empty() {
        let _ = std::fs::remove_file(stamp(store, remote));
    }
    Ok(())
}

/// What is queued, for `status`.
#[derive(Debug, Clone, Serialize)]
pub struct Queue {
    /// `swarm.pushBudget` as set.
    pub budget: String,
    /// The refs waiting.
    pub refs: Vec<String>,
    /// When the oldest was queued.
    pub since: Option<String>,
    /// From when the first git-swarm command publishes them (if no push
    /// of this clone carried them first).
    pub publish_by: Option<String>,
}

/// The queue of `remote` under the budget; None without a budget.
pub fn queue(store: &Store, remote: &str) -> Result<Option<Queue>> {
    let Some((text, window)) = budget(store)? else {
        return Ok(None);
    };
    let refs = pending(store, remote)?.refs;
    let since = queued_since(store, remote).filter(|_| !refs.is_empty());
    Ok(Some(Queue {
        budget: text,
        refs,
        since: since.map(rfc3339),
        publish_by: since.and_then(|s| s.checked_add(window).ok()).map(rfc3339),
    }))
}

/// Whether the queue of `remote` is due: a budget is set, something was
/// queued, and its window has passed.
pub fn due(store: &Store, remote: &str) -> bool {
    let Ok(Some((_, window))) = budget(store) else {
        return false;
    };
    queued_since(store, remote)
        .and_then(|s| s.checked_add(window).ok())
        .is_some_and(|by| store.clock.now() >= by)
}

/// The clone's flush lock (`.git/swarm/flushing-<remote>`, a kernel lock,
/// [`crate::fsutil::Lock`]). Several agents share a clone: the one that
/// takes it publishes the queue, the others leave it to it (their pushes
/// would carry the same refs and be refused). Its holder keeps it for as
/// long as it lives, however long its push takes; killed, it frees it.
fn flush_lock(store: &Store, remote: &str) -> Result<Option<Lock>> {
    let path = store
        .common_dir()
        .join("swarm")
        .join(format!("flushing-{remote}"));
    Lock::try_take(&path).map_err(|e| crate::fsutil::io_error(&path, e))
}

/// Publish the queue of `remote` if it is due (one atomic push with
/// leases, [`publish_pending`]); None when it is not due, or while another
/// process of this clone holds the flush lock.
pub fn flush_if_due(store: &Store, remote: &str) -> Result<Option<Flushed>> {
    if !due(store, remote) {
        return Ok(None);
    }
    flush(store, remote, Some("budget:flush"))
}

/// Publish what this clone has not published yet ([`publish_pending`])
/// and settle the queue's age, holding the clone's flush lock: None while
/// another process of this clone carries or flushes it (it publishes the
/// same refs). What every command that published at once does last.
pub fn flush(store: &Store, remote: &str, point: Option<&str>) -> Result<Option<Flushed>> {
    let Some(_lock) = flush_lock(store, remote)? else {
        return Ok(None);
    };
    if let Some(point) = point {
        crate::failpoint::point(point);
    }
    let flushed = publish_pending(store, remote)?;
    settle(store, remote)?;
    Ok(Some(flushed))
}

/// The queued updates a command that publishes at once carries in its
/// atomic push, besides `own` (the refs it publishes itself), and the lock
/// to hold until that push is answered: empty without a budget or a queue,
/// or while another process of this clone carries or flushes it (two
/// pushes carrying the same refs: one would be refused and pushed again).
/// Each carries the mirrored value as its lease.
pub fn carry(store: &Store, remote: &str, own: &[&str]) -> Result<(Vec<PushUpdate>, Option<Lock>)> {
    if queued_since(store, remote).is_none() || budget(store)?.is_none() {
        return Ok((Vec::new(), None));
    }
    let Some(lock) = flush_lock(store, remote)? else {
        return Ok((Vec::new(), None));
    };
    let updates = pending(store, remote)?
        .updates
        .into_iter()
        .filter(|u| !own.contains(&u.refname.as_str()))
        .collect();
    Ok((updates, Some(lock)))
}
