//! Where a reading comes from: the capacity command and its JSON, and the
//! hosts' own figures (Claude Code's status line input, a headless
//! `rate_limit_event`, the `anthropic-ratelimit-unified-*` headers).
//!
//! The capacity command is `swarm.capacityCommand` (run with `sh -c`), by
//! default `ak capacity --self --json` when `ak` is on `PATH`; it has
//! [`COMMAND_SECS`] to answer. Anything else than a JSON object on stdout
//! with exit 0 (an older kit without `--json`, a failure, a timeout) is no
//! answer: the next source is asked. The JSON read ([`parse_kit`]) is one
//! object (or its `self` member, or the first of its `accounts`):
//!
//! ```json
//! {"state": "ok", "percent_free": 64, "window": "five_hour",
//!  "resets_at": "2026-01-01T17:00:00Z", "account": "@work1"}
//! ```
//!
//! - `state`: `ok`, `low`, `critical` or `unknown` (also read from
//!   `status`, `verdict` or `level`);
//! - `percent_free`: percent free of the binding window, 0–100 (also
//!   `free_percent`, `percent_remaining`, `remaining_percent`,
//!   `headroom`; or `percent_used`/`used_percent`, read as 100 − used);
//! - `window`: the binding window (also `binding_window`, `binding`);
//! - `resets_at`: RFC 3339 or Unix seconds (also `reset_at`, `resetsAt`);
//! - `account`: the account or profile (also `profile`).
//!
//! With a percentage the state is recomputed from the thresholds (a
//! stated `critical` is kept); without one the stated state is used.
//! Any other tool can be adapted with a one-line wrapper printing this.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::store::Store;

use super::{Figures, Reading, State, Window};

/// How long the capacity command may take.
pub const COMMAND_SECS: u64 = 10;

/// The capacity command in force: `swarm.capacityCommand`, else `ak
/// capacity --self --json` when `ak` is on `PATH`; None when neither (or
/// `swarm.capacityCommand` is `off`).
pub fn command_line(store: &Store) -> Option<String> {
    if let Some(c) = store.config("swarm.capacityCommand") {
        let c = c.trim().to_string();
        return (!c.is_empty() && !["off", "none", "false"].contains(&c.as_str())).then_some(c);
    }
    on_path("ak").then(|| "ak capacity --self --json".to_string())
}

/// Whether `name` is an executable file in a `PATH` directory.
pub fn on_path(name: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|d| is_executable(&d.join(name)))
}

/// Whether `p` is an executable file.
pub fn is_executable(p: &std::path::Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    })
}

/// Run the capacity command; its stdout when it exited 0 in time.
pub fn command(store: &Store) -> Option<String> {
    let line = command_line(store)?;
    let mut child = Command::new("sh")
        .args(["-c", &line])
        .current_dir(store.workdir().unwrap_or(&store.common_dir()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let deadline = Instant::now() + Duration::from_secs(COMMAND_SECS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let out = reader.join().ok()?;
    status.success().then_some(out)
}

fn first<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| v.get(*k)).filter(|v| !v.is_null())
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse().ok(),
        _ => None,
    }
    .filter(|n: &f64| n.is_finite())
}

/// A reset time as RFC 3339: a string as given, Unix seconds converted.
pub fn reset_time(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.trim().parse::<i64>().is_err() => Some(s.trim().to_string()),
        other => {
            let secs = number(other)? as i64;
            jiff::Timestamp::from_second(secs)
                .ok()
                .map(crate::clock::rfc3339)
        }
    }
}

/// Read the kit's JSON (see the module's documentation); None when it is
/// no reading (not JSON, no object, neither a state nor a percentage).
pub fn parse_kit(text: &str, at: &str) -> Option<Reading> {
    let v: Value = serde_json::from_str(text.trim()).ok()?;
    let v = match (&v.get("self"), v.get("accounts").and_then(Value::as_array)) {
        (Some(s), _) if s.is_object() => (*s).clone(),
        (_, Some(a)) if v.get("state").is_none_or(|s| s.is_null()) => a.first()?.clone(),
        _ => v,
    };
    if !v.is_object() {
        return None;
    }
    let state = first(&v, &["state", "status", "verdict", "level"])
        .and_then(Value::as_str)
        .and_then(State::parse);
    let free = first(
        &v,
        &[
            "percent_free",
            "free_percent",
            "percent_remaining",
            "remaining_percent",
            "headroom",
        ],
    )
    .and_then(number)
    .or_else(|| {
        first(&v, &["percent_used", "used_percent"])
            .and_then(number)
            .map(|u| 100.0 - u)
    })
    .map(|p| p.clamp(0.0, 100.0));
    if state.is_none() && free.is_none() {
        return None;
    }
    let text_of = |keys: &[&str]| first(&v, keys).and_then(Value::as_str).map(str::to_string);
    Some(Reading {
        state: state.unwrap_or(State::Unknown),
        percent_free: free,
        window: text_of(&["window", "binding_window", "binding"]),
        resets_at: first(&v, &["resets_at", "reset_at", "resetsAt"]).and_then(reset_time),
        account: text_of(&["account", "profile"]).map(|a| super::at_account(&a)),
        source: "command".into(),
        context_used: None,
        at: at.to_string(),
    })
}

impl Figures {
    /// Claude Code's status line input: `rate_limits.five_hour` and
    /// `.seven_day` (`used_percentage`, `resets_at` in Unix seconds; on
    /// subscriptions only) and `context_window.used_percentage`.
    pub fn from_status_line(v: &Value) -> Figures {
        let mut f = Figures {
            source: "claude-statusline".into(),
            ..Figures::default()
        };
        if let Some(limits) = v.get("rate_limits").and_then(Value::as_object) {
            for (name, w) in limits {
                if let Some(used) = w.get("used_percentage").and_then(number) {
                    f.windows.push(Window {
                        name: name.clone(),
                        used_percent: used,
                        resets_at: w.get("resets_at").and_then(reset_time),
                    });
                }
            }
        }
        f.context_used = v
            .pointer("/context_window/used_percentage")
            .and_then(number);
        f
    }

    /// A headless stream's `rate_limit_event` (Claude Code `-p
    /// --output-format stream-json`): `rate_limit_info.status` (allowed,
    /// allowed_warning, rejected), `resetsAt`, and where present
    /// `utilization` (0–1) of `rateLimitType` and `unifiedWindows`.
    pub fn from_stream_event(v: &Value) -> Figures {
        let info = v.get("rate_limit_info").unwrap_or(v);
        let mut f = Figures {
            source: "stream".into(),
            ..Figures::default()
        };
        let pct = |u: f64| if u <= 1.0 { u * 100.0 } else { u };
        if let Some(ws) = info.get("unifiedWindows").and_then(Value::as_object) {
            for (name, w) in ws {
                if let Some(u) = w.get("utilization").and_then(number) {
                    f.windows.push(Window {
                        name: name.clone(),
                        used_percent: pct(u),
                        resets_at: w.get("resetsAt").and_then(reset_time),
                    });
                }
            }
        }
        if f.windows.is_empty() {
            if let Some(u) = info.get("utilization").and_then(number) {
                f.windows.push(Window {
                    name: info
                        .get("rateLimitType")
                        .and_then(Value::as_str)
                        .unwrap_or("five_hour")
                        .to_string(),
                    used_percent: pct(u),
                    resets_at: info.get("resetsAt").and_then(reset_time),
                });
            }
        }
        f.status = info
            .get("status")
            .and_then(Value::as_str)
            .and_then(|s| match s {
                "allowed_warning" => Some(State::Low),
                "rejected" => Some(State::Critical),
                // Allowed says nothing of the margin.
                _ => None,
            });
        f.resets_at = info.get("resetsAt").and_then(reset_time);
        f
    }

    /// The API's `anthropic-ratelimit-unified-{5h,7d}-utilization` (0–1)
    /// and `-reset` (Unix seconds) response headers, as (name, value).
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Figures {
        let mut f = Figures {
            source: "headers".into(),
            ..Figures::default()
        };
        let headers: Vec<(String, &str)> = headers
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let get = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        for (short, name) in [("5h", "five_hour"), ("7d", "seven_day")] {
            let Some(u) = get(&format!("anthropic-ratelimit-unified-{short}-utilization"))
                .and_then(|v| v.trim().parse::<f64>().ok())
            else {
                continue;
            };
            f.windows.push(Window {
                name: name.into(),
                used_percent: if u <= 1.0 { u * 100.0 } else { u },
                resets_at: get(&format!("anthropic-ratelimit-unified-{short}-reset"))
                    .and_then(|v| reset_time(&Value::String(v.to_string()))),
            });
        }
        f
    }
}
