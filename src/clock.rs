//! The clock, injected so that tests can pin "now" (`GIT_SWARM_NOW`, an
//! RFC 3339 timestamp) — leases and packet ids depend on it.

use jiff::Timestamp;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    fixed: Option<Timestamp>,
}

impl Clock {
    /// "Now" from `GIT_SWARM_NOW` when it is set (and not empty), else the
    /// system clock. A value that is not an RFC 3339 time is refused: a
    /// typo silently falling back to the real clock would decide leases on
    /// a time nobody asked for.
    pub fn from_env() -> crate::error::Result<Self> {
        let Some(value) = std::env::var_os("GIT_SWARM_NOW").filter(|v| !v.is_empty()) else {
            return Ok(Clock { fixed: None });
        };
        let text = value.to_string_lossy();
        let bad = |why: String| {
            crate::error::Error::new(
                crate::error::Code::EnvInvalid,
                format!("GIT_SWARM_NOW='{}' {why}", text.escape_debug()),
            )
            .hint("set it like GIT_SWARM_NOW=2026-01-01T12:00:00Z, or unset it to use the system clock")
        };
        let t = text
            .trim()
            .parse::<Timestamp>()
            .map_err(|e| bad(format!("is not an RFC 3339 time: {e}")))?;
        if !offset_in_range(text.trim()) {
            return Err(bad("has a UTC offset beyond ±23:59".into()));
        }
        // Leases and gc ages are added to "now": a time so late that a
        // century overflows would fail later with a raw arithmetic error.
        if t.checked_add(jiff::SignedDuration::from_hours(24 * 366 * 100))
            .is_err()
        {
            return Err(bad("is too far in the future".into()));
        }
        Ok(Clock { fixed: Some(t) })
    }
    pub fn fixed(at: Timestamp) -> Self {
        Clock { fixed: Some(at) }
    }
    pub fn now(&self) -> Timestamp {
        self.fixed.unwrap_or_else(Timestamp::now)
    }
}

/// RFC 3339 allows offsets up to ±23:59 (`Z` or `±HH:MM` at the end);
/// jiff's parser also takes ±24 and ±25.
fn offset_in_range(text: &str) -> bool {
    let b = text.as_bytes();
    match b.len().checked_sub(6).map(|i| &b[i..]) {
        Some([b'+' | b'-', h1, h2, b':', _, _]) => {
            h1.is_ascii_digit() && h2.is_ascii_digit() && (h1 - b'0') * 10 + (h2 - b'0') <= 23
        }
        _ => true,
    }
}

/// A rough age: `42s`, `5m`, `3h`, `2d`.
pub fn ago(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let secs = now.as_second().saturating_sub(then.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// RFC 3339 with second precision, UTC (`2026-11-29T09:11:31Z`).
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The end of a lease of length `lease` from `now`, as records store it;
/// a lease that runs past the calendar is refused with `code`.
pub fn lease_end(
    now: Timestamp,
    lease: jiff::SignedDuration,
    code: crate::error::Code,
) -> crate::error::Result<String> {
    now.checked_add(lease)
        .map(rfc3339)
        .map_err(|e| crate::error::Error::new(code, format!("lease too long: {e}")))
}

/// Parse a human duration such as `90` (seconds), `250ms`, `30m`, `2h`,
/// `14d` or `1h30m` (days are 24 hours). The one parser for every flag and
/// setting that takes a duration.
pub fn parse_duration(text: &str) -> crate::error::Result<jiff::SignedDuration> {
    let bad = || {
        crate::error::Error::new(
            crate::error::Code::Usage,
            format!("'{text}' is not a duration"),
        )
        .hint("use a number and a unit: 45s, 30m, 2h, 14d, or combined like 1h30m")
    };
    // A bare number is seconds, as `sleep 90` would read it.
    if let Ok(secs) = text.trim().parse::<u32>() {
        return Ok(jiff::SignedDuration::from_secs(secs.into()));
    }
    let span: jiff::Span = text.trim().parse().map_err(|_| bad())?;
    let d = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|_| bad())?;
    if d.is_negative() {
        return Err(bad());
    }
    Ok(d)
}

/// A commit time (Unix seconds) as a claim to be the newer of two versions:
/// one more than five minutes ahead of `now` counts as the oldest, so that a
/// version dated in the future cannot win every comparison for good.
pub fn claimed_time(seconds: i64, now: i64) -> i64 {
    if seconds > now.saturating_add(300) {
        i64::MIN
    } else {
        seconds
    }
}

#[cfg(test)]
mod tests {
    use super::ago;

    #[test]
    fn ages_are_rounded_to_one_unit() {
        let t = |s: i64| jiff::Timestamp::from_second(s).unwrap();
        assert_eq!(ago(t(100), t(58)), "42s");
        assert_eq!(ago(t(400), t(100)), "5m");
        assert_eq!(ago(t(3 * 3600 + 5), t(5)), "3h");
        assert_eq!(ago(t(2 * 86_400 + 7), t(7)), "2d");
    }

    #[test]
    fn durations() {
        assert_eq!(super::parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(super::parse_duration("14d").unwrap().as_secs(), 14 * 86400);
        assert_eq!(super::parse_duration("1h 30m").unwrap().as_secs(), 5400);
        assert_eq!(super::parse_duration("1h30m").unwrap().as_secs(), 5400);
        assert_eq!(super::parse_duration("45s").unwrap().as_secs(), 45);
        assert_eq!(super::parse_duration("90").unwrap().as_secs(), 90);
        assert_eq!(super::parse_duration("250ms").unwrap().as_millis(), 250);
        assert!(super::parse_duration("").is_err());
        assert!(super::parse_duration("m").is_err());
        assert!(super::parse_duration("5x").is_err());
        assert!(super::parse_duration("soon").is_err());
        assert!(super::parse_duration("-5m").is_err());
    }

    #[test]
    fn a_time_far_ahead_of_now_claims_nothing() {
        assert_eq!(super::claimed_time(1_000, 1_000), 1_000);
        assert_eq!(super::claimed_time(1_300, 1_000), 1_300);
        assert_eq!(super::claimed_time(1_301, 1_000), i64::MIN);
    }
}
