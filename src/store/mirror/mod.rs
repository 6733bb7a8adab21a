//! The mirror: the remote's swarm refs and notes, fetched into
//! `refs/swarm-remotes/<remote>/…`, whether the remote was reached, and why a
//! write stays local. What read-only views learn from it is
//! [`super::remote::MirrorView`]'s (it compares with the local refs).

pub mod level;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::refs::NOTES_REF;
use super::Store;
use crate::error::{Code, Error, Result};

/// The fetch refspecs that mirror the remote's swarm refs.
pub fn mirror_refspecs(remote: &str) -> [String; 2] {
    [
        format!("+refs/swarm/*:refs/swarm-remotes/{remote}/*"),
        // A glob, so that a remote without notes yet is not an error.
        format!("+refs/notes/swarm*:refs/swarm-remotes/{remote}/notes/swarm*"),
    ]
}

/// Where the remote's copy of a local swarm ref is mirrored.
pub fn mirror_ref(remote: &str, local: &str) -> String {
    if local == NOTES_REF {
        format!("refs/swarm-remotes/{remote}/notes/swarm")
    } else {
        format!(
            "refs/swarm-remotes/{remote}/{}",
            local.trim_start_matches("refs/swarm/")
        )
    }
}

/// Fetch the remote's swarm refs and notes into the mirror namespace.
pub fn fetch(store: &Store, remote: &str) -> Result<()> {
    let before = level::before_fetch(store, remote);
    fetch_into_mirror(store, remote, &mirror_refspecs(remote))?;
    if unreached(store).as_deref() != Some(remote) {
        stamp_fetch(store, remote);
        if let Some(before) = &before {
            level::mark(store, remote, before);
        }
    }
    Ok(())
}

/// What one command does when its remote cannot be reached, and the remote
/// that could not be (shared by the stores the command opens: see
/// [`crate::store::CommandState`]).
#[derive(Debug, Default)]
pub struct Reach {
    /// Reads tolerate a remote that cannot be reached.
    tolerate: AtomicBool,
    /// Writes keep what they wrote when the remote cannot be reached.
    keep_writes: AtomicBool,
    /// The remote a tolerated fetch or push could not reach, and the
    /// warning line worded when it failed.
    unreached: Mutex<Option<(String, String)>>,
}

impl Reach {
    /// From now on in this command, a fetch that fails (the remote cannot
    /// be reached) is not an error: the command works from what the clone
    /// knows, and [`Reach::unreached`] names the remote for its one warning
    /// line. For listings; a write keeps its error. After one failure the
    /// same remote is not tried again in this command (one timeout, not one
    /// per fetch).
    pub fn tolerate_unreachable(&self) {
        self.tolerate.store(true, Ordering::Relaxed);
    }

    /// From now on in this command, a write that cannot reach the remote
    /// is kept in this clone as with `--offline`: a fetch that cannot reach
    /// it is not an error ([`Reach::tolerate_unreachable`]), and once one
    /// fetch or push could not, [`gone`] says so, `Ctx::remote` is None,
    /// and the publish loop arbitrates with the local compare-and-swap. For
    /// every command that writes, except the arbitrations whose point is
    /// the remote's verdict.
    pub fn keep_writes_when_unreachable(&self) {
        self.keep_writes.store(true, Ordering::Relaxed);
        self.tolerate_unreachable();
    }

    /// The remote a tolerated fetch could not reach in this command, if any.
    pub fn unreached(&self) -> Option<String> {
        self.unreached
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|(r, _)| r.clone()))
    }

    /// The one warning line for [`Reach::unreached`]
    /// ([`unreachable_warning`], worded when the fetch failed).
    pub fn unreached_warning(&self) -> Option<String> {
        self.unreached
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|(_, w)| w.clone()))
    }

    /// Why a write of this command is kept in this clone: the remote could
    /// not be reached, or `--offline` (or no remote at all).
    pub fn kept_why(&self) -> String {
        match self.unreached() {
            Some(r) if self.keeps_writes() => {
                format!("remote '{r}' could not be reached")
            }
            _ => OFFLINE.to_string(),
        }
    }

    fn tolerates(&self) -> bool {
        self.tolerate.load(Ordering::Relaxed)
    }

    fn keeps_writes(&self) -> bool {
        self.keep_writes.load(Ordering::Relaxed)
    }
}

fn unreached(store: &Store) -> Option<String> {
    store.run.reach.unreached()
}

fn mark_unreached(store: &Store, remote: &str) {
    let warning = unreachable_warning(store, remote);
    if let Ok(mut g) = store.run.reach.unreached.lock() {
        *g = Some((remote.to_string(), warning));
    }
}

/// Whether `e` is a fetch or a push that could not reach the remote: it
/// could not connect, or there is no such repository (e.g. a bare remote
/// renamed away). Not a refusal (a lease, a hook) and not a busy remote (a
/// server-side lock, a 5xx, a dropped connection): those are not "offline".
/// The git layer decided it ([`crate::git::failure`]).
pub fn is_unreachable(e: &Error) -> bool {
    e.code == Code::RemoteUnreachable
}

/// Whether `e` is a fetch that failed on the remote's side, whatever the
/// reason (what a listing tolerates): unreachable, busy, or a failure of
/// git naming the remote.
fn did_not_answer(e: &Error) -> bool {
    matches!(e.code, Code::RemoteUnreachable | Code::RemoteBusy)
        || (e.code == Code::GitFailed
            && e.detail.as_ref().is_some_and(|d| d.get("remote").is_some()))
}

/// The one wording of a remote that could not be reached, for an error:
/// `remote 'origin' could not be reached (last reached 5 minutes ago, at
/// …): <git's reason>`, as listings warn it. Any other error is returned
/// as it is. (The CLI adds the hint that names `--offline` where the
/// command has it.)
pub fn unreachable_error(store: &Store, remote: &str, e: Error) -> Error {
    let worded = e
        .detail
        .as_ref()
        .is_some_and(|d| d.get("last_reached").is_some());
    if !is_unreachable(&e) || worded {
        return e;
    }
    let why = e
        .message
        .split_once(": ")
        .map(|(_, why)| why.to_string())
        .unwrap_or_default();
    let mut out = Error::new(
        Code::RemoteUnreachable,
        format!(
            "remote '{remote}' could not be reached ({}): {why}",
            last_reached_words(store, remote)
        ),
    );
    out.hints = e.hints;
    out.detail = e.detail;
    if let Some(d) = out.detail.as_mut().and_then(|d| d.as_object_mut()) {
        d.insert(
            "last_reached".into(),
            last_reached(store, remote).map_or(serde_json::Value::Null, serde_json::Value::String),
        );
    }
    out
}

/// Whether this command keeps its writes because `remote` could not be
/// reached (see [`Reach::keep_writes_when_unreachable`]).
pub fn gone(store: &Store, remote: &str) -> bool {
    store.run.reach.keeps_writes() && unreached(store).as_deref() == Some(remote)
}

/// Note that a push found `remote` unreachable (`e`, see
/// [`is_unreachable`]), as a fetch that could not reach it does; true when
/// this command keeps its writes then ([`gone`]).
pub fn note_unreachable(store: &Store, remote: &str, e: &Error) -> bool {
    if store.run.reach.tolerates() && is_unreachable(e) {
        mark_unreached(store, remote);
    }
    gone(store, remote)
}

/// Why a record is kept in this clone when there is no remote to publish
/// to: `--offline`, or none configured.
pub const OFFLINE: &str = "offline (--offline, or no remote)";

/// Where the time this clone last reached the remote (a fetch or a push
/// that it answered) is kept: a cache, like the fetch stamp.
fn reach_stamp(store: &Store, remote: &str) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join(format!("remote-reached-{remote}"))
}

/// Note that `remote` answered just now.
pub fn stamp_reached(store: &Store, remote: &str) {
    let path = reach_stamp(store, remote);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, crate::clock::rfc3339(store.clock.now()));
}

/// When this clone last reached `remote` (RFC 3339), if it ever did.
pub fn last_reached(store: &Store, remote: &str) -> Option<String> {
    std::fs::read_to_string(reach_stamp(store, remote))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// When this clone last reached `remote`, in words: `last reached 5
/// minutes ago, at <time>`, or `never reached from this clone`.
fn last_reached_words(store: &Store, remote: &str) -> String {
    match last_reached(store, remote) {
        Some(t) => match t.parse::<jiff::Timestamp>() {
            Ok(at) => format!(
                "last reached {} ago, at {t}",
                crate::clock::ago(store.clock.now(), at)
            ),
            Err(_) => format!("last reached at {t}"),
        },
        None => "never reached from this clone".to_string(),
    }
}

/// The one warning line of a read that could not reach `remote`.
pub fn unreachable_warning(store: &Store, remote: &str) -> String {
    format!(
        "remote '{remote}' could not be reached ({}); showing what this clone knows",
        last_reached_words(store, remote)
    )
}

/// Where the time of the last whole-mirror fetch is kept: a cache (a
/// missing one only makes read-only views say the age is unknown).
pub(super) fn fetch_stamp(store: &Store, remote: &str) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join(format!("mirror-fetched-{remote}"))
}

fn stamp_fetch(store: &Store, remote: &str) {
    let path = fetch_stamp(store, remote);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, crate::clock::rfc3339(store.clock.now()));
}

/// `git fetch` into the mirror. A process killed while it updated the mirror
/// leaves `<ref>.lock` behind and every later fetch fails on it: such a lock
/// is waited for and, once stale, removed (the mirror is only a cache).
fn fetch_into_mirror(store: &Store, remote: &str, specs: &[String]) -> Result<()> {
    let tolerate = store.run.reach.tolerates();
    if tolerate && unreached(store).as_deref() == Some(remote) {
        return Ok(());
    }
    match fetch_into_mirror_once(store, remote, specs) {
        Ok(()) => {
            stamp_reached(store, remote);
            Ok(())
        }
        // A listing shows what the clone knows whatever kept the fetch from
        // answering; a write goes offline only for a remote that cannot be
        // reached (a busy one stays an error).
        Err(e)
            if tolerate
                && (is_unreachable(&e)
                    || (!store.run.reach.keeps_writes() && did_not_answer(&e))) =>
        {
            mark_unreached(store, remote);
            Ok(())
        }
        Err(e) => Err(unreachable_error(store, remote, e)),
    }
}

fn fetch_into_mirror_once(store: &Store, remote: &str, specs: &[String]) -> Result<()> {
    let mut cleared = 0;
    loop {
        match store.git.fetch(remote, specs) {
            Err(e) if cleared < 3 => {
                let locked = e
                    .message
                    .split("cannot lock ref '")
                    .nth(1)
                    .and_then(|rest| rest.split('\'').next())
                    .filter(|r| r.starts_with("refs/swarm-remotes/"))
                    .map(str::to_string)
                    // A fetch killed while pruning leaves `packed-refs.lock`
                    // ("Unable to create '…/packed-refs.lock'"): the same wait.
                    .or_else(|| {
                        e.message
                            .contains("packed-refs.lock")
                            .then(|| mirror_ref(remote, "refs/swarm/"))
                    });
                match locked {
                    Some(refname) if store.clear_stale_lock(&refname) => cleared += 1,
                    _ => return Err(e),
                }
            }
            other => return other,
        }
    }
}

/// Fetch only the given local refs (e.g. one lead record) into the mirror.
/// Each is fetched as a one-ref glob so that a ref missing on the remote is
/// not an error and `--prune` drops a stale mirror of it.
pub fn fetch_refs(store: &Store, remote: &str, refs: &[&str]) -> Result<()> {
    let specs: Vec<String> = refs
        .iter()
        .map(|r| format!("+{r}*:{}*", mirror_ref(remote, r)))
        .collect();
    fetch_into_mirror(store, remote, &specs)
}

/// [`fetch_refs`] from `remote` when there is one; None (offline, or no
/// remote) fetches nothing.
pub fn fetch_refs_from(store: &Store, remote: Option<&str>, refs: &[&str]) -> Result<()> {
    match remote {
        Some(remote) => fetch_refs(store, remote, refs),
        None => Ok(()),
    }
}

/// The mirror refs under `prefixes` (local swarm ref names: a prefix
/// ending in `/`, or one ref) that differ from what `remote` holds now,
/// asked by one `git ls-remote` and compared here with the mirror: where
/// the prefixes hold many refs (the messages), this costs one listing and
/// no connectivity check, which `git fetch --dry-run` runs over every ref
/// it is advertised. (The remote lists all its refs to `ls-remote`, so
/// for prefixes of few refs among many `fetch --dry-run` is cheaper.)
pub fn remote_moves(store: &Store, remote: &str, prefixes: &[String]) -> Result<Vec<String>> {
    let asked: Vec<&str> = prefixes.iter().map(String::as_str).collect();
    let theirs = store.git.ls_remote(remote, &asked)?;
    stamp_reached(store, remote);
    let under = |name: &str, p: &str| match p.ends_with('/') {
        true => name.starts_with(p),
        false => name == p,
    };
    let mut ours: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for p in prefixes {
        let m = mirror_ref(remote, p);
        for (name, id) in store.list_refs(&m)? {
            if under(&name, &m) {
                ours.insert(name, id.to_string());
            }
        }
    }
    let mut moved = Vec::new();
    for (name, id) in theirs {
        if !prefixes.iter().any(|p| under(&name, p)) {
            continue;
        }
        let m = mirror_ref(remote, &name);
        if ours.remove(&m).as_deref() != Some(id.as_str()) {
            moved.push(m);
        }
    }
    moved.extend(ours.into_keys());
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_refs_and_notes_mirror_under_the_remotes_name() {
        assert_eq!(
            mirror_ref("origin", "refs/swarm/plans/p"),
            "refs/swarm-remotes/origin/plans/p"
        );
        assert_eq!(
            mirror_ref("origin", NOTES_REF),
            "refs/swarm-remotes/origin/notes/swarm"
        );
    }
}
