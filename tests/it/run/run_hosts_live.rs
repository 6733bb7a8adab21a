//! `git swarm run` launching the real Codex and Gemini CLIs (pinned in
//! tests/agents/setup.sh) headless, each on a pool account whose `--env`
//! points the host at a scripted model on 127.0.0.1
//! ([`crate::support::model_server`]; the API key stays in the runner's
//! environment, as `pool add` refuses credential-like names): the agent
//! runs one shell command that commits, merges (a push to main) and marks
//! the task done, and the runner reads the host's stream for the session
//! id, the tokens and the turn's end.
//!
//! Without `GIT_SWARM_CODEX` / `GIT_SWARM_GEMINI` a test skips with a
//! note, unless `GIT_SWARM_REQUIRE_AGENTS=1` (CI), where it fails instead.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use crate::agents::agents_live_codex::{codex, codex_home};
use crate::agents::agents_live_gemini::{gemini, gemini_home};
use crate::run::run_live::finish;
use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::model_server::{has_tools, request_text, serve, Model, Reply, Wire};

/// How one host is set up for the runner: the runner's own environment
/// (the API key), the account's `--env`, and `swarm.host.<host>.command`.
struct Host {
    name: &'static str,
    wire: Wire,
    /// The shell tool call running `cmd`.
    tool: fn(&str) -> Reply,
    setup: fn(&mut TestEnv, &Model, &Path) -> (Vec<String>, String),
}

/// One task (t1) on one account of `host`, `run --once`: every assertion
/// but where the session id comes from, which the caller checks against
/// its host; returns the session id the runner read, the model and the
/// test's environment.
fn runs_one_task(host: Host, bin: &Path) -> (String, Model, TestEnv) {
    let (mut env, remote, clones) = Swarm::new(&["lead", "other"]).parts();
    let (a, other) = (clones[0].clone(), clones[1].clone());
    env.set_env("GIT_SWARM_RUN_TICK_MS", "300");
    env.swarm(&a, &["plan", "new", "p", "--title", "The plan"])
        .ok();
    env.swarm(
        &a,
        &["task", "new", "t1", "--plan", "p", "--title", "first"],
    )
    .ok();
    let tool = host.tool;
    let wire = host.wire;
    let model = serve(
        wire,
        Arc::new(move |req, _| {
            if !has_tools(wire, req) {
                Reply::Text("ok".into())
            } else if request_text(wire, req).contains("[tool_result]") {
                Reply::Text("done".into())
            } else {
                tool(&finish("t1"))
            }
        }),
    );
    let (vars, command) = (host.setup)(&mut env, &model, bin);
    let account = format!("{}1", host.name);
    let address = format!("{}-agent", host.name);
    let mut add = vec![
        "pool",
        "add",
        &account,
        "--host",
        host.name,
        "--address",
        &address,
    ];
    for v in &vars {
        add.extend(["--env", v.as_str()]);
    }
    env.swarm(&a, &add).ok();
    // The agent merges its lane by a push to main (no leader publishes here).
    env.git(&a, &["config", "swarm.protect", "refs/heads/release"]);
    env.git(
        &a,
        &[
            "config",
            &format!("swarm.host.{}.command", host.name),
            &command,
        ],
    );
    let run = env.swarm(&a, &["run", "--plan", "p", "--once", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let ran = run.json();
    let steps = ran["steps"].as_array().unwrap();
    let whats: Vec<&str> = steps.iter().map(|s| s["what"].as_str().unwrap()).collect();
    assert_eq!(whats, ["launch", "finished", "idle"], "{ran:#}");
    assert_eq!(steps[0]["account"], account.as_str());
    assert!(
        steps[0]["text"].as_str().unwrap().starts_with(&format!(
            "launched {} on account {account} (as {address}) for task t1",
            host.name
        )),
        "{ran:#}"
    );
    // What the model was shown: the runner's brief.
    let shown = model.all_text();
    assert!(
        shown.contains(&format!(
            "You are {address}, an agent of git-swarm plan p. Your task is t1: first."
        )),
        "{shown}"
    );
    assert!(
        shown.contains("[tool_result]"),
        "the agent saw its command run: {shown}"
    );
    // The tokens the runner read are what the scripted model returned
    // (10 in, 5 out per turn request), and the session is the host's.
    let tokens = 15 * model.turns().len();
    let finished = steps[1]["text"].as_str().unwrap();
    let session = finished
        .split("(session ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no session in {finished:?}"))
        .to_string();
    assert_eq!(
        finished,
        format!(
            "{} on {account} exited: task t1 is done (session {session}, {tokens} tokens); account {account} freed",
            host.name
        )
    );
    // Published: the account's record carries the session and the tokens.
    let record = env.git(
        &remote,
        &["log", "-p", &format!("refs/swarm/pool/{account}")],
    );
    assert!(record.contains(&format!("session: {session}")), "{record}");
    assert!(
        record.contains(&format!("input_tokens: {}", 10 * model.turns().len())),
        "{record}"
    );
    // The task's work is merged, and it is done by the account's address.
    assert_eq!(env.git(&remote, &["show", "main:t1.txt"]), "t1");
    env.swarm(&other, &["sync"]).ok();
    let task = env
        .swarm(&other, &["task", "show", "t1", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(task["task"]["status"], "done", "{task}");
    let journal = task["journal"].as_array().cloned().unwrap_or_default();
    assert!(
        journal.iter().any(|e| e["actor"] == address.as_str()
            && e["event"].as_str().is_some_and(|ev| ev.contains("done"))),
        "{task}"
    );
    let pool = env.swarm(&a, &["pool", "list", "--json"]).ok().json();
    for acc in pool["accounts"].as_array().unwrap() {
        assert_eq!(acc["state"], "free", "{acc}");
    }
    (session, model, env)
}

fn codex_setup(env: &mut TestEnv, model: &Model, bin: &Path) -> (Vec<String>, String) {
    let home = codex_home(env, model, &[]);
    env.set_env("SCRIPTED_API_KEY", "sk-dummy-key-for-tests");
    (
        vec![format!("CODEX_HOME={}", home.display())],
        // Its shell pushes to the test's remote, outside the workspace.
        format!("{} --sandbox danger-full-access", bin.display()),
    )
}

fn gemini_setup(env: &mut TestEnv, model: &Model, bin: &Path) -> (Vec<String>, String) {
    let home = gemini_home(env);
    env.set_env("GEMINI_API_KEY", "dummy-key-for-tests");
    (
        vec![
            format!("GEMINI_CLI_HOME={}", home.display()),
            format!("GOOGLE_GEMINI_BASE_URL={}", model.url),
            "GEMINI_CLI_TRUST_WORKSPACE=true".into(),
            "GEMINI_CLI_NO_RELAUNCH=true".into(),
            format!("TMPDIR={}", env.root().display()),
        ],
        format!(
            "{} --model gemini-2.5-flash --approval-mode yolo",
            bin.display()
        ),
    )
}

#[test]
fn run_launches_codex_on_a_task_and_reads_its_session_and_tokens() {
    let Some(bin) = codex() else { return };
    let host = Host {
        name: "codex",
        wire: Wire::Responses,
        tool: |cmd| Reply::Tool {
            name: "exec_command".into(),
            input: json!({"cmd": cmd, "yield_time_ms": 30000, "login": false}),
        },
        setup: codex_setup,
    };
    let (session, model, _env) = runs_one_task(host, &bin);
    // Codex's thread id, as it sent it to the model.
    assert_eq!(model.turns()[0]["prompt_cache_key"], session.as_str());
}

#[test]
fn run_launches_gemini_on_a_task_and_reads_its_session_and_tokens() {
    let Some(bin) = gemini() else { return };
    let host = Host {
        name: "gemini",
        wire: Wire::Gemini,
        tool: |cmd| Reply::Tool {
            name: "run_shell_command".into(),
            input: json!({"command": cmd, "description": "finish the task"}),
        },
        setup: gemini_setup,
    };
    let (session, _model, env) = runs_one_task(host, &bin);
    // Gemini CLI's session, as it recorded the chat in its home.
    let chats = files_under(&env.root().join("gemini-home/.gemini/tmp"));
    assert!(
        chats
            .iter()
            .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(&session))),
        "{session} in none of {chats:?}"
    );
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
