//! The agent hooks in the real Claude Code CLI (`@anthropic-ai/claude-code`,
//! pinned in tests/agents/setup.sh), driven by a scripted model: a server
//! on 127.0.0.1 speaking the streaming Messages API
//! ([`crate::support::model_server`]) that answers from a script and records every
//! request, so a test sees what reached the model: the system prompt, a
//! tool result, the next user turn. Codex and Gemini CLI are in
//! `agents_live_codex` and `agents_live_gemini`, with the helpers here.
//!
//! Without `GIT_SWARM_CLAUDE` (`GIT_SWARM_CODEX`, `GIT_SWARM_GEMINI`) the
//! tests skip with a note, unless `GIT_SWARM_REQUIRE_AGENTS=1` (CI), where
//! they fail instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::model_server::{has_tools, last_text, serve, Model, Reply, Wire};

/// The pinned CLI named by `var` (tests/agents/setup.sh prints it); None
/// (the test skips) when unset, a failure when `GIT_SWARM_REQUIRE_AGENTS=1`.
pub fn host_bin(var: &str, host: &str) -> Option<PathBuf> {
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var("GIT_SWARM_REQUIRE_AGENTS").as_deref() == Ok("1") => panic!(
            "GIT_SWARM_REQUIRE_AGENTS=1 but {var} is not set: \
             run `eval \"$(bash tests/agents/setup.sh)\"` first"
        ),
        _ => {
            eprintln!(
                "note: skipping the {host} test: {var} not set \
                 (eval \"$(bash tests/agents/setup.sh)\" to run it)"
            );
            None
        }
    }
}

pub fn claude() -> Option<PathBuf> {
    host_bin("GIT_SWARM_CLAUDE", "Claude Code")
}

/// A finished host process as a harness run.
pub fn as_run(out: Output, shown: String) -> crate::support::harness::Run {
    crate::support::harness::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown,
    }
}

/// Post `text` to ann from clone `from` once the model has answered its
/// first turn (the agent is about to stop), two seconds later: the idle
/// tests' other clone. Returns the `notify` process's output.
pub fn notify_after_first_turn(
    env: &TestEnv,
    from: &Path,
    model: &Model,
    text: &str,
) -> std::thread::JoinHandle<Output> {
    let requests = model.requests.clone();
    let mut cmd = env.command("git", from);
    cmd.args(["swarm", "notify", "ann", text]);
    std::thread::spawn(move || {
        // Bounded: at most 60 s for the host to send its first turn.
        for _ in 0..600 {
            if !requests.lock().unwrap().is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        cmd.output().expect("notify")
    })
}

/// Run `claude -p <prompt>` in `dir` against the model.
fn run_claude(
    env: &TestEnv,
    claude: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
) -> crate::support::harness::Run {
    run_claude_with(env, claude, dir, model, prompt, &[])
}

/// [`run_claude`] with more arguments.
pub fn run_claude_with(
    env: &TestEnv,
    claude: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
    extra: &[&str],
) -> crate::support::harness::Run {
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
    as_run(out, format!("(in {}) claude -p {prompt:?}", dir.display()))
}

/// Two clones of one remote, a plan, and a lane of `ann` in the first
/// clone, with the hooks of `host` installed: (env, ann's clone, bob's
/// clone, the lane worktree).
pub fn swarm_with_lane(host: &str) -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .run(0, &["plan", "new", "p", "--title", "The plan"])
        .parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["agent", "install", "--host", host]).ok();
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
    let (env, _a, _b, lane) = swarm_with_lane("claude");
    assert!(
        lane.join(".claude/settings.local.json").is_file(),
        "lane new wrote the hooks"
    );
    let model = serve(Wire::Messages, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_claude(&env, &claude, &lane, &model, "hello");
    assert_eq!(run.code, 0, "{run:?}");
    let text = model.all_text();
    assert!(
        text.contains("git swarm: this repository is coordinated by git-swarm"),
        "{text}"
    );
    assert!(text.contains("You are ann, plan p, lane work"), "{text}");
}

#[test]
fn claude_write_to_a_path_another_clone_reserved_is_denied() {
    let Some(claude) = claude() else { return };
    let (env, _a, b, lane) = swarm_with_lane("claude");
    env.swarm(&b, &["reserve", "src/api.rs", "--lease", "1h"])
        .ok();
    env.swarm(&lane, &["sync"]).ok();
    let target = lane.join("src/api.rs");
    let t = target.to_str().unwrap().to_string();
    let model = serve(
        Wire::Messages,
        Arc::new(move |req, _| {
            if last_text(Wire::Messages, req).contains("[tool_result]") {
                Reply::Text("understood".into())
            } else if has_tools(Wire::Messages, req) {
                Reply::Tool {
                    name: "Write".into(),
                    input: json!({"file_path": t, "content": "fn main() {}\n"}),
                }
            } else {
                Reply::Text("ok".into())
            }
        }),
    );
    let run = run_claude(&env, &claude, &lane, &model, "write src/api.rs");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!target.exists(), "the reserved file was not written");
    let results: Vec<String> = model
        .last_texts()
        .into_iter()
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
    let (env, _a, _b, lane) = swarm_with_lane("claude");
    env.write(&lane.join("notes.txt"), "draft\n");
    let model = serve(Wire::Messages, Arc::new(|_, _| Reply::Text("done".into())));
    let run = run_claude(&env, &claude, &lane, &model, "finish");
    assert_eq!(run.code, 0, "{run:?}");
    let turns = model.last_texts();
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
    let (env, a, b, lane) = swarm_with_lane("claude");
    env.git(&a, &["config", "swarm.agentIdleWait", "20s"]);
    env.swarm(&a, &["agent", "install", "--host", "claude"])
        .ok();
    let settings = env.read(&lane.join(".claude/settings.local.json"));
    assert!(settings.contains("\"timeout\": 80"), "{settings}");
    let model = serve(
        Wire::Messages,
        Arc::new(|req, _| {
            if last_text(Wire::Messages, req).contains("please review the schema") {
                Reply::Text("on it".into())
            } else {
                Reply::Text("nothing left".into())
            }
        }),
    );
    let posted = notify_after_first_turn(&env, &b, &model, "please review the schema");
    let run = run_claude(&env, &claude, &lane, &model, "anything left?");
    assert_eq!(run.code, 0, "{run:?}");
    let out = posted.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let turns = model.last_texts();
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
    let model = serve(Wire::Messages, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_claude(&env, &claude, &a, &model, "hello");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(marker.exists(), "the user's own hook still runs");
    let text = model.all_text();
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
    let model = serve(Wire::Messages, Arc::new(|_, _| Reply::Text("ok".into())));
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
    let text = model.all_text();
    assert!(text.contains("You are ann"), "{text}");
}
