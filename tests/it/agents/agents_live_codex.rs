//! The agent hooks in the real Codex CLI (`@openai/codex`, pinned in
//! tests/agents/setup.sh), headless (`codex exec --json`), driven by a
//! scripted model: the Responses API stream on 127.0.0.1
//! ([`crate::support::model_server`], `Wire::Responses`), reached through a custom
//! provider in `$CODEX_HOME/config.toml` (`[model_providers.scripted]`,
//! `wire_api = "responses"`). Every request is recorded, so a test sees
//! what reached the model.
//!
//! Codex runs a repository's `.codex/hooks.json` only when the project is
//! trusted (`[projects."<path>"] trust_level = "trusted"`, what `codex exec
//! --trust` writes) and its hooks are trusted (reviewed once in the TUI's
//! `/hooks`, or `--dangerously-bypass-hook-trust` for automation, as here).
//! In a lane worktree it reads the hooks of the repository's main checkout,
//! which `agent install` writes too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::agents::agents_live::{as_run, host_bin, notify_after_first_turn, swarm_with_lane};
use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::model_server::{has_tools, last_text, serve, Model, Reply, Wire};

pub fn codex() -> Option<PathBuf> {
    host_bin("GIT_SWARM_CODEX", "Codex")
}

/// `$CODEX_HOME/config.toml`: the scripted provider, and `trusted` as
/// trusted projects.
pub fn codex_home(env: &TestEnv, model: &Model, trusted: &[&Path]) -> PathBuf {
    let home = env.root().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut config = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\n\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}\"\n\
         env_key = \"SCRIPTED_API_KEY\"\nwire_api = \"responses\"\n\
         request_max_retries = 0\nstream_max_retries = 0\n",
        model.url
    );
    let mut seen = Vec::new();
    for p in trusted.iter().filter(|p| {
        let new = !seen.contains(p);
        seen.push(*p);
        new
    }) {
        config.push_str(&format!(
            "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            p.display()
        ));
    }
    std::fs::write(home.join("config.toml"), config).unwrap();
    home
}

/// Run `codex exec --json <prompt>` in `dir` (a checkout of `clone`)
/// against the model, once.
fn run_codex(
    env: &TestEnv,
    codex: &Path,
    clone: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
) -> Run {
    run_codex_with(env, codex, clone, dir, model, prompt, "workspace-write")
}

/// [`run_codex`] with another sandbox (`danger-full-access` lets its shell
/// push to the test's remote, outside the workspace).
pub fn run_codex_with(
    env: &TestEnv,
    codex: &Path,
    clone: &Path,
    dir: &Path,
    model: &Model,
    prompt: &str,
    sandbox: &str,
) -> Run {
    let home = codex_home(env, model, &[clone, dir]);
    let mut cmd = env.command(codex.to_str().unwrap(), dir);
    cmd.args([
        "exec",
        "--json",
        "--dangerously-bypass-hook-trust",
        "--sandbox",
        sandbox,
        prompt,
    ])
    .env("HOME", &home)
    .env("CODEX_HOME", &home)
    .env("SCRIPTED_API_KEY", "sk-dummy-key-for-tests")
    .env("GIT_CONFIG_GLOBAL", env.home.join(".gitconfig"))
    .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("run codex");
    as_run(
        out,
        format!("(in {}) codex exec --json {prompt:?}", dir.display()),
    )
}

/// The JSONL events of a `codex exec --json` run.
fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The run ended with a completed turn, and no event says it failed.
fn assert_completed(run: &Run) {
    assert_eq!(run.code, 0, "{run:?}");
    let ev = events(run);
    assert!(ev.iter().any(|e| e["type"] == "turn.completed"), "{run:?}");
    assert!(!ev.iter().any(|e| e["type"] == "turn.failed"), "{run:?}");
}

#[test]
fn codex_session_start_context_reaches_the_model() {
    let Some(codex) = codex() else { return };
    let (env, a, _b, lane) = swarm_with_lane("codex");
    assert!(
        lane.join(".codex/hooks.json").is_file() && a.join(".codex/hooks.json").is_file(),
        "install and lane new wrote the hooks"
    );
    let model = serve(Wire::Responses, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_codex(&env, &codex, &a, &lane, &model, "hello");
    assert_completed(&run);
    let text = model.all_text();
    assert!(
        text.contains("git swarm: this repository is coordinated by git-swarm"),
        "{text}"
    );
    assert!(text.contains("You are ann, plan p, lane work"), "{text}");
}

#[test]
fn codex_apply_patch_to_a_path_another_clone_reserved_is_refused() {
    let Some(codex) = codex() else { return };
    let (env, a, b, lane) = swarm_with_lane("codex");
    env.swarm(&b, &["reserve", "src/api.rs", "--lease", "1h"])
        .ok();
    env.swarm(&lane, &["sync"]).ok();
    let target = lane.join("src/api.rs");
    let model = serve(
        Wire::Responses,
        Arc::new(|req, _| {
            if last_text(Wire::Responses, req).contains("[tool_result]") {
                Reply::Text("understood".into())
            } else if has_tools(Wire::Responses, req) {
                Reply::Tool {
                    name: "apply_patch".into(),
                    input: Value::String(
                        "*** Begin Patch\n*** Add File: src/api.rs\n+fn main() {}\n*** End Patch\n"
                            .into(),
                    ),
                }
            } else {
                Reply::Text("ok".into())
            }
        }),
    );
    let run = run_codex(&env, &codex, &a, &lane, &model, "write src/api.rs");
    assert_completed(&run);
    assert!(!target.exists(), "the reserved file was not written");
    let results: Vec<String> = model
        .last_texts()
        .into_iter()
        .filter(|t| t.contains("[tool_result]"))
        .collect();
    assert_eq!(results.len(), 1, "one tool call, refused: {results:?}");
    assert!(
        results[0].contains("blocked by PreToolUse hook")
            && results[0].contains("src/api.rs is reserved by bob")
            && results[0].contains("git swarm ask bob"),
        "{results:?}"
    );
    // Codex reports the refused patch as no file change.
    assert!(
        !events(&run)
            .iter()
            .any(|e| e["item"]["type"] == "file_change" && e["item"]["status"] == "completed"),
        "{run:?}"
    );
}

#[test]
fn codex_stop_with_uncommitted_work_is_sent_back_once() {
    let Some(codex) = codex() else { return };
    let (env, a, _b, lane) = swarm_with_lane("codex");
    env.write(&lane.join("notes.txt"), "draft\n");
    let model = serve(Wire::Responses, Arc::new(|_, _| Reply::Text("done".into())));
    let run = run_codex(&env, &codex, &a, &lane, &model, "finish");
    assert_completed(&run);
    let turns = model.last_texts();
    let sent_back: Vec<&String> = turns
        .iter()
        .filter(|t| t.contains("has uncommitted work (notes.txt)"))
        .collect();
    assert_eq!(
        sent_back.len(),
        1,
        "sent back once, the second stop passes: {turns:#?}"
    );
    // Codex hands the reason to the model as a user turn, wrapped.
    assert!(sent_back[0].contains("<hook_prompt"), "{}", sent_back[0]);
    assert!(sent_back[0].contains("git swarm lane snapshot"));
    assert_eq!(turns.len(), 2, "{turns:#?}");
}

#[test]
fn codex_idle_agent_wakes_with_a_message_from_another_clone() {
    let Some(codex) = codex() else { return };
    let (env, a, b, lane) = swarm_with_lane("codex");
    env.git(&a, &["config", "swarm.agentIdleWait", "15s"]);
    env.swarm(&a, &["agent", "install", "--host", "codex"]).ok();
    for checkout in [&a, &lane] {
        let hooks = env.read(&checkout.join(".codex/hooks.json"));
        assert!(hooks.contains("\"timeout\": 75"), "{hooks}");
    }
    let model = serve(
        Wire::Responses,
        Arc::new(|req, _| {
            if last_text(Wire::Responses, req).contains("please review the schema") {
                Reply::Text("on it".into())
            } else {
                Reply::Text("nothing left".into())
            }
        }),
    );
    let posted = notify_after_first_turn(&env, &b, &model, "please review the schema");
    let run = run_codex(&env, &codex, &a, &lane, &model, "anything left?");
    assert_completed(&run);
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
fn codex_install_keeps_user_hooks_and_uninstall_restores_the_bytes() {
    let Some(codex) = codex() else { return };
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let a = clones[0].clone();
    let marker = env.root().join("user-hook-ran");
    let original = format!(
        "{{\n    \"hooks\": {{\n        \"SessionStart\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"touch {}\"}}]}}],\n        \"PreToolUse\": [{{\"matcher\": \"^exec_command$\", \"hooks\": [{{\"type\": \"command\", \"command\": \"true\"}}]}}]\n    }}\n}}",
        marker.display()
    );
    std::fs::create_dir_all(a.join(".codex")).unwrap();
    env.write(&a.join(".codex/hooks.json"), &original);
    env.swarm(&a, &["agent", "install", "--host", "codex"]).ok();
    env.swarm(&a, &["agent", "install", "--host", "codex"]).ok();
    let installed = env.read(&a.join(".codex/hooks.json"));
    let v: Value = serde_json::from_str(&installed).unwrap();
    assert_eq!(
        v["hooks"]["SessionStart"].as_array().unwrap().len(),
        2,
        "{installed}"
    );
    assert_eq!(
        v["hooks"]["PreToolUse"].as_array().unwrap().len(),
        2,
        "{installed}"
    );
    let model = serve(Wire::Responses, Arc::new(|_, _| Reply::Text("ok".into())));
    let run = run_codex(&env, &codex, &a, &a, &model, "hello");
    assert_completed(&run);
    assert!(marker.exists(), "the user's own hook still runs");
    let text = model.all_text();
    assert!(text.contains("You are ann"), "and ours: {text}");
    env.swarm(&a, &["agent", "install", "--host", "codex", "--uninstall"])
        .ok();
    assert_eq!(env.read(&a.join(".codex/hooks.json")), original);
    assert!(!a.join("AGENTS.md").exists());
}

/// An API error ends `codex exec` non-zero with `turn.failed` naming it
/// (what the runner reads as a failed launch), the hooks notwithstanding.
#[test]
fn codex_api_error_fails_the_turn() {
    let Some(codex) = codex() else { return };
    let (env, a, _b, lane) = swarm_with_lane("codex");
    let model = serve(
        Wire::Responses,
        Arc::new(|_, _| Reply::Error {
            status: 400,
            message: "scripted failure".into(),
        }),
    );
    let run = run_codex(&env, &codex, &a, &lane, &model, "hello");
    assert_eq!(run.code, 1, "{run:?}");
    let ev = events(&run);
    assert!(
        ev.iter().any(|e| e["type"] == "turn.failed"
            && e["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("scripted failure"))),
        "{run:?}"
    );
    assert!(ev
        .iter()
        .any(|e| e["type"] == "thread.started" && e["thread_id"].is_string()));
    assert_eq!(model.turns().len(), 1, "no retry (request_max_retries = 0)");
}
