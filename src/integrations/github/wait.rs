//! Every wait `verify` makes goes through its client's [`Waits`]: backing off while GitHub
//! computes mergeability, the pause between `--wait` polls, waiting out a
//! rate limit. Each wait is recorded (the verdict's `waits` lists them, in
//! order, with what decided its length), so a test can check the backoff by
//! the plan rather than by the wall clock.
//!
//! `GIT_SWARM_VIRTUAL_WAITS=1` (tests): no wait sleeps; [`Waits::now`] moves on by
//! the wait instead, so deadlines and `--timeout` play out exactly as they
//! would in real time, at once and however loaded the machine is. Time spent
//! on requests does not count on that clock.

use std::sync::{Mutex, MutexGuard};
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

/// The waits of one GitHub client (see [`super::client::GitHub::waits`]):
/// its clock and what it waited, in order.
pub struct Waits {
    /// `GIT_SWARM_VIRTUAL_WAITS=1`: no wait sleeps.
    virtual_clock: bool,
    state: Mutex<State>,
}

impl Default for Waits {
    fn default() -> Self {
        Waits::new()
    }
}

impl Waits {
    pub fn new() -> Waits {
        Waits {
            virtual_clock: std::env::var("GIT_SWARM_VIRTUAL_WAITS").is_ok_and(|v| v.trim() == "1"),
            state: Mutex::new(State {
                start: Instant::now(),
                skipped: Duration::ZERO,
                waits: Vec::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock deadlines are measured on.
    pub fn now(&self) -> Instant {
        let st = self.state();
        if self.virtual_clock {
            st.start + st.skipped
        } else {
            Instant::now()
        }
    }

    /// Wait `d`, recording it with its reason.
    pub fn sleep(&self, d: Duration, why: &str) {
        {
            let mut st = self.state();
            st.waits.push(Wait {
                why: why.to_string(),
                ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            });
            if self.virtual_clock {
                st.skipped += d;
                return;
            }
        }
        std::thread::sleep(d);
    }

    /// The waits so far, in order.
    pub fn taken(&self) -> Vec<Wait> {
        self.state().waits.clone()
    }
}
