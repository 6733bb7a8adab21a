//! What the remote costs: one counter of the remote operations this process
//! made ([`remote_ops`]: pushes, refs pushed, fetches, ref queries, retries),
//! and the server's transient answers (a ref locked by the server, an HTTP
//! 5xx, a dropped connection) that a push or fetch retries with jittered
//! backoff ([`transient`], [`backoff`]) instead of taking them for a lost
//! race or a refusal.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// How many times one push (or fetch) is tried when the server answers
/// with a transient failure: the first attempt and up to four retries.
pub const ATTEMPTS: u32 = 5;

static PUSHES: AtomicU64 = AtomicU64::new(0);
static REFS_PUSHED: AtomicU64 = AtomicU64::new(0);
static FETCHES: AtomicU64 = AtomicU64::new(0);
static QUERIES: AtomicU64 = AtomicU64::new(0);
static RETRIES: AtomicU64 = AtomicU64::new(0);

/// The remote operations this process made so far (every attempt counts:
/// the server saw it). Every command's `--json` carries it as `remote`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RemoteOps {
    /// `git push` runs.
    pub pushes: u64,
    /// Ref updates those pushes carried.
    pub refs_pushed: u64,
    /// `git fetch` runs.
    pub fetches: u64,
    /// `git ls-remote` runs (read queries that fetch no object).
    pub queries: u64,
    /// Attempts repeated after a transient answer of the server.
    pub retries: u64,
}

/// The counts so far.
pub fn remote_ops() -> RemoteOps {
    RemoteOps {
        pushes: PUSHES.load(Ordering::Relaxed),
        refs_pushed: REFS_PUSHED.load(Ordering::Relaxed),
        fetches: FETCHES.load(Ordering::Relaxed),
        queries: QUERIES.load(Ordering::Relaxed),
        retries: RETRIES.load(Ordering::Relaxed),
    }
}

pub(crate) fn count_push(refs: usize) {
    PUSHES.fetch_add(1, Ordering::Relaxed);
    REFS_PUSHED.fetch_add(refs as u64, Ordering::Relaxed);
}

pub(crate) fn count_fetch() {
    FETCHES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_query() {
    QUERIES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn count_retry() {
    RETRIES.fetch_add(1, Ordering::Relaxed);
}

/// Why the server's answer is transient (worth trying again after a
/// pause), or None. A server-side ref lock ("cannot lock ref … Unable to
/// create … .lock", "failed to lock") is not a lost race: a race names the
/// value the ref holds instead ("is at X but expected Y") or is seen by the
/// lease check itself ("stale info"), and those are not transient. An HTTP
/// 5xx and a connection dropped mid-push are transient too.
pub fn transient(stdout: &str, stderr: &str) -> Option<&'static str> {
    let lost_race = |l: &str| {
        l.contains("but expected")
            || l.contains("reference already exists")
            || l.contains("incorrect old value")
    };
    let remote_lines = stderr.lines().filter(|l| l.starts_with("remote: "));
    let rejected = stdout.lines().filter(|l| l.starts_with('!'));
    if remote_lines
        .chain(rejected)
        .any(|l| (l.contains("cannot lock ref") || l.contains("failed to lock")) && !lost_race(l))
    {
        return Some("the server could not lock a ref");
    }
    // The porcelain output already names a definitive answer (the lease
    // check's "stale info", a hook's refusal): the connection git closes
    // after it ("the remote end hung up") is not a dropped one.
    let answered =
        stdout.lines().any(|l| l.starts_with('!')) || stderr.contains("atomic push failed for ref");
    if answered {
        return None;
    }
    const HTTP: &[&str] = &[
        "The requested URL returned error: 5",
        "RPC failed; HTTP 5",
        "HTTP/1.1 5",
        "HTTP/2 5",
        "Empty reply from server",
    ];
    if HTTP.iter().any(|p| stderr.contains(p)) {
        return Some("the server answered with an HTTP 5xx");
    }
    const DROPPED: &[&str] = &[
        "the remote end hung up unexpectedly",
        "unexpected disconnect while reading sideband packet",
        "early EOF",
        "Connection reset by peer",
        "RPC failed",
    ];
    if DROPPED.iter().any(|p| stderr.contains(p)) {
        return Some("the connection to the server dropped");
    }
    None
}

/// Sleep before retry number `retry` (1 for the first): exponential from
/// 100 ms, capped at 2 s, with half of it random so that agents that failed
/// together do not come back together.
pub fn backoff(retry: u32) {
    use std::hash::BuildHasher;
    let base: u64 = (100u64 << retry.saturating_sub(1).min(5)).min(2000);
    // RandomState is seeded per process: enough randomness for a jitter.
    let noise = std::collections::hash_map::RandomState::new().hash_one((retry, base));
    let ms = base / 2 + noise % (base / 2 + 1);
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[cfg(test)]
mod tests {
    use super::transient;

    #[test]
    fn a_locked_ref_is_transient_and_a_lost_race_is_not() {
        let locked = "remote: error: cannot lock ref 'refs/swarm/x': Unable to create '/r/refs/swarm/x.lock': File exists.";
        assert!(transient("", locked).is_some());
        let raced = "remote: error: cannot lock ref 'refs/swarm/x': is at 1111 but expected 2222";
        assert_eq!(transient("", raced), None);
        let stale = "!\tabc:refs/swarm/x\t[rejected] (stale info)";
        assert_eq!(transient(stale, "error: failed to push some refs"), None);
        // git hangs up itself after the lease check refused an atomic push.
        let hung_up = "error: atomic push failed for ref refs/swarm/x. status: 7\nfatal: the remote end hung up unexpectedly\n";
        assert_eq!(transient(stale, hung_up), None);
        assert_eq!(transient("", hung_up), None);
        assert!(transient(
            "!\tabc:refs/swarm/x\t[remote rejected] (failed to lock)",
            ""
        )
        .is_some());
        assert!(transient("", "error: RPC failed; HTTP 500 curl 22 The requested URL returned error: 500\nfatal: the remote end hung up unexpectedly").is_some());
        assert!(transient("", "fatal: the remote end hung up unexpectedly").is_some());
        let policy = "!\tabc:refs/heads/main\t[remote rejected] (pre-receive hook declined)";
        assert_eq!(transient(policy, "remote: protected branch"), None);
        assert_eq!(
            transient("", "fatal: '/nope' does not appear to be a git repository"),
            None
        );
    }
}
