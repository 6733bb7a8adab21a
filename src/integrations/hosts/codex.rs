//! Codex headless: `codex exec … --json <brief>`, resumed with `codex exec
//! … --json resume <session> <brief>`. Its stream: `thread.started`
//! (`thread_id`, the session), `item.*` (commands, file changes, the
//! reply; an `error` item is a warning), `turn.completed` (`usage`),
//! `turn.failed` and `error` (`message`). Codex reports no cost.

use serde_json::Value;

use super::{human_class, u, Event, Usage};

pub fn command(mut words: Vec<String>, brief: &str, resume: Option<&str>) -> Vec<String> {
    // The developer's arguments go after `exec` (its options: `-s`, `-m`, …).
    let exe = if words.is_empty() {
        "codex".to_string()
    } else {
        words.remove(0)
    };
    let mut out = vec![exe, "exec".into()];
    out.extend(words);
    out.push("--json".into());
    if let Some(id) = resume {
        out.extend(["resume".into(), id.into()]);
    }
    out.push(brief.into());
    out
}

pub fn events(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v["type"].as_str().unwrap_or("") {
        "thread.started" => {
            if let Some(id) = v["thread_id"].as_str() {
                out.push(Event::Session { id: id.into() });
            }
        }
        "turn.completed" => {
            let us = &v["usage"];
            out.push(Event::Usage(Usage {
                input_tokens: u(&us["input_tokens"]),
                cache_read_tokens: u(&us["cached_input_tokens"]),
                cache_write_tokens: u(&us["cache_write_input_tokens"]),
                output_tokens: u(&us["output_tokens"]) + u(&us["reasoning_output_tokens"]),
                cost_usd: None,
            }));
            out.push(Event::TurnEnd { ok: true });
        }
        "turn.failed" => {
            let msg = v["error"]["message"].as_str().unwrap_or("the turn failed");
            human(msg, &mut out);
            if msg.contains("usage_limit") || msg.contains("rate_limit") || msg.contains("429") {
                out.push(Event::RateLimit {
                    status: "rejected".into(),
                    resets_at: None,
                    window: None,
                });
            }
            out.push(Event::Error {
                message: msg.into(),
            });
            out.push(Event::TurnEnd { ok: false });
        }
        "error" => {
            if let Some(msg) = v["message"].as_str() {
                human(msg, &mut out);
            }
        }
        _ => {}
    }
    out
}

fn human(msg: &str, out: &mut Vec<Event>) {
    if let Some(class) = human_class(msg) {
        out.push(Event::AwaitingHuman {
            class: class.into(),
            what: msg.chars().take(200).collect(),
        });
    }
}
