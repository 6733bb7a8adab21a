//! The mirror: the remote's swarm refs and notes, fetched into
//! `refs/swarm-remotes/<remote>/…`, whether the remote was reached, and why a
//! write stays local. What read-only views learn from it is
//! [`super::remote::MirrorView`]'s (it compares with the local refs).

use super::refs::NOTES_REF;
use super::Store;
use crate::error::Result;

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
    fetch_into_mirror(store, remote, &mirror_refspecs(remote))?;
    if unreached().as_deref() != Some(remote) {
        stamp_fetch(store, remote);
    }
    Ok(())
}

/// Reads that tolerate a remote that cannot be reached (see
/// [`tolerate_unreachable`]), and the remote that could not be.
static TOLERATE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static UNREACHED: std::sync::Mutex<Option<(String, String)>> = std::sync::Mutex::new(None);

/// From now on in this process, a fetch that fails (the remote cannot be
/// reached) is not an error: the command works from what the clone knows,
/// and [`unreached`] names the remote for its one warning line. For
/// listings; a write keeps its error. After one failure the same remote is
/// not tried again in this process (one timeout, not one per fetch).
pub fn tolerate_unreachable() {
    TOLERATE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The remote a tolerated fetch could not reach in this process, if any.
pub fn unreached() -> Option<String> {
    UNREACHED
        .lock()
        .ok()
        .and_then(|g| g.as_ref().map(|(r, _)| r.clone()))
}

/// The one warning line for [`unreached`] ([`unreachable_warning`], worded
/// when the fetch failed).
pub fn unreached_warning() -> Option<String> {
    UNREACHED
        .lock()
        .ok()
        .and_then(|g| g.as_ref().map(|(_, w)| w.clone()))
}

fn mark_unreached(store: &Store, remote: &str) {
    let warning = unreachable_warning(store, remote);
    if let Ok(mut g) = UNREACHED.lock() {
        *g = Some((remote.to_string(), warning));
    }
}

/// Whether `e` is a fetch or a push that could not reach the remote: it
/// could not connect, or there is no such repository (e.g. a bare remote
/// renamed away). Not a refusal (a lease, a hook) and not a busy remote (a
/// server-side lock, a 5xx, a dropped connection): those are not "offline".
pub fn is_unreachable(e: &crate::error::Error) -> bool {
    const NO_ANSWER: &[&str] = &[
        "does not appear to be a git repository",
        "Could not read from remote repository",
        "Could not resolve host",
        "Could not resolve hostname",
        "Connection refused",
        "Connection timed out",
        "No route to host",
        "Network is unreachable",
        "Failed to connect",
        "Repository not found",
        "repository not found",
    ];
    const BUSY: &[&str] = &[
        "The requested URL returned error: 5",
        "the remote end hung up unexpectedly",
        "early EOF",
        "Connection reset",
        "RPC failed",
    ];
    let m = &e.message;
    e.code == crate::error::Code::GitFailed
        && (m.starts_with("could not fetch from remote") || m.starts_with("git push to '"))
        && NO_ANSWER.iter().any(|s| m.contains(s))
        && !BUSY.iter().any(|s| m.contains(s))
}

/// Whether `e` is a fetch that failed, whatever the reason (what a listing
/// tolerates).
fn did_not_answer(e: &crate::error::Error) -> bool {
    e.code == crate::error::Code::GitFailed && e.message.starts_with("could not fetch from remote")
}

fn keeps_writes() -> bool {
    KEEP_WRITES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes that keep what they wrote when the remote cannot be reached (see
/// [`keep_writes_when_unreachable`]).
static KEEP_WRITES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on in this process, a write that cannot reach the remote is
/// kept in this clone as with `--offline`: a fetch that cannot reach it is
/// not an error ([`tolerate_unreachable`]), and once one fetch or push
/// could not, [`gone`] says so, `Ctx::remote` is None, and the publish
/// loop arbitrates with the local compare-and-swap. For every command that
/// writes, except the arbitrations whose point is the remote's verdict.
pub fn keep_writes_when_unreachable() {
    KEEP_WRITES.store(true, std::sync::atomic::Ordering::Relaxed);
    tolerate_unreachable();
}

/// Whether this process keeps its writes because `remote` could not be
/// reached (see [`keep_writes_when_unreachable`]).
pub fn gone(remote: &str) -> bool {
    keeps_writes() && unreached().as_deref() == Some(remote)
}

/// Note that a push found `remote` unreachable (`e`, see
/// [`is_unreachable`]), as a fetch that could not reach it does; true when
/// this process keeps its writes then ([`gone`]).
pub fn note_unreachable(store: &Store, remote: &str, e: &crate::error::Error) -> bool {
    if TOLERATE.load(std::sync::atomic::Ordering::Relaxed) && is_unreachable(e) {
        mark_unreached(store, remote);
    }
    gone(remote)
}

/// Why a record is kept in this clone when there is no remote to publish
/// to: `--offline`, or none configured.
pub const OFFLINE: &str = "offline (--offline, or no remote)";

/// Why a write of this process is kept in this clone: the remote could not
/// be reached, or `--offline` (or no remote at all).
pub fn kept_why() -> String {
    match unreached() {
        Some(r) if keeps_writes() => {
            format!("remote '{r}' could not be reached")
        }
        _ => OFFLINE.to_string(),
    }
}

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

/// The one warning line of a read that could not reach `remote`.
pub fn unreachable_warning(store: &Store, remote: &str) -> String {
    let when = match last_reached(store, remote) {
        Some(t) => match t.parse::<jiff::Timestamp>() {
            Ok(at) => format!(
                "last reached {} ago, at {t}",
                crate::clock::ago(store.clock.now(), at)
            ),
            Err(_) => format!("last reached at {t}"),
        },
        None => "never reached from this clone".to_string(),
    };
    format!("remote '{remote}' could not be reached ({when}); showing what this clone knows")
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
    let tolerate = TOLERATE.load(std::sync::atomic::Ordering::Relaxed);
    if tolerate && unreached().as_deref() == Some(remote) {
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
        Err(e) if tolerate && (is_unreachable(&e) || (!keeps_writes() && did_not_answer(&e))) => {
            mark_unreached(store, remote);
            Ok(())
        }
        Err(e) => Err(e),
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

    #[test]
    fn only_no_connection_or_no_repository_is_unreachable_not_a_busy_remote() {
        use crate::error::{Code, Error};
        let fetch = |stderr: &str| {
            Error::new(
                Code::GitFailed,
                format!("could not fetch from remote 'origin': {stderr}"),
            )
        };
        let push = |stderr: &str| {
            Error::new(
                Code::GitFailed,
                format!("git push to 'origin' failed: {stderr}"),
            )
        };
        for gone in [
            "fatal: '/x/r.git' does not appear to be a git repository\nfatal: Could not read from remote repository.",
            "fatal: unable to access 'https://h/r.git/': Could not resolve host: h",
            "ssh: connect to host h port 22: Connection refused",
        ] {
            assert!(is_unreachable(&fetch(gone)), "{gone}");
            assert!(is_unreachable(&push(gone)), "{gone}");
        }
        for busy in [
            "fatal: unable to access 'https://h/r.git/': The requested URL returned error: 503",
            "fatal: the remote end hung up unexpectedly\nfatal: Could not read from remote repository.",
            "error: RPC failed; curl 56 Connection reset by peer",
        ] {
            assert!(!is_unreachable(&fetch(busy)), "{busy}");
        }
        // A refusal is not an absence, nor is another error code.
        assert!(!is_unreachable(&Error::new(
            Code::PushDenied,
            "the remote 'origin' refused the push: does not appear to be a git repository"
        )));
    }
}
