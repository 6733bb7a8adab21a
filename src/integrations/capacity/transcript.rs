//! A host's transcript (`transcript_path`, given to every hook): Claude
//! Code writes one JSON object a line; each assistant message carries
//! `message.usage` (`input_tokens`, `cache_read_input_tokens`,
//! `cache_creation_input_tokens`, `output_tokens`). A streamed message is
//! written once per content block with the same id: each id counts once
//! (its last line). The session's spend is the sum over its messages;
//! the context fill is the last message's input (fresh, cache read and
//! cache write) against the model's window.

use std::collections::BTreeMap;

use serde_json::Value;

use super::spend::Tokens;

/// The context window assumed for a model: `swarm.contextWindow` when
/// set, 1,000,000 for a `[1m]` model, else 200,000.
pub const DEFAULT_WINDOW: u64 = 200_000;

/// What a transcript says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// The session's total (each message once).
    pub tokens: Tokens,
    /// The last assistant message's input side (what fills the context).
    pub last_input: u64,
    pub model: Option<String>,
    /// Cost the host wrote into the transcript (`costUSD`), summed, if any.
    pub cost_usd: Option<f64>,
    /// The last turn written is an assistant message that ended its turn
    /// (the host may still be writing the newest one when a hook runs).
    pub settled: bool,
    /// How many user and assistant turns the file holds (none: not a
    /// transcript in this format, nothing to wait for).
    pub turns: usize,
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// Read the transcript's text.
pub fn parse(text: &str) -> Usage {
    let mut by_id: BTreeMap<String, (usize, Tokens, Option<f64>)> = BTreeMap::new();
    let mut last: Option<(usize, u64)> = None;
    let mut model = None;
    let mut settled = false;
    let mut turns = 0;
    for (i, line) in text.lines().enumerate() {
        let turn = line.contains("\"type\":\"user\"") || line.contains("\"type\":\"assistant\"");
        if !turn {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        turns += 1;
        match v.get("type").and_then(Value::as_str) {
            Some("user") => {
                settled = false;
                continue;
            }
            Some("assistant") => {}
            _ => continue,
        }
        settled = v
            .pointer("/message/stop_reason")
            .and_then(Value::as_str)
            .is_none_or(|r| r != "tool_use");
        let Some(msg) = v.get("message") else {
            continue;
        };
        let Some(u) = msg.get("usage") else { continue };
        let t = Tokens {
            input: n(u, "input_tokens"),
            cache_read: n(u, "cache_read_input_tokens"),
            cache_write: n(u, "cache_creation_input_tokens"),
            output: n(u, "output_tokens"),
        };
        let id = msg
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| v.get("uuid").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| format!("line{i}"));
        if let Some(m) = msg.get("model").and_then(Value::as_str) {
            model = Some(m.to_string());
        }
        let cost = v.get("costUSD").and_then(Value::as_f64);
        last = Some((i, t.input + t.cache_read + t.cache_write));
        by_id.insert(id, (i, t, cost));
    }
    let mut out = Usage {
        settled,
        turns,
        model,
        last_input: last.map_or(0, |(_, x)| x),
        ..Usage::default()
    };
    for (_, t, c) in by_id.values() {
        out.tokens.add(t);
        if let Some(c) = c {
            *out.cost_usd.get_or_insert(0.0) += c;
        }
    }
    out
}

/// Read the transcript at `path` (None when it cannot be read).
pub fn read(path: &std::path::Path) -> Option<Usage> {
    std::fs::read_to_string(path).ok().map(|t| parse(&t))
}

/// [`read`], waiting up to `patience` (polling every 25 ms) while the
/// the file is missing or its last turn is not a finished assistant
/// message: a host may run its stop hook before it has written the
/// message that ended the turn.
pub fn read_settled(path: &std::path::Path, patience: std::time::Duration) -> Option<Usage> {
    let deadline = std::time::Instant::now() + patience;
    // The host may not have created the file yet when its hook runs.
    loop {
        let u = read(path);
        let late = std::time::Instant::now() >= deadline;
        match u {
            Some(u) if u.settled || u.turns == 0 || late => return Some(u),
            None if late => return None,
            _ => std::thread::sleep(std::time::Duration::from_millis(25)),
        }
    }
}

/// The window of `model` (`window` overrides).
pub fn window_of(model: Option<&str>, window: Option<u64>) -> u64 {
    window.filter(|w| *w > 0).unwrap_or_else(|| {
        if model.is_some_and(|m| m.contains("[1m]") || m.ends_with("-1m")) {
            1_000_000
        } else {
            DEFAULT_WINDOW
        }
    })
}

impl Usage {
    /// Percent of the context window used, None when no message had usage.
    pub fn context_used(&self, window: Option<u64>) -> Option<f64> {
        if self.last_input == 0 {
            return None;
        }
        let w = window_of(self.model.as_deref(), window) as f64;
        Some((self.last_input as f64 * 100.0 / w).min(100.0))
    }
}
