//! The capacity loop: how much of an agent's account is left, how full its
//! context is, and what the swarm spends. Local to the clone, under
//! `<git common dir>/swarm/capacity/` (never pushed by itself).
//!
//! The API (small and stable; the runner and the hooks call it):
//!
//! - [`read`]`(store, &Who) -> Reading`: one reading per agent address and
//!   account, cached [`CACHE_SECS`] (300 s) in `capacity/<address>@<account>.json`;
//!   when the cache is stale, the first source that answers:
//!   `swarm.capacityCommand` (default `ak capacity --self --json` when
//!   `ak` is on `PATH`; [`source::parse_kit`] documents the JSON read),
//!   then the host's own figures recorded with [`note`] (Claude Code's
//!   status line, the runner's headless rate-limit events), else
//!   [`State::Unknown`] — never `ok`.
//! - [`note`]`(store, &Who, Figures) -> Reading`: record a reading from a
//!   host's figures ([`Figures::from_status_line`],
//!   [`Figures::from_stream_event`], [`Figures::from_headers`]).
//! - [`verdict`]`(&Reading, context_used, fresh_context) -> Verdict`: what
//!   the agent does at a task boundary ([`Action`]: go on, finish the step
//!   and hand off at the next boundary, or hand off now with a reason).
//! - [`Reading::line`]: the report's capacity line, `ok 64% @work1`.
//! - [`spend`]: tokens (input, cache read, cache write, output) and cost
//!   where the host reported it, per host session id as cumulative
//!   totals ([`spend::record`], so two reports of one session never
//!   double count), summed per lane, task, agent and plan
//!   ([`spend::sum_by`]); [`spend::check_budget`] against `swarm.budget`
//!   (`2M tokens`, `50 USD`) answers under or reached.
//!
//! Thresholds are the kit's: low at 25 % and critical at 10 % of the free
//! share of the binding window (`AGENTKIT_CAPACITY_LOW`,
//! `AGENTKIT_CAPACITY_CRITICAL`); `AGENTKIT_CAPACITY_CAP=@<profile>=8`
//! lowers a reading of that account to at most 8 % free and never raises
//! one. A file that cannot be read is no reading; one that cannot be
//! written is not an error (the next check asks again).

pub mod source;
pub mod spend;
pub mod transcript;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::store::Store;

/// How long a reading is used before a source is asked again.
pub const CACHE_SECS: i64 = 300;
/// The default thresholds, in percent free of the binding window.
pub const LOW: f64 = 25.0;
pub const CRITICAL: f64 = 10.0;
/// The default context-pressure threshold (`swarm.freshContext`), percent used.
pub const FRESH_CONTEXT: f64 = 60.0;

/// A capacity state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Ok,
    Low,
    Critical,
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Low => "low",
            State::Critical => "critical",
            State::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> Option<State> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ok" | "green" | "allowed" => Some(State::Ok),
            "low" | "warning" | "warn" | "yellow" | "allowed_warning" => Some(State::Low),
            "critical" | "red" | "exhausted" | "rejected" => Some(State::Critical),
            "unknown" => Some(State::Unknown),
            _ => None,
        }
    }
}

/// Whose reading: the agent's swarm address and the account it runs on
/// (the runner sets `GIT_SWARM_ACCOUNT`; None: the host's default login).
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    pub address: &'a str,
    pub account: Option<&'a str>,
}

impl<'a> Who<'a> {
    /// `address` on the account named by `GIT_SWARM_ACCOUNT`, if any.
    pub fn of(address: &'a str, account: Option<&'a str>) -> Who<'a> {
        Who { address, account }
    }
}

/// The account named in the environment (`GIT_SWARM_ACCOUNT`).
pub fn account_from_env() -> Option<String> {
    std::env::var("GIT_SWARM_ACCOUNT")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// One capacity reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub state: State,
    /// Percent free of the binding window (0–100), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_free: Option<f64>,
    /// The binding window (`five_hour`, `seven_day`, `5h`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// When the binding window resets (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// The account (`@work1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// Where it came from: `command`, `claude-statusline`, `stream`,
    /// `headers`, or `none`.
    pub source: String,
    /// The context fill the host reported with it (percent used), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_used: Option<f64>,
    /// When it was read (RFC 3339).
    #[serde(default)]
    pub at: String,
}

impl Reading {
    /// No source answered.
    pub fn unknown(account: Option<&str>, at: String) -> Reading {
        Reading {
            state: State::Unknown,
            percent_free: None,
            window: None,
            resets_at: None,
            account: account.map(at_account),
            source: "none".into(),
            context_used: None,
            at,
        }
    }

    /// The report's capacity line (without `capacity=`): `ok 64% @work1`.
    pub fn line(&self) -> String {
        let mut out = self.state.as_str().to_string();
        if let Some(p) = self.percent_free {
            out.push_str(&format!(" {}%", p.round() as i64));
        }
        if let Some(a) = &self.account {
            out.push_str(&format!(" {}", at_account(a)));
        }
        out
    }
}

/// `work1` or `@work1` → `@work1`.
pub fn at_account(a: &str) -> String {
    if a.starts_with('@') {
        a.to_string()
    } else {
        format!("@{a}")
    }
}

/// The thresholds in force (percent free): the kit's variables or 25/10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub low: f64,
    pub critical: f64,
}

impl Thresholds {
    pub fn from_env() -> Thresholds {
        let num = |k: &str, d: f64| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().trim_end_matches('%').parse::<f64>().ok())
                .filter(|v| (0.0..=100.0).contains(v))
                .unwrap_or(d)
        };
        Thresholds {
            low: num("AGENTKIT_CAPACITY_LOW", LOW),
            critical: num("AGENTKIT_CAPACITY_CRITICAL", CRITICAL),
        }
    }

    /// The state of `percent_free`.
    pub fn state(&self, percent_free: f64) -> State {
        if percent_free <= self.critical {
            State::Critical
        } else if percent_free <= self.low {
            State::Low
        } else {
            State::Ok
        }
    }
}

/// The cap `AGENTKIT_CAPACITY_CAP` puts on `account` (`@a=8,@b=20`), if any.
pub fn cap_for(spec: &str, account: &str) -> Option<f64> {
    let want = account.trim_start_matches('@');
    spec.split([',', ' ', ';'])
        .filter_map(|part| part.split_once('='))
        .filter(|(who, _)| who.trim().trim_start_matches('@') == want)
        .filter_map(|(_, v)| v.trim().trim_end_matches('%').parse::<f64>().ok())
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))))
}

/// Apply the thresholds and the cap to a reading: the state follows the
/// percentage when there is one (a cap only ever lowers it); a stated
/// state is kept when there is none. A cap never makes an unknown reading
/// known.
pub fn settle(mut r: Reading, t: Thresholds, cap: Option<&str>) -> Reading {
    if let (Some(p), Some(spec), Some(a)) = (r.percent_free, cap, r.account.as_deref()) {
        if let Some(c) = cap_for(spec, a) {
            r.percent_free = Some(p.min(c));
        }
    }
    if let Some(p) = r.percent_free {
        let by_percent = t.state(p);
        // A source that says worse than its percentage (a rejected window)
        // keeps the worse state.
        r.state = match (r.state, by_percent) {
            (State::Critical, _) => State::Critical,
            (State::Low, State::Ok) => State::Low,
            (_, s) => s,
        };
    }
    r
}

/// What the agent does at a task boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action", content = "reason")]
pub enum Action {
    /// Go on (ok, or unknown: unknown never triggers).
    Go,
    /// Low: finish the current step, hand off at the next boundary.
    FinishStep,
    /// Write the packet now and stop, with this reason
    /// (`capacity_critical` or `context_pressure`).
    HandOff(&'static str),
}

/// A reading judged at a boundary.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub reading: Reading,
    /// Percent of the context window used, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_used: Option<f64>,
    pub action: Action,
}

/// Judge a reading (and the context fill, percent used) against the
/// thresholds: critical or context ≥ `fresh_context` → hand off now; low →
/// finish the step; ok or unknown → go on.
pub fn verdict(reading: &Reading, context_used: Option<f64>, fresh_context: f64) -> Verdict {
    let context_used = context_used.or(reading.context_used);
    let action = if reading.state == State::Critical {
        Action::HandOff("capacity_critical")
    } else if context_used.is_some_and(|c| c >= fresh_context) {
        Action::HandOff("context_pressure")
    } else if reading.state == State::Low {
        Action::FinishStep
    } else {
        Action::Go
    };
    Verdict {
        reading: reading.clone(),
        context_used,
        action,
    }
}

/// `swarm.freshContext` (percent, default 60).
pub fn fresh_context(store: &Store) -> f64 {
    store
        .config("swarm.freshContext")
        .and_then(|v| v.trim().trim_end_matches('%').trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0 && *v <= 100.0)
        .unwrap_or(FRESH_CONTEXT)
}

/// A host's own figures, to be recorded with [`note`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// `claude-statusline`, `stream`, `headers`, …
    pub source: String,
    /// Each window's percent used and reset.
    pub windows: Vec<Window>,
    /// The host's own status for the account (allowed, allowed_warning,
    /// rejected), when it gave no percentage.
    pub status: Option<State>,
    pub resets_at: Option<String>,
    /// Percent of the context window used.
    pub context_used: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub name: String,
    pub used_percent: f64,
    pub resets_at: Option<String>,
}

impl Figures {
    /// The reading these figures give: the binding window is the one with
    /// the least left; no window and no status → unknown.
    pub fn reading(&self, account: Option<&str>, at: String) -> Reading {
        let mut r = Reading::unknown(account, at);
        r.source = self.source.clone();
        r.context_used = self.context_used;
        let binding = self
            .windows
            .iter()
            .max_by(|a, b| a.used_percent.total_cmp(&b.used_percent));
        if let Some(w) = binding {
            r.percent_free = Some((100.0 - w.used_percent).clamp(0.0, 100.0));
            r.window = Some(w.name.clone());
            r.resets_at = w.resets_at.clone();
            r.state = State::Ok;
        }
        if let Some(s) = self.status {
            if r.percent_free.is_none() || s == State::Critical {
                r.state = s;
            }
            if r.resets_at.is_none() {
                r.resets_at = self.resets_at.clone();
            }
        }
        r
    }
}

fn dir(store: &Store) -> PathBuf {
    store.common_dir().join("swarm").join("capacity")
}

/// A file name from any text: safe characters only.
pub(crate) fn safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

fn cache_path(store: &Store, who: &Who) -> PathBuf {
    let account = who
        .account
        .map(|a| a.trim_start_matches('@'))
        .unwrap_or("default");
    dir(store).join(format!("{}@{}.json", safe(who.address), safe(account)))
}

pub(crate) fn write_file(path: &std::path::Path, text: &str) {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// The cached reading for `who`, however old (None when there is none).
pub fn cached(store: &Store, who: &Who) -> Option<Reading> {
    let text = std::fs::read_to_string(cache_path(store, who)).ok()?;
    serde_json::from_str(&text).ok()
}

fn age_secs(store: &Store, r: &Reading) -> Option<i64> {
    let at: jiff::Timestamp = r.at.parse().ok()?;
    Some(store.clock.now().duration_since(at).as_secs())
}

fn fresh(store: &Store, r: &Reading) -> bool {
    age_secs(store, r).is_some_and(|a| (0..CACHE_SECS).contains(&a))
}

fn keep(store: &Store, who: &Who, r: &Reading) {
    if let Ok(text) = serde_json::to_string(r) {
        write_file(&cache_path(store, who), &format!("{text}\n"));
    }
}

fn now(store: &Store) -> String {
    crate::clock::rfc3339(store.clock.now())
}

/// The reading for `who`: the cache while fresh, else the capacity
/// command, else the host's figures [`note`]d while fresh, else unknown.
/// The thresholds and the cap of the environment are applied.
pub fn read(store: &Store, who: &Who) -> Reading {
    let t = Thresholds::from_env();
    let cap = std::env::var("AGENTKIT_CAPACITY_CAP").ok();
    let cached = cached(store, who);
    if let Some(r) = cached.as_ref().filter(|r| fresh(store, r)) {
        return settle(r.clone(), t, cap.as_deref());
    }
    let at = now(store);
    if let Some(mut r) = source::command(store).and_then(|out| source::parse_kit(&out, &at)) {
        if r.account.is_none() {
            r.account = who.account.map(at_account);
        }
        let r = settle(r, t, cap.as_deref());
        keep(store, who, &r);
        return r;
    }
    // A host reading past its age says nothing now.
    Reading::unknown(who.account, at)
}

/// Record a reading from a host's figures for `who` (it is what [`read`]
/// answers for the next [`CACHE_SECS`] unless a capacity command answers
/// first once the cache is stale).
pub fn note(store: &Store, who: &Who, figures: &Figures) -> Reading {
    let t = Thresholds::from_env();
    let cap = std::env::var("AGENTKIT_CAPACITY_CAP").ok();
    let r = settle(figures.reading(who.account, now(store)), t, cap.as_deref());
    keep(store, who, &r);
    r
}

#[cfg(test)]
mod tests;
