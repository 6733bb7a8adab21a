//! Gemini CLI headless: `gemini … -p <brief> --output-format stream-json
//! [--resume <session>]`. Its stream: `init` (`session_id`), `message`,
//! `tool_use`/`tool_result`, and `result` (`status` success or error,
//! `error.message`, `stats` with the tokens of the process). Gemini CLI
//! reports no cost.

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
    ]);
    words
}

pub fn events(v: &Value) -> Vec<Event> {
    let mut out = Vec::new();
    match v["type"].as_str().unwrap_or("") {
        "init" => {
            if let Some(id) = v["session_id"].as_str() {
                out.push(Event::Session { id: id.into() });
            }
        }
        "tool_result" if v["status"] == "error" => {
            let msg = v["error"]["message"].as_str().unwrap_or("");
            if let Some(class) = human_class(msg) {
                out.push(Event::AwaitingHuman {
                    class: class.into(),
                    what: msg.chars().take(200).collect(),
                });
            }
        }
        "result" => {
            let st = &v["stats"];
            out.push(Event::Usage(Usage {
                input_tokens: u(&st["input_tokens"]),
                cache_read_tokens: u(&st["cached"]),
                cache_write_tokens: 0,
                output_tokens: u(&st["output_tokens"]),
                cost_usd: None,
            }));
            let ok = v["status"] == "success";
            if !ok {
                let msg = v["error"]["message"]
                    .as_str()
                    .unwrap_or("the session failed")
                    .to_string();
                if let Some(class) = human_class(&msg) {
                    out.push(Event::AwaitingHuman {
                        class: class.into(),
                        what: msg.chars().take(200).collect(),
                    });
                }
                if msg.contains("429") || msg.contains("RESOURCE_EXHAUSTED") {
                    out.push(Event::RateLimit {
                        status: "rejected".into(),
                        resets_at: None,
                        window: None,
                    });
                }
                out.push(Event::Error { message: msg });
            }
            out.push(Event::TurnEnd { ok });
        }
        _ => {}
    }
    out
}
