//! Every wait `verify` makes goes through here: backing off while GitHub
//! computes mergeability, the pause between `--wait` polls, waiting out a
//! rate limit. Each wait is recorded (the verdict's `waits` lists them, in
//! order, with what decided its length), so a test can check the backoff by
//! the plan rather than by the wall clock.
//!
//! `GIT_SWARM_VIRTUAL_WAITS=1` (tests): no wait sleeps; [`now`] moves on by
//! the wait instead, so deadlines and `--timeout` play out exactly as they
//! would in real time, at once and however loaded the machine is. Time spent
//! on requests does not count on that clock.

use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// One wait: how long, and why (`mergeable-unknown`, `poll`,
/// `x-poll-interval`, `x-ratelimit-reset`, `timeout`, `retry-after`, …).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Wait {
    pub why: String,
    pub ms: u64,
}

struct State {
    start: Instant,
    skipped: Duration,
    waits: Vec<Wait>,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            Mutex::new(State {
                start: Instant::now(),
                skipped: Duration::ZERO,
                waits: Vec::new(),
            })
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn is_virtual() -> bool {
    static VIRTUAL: OnceLock<bool> = OnceLock::new();
    *VIRTUAL.get_or_init(|| std::env::var("GIT_SWARM_VIRTUAL_WAITS").is_ok_and(|v| v.trim() == "1"))
}

/// The clock deadlines are measured on.
pub fn now() -> Instant {
    let st = state();
    if is_virtual() {
        st.start + st.skipped
    } else {
        Instant::now()
    }
}

/// Wait `d`, recording it with its reason.
pub fn sleep(d: Duration, why: &str) {
    {
        let mut st = state();
        st.waits.push(Wait {
            why: why.to_string(),
            ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
        });
        if is_virtual() {
            st.skipped += d;
            return;
        }
    }
    std::thread::sleep(d);
}

/// The waits so far, in order.
pub fn taken() -> Vec<Wait> {
    state().waits.clone()
}
