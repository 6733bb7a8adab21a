//! The agent hooks in the real Gemini CLI (`@google/gemini-cli`, pinned in
//! tests/agents/setup.sh), headless (`gemini -p … --output-format
//! stream-json`), driven by a scripted model: the Gemini API's
//! `streamGenerateContent?alt=sse` on 127.0.0.1 ([`crate::support::model_server`],
//! `Wire::Gemini`), reached through `GOOGLE_GEMINI_BASE_URL` with the
//! API-key login (`security.auth.selectedType = "gemini-api-key"`,
//! `GEMINI_API_KEY`). Every request is recorded, so a test sees what
//! reached the model.
//!
//! Gemini CLI reads a project's `.gemini/settings.json` (and its hooks)
//! only in a trusted folder: `GEMINI_CLI_TRUST_WORKSPACE=true` here. Its
//! telemetry, usage statistics and update checks are off in the user
//! settings, and `--model` is fixed so that no routing call is made.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::agents::agents_live::{as_run, host_bin, notify_after_first_turn, swarm_with_lane};
use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::model_server::{has_tools, last_text, serve, Model, Reply, Wire};

pub fn gemini() -> Option<PathBuf> {
    host_bin("GIT_SWARM_GEMINI", "Gemini CLI")
}

/// A home for Gemini CLI (`HOME` or `GEMINI_CLI_HOME`) whose user
/// settings log in with the API key and turn telemetry, usage statistics
/// and update checks off.
pub fn gemini_home(env: &TestEnv) -> PathBuf {
    let home = env.root().join("gemini-home");
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "telemetry": {"enabled": false},
        "privacy": {"usageStatisticsEnabled": false}
    });
    std::fs::write(
        home.join(".gemini/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    home
}

/// Run `gemini -p <prompt>` in `dir` against the model, once (file edits
/// approved, as an agent at work has them).
fn run_gemini(env: &TestEnv, gemini: &Path, dir: &Path, model: &Model, prompt: &str) -> Run {
    run_gemini_with(env, gemini, dir, model, prompt, "auto_edit")
}

/// [`run_gemini`] with another `--approval-mode` (`yolo` runs its shell
/// tool unasked).
pub fn run_gemini_with(
    env: &TestEnv,
    gemini: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
    approval: &str,
) -> Run {
    let home = gemini_home(env);
    let mut cmd = env.command(gemini.to_str().unwrap(), dir);
    cmd.args([
        "-p",
        prompt,
        "--model",
        "gemini-2.5-flash",
        "--output-format",
        "stream-json",
        "--approval-mode",
        approval,
    ])
    .env("HOME", &home)
    .env("GEMINI_API_KEY", "dummy-key-for-tests")
    .env("GOOGLE_GEMINI_BASE_URL", &model.url)
    .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
    // One node process, not a second one relaunched with a larger heap.
    .env("GEMINI_CLI_NO_RELAUNCH", "true")
    .env("GIT_CONFIG_GLOBAL", env.home.join(".gitconfig"))
    // Its error reports (gemini-client-error-*.json) stay in the test's
    // directory.
    .env("TMPDIR", env.root())
    .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("run gemini");
    as_run(out, format!("(in {}) gemini -p {prompt:?}", dir.display()))
}

/// The JSONL events of a `--output-format stream-json` run.
fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The run ended with a successful result event.
fn assert_success(run: &Run) {
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        events(run)
            .iter()
            .any(|e| e["type"] == "result" && e["status"] == "success"),
        "{run:?}"
    );
}

#[test]
fn gemini_session_start_context_reaches_the_model() {
    let Some(gemini) = gemini() else { return };
    let (env, _a, _b, lane) = swarm_with_lane("gemini");
    assert!(
        lane.join(".gemini/settings.json").is_file(),
        "lane new wrote the hooks"
    );
    let model = serve(Wire::Gemini, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_gemini(&env, &gemini, &lane, &model, "hello");
    assert_success(&run);
    let text = model.all_text();
    // Gemini CLI puts a SessionStart hook's context before the prompt.
    assert!(
        text.contains("<hook_context>git swarm: this repository is coordinated by git-swarm"),
        "{text}"
    );
    assert!(text.contains("You are ann, plan p, lane work"), "{text}");
    // Its side questions (if any) go to the model it was given: no routing.
    let side = model.side.lock().unwrap().clone();
    assert!(
        side.iter()
            .all(|(path, _)| path.starts_with("/v1beta/models/gemini-2.5-flash:")),
        "{side:?}"
    );
}

#[test]
fn gemini_write_file_to_a_path_another_clone_reserved_is_refused() {
    let Some(gemini) = gemini() else { return };
    let (env, _a, b, lane) = swarm_with_lane("gemini");
    env.swarm(&b, &["reserve", "src/api.rs", "--lease", "1h"])
        .ok();
    env.swarm(&lane, &["sync"]).ok();
    let target = lane.join("src/api.rs");
    let t = target.to_str().unwrap().to_string();
    let model = serve(
        Wire::Gemini,
        Arc::new(move |req, _| {
            if last_text(Wire::Gemini, req).contains("[tool_result]") {
                Reply::Text("understood".into())
            } else if has_tools(Wire::Gemini, req) {
                Reply::Tool {
                    name: "write_file".into(),
                    input: json!({"file_path": t, "content": "fn main() {}\n"}),
                }
            } else {
                Reply::Text("ok".into())
            }
        }),
    );
    let run = run_gemini(&env, &gemini, &lane, &model, "write src/api.rs");
    assert_success(&run);
    assert!(!target.exists(), "the reserved file was not written");
    let results: Vec<String> = model
        .last_texts()
        .into_iter()
        .filter(|t| t.contains("[tool_result]"))
        .collect();
    assert_eq!(results.len(), 1, "one tool call, refused: {results:?}");
    assert!(
        results[0].contains("src/api.rs is reserved by bob")
            && results[0].contains("git swarm ask bob"),
        "{results:?}"
    );
    // The stream names the refusal as a policy violation.
    assert!(
        events(&run).iter().any(|e| e["type"] == "tool_result"
            && e["status"] == "error"
            && e["error"]["type"] == "policy_violation"),
        "{run:?}"
    );
}

#[test]
fn gemini_stop_with_uncommitted_work_is_sent_back_once() {
    let Some(gemini) = gemini() else { return };
    let (env, _a, _b, lane) = swarm_with_lane("gemini");
    env.write(&lane.join("notes.txt"), "draft\n");
    let model = serve(Wire::Gemini, Arc::new(|_, _| Reply::Text("done".into())));
    let run = run_gemini(&env, &gemini, &lane, &model, "finish");
    assert_success(&run);
    let turns = model.last_texts();
    let sent_back: Vec<&String> = turns
        .iter()
        .filter(|t| t.contains("has uncommitted work (notes.txt)"))
        .collect();
    assert_eq!(
        sent_back.len(),
        1,
        "sent back once (AfterAgent deny), the second stop passes: {turns:#?}"
    );
    assert!(sent_back[0].contains("git swarm lane snapshot"));
    assert_eq!(turns.len(), 2, "{turns:#?}");
}

#[test]
fn gemini_idle_agent_wakes_with_a_message_from_another_clone() {
    let Some(gemini) = gemini() else { return };
    let (env, a, b, lane) = swarm_with_lane("gemini");
    env.git(&a, &["config", "swarm.agentIdleWait", "15s"]);
    env.swarm(&a, &["agent", "install", "--host", "gemini"])
        .ok();
    let settings = env.read(&lane.join(".gemini/settings.json"));
    assert!(settings.contains("\"timeout\": 75000"), "{settings}");
    let model = serve(
        Wire::Gemini,
        Arc::new(|req, _| {
            if last_text(Wire::Gemini, req).contains("please review the schema") {
                Reply::Text("on it".into())
            } else {
                Reply::Text("nothing left".into())
            }
        }),
    );
    let posted = notify_after_first_turn(&env, &b, &model, "please review the schema");
    let run = run_gemini(&env, &gemini, &lane, &model, "anything left?");
    assert_success(&run);
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
fn gemini_install_keeps_user_hooks_and_uninstall_restores_the_bytes() {
    let Some(gemini) = gemini() else { return };
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    let marker = env.root().join("user-hook-ran");
    let original = format!(
        "{{\n    \"general\": {{\"vimMode\": false}},\n    \"hooks\": {{\n        \"SessionStart\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"touch {}\"}}]}}]\n    }}\n}}",
        marker.display()
    );
    std::fs::create_dir_all(a.join(".gemini")).unwrap();
    env.write(&a.join(".gemini/settings.json"), &original);
    env.swarm(&a, &["agent", "install", "--host", "gemini"])
        .ok();
    env.swarm(&a, &["agent", "install", "--host", "gemini"])
        .ok();
    let installed = env.read(&a.join(".gemini/settings.json"));
    let v: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(
        v["hooks"]["SessionStart"].as_array().unwrap().len(),
        2,
        "{installed}"
    );
    assert_eq!(v["general"]["vimMode"], false, "{installed}");
    let model = serve(Wire::Gemini, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_gemini(&env, &gemini, &a, &model, "hello");
    assert_success(&run);
    assert!(marker.exists(), "the user's own hook still runs");
    let text = model.all_text();
    assert!(text.contains("You are ann"), "and ours: {text}");
    env.swarm(&a, &["agent", "install", "--host", "gemini", "--uninstall"])
        .ok();
    assert_eq!(env.read(&a.join(".gemini/settings.json")), original);
    assert!(!a.join("AGENTS.md").exists());
}

/// An API error ends `gemini -p` non-zero with a `result` of status
/// `error` naming it (what the runner reads as a failed launch).
#[test]
fn gemini_api_error_fails_the_run() {
    let Some(gemini) = gemini() else { return };
    let (env, _a, _b, lane) = swarm_with_lane("gemini");
    let model = serve(
        Wire::Gemini,
        Arc::new(|_, _| Reply::Error {
            status: 400,
            message: "scripted failure".into(),
        }),
    );
    let run = run_gemini(&env, &gemini, &lane, &model, "hello");
    assert_ne!(run.code, 0, "{run:?}");
    let ev = events(&run);
    assert!(
        ev.iter().any(|e| e["type"] == "result"
            && e["status"] == "error"
            && e["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("scripted failure"))),
        "{run:?}"
    );
    assert!(ev
        .iter()
        .any(|e| e["type"] == "init" && e["session_id"].is_string()));
}
