//! The agent hosts the runner launches headless, one small adapter each
//! (Claude Code, Codex, Gemini CLI): the command line, and the host's event
//! stream read into one [`Event`] type.
//!
//! The command line starts with `swarm.host.<host>.command` (default
//! `claude`, `codex`, `gemini`): the executable and the developer's own
//! arguments, e.g. `claude --allowedTools Bash` — the permissions an agent
//! runs with are chosen there, never answered at run time. The adapter
//! appends what it needs: the brief, the output format, the session to
//! resume. The process inherits the runner's environment plus the
//! account's `--env` values (the runner sets those).
//!
//! An adapter never answers anything: a stream that shows the host waiting
//! for a person (a permission, a login, a consent or a payment) becomes
//! [`Event::AwaitingHuman`] with its class, and the runner reports the lane
//! blocked.

pub mod claude;
pub mod codex;
pub mod gemini;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Code, Error, Result};

/// The hosts git-swarm launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Claude,
    Codex,
    Gemini,
}

impl Host {
    pub fn parse(name: &str) -> Option<Host> {
        match name {
            "claude" => Some(Host::Claude),
            "codex" => Some(Host::Codex),
            "gemini" => Some(Host::Gemini),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Host::Claude => "claude",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
        }
    }
    /// The git config key naming its command line.
    pub fn setting(self) -> String {
        format!("swarm.host.{}.command", self.as_str())
    }
}

/// Tokens (and cost where the host says it) a host process reported, as
/// totals for that process so far (a later report replaces an earlier one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What a host waits for a person to do; the runner never does it.
pub const HUMAN_CLASSES: [&str; 4] = ["permission", "login", "consent", "payment"];

/// One thing a host's stream said, in the runner's terms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The host's session id (for `--resume` and for spend records).
    Session { id: String },
    /// The process's totals so far.
    Usage(Usage),
    /// A rate-limit report: `allowed`, `allowed_warning`, `rejected`;
    /// `resets_at` in seconds since the epoch.
    RateLimit {
        status: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        resets_at: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        window: Option<String>,
    },
    /// A turn ended (`ok` false: with an error).
    TurnEnd { ok: bool },
    /// The host reported a failure (the API's or its own).
    Error { message: String },
    /// The host waits for a person: `class` is one of [`HUMAN_CLASSES`].
    AwaitingHuman { class: String, what: String },
}

impl Event {
    /// Its name, as `last_event` records it.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Session { .. } => "session",
            Event::Usage(_) => "usage",
            Event::RateLimit { .. } => "rate_limit",
            Event::TurnEnd { .. } => "turn_end",
            Event::Error { .. } => "error",
            Event::AwaitingHuman { .. } => "awaiting_human",
        }
    }
}

/// Everything one host process said, folded ([`Summary::apply`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub session: Option<String>,
    pub usage: Usage,
    pub last_event: Option<String>,
    pub turns: u32,
    /// The last rate-limit report: (status, resets_at).
    pub rate_limit: Option<(String, Option<i64>)>,
    pub error: Option<String>,
    /// The first wait for a person: (class, what).
    pub awaiting_human: Option<(String, String)>,
}

impl Summary {
    pub fn apply(&mut self, e: &Event) {
        self.last_event = Some(e.name().to_string());
        match e {
            Event::Session { id } => self.session = Some(id.clone()),
            Event::Usage(u) => self.usage = *u,
            Event::RateLimit {
                status, resets_at, ..
            } => self.rate_limit = Some((status.clone(), *resets_at)),
            Event::TurnEnd { .. } => self.turns += 1,
            Event::Error { message } => self.error = Some(message.clone()),
            Event::AwaitingHuman { class, what } => {
                if self.awaiting_human.is_none() {
                    self.awaiting_human = Some((class.clone(), what.clone()));
                }
            }
        }
    }
    /// A usage limit stopped it (a `rejected` rate-limit report).
    pub fn limited(&self) -> bool {
        self.rate_limit
            .as_ref()
            .is_some_and(|(s, _)| s == "rejected")
    }
}

/// The command line: `base` (the setting, split as a shell would) plus
/// what the host needs for `brief`, resuming `resume` when given.
pub fn command(host: Host, base: &str, brief: &str, resume: Option<&str>) -> Result<Vec<String>> {
    let words = shlex::split(base)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            Error::new(
                Code::ConfigInvalid,
                format!("{} '{base}' is not a command line", host.setting()),
            )
            .hint(format!(
                "set it to the executable and your own arguments, e.g. `git config {} \"{} …\"`",
                host.setting(),
                host.as_str()
            ))
        })?;
    Ok(match host {
        Host::Claude => claude::command(words, brief, resume),
        Host::Codex => codex::command(words, brief, resume),
        Host::Gemini => gemini::command(words, brief, resume),
    })
}

/// The events of one line of the host's stream (none for a line that is
/// not JSON or says nothing the runner uses).
pub fn parse_line(host: Host, line: &str) -> Vec<Event> {
    let Ok(v) = serde_json::from_str::<Value>(line.trim()) else {
        return Vec::new();
    };
    match host {
        Host::Claude => claude::events(&v),
        Host::Codex => codex::events(&v),
        Host::Gemini => gemini::events(&v),
    }
}

/// A whole stream, folded.
pub fn summarize(host: Host, stream: &str) -> Summary {
    let mut s = Summary::default();
    for line in stream.lines() {
        for e in parse_line(host, line) {
            s.apply(&e);
        }
    }
    s
}

/// The person a text says the host waits for, if it says so: a permission
/// or approval prompt, a login, a consent (trust, terms) or a payment.
pub fn human_class(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| t.contains(w));
    if any(&[
        "credit balance is too low",
        "billing",
        "payment required",
        "add funds",
        "purchase credits",
        "insufficient_quota",
    ]) {
        Some("payment")
    } else if any(&[
        "/login",
        "please log in",
        "please login",
        "not logged in",
        "invalid api key",
        "authentication_error",
        "codex login",
        "set an auth method",
        "unauthorized",
        "oauth token has expired",
    ]) {
        Some("login")
    } else if any(&[
        "do you trust",
        "trust this folder",
        "accept the terms",
        "terms of service",
        "consent",
    ]) {
        Some("consent")
    } else if any(&[
        "requires approval",
        "permission to use",
        "haven't granted",
        "approval required",
        "waiting for approval",
    ]) {
        Some("permission")
    } else {
        None
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

#[cfg(test)]
mod tests;
