//! The agent hooks in the real Claude Code CLI (`@anthropic-ai/claude-code`,
//! pinned in tests/agents/setup.sh), driven by a scripted model: a server
//! on 127.0.0.1 speaking the streaming Messages API (`POST /v1/messages`,
//! server-sent events) that answers from a script and records every
//! request, so a test sees what reached the model: the system prompt, a
//! tool result, the next user turn.
//!
//! Without `GIT_SWARM_CLAUDE` the tests skip with a note, unless
//! `GIT_SWARM_REQUIRE_AGENTS=1` (CI), where they fail instead.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::fixture::Swarm;
use crate::harness::TestEnv;

fn claude() -> Option<PathBuf> {
    match std::env::var("GIT_SWARM_CLAUDE") {
        Ok(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var("GIT_SWARM_REQUIRE_AGENTS").as_deref() == Ok("1") => panic!(
            "GIT_SWARM_REQUIRE_AGENTS=1 but GIT_SWARM_CLAUDE is not set: \
             run `eval \"$(bash tests/agents/setup.sh)\"` first"
        ),
        _ => {
            eprintln!(
                "note: skipping the Claude Code test: GIT_SWARM_CLAUDE not set \
                 (eval \"$(bash tests/agents/setup.sh)\" to run it)"
            );
            None
        }
    }
}

/// What the scripted model answers.
#[derive(Clone)]
enum Reply {
    Text(String),
    Tool { name: String, input: Value },
}

/// The scripted model: `script(request, recorded so far)` picks the reply.
struct Model {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    server: Arc<tiny_http::Server>,
}

impl Drop for Model {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

type Script = dyn Fn(&Value, usize) -> Reply + Send + Sync;

fn sse(reply: &Reply) -> String {
    let mut out = String::new();
    let mut ev = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let stop = match reply {
        Reply::Text(t) => {
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

fn serve(script: Arc<Script>) -> Model {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let port = server.server_addr().to_ip().expect("ip").port();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (srv, recs) = (server.clone(), requests.clone());
    std::thread::spawn(move || {
        for mut req in srv.incoming_requests() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if !req.url().starts_with("/v1/messages") || req.url().contains("count_tokens") {
                let _ = req.respond(
                    tiny_http::Response::from_string("{\"input_tokens\": 10}").with_header(
                        tiny_http::Header::from_bytes("content-type", "application/json").unwrap(),
                    ),
                );
                continue;
            }
            let n = {
                let mut r = recs.lock().unwrap();
                r.push(v.clone());
                r.len()
            };
            let reply = script(&v, n);
            let header =
                tiny_http::Header::from_bytes("content-type", "text/event-stream").unwrap();
            let _ = req.respond(tiny_http::Response::from_string(sse(&reply)).with_header(header));
        }
    });
    Model {
        url: format!("http://127.0.0.1:{port}"),
        requests,
        server,
    }
}

/// The text of the last message of a request (its content blocks joined).
fn last_text(req: &Value) -> String {
    let Some(last) = req["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    content_text(&last["content"])
}

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

/// Everything the model was sent, as text (system prompts and messages).
fn all_text(reqs: &[Value]) -> String {
    reqs.iter()
        .map(|r| {
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
        })
        .collect::<Vec<_>>()
        .join("\n=====\n")
}

/// Run `claude -p <prompt>` in `dir` against the model.
fn run_claude(
    env: &TestEnv,
    claude: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
) -> crate::harness::Run {
    run_claude_with(env, claude, dir, model, prompt, &[])
}

/// [`run_claude`] with more arguments.
fn run_claude_with(
    env: &TestEnv,
    claude: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
    extra: &[&str],
) -> crate::harness::Run {
    let home = env.root().join("claude-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd: Command = env.command(claude.to_str().unwrap(), dir);
    cmd.args([
        "-p",
        prompt,
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
    ])
    .args(extra)
    .env("HOME", &home)
    .env("ANTHROPIC_BASE_URL", &model.url)
    .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("DISABLE_TELEMETRY", "1")
    .env("DISABLE_AUTOUPDATER", "1")
    .env("GIT_CONFIG_GLOBAL", env.home.join(".gitconfig"))
    .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("run claude");
    crate::harness::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown: format!("(in {}) claude -p {prompt:?}", dir.display()),
    }
}

/// Two clones of one remote, a plan, and a lane of `ann` in the first
/// clone, with the Claude Code hooks installed: (env, ann's clone, bob's
/// clone, the lane worktree).
fn swarm_with_lane() -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .run(0, &["plan", "new", "p", "--title", "The plan"])
        .parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["agent", "install", "--host", "claude"])
        .ok();
    let lane = env
        .swarm(&a, &["lane", "new", "work", "--plan", "p", "--json"])
        .ok()
        .json();
    let path = PathBuf::from(
        lane["path"]
            .as_str()
            .or(lane["lane"]["path"].as_str())
            .expect("lane path"),
    );
    env.swarm(&b, &["sync"]).ok();
    (env, a, b, path)
}

#[test]
fn claude_session_start_context_reaches_the_system_prompt() {
    let Some(claude) = claude() else { return };
    let (env, _a, _b, lane) = swarm_with_lane();
    assert!(
        lane.join(".claude/settings.local.json").is_file(),
        "lane new wrote the hooks"
    );
    let model = serve(Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_claude(&env, &claude, &lane, &model, "hello");
    assert_eq!(run.code, 0, "{run:?}");
    let reqs = model.requests.lock().unwrap().clone();
    let text = all_text(&reqs);
    assert!(
        text.contains("git swarm: this repository is coordinated by git-swarm"),
        "{text}"
    );
    assert!(text.contains("You are ann, plan p, lane work"), "{text}");
}

#[test]
fn claude_write_to_a_path_another_clone_reserved_is_denied() {
    let Some(claude) = claude() else { return };
    let (env, _a, b, lane) = swarm_with_lane();
    env.swarm(&b, &["reserve", "src/api.rs", "--lease", "1h"])
        .ok();
    env.swarm(&lane, &["sync"]).ok();
    let target = lane.join("src/api.rs");
    let t = target.to_str().unwrap().to_string();
    let model = serve(Arc::new(move |req, _| {
        if last_text(req).contains("[tool_result]") {
            Reply::Text("understood".into())
        } else if req["tools"].as_array().is_some_and(|t| !t.is_empty()) {
            Reply::Tool {
                name: "Write".into(),
                input: json!({"file_path": t, "content": "fn main() {}\n"}),
            }
        } else {
            Reply::Text("ok".into())
        }
    }));
    let run = run_claude(&env, &claude, &lane, &model, "write src/api.rs");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!target.exists(), "the reserved file was not written");
    let reqs = model.requests.lock().unwrap().clone();
    let results: Vec<String> = reqs
        .iter()
        .map(last_text)
        .filter(|t| t.contains("[tool_result]"))
        .collect();
    assert!(
        results.iter().any(|t| t.contains("src/api.rs is reserved by bob") && t.contains("git swarm ask bob")),
        "{results:?}"
    );
}

#[test]
fn claude_stop_with_uncommitted_work_is_blocked_once() {
    let Some(claude) = claude() else { return };
    let (env, _a, _b, lane) = swarm_with_lane();
    env.write(&lane.join("notes.txt"), "draft\n");
    let model = serve(Arc::new(|_, _| Reply::Text("done".into())));
    let run = run_claude(&env, &claude, &lane, &model, "finish");
    assert_eq!(run.code, 0, "{run:?}");
    let reqs = model.requests.lock().unwrap().clone();
    let turns: Vec<String> = reqs.iter().map(last_text).collect();
    let blocked: Vec<&String> = turns
        .iter()
        .filter(|t| t.contains("has uncommitted work (notes.txt)"))
        .collect();
    assert_eq!(
        blocked.len(),
        1,
        "blocked once, the second stop passes: {turns:#?}"
    );
    assert!(blocked[0].contains("git swarm lane snapshot"));
}

#[test]
fn claude_idle_agent_wakes_with_a_message_from_another_clone() {
    let Some(claude) = claude() else { return };
    let (env, a, b, lane) = swarm_with_lane();
    env.git(&a, &["config", "swarm.agentIdleWait", "20s"]);
    env.swarm(&a, &["agent", "install", "--host", "claude"])
        .ok();
    let settings = env.read(&lane.join(".claude/settings.local.json"));
    assert!(settings.contains("\"timeout\": 80"), "{settings}");
    let model = serve(Arc::new(|req, _| {
        if last_text(req).contains("please review the schema") {
            Reply::Text("on it".into())
        } else {
            Reply::Text("nothing left".into())
        }
    }));
    let posted = {
        let env_b = b.clone();
        let requests = model.requests.clone();
        let bin = env.bin.clone();
        let cmd = env.command("git", &env_b);
        std::thread::spawn(move || {
            // Once the agent has stopped (its first turn answered), post.
            for _ in 0..300 {
                if !requests.lock().unwrap().is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_secs(2));
            let _ = bin;
            let mut cmd = cmd;
            cmd.args(["swarm", "notify", "ann", "please review the schema"]);
            cmd.output().expect("notify")
        })
    };
    let run = run_claude(&env, &claude, &lane, &model, "anything left?");
    assert_eq!(run.code, 0, "{run:?}");
    let out = posted.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = model.requests.lock().unwrap().clone();
    let turns: Vec<String> = reqs.iter().map(last_text).collect();
    assert!(
        turns
            .iter()
            .any(|t| t.contains("while you waited, new for ann")
                && t.contains("please review the schema")
                && t.contains("from bob")),
        "{turns:#?}"
    );
}

#[test]
fn claude_install_keeps_user_hooks_and_uninstall_restores_the_bytes() {
    let Some(claude) = claude() else { return };
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    let marker = env.root().join("user-hook-ran");
    let original = format!(
        "{{\n    \"permissions\": {{\"allow\": [\"Bash(ls)\"]}},\n    \"hooks\": {{\n        \"SessionStart\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"touch {}\"}}]}}]\n    }},\n    \"zz\": true\n}}",
        marker.display()
    );
    std::fs::create_dir_all(a.join(".claude")).unwrap();
    env.write(&a.join(".claude/settings.local.json"), &original);
    env.swarm(&a, &["agent", "install"]).ok();
    env.swarm(&a, &["agent", "install"]).ok();
    let installed = env.read(&a.join(".claude/settings.local.json"));
    let v: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(
        v["hooks"]["SessionStart"].as_array().unwrap().len(),
        2,
        "{installed}"
    );
    let model = serve(Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_claude(&env, &claude, &a, &model, "hello");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(marker.exists(), "the user's own hook still runs");
    let text = all_text(&model.requests.lock().unwrap());
    assert!(text.contains("You are ann"), "and ours: {text}");
    env.swarm(&a, &["agent", "install", "--uninstall"]).ok();
    assert_eq!(env.read(&a.join(".claude/settings.local.json")), original);
    assert!(!a.join(".claude/skills").exists());
    assert!(!a.join("AGENTS.md").exists());
}

/// The repository as a Claude Code plugin (`--plugin-dir`): its hooks run
/// where nothing was installed.
#[test]
fn claude_loads_the_repository_as_a_plugin() {
    let Some(claude) = claude() else { return };
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let model = serve(Arc::new(|_, _| Reply::Text("ok".into())));
    let plugin = env!("CARGO_MANIFEST_DIR");
    let run = run_claude_with(
        &env,
        &claude,
        &clones[0],
        &model,
        "hello",
        &["--plugin-dir", plugin],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let text = all_text(&model.requests.lock().unwrap());
    assert!(text.contains("You are ann"), "{text}");
}
