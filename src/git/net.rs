//! What the remote costs: one tally of the remote operations a command
//! made ([`NetTally`]: pushes, refs pushed, fetches, ref queries, retries;
//! shared by every [`super::Git`] the command derives with `Git::at`),
//! and the server's transient answers (a ref locked by the server, an HTTP
//! 5xx, a dropped connection) that a push or fetch retries with jittered
//! backoff ([`transient`], [`NetTally::backoff`]) instead of taking them for a lost
//! race or a refusal.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// How many times one push (or fetch) is tried when the server answers
/// with a transient failure: the first attempt and up to four retries.
pub const ATTEMPTS: u32 = 5;

/// The remote operations a command made so far (every attempt counts: the
/// server saw it). Every command's `--json` carries it as `remote_ops`.
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
    /// Milliseconds slept between attempts (after a transient answer, or a
    /// race lost at the remote), jittered.
    pub backoff_ms: u64,
}

/// The counters of one command's remote operations and of its backoff
/// draws. One per command (the session opens it and every `Git` of the
/// command shares it), so that a process running several commands (a
/// test, a runner) counts each apart.
#[derive(Debug, Default)]
pub struct NetTally {
    pushes: AtomicU64,
    refs_pushed: AtomicU64,
    fetches: AtomicU64,
    queries: AtomicU64,
    retries: AtomicU64,
    backoff_ms: AtomicU64,
    draws: AtomicU64,
}

impl NetTally {
    /// The counts so far.
    pub fn ops(&self) -> RemoteOps {
        RemoteOps {
            pushes: self.pushes.load(Ordering::Relaxed),
            refs_pushed: self.refs_pushed.load(Ordering::Relaxed),
            fetches: self.fetches.load(Ordering::Relaxed),
            queries: self.queries.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            backoff_ms: self.backoff_ms.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn count_push(&self, refs: usize) {
        self.pushes.fetch_add(1, Ordering::Relaxed);
        self.refs_pushed.fetch_add(refs as u64, Ordering::Relaxed);
    }

    pub(crate) fn count_fetch(&self) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_query(&self) {
        self.queries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_retry(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Sleep before retry number `retry` (1 for the first) of a push or
    /// fetch the server answered transiently, or of a publish loop that
    /// lost a race at the remote: [`backoff_ms`] with the next draw of the
    /// seeded jitter. The time slept is counted (`backoff_ms`).
    pub fn backoff(&self, retry: u32) {
        let draw = self.draws.fetch_add(1, Ordering::Relaxed);
        let ms = backoff_ms(retry, mix(seed() ^ mix(draw)));
        self.backoff_ms.fetch_add(ms, Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Why the server's answer is transient (worth trying again after a
/// pause), or None. A server-side ref lock ("cannot lock ref … Unable to
/// create … .lock", "failed to lock") is not a lost race: a race names the
/// value the ref holds instead ("is at X but expected Y") or is seen by the
/// lease check itself ("stale info"), and those are not transient. An HTTP
/// 5xx and a connection dropped mid-push are transient too.
pub fn transient(stdout: &str, stderr: &str) -> Option<&'static str> {
    match super::failure::classify(Some(1), stdout, stderr) {
        Some((super::NetFailure::Busy, why)) => Some(why),
        _ => None,
    }
}

/// The first pause of a backoff, and the longest one.
const BACKOFF_FIRST_MS: u64 = 100;
const BACKOFF_CAP_MS: u64 = 2000;

/// The jitter's seed: `GIT_SWARM_JITTER_SEED` (a number) when set, so that
/// a test sees the same pauses every run; else one drawn per process, so
/// that agents that failed together do not come back together. Never the
/// pinned clock: every agent of a simulation shares that.
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        match std::env::var("GIT_SWARM_JITTER_SEED")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            Some(s) => s,
            None => {
                use std::hash::BuildHasher;
                // RandomState is seeded per process.
                std::collections::hash_map::RandomState::new().hash_one(std::process::id())
            }
        }
    })
}

/// SplitMix64: one well-mixed number from another.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E9B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The pause before retry number `retry` (1 for the first) given a random
/// `noise`: exponential from 100 ms (100, 200, 400, 800, 1600), capped at
/// 2 s, each between half and all of it.
pub fn backoff_ms(retry: u32, noise: u64) -> u64 {
    let base = (BACKOFF_FIRST_MS << retry.saturating_sub(1).min(5)).min(BACKOFF_CAP_MS);
    base / 2 + noise % (base / 2 + 1)
}

#[cfg(test)]
mod tests {
    use super::{backoff_ms, mix, transient};

    #[test]
    fn the_backoff_doubles_from_100ms_to_a_2s_cap_each_between_half_and_all() {
        let bounds: Vec<(u64, u64)> = (1..=8)
            .map(|r| (backoff_ms(r, 0), backoff_ms(r, u64::MAX - 1)))
            .collect();
        assert_eq!(bounds[0], (50, 100 / 2 + (u64::MAX - 1) % 51));
        for (r, (lo, _)) in bounds.iter().enumerate() {
            let base = (100u64 << r.min(5)).min(2000);
            assert_eq!(*lo, base / 2, "retry {}", r + 1);
        }
        for r in 1..=8 {
            let base = (100u64 << (r - 1).min(5)).min(2000);
            for n in 0..2000u64 {
                let ms = backoff_ms(r, mix(n));
                assert!(ms >= base / 2 && ms <= base, "retry {r}: {ms}");
            }
        }
        // The jitter spreads: 100 draws of the first pause take many values.
        let spread: std::collections::BTreeSet<u64> =
            (0..100u64).map(|n| backoff_ms(1, mix(n))).collect();
        assert!(spread.len() > 30, "{spread:?}");
    }

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
