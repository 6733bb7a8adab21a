//! `git swarm run` with the real Claude Code CLI (pinned in
//! tests/agents/setup.sh), one scripted model on 127.0.0.1 per account
//! (the account's `--env ANTHROPIC_BASE_URL`): the runner launches an
//! agent on the ready task, the agent hands off (`handoff --reason
//! capacity_critical`), a successor on the other account accepts the
//! packet and finishes, the dependent task then gets an agent, and
//! `--once` exits 0 with every task done, no keystroke typed.
//!
//! Without `GIT_SWARM_CLAUDE` the test skips with a note, unless
//! `GIT_SWARM_REQUIRE_AGENTS=1` (CI), where it fails instead.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use git_swarm::ops::demo::model::{sse, text_of};

use crate::support::fixture::Swarm;

pub(crate) fn claude() -> Option<PathBuf> {
    match std::env::var("GIT_SWARM_CLAUDE") {
        Ok(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var("GIT_SWARM_REQUIRE_AGENTS").as_deref() == Ok("1") => {
            panic!("GIT_SWARM_REQUIRE_AGENTS=1 but GIT_SWARM_CLAUDE is not set")
        }
        _ => {
            eprintln!("note: skipping the runner's Claude Code test: GIT_SWARM_CLAUDE not set");
            None
        }
    }
}

/// A scripted Messages API: the first tool-enabled turn of a session runs
/// one Bash command chosen from the brief, every later turn answers text.
/// It counts the sessions it serves at once (`max_concurrent`).
pub(crate) struct Model {
    pub(crate) url: String,
    server: Arc<tiny_http::Server>,
    pub(crate) commands: Arc<Mutex<Vec<String>>>,
    pub(crate) max_concurrent: Arc<AtomicUsize>,
    /// Messages answered: each reports 10 input and 5 output tokens.
    pub(crate) served: Arc<AtomicUsize>,
    /// The sessions between their tool call and its result.
    pub(crate) live: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl Drop for Model {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

/// The command an agent runs for its brief (the first user message).
fn script(brief: &str) -> String {
    if let Some(rest) = brief.split("First run `git swarm accept ").nth(1) {
        let id = rest.split('`').next().unwrap_or("");
        return format!("git swarm accept {id} && {}", finish("t1"));
    }
    if brief.contains("Your task is t1:") {
        return "git swarm handoff --reason capacity_critical --next 'finish t1'".into();
    }
    finish("t2")
}

/// Commit the task's work, merge it (a push to main) and mark it done.
pub fn finish(task: &str) -> String {
    format!(
        "echo {task} > {task}.txt && git add {task}.txt && git commit -qm '{task}' && \
         git push -q origin HEAD:main && git swarm task done"
    )
}

fn serve() -> Model {
    serve_with(script)
}

/// A scripted model whose first tool call of a session is `script(brief)`.
pub(crate) fn serve_with(script: impl Fn(&str) -> String + Send + 'static) -> Model {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let port = server.server_addr().to_ip().expect("ip").port();
    let commands = Arc::new(Mutex::new(Vec::new()));
    let max_concurrent = Arc::new(AtomicUsize::new(0));
    let served = Arc::new(AtomicUsize::new(0));
    let live = Arc::new(Mutex::new(std::collections::BTreeSet::<String>::new()));
    let (srv, cmds, max) = (server.clone(), commands.clone(), max_concurrent.clone());
    let held = live.clone();
    let count = served.clone();
    std::thread::spawn(move || {
        for mut req in srv.incoming_requests() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            if !req.url().starts_with("/v1/messages") || req.url().contains("count_tokens") {
                let _ = req.respond(tiny_http::Response::from_string("{\"input_tokens\": 10}"));
                continue;
            }
            let msgs = v["messages"].as_array().cloned().unwrap_or_default();
            let brief: String = msgs
                .iter()
                .map(|m| text_of(&m["content"]))
                .collect::<Vec<_>>()
                .join("\n");
            let answered = msgs.iter().any(|m| m["role"] == "assistant");
            let tools = v["tools"].as_array().is_some_and(|t| !t.is_empty());
            let last = msgs
                .last()
                .map(|m| text_of(&m["content"]))
                .unwrap_or_default();
            let session = v["metadata"]["user_id"].as_str().unwrap_or("").to_string();
            let reply = if tools && !answered {
                let cmd = script(&brief);
                cmds.lock().unwrap().push(cmd.clone());
                let mut l = live.lock().unwrap();
                l.insert(session.clone());
                max.fetch_max(l.len(), Ordering::SeqCst);
                sse(Some(&cmd))
            } else {
                if tools && last.contains("tool_result") {
                    live.lock().unwrap().remove(&session);
                    cmds.lock().unwrap().push(format!("result: {last}"));
                } else if tools {
                    cmds.lock()
                        .unwrap()
                        .push(format!("asked: {} messages", msgs.len()));
                }
                sse(None)
            };
            count.fetch_add(1, Ordering::SeqCst);
            let h = tiny_http::Header::from_bytes("content-type", "text/event-stream").unwrap();
            let _ = req.respond(tiny_http::Response::from_string(reply).with_header(h));
        }
    });
    Model {
        url: format!("http://127.0.0.1:{port}"),
        server,
        commands,
        max_concurrent,
        served,
        live: held,
    }
}

/// Declare a Claude account whose host talks to `m`, with its own config dir.
pub(crate) fn add_account(
    env: &crate::support::harness::TestEnv,
    clone: &std::path::Path,
    name: &str,
    m: &Model,
) {
    let dir = env.root().join(format!("claude-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let args = git_swarm::ops::demo::drill::claude_account(name, &m.url, &dir);
    env.swarm(clone, &args.iter().map(String::as_str).collect::<Vec<_>>())
        .ok();
}

#[test]
fn run_hands_off_to_a_successor_that_accepts_and_finishes_the_plan() {
    let Some(claude) = claude() else { return };
    let (mut env, remote, clones) = Swarm::new(&["lead"]).parts();
    let a = clones[0].clone();
    env.set_env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests");
    env.set_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    env.set_env("DISABLE_TELEMETRY", "1");
    env.set_env("DISABLE_AUTOUPDATER", "1");
    env.set_env("GIT_SWARM_RUN_TICK_MS", "300");
    env.swarm(&a, &["plan", "new", "p", "--title", "The plan"])
        .ok();
    env.swarm(
        &a,
        &[
            "task",
            "new",
            "t1",
            "--plan",
            "p",
            "--title",
            "first",
            "--acceptance",
            "packet accepted",
        ],
    )
    .ok();
    env.swarm(
        &a,
        &[
            "task",
            "new",
            "t2",
            "--plan",
            "p",
            "--title",
            "second",
            "--depends-on",
            "t1",
        ],
    )
    .ok();
    let (m1, m2) = (serve(), serve());
    for (name, m) in [("w1", &m1), ("w2", &m2)] {
        add_account(&env, &a, name, m);
    }
    // The agents merge their lanes by a push to main (no leader publishes here).
    env.git(&a, &["config", "swarm.protect", "refs/heads/release"]);
    env.git(
        &a,
        &[
            "config",
            "swarm.host.claude.command",
            &format!("{} --allowedTools Bash", claude.display()),
        ],
    );
    let run = env.swarm(
        &a,
        &["run", "--plan", "p", "--once", "--max-lanes", "2", "--json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let ran = run.json();
    let whats: Vec<&str> = ran["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    eprintln!(
        "m1: {:#?}\nm2: {:#?}",
        m1.commands.lock().unwrap(),
        m2.commands.lock().unwrap()
    );
    // The first four happen in this order; t2's launch and t1's end race
    // (t1 is done before its agent's process exits).
    assert_eq!(
        whats[..4],
        ["launch", "handoff", "launch", "accepted"],
        "{ran:#}"
    );
    let mut rest = whats[4..whats.len() - 1].to_vec();
    rest.sort();
    assert_eq!(rest, ["finished", "finished", "launch"], "{ran:#}");
    assert_eq!(whats.last(), Some(&"idle"));
    assert_eq!(ran["launched"], 3);
    let steps = ran["steps"].as_array().unwrap();
    assert_eq!(steps[0]["account"], "w1");
    assert_eq!(
        steps[2]["account"], "w2",
        "the successor runs on the other account"
    );
    // Every task done, the packet accepted once, every account free.
    for t in ["t1", "t2"] {
        let shown = env
            .swarm(&a, &["task", "show", t, "--plan", "p", "--json"])
            .ok()
            .json();
        assert_eq!(shown["task"]["status"], "done", "{t}: {shown}");
    }
    let packets = env
        .swarm(&a, &["packets", "--plan", "t1", "--json"])
        .ok()
        .json();
    let packets = packets["packets"].as_array().unwrap();
    assert_eq!(packets.len(), 1);
    assert_eq!(packets[0]["accepted_by"], "w2");
    let pool = env.swarm(&a, &["pool", "list", "--json"]).ok().json();
    for acc in pool["accounts"].as_array().unwrap() {
        assert_eq!(acc["state"], "free", "{acc}");
    }
    // What each model was asked to do, and never two sessions at once.
    assert_eq!(
        m1.commands.lock().unwrap()[0],
        "git swarm handoff --reason capacity_critical --next 'finish t1'"
    );
    assert!(
        m2.commands.lock().unwrap()[0].starts_with("git swarm accept "),
        "{:?}",
        m2.commands
    );
    assert!(
        m1.max_concurrent.load(Ordering::SeqCst) <= 1
            && m2.max_concurrent.load(Ordering::SeqCst) <= 1
    );
    // The tokens the models returned are the tokens status shows, per
    // plan, and per task and lane (each lane worked on its own task).
    let n = (m1.served.load(Ordering::SeqCst) + m2.served.load(Ordering::SeqCst)) as u64;
    let st = env.swarm(&a, &["status", "--json"]).ok().json();
    let sp = &st["spend"];
    let want = json!({"input": 10 * n, "cache_read": 0, "cache_write": 0, "output": 5 * n});
    assert_eq!(sp["plans"]["p"]["tokens"], want, "{n} messages: {sp:#}");
    assert_eq!(sp["plans"]["p"]["sessions"], 3, "{sp:#}");
    let mut sum = 0;
    for t in ["t1", "t2"] {
        let task = &sp["tasks"][format!("p/{t}")];
        assert_eq!(
            sp["lanes"][t], *task,
            "lane {t} spent what task {t} did: {sp:#}"
        );
        sum += task["total_tokens"].as_u64().unwrap();
    }
    assert_eq!(sum, 15 * n, "{sp:#}");
    // The account records carry the agent's session and tokens, published.
    let log = env.git(&remote, &["log", "--format=%s", "refs/swarm/pool/w2"]);
    assert!(log.contains("leases account w2 for lane t1"), "{log}");
    let renewals = env.git(&remote, &["log", "--format=%s", "refs/swarm/pool/w1"]);
    assert!(
        renewals.contains("renews account w1") && renewals.contains("frees account w1"),
        "{renewals}"
    );
}
