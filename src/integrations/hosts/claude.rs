//! Claude Code headless: `claude … -p <brief> --output-format stream-json
//! --verbose [--resume <session>]`. Its stream: `system`/`init` (the
//! session id), `assistant` and `user` messages (a tool result saying a
//! command "requires approval" is a permission nobody will answer in `-p`
//! mode), `rate_limit_event` (`rate_limit_info.status`, `resetsAt` in
//! seconds), and a closing `result` (usage and `total_cost_usd`, totals of
//! the process; `is_error`, `permission_denials`).

use serde_json::Value;

use super::{human_class, u, Event, Usage};

pub fn command(mut words: Vec<String>, brief: &str, resume: Option<&str>) -> Vec<String> {
    if let Some(id) = resume {
        words.extend(["--resume".into(), id.into()]);
    }
    words.extend([
        "-p".into(),
        brief.into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
    ]);
    words
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match &b["content"] {
                Value::Null => b["text"].as_str().unwrap_or("").to_string(),
                inner => text_of(inner),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

pub fn events(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v["type"].as_str().unwrap_or("") {
        "system" if v["subtype"] == "init" => {
            if let Some(id) = v["session_id"].as_str() {
                out.push(Event::Session { id: id.into() });
            }
        }
        "rate_limit_event" => {
            let info = &v["rate_limit_info"];
            out.push(Event::RateLimit {
                status: info["status"].as_str().unwrap_or("unknown").into(),
                resets_at: info["resetsAt"].as_i64(),
                window: info["rateLimitType"].as_str().map(String::from),
            });
        }
        "user" => {
            let text = text_of(&v["message"]["content"]);
            if let Some(class) = human_class(&text) {
                out.push(Event::AwaitingHuman {
                    class: class.into(),
                    what: first_line(&text),
                });
            }
        }
        "assistant" if v["error"].is_string() => {
            let text = text_of(&v["message"]["content"]);
            if let Some(class) = human_class(&text) {
                out.push(Event::AwaitingHuman {
                    class: class.into(),
                    what: first_line(&text),
                });
            }
        }
        "result" => {
            if let Some(id) = v["session_id"].as_str() {
                out.push(Event::Session { id: id.into() });
            }
            let us = &v["usage"];
            out.push(Event::Usage(Usage {
                input_tokens: u(&us["input_tokens"]),
                cache_read_tokens: u(&us["cache_read_input_tokens"]),
                cache_write_tokens: u(&us["cache_creation_input_tokens"]),
                output_tokens: u(&us["output_tokens"]),
                cost_usd: v["total_cost_usd"].as_f64(),
            }));
            if let Some(d) = v["permission_denials"].as_array().filter(|d| !d.is_empty()) {
                let tools: Vec<&str> = d.iter().filter_map(|x| x["tool_name"].as_str()).collect();
                out.push(Event::AwaitingHuman {
                    class: "permission".into(),
                    what: format!("permission denied for {}", tools.join(", ")),
                });
            }
            let failed = v["is_error"].as_bool().unwrap_or(false);
            if failed {
                let msg = v["result"]
                    .as_str()
                    .unwrap_or("the session failed")
                    .to_string();
                if let Some(class) = human_class(&msg) {
                    out.push(Event::AwaitingHuman {
                        class: class.into(),
                        what: first_line(&msg),
                    });
                }
                out.push(Event::Error { message: msg });
            }
            out.push(Event::TurnEnd { ok: !failed });
        }
        _ => {}
    }
    out
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(200).collect()
}
