//! The clock, injected so that tests can pin "now" (`GIT_SWARM_NOW`, an
//! RFC 3339 timestamp) — leases and packet ids depend on it.

use jiff::Timestamp;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    fixed: Option<Timestamp>,
}

impl Clock {
    pub fn from_env() -> Self {
        let fixed = std::env::var("GIT_SWARM_NOW")
            .ok()
            .and_then(|v| v.parse().ok());
        Clock { fixed }
    }
    pub fn fixed(at: Timestamp) -> Self {
        Clock { fixed: Some(at) }
    }
    pub fn now(&self) -> Timestamp {
        self.fixed.unwrap_or_else(Timestamp::now)
    }
}

/// RFC 3339 with second precision, UTC (`2026-11-29T09:11:31Z`).
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
