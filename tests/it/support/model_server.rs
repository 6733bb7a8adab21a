//! Scripted model servers on 127.0.0.1 for the agent-host tests: one per
//! wire format the pinned hosts speak, each answering from a script and
//! recording every request, so a test sees what reached the model (the
//! system prompt, a tool result, the next user turn).
//!
//! - [`Wire::Messages`]: Anthropic's streaming Messages API (`POST
//!   /v1/messages`, server-sent events), for Claude Code;
//! - [`Wire::Responses`]: OpenAI's Responses API stream (`POST
//!   /v1/responses`, server-sent events: `response.created`,
//!   `response.output_item.done`, `response.completed` with usage), for
//!   Codex through a custom `[model_providers.<id>]` with `wire_api =
//!   "responses"`;
//! - [`Wire::Gemini`]: the Gemini API's `streamGenerateContent?alt=sse`
//!   (candidates with text or `functionCall` parts, `usageMetadata`), for
//!   Gemini CLI through `GOOGLE_GEMINI_BASE_URL`. Its one-shot
//!   `generateContent` calls (the CLI's own side questions, such as "who
//!   speaks next") are answered with a fixed JSON text and recorded apart.
//!
//! A script sees each turn request and how many were recorded so far
//! (itself included) and picks the [`Reply`].

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// The wire format a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Messages,
    Responses,
    Gemini,
}

/// What the scripted model answers.
#[derive(Clone, Debug)]
pub enum Reply {
    Text(String),
    /// A tool call: `input` is the tool's arguments. For the Responses API
    /// a string input is a freeform (`custom`) tool call, as Codex's
    /// `apply_patch` is; an object, a function call.
    Tool {
        name: String,
        input: Value,
    },
    /// The API answers with an error (HTTP `status`, the message).
    Error {
        status: u16,
        message: String,
    },
}

pub type Script = dyn Fn(&Value, usize) -> Reply + Send + Sync;

/// A running scripted model.
pub struct Model {
    pub wire: Wire,
    pub url: String,
    /// The turn requests, in order (their JSON bodies).
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Other requests the host made (path and body): Gemini's one-shot
    /// `generateContent`, token counts, anything unknown.
    pub side: Arc<Mutex<Vec<(String, Value)>>>,
    server: Arc<tiny_http::Server>,
}

impl Drop for Model {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

impl Model {
    /// The recorded turn requests so far.
    pub fn turns(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// Everything the model was sent in its turns, as text.
    pub fn all_text(&self) -> String {
        self.turns()
            .iter()
            .map(|r| request_text(self.wire, r))
            .collect::<Vec<_>>()
            .join("\n=====\n")
    }

    /// The newest input of each turn request, as text.
    pub fn last_texts(&self) -> Vec<String> {
        self.turns()
            .iter()
            .map(|r| last_text(self.wire, r))
            .collect()
    }
}

/// Start a server for `wire` answering from `script`.
pub fn serve(wire: Wire, script: Arc<Script>) -> Model {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let port = server.server_addr().to_ip().expect("ip").port();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let side = Arc::new(Mutex::new(Vec::new()));
    let (srv, recs, others) = (server.clone(), requests.clone(), side.clone());
    std::thread::spawn(move || {
        for mut req in srv.incoming_requests() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let url = req.url().to_string();
            let turn = match wire {
                Wire::Messages => url.starts_with("/v1/messages") && !url.contains("count_tokens"),
                Wire::Responses => url.ends_with("/responses"),
                Wire::Gemini => url.contains(":streamGenerateContent"),
            };
            if !turn {
                others.lock().unwrap().push((url.clone(), v));
                let text = match wire {
                    Wire::Gemini if url.contains(":generateContent") => json!({
                        "candidates": [{"content": {"role": "model", "parts": [{"text": "{\"next_speaker\": \"user\", \"reasoning\": \"scripted\"}"}]}, "finishReason": "STOP", "index": 0}],
                        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
                    })
                    .to_string(),
                    Wire::Gemini if url.contains(":countTokens") => "{\"totalTokens\": 10}".into(),
                    _ => "{\"input_tokens\": 10}".into(),
                };
                let _ = req.respond(tiny_http::Response::from_string(text).with_header(
                    tiny_http::Header::from_bytes("content-type", "application/json").unwrap(),
                ));
                continue;
            }
            let n = {
                let mut r = recs.lock().unwrap();
                r.push(v.clone());
                r.len()
            };
            let reply = script(&v, n);
            if let Reply::Error { status, message } = &reply {
                let body = match wire {
                    Wire::Messages => {
                        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                    }
                    Wire::Responses => {
                        json!({"error": {"type": "invalid_request_error", "code": "invalid_request", "message": message}})
                    }
                    Wire::Gemini => {
                        json!({"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
                    }
                };
                let _ = req.respond(
                    tiny_http::Response::from_string(body.to_string())
                        .with_status_code(*status)
                        .with_header(
                            tiny_http::Header::from_bytes("content-type", "application/json")
                                .unwrap(),
                        ),
                );
                continue;
            }
            let text = match wire {
                Wire::Messages => messages_sse(&reply),
                Wire::Responses => responses_sse(&reply, n),
                Wire::Gemini => gemini_sse(&reply),
            };
            let header =
                tiny_http::Header::from_bytes("content-type", "text/event-stream").unwrap();
            let _ = req.respond(tiny_http::Response::from_string(text).with_header(header));
        }
    });
    let url = match wire {
        // Codex appends `/responses` to the provider's base URL.
        Wire::Responses => format!("http://127.0.0.1:{port}/v1"),
        _ => format!("http://127.0.0.1:{port}"),
    };
    Model {
        wire,
        url,
        requests,
        side,
        server,
    }
}

fn messages_sse(reply: &Reply) -> String {
    let mut out = String::new();
    let mut ev = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let stop = match reply {
        Reply::Tool { name, input } => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_scripted_1", "name": name, "input": {}}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            );
            "tool_use"
        }
        Reply::Text(t) | Reply::Error { message: t, .. } => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
            );
            "end_turn"
        }
    };
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    out
}

/// The Responses API stream of one reply; `n` numbers its ids.
fn responses_sse(reply: &Reply, n: usize) -> String {
    let id = format!("resp_scripted_{n}");
    let item = match reply {
        Reply::Tool {
            name,
            input: Value::String(text),
        } => {
            json!({"type": "custom_tool_call", "id": format!("ctc_{n}"), "status": "completed", "call_id": format!("call_scripted_{n}"), "name": name, "input": text})
        }
        Reply::Tool { name, input } => {
            json!({"type": "function_call", "id": format!("fc_{n}"), "status": "completed", "call_id": format!("call_scripted_{n}"), "name": name, "arguments": input.to_string()})
        }
        Reply::Text(t) | Reply::Error { message: t, .. } => {
            json!({"type": "message", "id": format!("msg_{n}"), "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": t, "annotations": []}]})
        }
    };
    let events = [
        json!({"type": "response.created", "response": {"id": id, "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": id, "status": "completed", "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn gemini_sse(reply: &Reply) -> String {
    let part = match reply {
        Reply::Tool { name, input } => json!({"functionCall": {"name": name, "args": input}}),
        Reply::Text(t) | Reply::Error { message: t, .. } => json!({"text": t}),
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "scripted"
    });
    format!("data: {chunk}\n\n")
}

/// The text of a Messages API content value (blocks joined; a tool
/// result marked `[tool_result]`).
fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("tool_result") => format!("[tool_result] {}", content_text(&b["content"])),
                _ => b["text"].as_str().unwrap_or("").to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of one Responses API input item (a tool's output marked
/// `[tool_result]`).
fn item_text(item: &Value) -> String {
    match item["type"].as_str() {
        Some("function_call_output") | Some("custom_tool_call_output") => {
            let out = match &item["output"] {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|b| b["text"].as_str().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            format!("[tool_result] {out}")
        }
        Some("message") | None => match &item["content"] {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .map(|b| b["text"].as_str().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// The text of one Gemini content (a function response marked
/// `[tool_result]`).
fn gemini_content_text(c: &Value) -> String {
    c["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .map(|p| {
                    if let Some(t) = p["text"].as_str() {
                        t.to_string()
                    } else if p.get("functionResponse").is_some() {
                        format!("[tool_result] {}", p["functionResponse"]["response"])
                    } else {
                        String::new()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Everything one turn request shows the model, as text.
pub fn request_text(wire: Wire, r: &Value) -> String {
    match wire {
        Wire::Messages => {
            let sys = match &r["system"] {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .map(|b| b["text"].as_str().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            let msgs: Vec<String> = r["messages"]
                .as_array()
                .map(|m| m.iter().map(|x| content_text(&x["content"])).collect())
                .unwrap_or_default();
            format!("{sys}\n{}", msgs.join("\n"))
        }
        Wire::Responses => {
            let items: Vec<String> = r["input"]
                .as_array()
                .map(|a| a.iter().map(item_text).collect())
                .unwrap_or_default();
            format!(
                "{}\n{}",
                r["instructions"].as_str().unwrap_or(""),
                items.join("\n")
            )
        }
        Wire::Gemini => {
            let contents: Vec<String> = r["contents"]
                .as_array()
                .map(|a| a.iter().map(gemini_content_text).collect())
                .unwrap_or_default();
            format!(
                "{}\n{}",
                gemini_content_text(&r["systemInstruction"]),
                contents.join("\n")
            )
        }
    }
}

/// The newest input of one turn request (the last message, item or
/// content), as text.
pub fn last_text(wire: Wire, r: &Value) -> String {
    match wire {
        Wire::Messages => r["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| content_text(&m["content"]))
            .unwrap_or_default(),
        Wire::Responses => r["input"]
            .as_array()
            .and_then(|a| a.last())
            .map(item_text)
            .unwrap_or_default(),
        Wire::Gemini => r["contents"]
            .as_array()
            .and_then(|a| a.last())
            .map(gemini_content_text)
            .unwrap_or_default(),
    }
}

/// True when the request offers the model tools (a host's main agent
/// turn, not one of its side questions).
pub fn has_tools(wire: Wire, r: &Value) -> bool {
    let t = &r["tools"];
    match wire {
        Wire::Gemini => t
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x["functionDeclarations"].is_array())),
        _ => t.as_array().is_some_and(|a| !a.is_empty()),
    }
}
