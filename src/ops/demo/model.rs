//! The scripted models of `demo --agents`: one Anthropic Messages API per
//! account on 127.0.0.1, each answering a session's first tool-enabled turn
//! with one Bash command chosen from the brief it was shown, and every later
//! turn with text. Nothing leaves the machine; no real model is called.

use std::sync::{Arc, Mutex};

use axum::http::{header, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Value};

use crate::error::{Code, Error, Result};

/// Chooses the Bash command for a brief.
pub(super) type Script = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A running model: its base URL and what it was asked to do, in order.
pub(super) struct Model {
    pub(super) url: String,
    /// The commands it chose (`account: command`), for the narration.
    pub(super) said: Arc<Mutex<Vec<String>>>,
}

/// Start `n` models on one background thread; they live until the process ends.
pub(super) fn serve(n: usize, script: Script) -> Result<Vec<Model>> {
    let failed = |e: std::io::Error| {
        Error::new(
            Code::DemoFailed,
            format!("cannot start the demo's scripted model on 127.0.0.1: {e}"),
        )
    };
    let mut listeners = Vec::new();
    let mut models = Vec::new();
    for i in 0..n {
        let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(failed)?;
        l.set_nonblocking(true).map_err(failed)?;
        let port = l.local_addr().map_err(failed)?.port();
        let said = Arc::new(Mutex::new(Vec::new()));
        models.push(Model {
            url: format!("http://127.0.0.1:{port}"),
            said: said.clone(),
        });
        listeners.push((format!("w{}", i + 1), l, said));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    std::thread::spawn(move || {
        rt.block_on(async move {
            let mut served = Vec::new();
            for (name, l, said) in listeners {
                let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                    continue;
                };
                let script = script.clone();
                let app = axum::Router::new().fallback(move |uri: Uri, body: String| {
                    let (script, said, name) = (script.clone(), said.clone(), name.clone());
                    async move { answer(&uri, &body, &script, &said, &name) }
                });
                served.push(tokio::spawn(async move {
                    let _ = axum::serve(l, app).await;
                }));
            }
            for s in served {
                let _ = s.await;
            }
        });
    });
    Ok(models)
}

fn answer(
    uri: &Uri,
    body: &str,
    script: &Script,
    said: &Mutex<Vec<String>>,
    name: &str,
) -> axum::response::Response {
    if !uri.path().starts_with("/v1/messages") || uri.path().contains("count_tokens") {
        return (
            [(header::CONTENT_TYPE, "application/json")],
            "{\"input_tokens\": 10}",
        )
            .into_response();
    }
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let msgs = v["messages"].as_array().cloned().unwrap_or_default();
    let answered = msgs.iter().any(|m| m["role"] == "assistant");
    let tools = v["tools"].as_array().is_some_and(|t| !t.is_empty());
    let reply = if tools && !answered {
        let brief: String = msgs
            .iter()
            .map(|m| text_of(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n");
        let cmd = script(&brief);
        if let Ok(mut s) = said.lock() {
            s.push(format!("{name}: {cmd}"));
        }
        sse(Some(&cmd))
    } else {
        sse(None)
    };
    ([(header::CONTENT_TYPE, "text/event-stream")], reply).into_response()
}

/// The text of a message's content (tool results marked `tool_result:`).
pub fn text_of(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(b) => b
            .iter()
            .map(|x| match x["type"].as_str() {
                Some("tool_result") => format!("tool_result: {}", text_of(&x["content"])),
                _ => x["text"].as_str().unwrap_or("").to_string(),
            })
            .collect(),
        _ => String::new(),
    }
}

/// A streamed message: one Bash tool call, or the text "done" (10 input
/// and 5 output tokens).
pub fn sse(tool: Option<&str>) -> String {
    let mut out = String::new();
    let mut ev =
        |name: &str, data: Value| out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_demo", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let stop = match tool {
        None => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
            );
            "end_turn"
        }
        Some(cmd) => {
            ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_demo", "name": "Bash", "input": {}}}),
            );
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json!({"command": cmd, "description": "step"}).to_string()}}),
            );
            "tool_use"
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
