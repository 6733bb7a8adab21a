//! The runner and what the swarm spends, with a scripted host: a stand-in
//! for Claude Code headless that prints a recorded `stream-json` stream
//! (its session id, then a `result` with `usage` and `total_cost_usd`)
//! and finishes its task. The runner records each session's tokens with
//! the lane's records (the journal of the lane's plan, published with the
//! run's push); another clone sees them in `status --json` after a sync;
//! a budget of N tokens stops the next launch, escalated once, and raising
//! it resumes.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// The tokens every scripted session reports (2,000 in all) and its cost.
const USAGE: (u64, u64, u64, u64) = (1200, 300, 100, 400);
const COST: f64 = 0.05;

/// A host stand-in on disk: finishes the lane's task (commit, push to
/// main, `task done`) and prints the stream a headless Claude Code would,
/// with a session id of its own.
fn scripted_host(env: &TestEnv) -> PathBuf {
    let (input, read, write, output) = USAGE;
    let result = json!({"type": "result", "subtype": "success", "is_error": false,
        "session_id": "SESSION", "total_cost_usd": COST, "result": "done",
        "usage": {"input_tokens": input, "cache_read_input_tokens": read,
                  "cache_creation_input_tokens": write, "output_tokens": output}});
    let init = json!({"type": "system", "subtype": "init", "session_id": "SESSION"});
    let limit = json!({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning",
        "resetsAt": 1767243600, "rateLimitType": "five_hour"}, "session_id": "SESSION"});
    host_script(env, "sess", &[init, limit], &[result])
}

/// A host stand-in named `name` printing `before` (with SESSION replaced
/// by a session id of its own), finishing the lane's task, then `after`.
fn host_script(env: &TestEnv, name: &str, before: &[Value], after: &[Value]) -> PathBuf {
    let echo = |lines: &[Value]| {
        lines
            .iter()
            .map(|l| format!("echo '{l}' | sed \"s/SESSION/$session/\"\n"))
            .collect::<String>()
    };
    let script = format!(
        "#!/bin/sh\nsession=\"{name}-$$\"\n{}\
         task=$(basename \"$PWD\")\n\
         echo \"$task\" > \"$task.txt\" && git add \"$task.txt\" && git commit -qm \"$task\" && \
         for i in 1 2 3 4 5; do git pull -q --rebase origin main && git push -q origin HEAD:main && break; done && \
         git swarm task done >&2 || exit 1\n{}",
        echo(before),
        echo(after)
    );
    let path = env.root().join(format!("scripted-{name}"));
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn whats(run: &Value) -> Vec<String> {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap().to_string())
        .collect()
}

fn escalations(env: &TestEnv, remote: &Path) -> usize {
    env.git(remote, &["log", "--format=%B", "refs/swarm/plans/p"])
        .matches("Swarm-Escalation: budget")
        .count()
}

#[test]
fn the_runner_records_spend_per_session_another_clone_sums_it_and_a_budget_stops_launches() {
    let (mut env, remote, clones) = Swarm::new(&["lead", "bob"]).parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.set_env("GIT_SWARM_RUN_TICK_MS", "200");
    env.swarm(&a, &["plan", "new", "p", "--title", "P"]).ok();
    for t in ["t1", "t2"] {
        env.swarm(&a, &["task", "new", t, "--plan", "p", "--title", t])
            .ok();
    }
    env.swarm(&a, &["pool", "add", "w1", "--host", "claude"])
        .ok();
    let host = scripted_host(&env);
    env.git(&a, &["config", "swarm.protect", "refs/heads/release"]);
    env.git(
        &a,
        &[
            "config",
            "swarm.host.claude.command",
            &host.display().to_string(),
        ],
    );
    // One session's worth: the budget is reached once t1's agent ends.
    env.git(&a, &["config", "swarm.budget", "2k tokens"]);
    let run = env.swarm(
        &a,
        &["run", "--plan", "p", "--once", "--max-lanes", "1", "--json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let ran = run.json();
    assert_eq!(
        whats(&ran),
        ["launch", "finished", "budget", "idle"],
        "{ran:#}"
    );
    assert_eq!(ran["launched"], 1);
    assert!(ran["steps"][0]["text"]
        .as_str()
        .unwrap()
        .contains("task t1"));
    let budget = ran["steps"][2]["text"].as_str().unwrap();
    assert!(
        budget.contains("plan p reached its budget (2000 tokens; spent 2000 tokens, 0.05 USD)")
            && budget.contains("raising `swarm.budget` resumes"),
        "{budget}"
    );
    assert!(
        ran["steps"][3]["text"]
            .as_str()
            .unwrap()
            .contains("its budget is reached"),
        "{ran:#}"
    );
    let t2 = env
        .swarm(&a, &["task", "show", "t2", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(t2["task"]["status"], "open", "t2 was not launched: {t2}");
    // Published with the run's push: the spend entry in the lane's plan
    // and one escalation of class budget in the plan's.
    let lane_journal = env.git(&remote, &["log", "--format=%B", "refs/swarm/plans/t1"]);
    assert!(
        lane_journal.contains("Swarm-Event: spend")
            && lane_journal
                .contains("Swarm-Tokens: input=1200 cache_read=300 cache_write=100 output=400"),
        "{lane_journal}"
    );
    assert_eq!(escalations(&env, &remote), 1);
    // The stream's rate-limit report is the agent's reading on its account
    // (GIT_SWARM_ACCOUNT, set by the runner), as its hooks read it.
    let mut read = env.command("git-swarm", &a);
    read.args(["capacity", "--plan", "p", "--json"])
        .env("GIT_SWARM_AS", "w1")
        .env("GIT_SWARM_ACCOUNT", "w1");
    let out = read.output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["capacity"], "low @w1", "{r}");
    assert_eq!(r["reading"]["source"], "stream", "{r}");
    assert_eq!(r["reading"]["resets_at"], "2026-01-01T05:00:00Z", "{r}");

    // A re-run launches nothing and escalates nothing again.
    let again = env
        .swarm(&a, &["run", "--plan", "p", "--once", "--json"])
        .ok()
        .json();
    assert_eq!(whats(&again), ["budget", "idle"], "{again:#}");
    assert_eq!(again["launched"], 0);
    assert_eq!(escalations(&env, &remote), 1);

    // The other clone, after a sync, sums what the scripted host returned.
    env.swarm(&b, &["sync"]).ok();
    let s = env.swarm(&b, &["status", "--json"]).ok().json();
    let (input, read, write, output) = USAGE;
    let want = json!({"input": input, "cache_read": read, "cache_write": write, "output": output});
    let total = input + read + write + output;
    for (by, key) in [
        ("lanes", "t1"),
        ("tasks", "p/t1"),
        ("agents", "w1"),
        ("plans", "p"),
    ] {
        let t = &s["spend"][by][key];
        assert_eq!(t["tokens"], want, "{by} {key}: {s:#}");
        assert_eq!(t["total_tokens"], total, "{by} {key}");
        assert_eq!(t["sessions"], 1, "{by} {key}");
        assert_eq!(t["cost_usd"], COST, "{by} {key}");
    }
    let sessions = s["spend"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{s:#}");
    assert!(sessions[0]["session"]
        .as_str()
        .unwrap()
        .starts_with("sess-"));
    assert_eq!(sessions[0]["host"], "claude");
    assert_eq!(sessions[0]["tokens"], want);
    let text = env.swarm(&b, &["status"]).ok().stdout;
    assert!(
        text.contains("spent by task: p/t1 2000 tokens, 0.05 USD"),
        "{text}"
    );
    let lanes = env
        .swarm(&b, &["lane", "list", "--all", "--json"])
        .ok()
        .json();
    assert_eq!(lanes["spend"]["t1"]["total_tokens"], total, "{lanes:#}");
    let listed = env.swarm(&b, &["lane", "list", "--all"]).ok().stdout;
    assert!(listed.contains("spent   2000 tokens, 0.05 USD"), "{listed}");
    // Its own budget check reads the same spend: reached there too.
    env.git(&b, &["config", "swarm.budget", "2k tokens"]);
    let checked = env
        .swarm(&b, &["capacity", "budget", "--plan", "p", "--json"])
        .code(1)
        .json();
    assert_eq!(checked["reached"], true, "{checked}");
    let state = env.swarm(&b, &["state", "--plan", "p"]).ok().stdout;
    assert!(
        state.contains("task p/t1: 2000 tokens, 0.05 USD"),
        "{state}"
    );

    // Raising the budget resumes: t2 gets its agent.
    env.git(&a, &["config", "swarm.budget", "5k tokens"]);
    let resumed = env
        .swarm(&a, &["run", "--plan", "p", "--once", "--json"])
        .ok()
        .json();
    assert_eq!(
        whats(&resumed),
        ["launch", "finished", "idle"],
        "{resumed:#}"
    );
    assert!(resumed["steps"][0]["text"]
        .as_str()
        .unwrap()
        .contains("task t2"));
    assert_eq!(escalations(&env, &remote), 1);
    env.swarm(&b, &["sync"]).ok();
    let s = env.swarm(&b, &["status", "--json"]).ok().json();
    assert_eq!(s["spend"]["plans"]["p"]["total_tokens"], 2 * total);
    assert_eq!(s["spend"]["plans"]["p"]["sessions"], 2);
    assert_eq!(s["spend"]["tasks"]["p/t2"]["total_tokens"], total);
}

/// Codex's `exec --json` and Gemini CLI's `stream-json` figures go to the
/// spend records per session too, with no cost (neither host reports one).
#[test]
fn codex_and_gemini_streams_are_recorded_per_session() {
    let (mut env, _remote, clones) = Swarm::new(&["lead"]).parts();
    let a = clones[0].clone();
    env.set_env("GIT_SWARM_RUN_TICK_MS", "200");
    env.swarm(&a, &["plan", "new", "p", "--title", "P"]).ok();
    for t in ["t1", "t2"] {
        env.swarm(&a, &["task", "new", t, "--plan", "p", "--title", t])
            .ok();
    }
    let codex = host_script(
        &env,
        "codex",
        &[json!({"type": "thread.started", "thread_id": "SESSION"})],
        &[
            json!({"type": "turn.completed", "usage": {"input_tokens": 700,
            "cached_input_tokens": 200, "output_tokens": 90, "reasoning_output_tokens": 10}}),
        ],
    );
    let gemini = host_script(
        &env,
        "gemini",
        &[json!({"type": "init", "session_id": "SESSION"})],
        &[json!({"type": "result", "status": "success",
            "stats": {"input_tokens": 500, "cached": 100, "output_tokens": 50}})],
    );
    for (acc, host, path) in [("c1", "codex", &codex), ("g1", "gemini", &gemini)] {
        env.swarm(&a, &["pool", "add", acc, "--host", host]).ok();
        let key = format!("swarm.host.{host}.command");
        env.git(&a, &["config", &key, &path.display().to_string()]);
    }
    env.git(&a, &["config", "swarm.protect", "refs/heads/release"]);
    // Both at once, one on each account (each host its own).
    let run = env.swarm(
        &a,
        &["run", "--plan", "p", "--once", "--max-lanes", "2", "--json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let ran = run.json();
    let mut steps = whats(&ran);
    steps.sort();
    assert_eq!(
        steps,
        ["finished", "finished", "idle", "launch", "launch"],
        "{ran:#}"
    );
    let s = env.swarm(&a, &["status", "--json"]).ok().json();
    let mut by_host: Vec<(String, Value, Value)> = s["spend"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["host"].as_str().unwrap().to_string(),
                x["tokens"].clone(),
                x["cost_usd"].clone(),
            )
        })
        .collect();
    by_host.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        by_host,
        [
            (
                "codex".to_string(),
                json!({"input": 700, "cache_read": 200, "cache_write": 0, "output": 100}),
                Value::Null
            ),
            (
                "gemini".to_string(),
                json!({"input": 500, "cache_read": 100, "cache_write": 0, "output": 50}),
                Value::Null
            ),
        ],
        "{s:#}"
    );
    assert_eq!(s["spend"]["plans"]["p"]["total_tokens"], 1650);
    assert_eq!(s["spend"]["plans"]["p"]["sessions"], 2);
    assert!(s["spend"]["plans"]["p"].get("cost_usd").is_none(), "{s:#}");
}
