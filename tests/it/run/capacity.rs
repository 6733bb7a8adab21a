//! The capacity loop without a host: `git swarm capacity`, the kit
//! stand-in (`ak` on PATH) and its cap, every source-less case reading
//! `unknown`, the hooks at a task boundary (hand off now, hysteresis),
//! spend from a transcript in `status --json`, and the budget.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};

fn hook(env: &TestEnv, dir: &Path, event: &str, extra: &[(&str, &str)], input: &Value) -> Run {
    let mut cmd = env.command("git-swarm", dir);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd
        .args(["agent", "hook", event, "--host", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown: format!("agent hook {event}"),
    }
}

fn piped(env: &TestEnv, dir: &Path, args: &[&str], input: &str) -> Run {
    let mut child = env
        .command("git-swarm", dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        shown: format!("git swarm {}", args.join(" ")),
    }
}

/// A kit stand-in: `ak` on PATH printing `json`, counting its calls in `ak.calls`.
pub fn fake_ak(env: &TestEnv, json: &str) -> PathBuf {
    let calls = env.root().join("ak.calls");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\ncat <<'EOF'\n{json}\nEOF\n",
        calls.display()
    );
    let ak = env.root().join("bin/ak");
    std::fs::write(&ak, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ak, std::fs::Permissions::from_mode(0o755)).unwrap();
    calls
}

/// One clone `ann` with a plan `p`, a task `t1` she claimed and a lane `work`.
fn lane() -> (TestEnv, PathBuf, PathBuf) {
    let (env, _, clones) = Swarm::new(&["ann"])
        .run(0, &["plan", "new", "p", "--title", "The plan"])
        .parts();
    let a = clones[0].clone();
    env.swarm(&a, &["task", "new", "t1", "--plan", "p", "--title", "One"])
        .ok();
    let lane = env
        .swarm(
            &a,
            &["lane", "new", "work", "--plan", "p", "--no-task", "--json"],
        )
        .ok()
        .json();
    let path = PathBuf::from(
        lane["path"]
            .as_str()
            .or(lane["lane"]["path"].as_str())
            .expect("lane path"),
    );
    (env, a, path)
}

fn reading(env: &TestEnv, dir: &Path) -> Value {
    env.swarm(dir, &["capacity", "--json"]).ok().json()
}

#[test]
fn every_source_less_case_reads_unknown() {
    let (env, a, _) = lane();
    // No kit on PATH, no command, no host figures.
    let r = reading(&env, &a);
    assert_eq!(r["reading"]["state"], "unknown", "{r}");
    assert_eq!(r["reading"]["source"], "none");
    assert_eq!(r["capacity"], "unknown");
    assert_eq!(r["action"]["action"], "go", "unknown never triggers: {r}");
    // A capacity command that fails.
    env.git(&a, &["config", "swarm.capacityCommand", "exit 3"]);
    assert_eq!(reading(&env, &a)["reading"]["state"], "unknown");
    // An older kit: no JSON.
    fake_ak(&env, "usage: ak capacity [--self]");
    env.git(&a, &["config", "--unset", "swarm.capacityCommand"]);
    assert_eq!(reading(&env, &a)["reading"]["state"], "unknown");
    // JSON without a state or a percentage.
    fake_ak(&env, r#"{"version": "0.9"}"#);
    assert_eq!(reading(&env, &a)["reading"]["state"], "unknown");
    // A status line of an API-key session (no rate limits): context only.
    std::fs::remove_file(env.root().join("bin/ak")).unwrap();
    let run = piped(
        &env,
        &a,
        &["capacity", "note", "--from", "statusline", "--json"],
        r#"{"context_window": {"used_percentage": 12}}"#,
    )
    .ok();
    assert_eq!(run.json()["reading"]["state"], "unknown", "{run:?}");
    // A headless stream's plain "allowed" says nothing of the margin.
    let run = piped(
        &env,
        &a,
        &["capacity", "note", "--from", "stream", "--json"],
        r#"{"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}}"#,
    )
    .ok();
    assert_eq!(run.json()["reading"]["state"], "unknown");
}

#[test]
fn the_kit_stand_in_is_read_cached_and_a_cap_only_lowers_it() {
    let (env, a, _) = lane();
    let calls = fake_ak(
        &env,
        r#"{"state":"ok","percent_free":64,"window":"five_hour","resets_at":"2026-01-01T05:00:00Z","account":"work1"}"#,
    );
    let r = reading(&env, &a);
    assert_eq!(r["capacity"], "ok 64% @work1", "{r}");
    assert_eq!(r["reading"]["source"], "command");
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "capacity --self --json\n"
    );
    // Cached: a second check within 300 s starts no process.
    reading(&env, &a);
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 1);
    let cache = a.join(".git/swarm/capacity/ann@default.json");
    assert!(cache.is_file(), "the cache file");
    // The cap lowers (the cached reading too) ...
    let capped = env
        .swarm_env(
            &a,
            &[("AGENTKIT_CAPACITY_CAP", "@work1=8")],
            &["capacity", "--json"],
        )
        .ok()
        .json();
    assert_eq!(capped["capacity"], "critical 8% @work1", "{capped}");
    assert_eq!(capped["action"]["reason"], "capacity_critical");
    // ... and never raises; another profile's cap does nothing.
    for cap in ["@work1=90", "@other=8"] {
        let r = env
            .swarm_env(
                &a,
                &[("AGENTKIT_CAPACITY_CAP", cap)],
                &["capacity", "--json"],
            )
            .ok()
            .json();
        assert_eq!(r["capacity"], "ok 64% @work1", "{cap}: {r}");
    }
    // The kit's thresholds.
    let r = env
        .swarm_env(
            &a,
            &[("AGENTKIT_CAPACITY_LOW", "70")],
            &["capacity", "--json"],
        )
        .ok()
        .json();
    assert_eq!(r["capacity"], "low 64% @work1");
    // The task boundary commands carry the check: a lane's agent is told
    // to hand off, the coordinator to hand over.
    let cap = [("AGENTKIT_CAPACITY_CAP", "@work1=8")];
    let claim = env
        .swarm_env(&a, &cap, &["task", "claim", "t1", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(
        claim["capacity"]["action"]["reason"], "capacity_critical",
        "{claim}"
    );
    let claim = env
        .swarm_env(
            &a,
            &cap,
            &["lead", "claim", "--plan", "p", "--succession", "bob"],
        )
        .ok();
    claim.expect_stdout("you lead --plan p: write your coordinator packet now");
    claim.expect_stdout("git swarm lead handover <successor> --plan p");
    let low = env
        .swarm_env(&a, &[("AGENTKIT_CAPACITY_CAP", "@work1=20")], &["capacity"])
        .ok();
    low.expect_stdout("designate a likely successor now (`git swarm lead succession --plan p");
    // Past 300 s the kit is asked again.
    env.swarm_env(
        &a,
        &[("GIT_SWARM_NOW", "2099-01-01T00:00:00Z")],
        &["capacity", "--json"],
    )
    .ok();
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 2);
}

#[test]
fn a_report_carries_the_capacity_line_and_status_shows_it() {
    let (env, _a, lane) = lane();
    fake_ak(
        &env,
        r#"{"state":"ok","percent_free":64,"account":"@work1"}"#,
    );
    let r = env
        .swarm(&lane, &["report", "plan-ready", "--json"])
        .ok()
        .json();
    assert_eq!(r["capacity"], "ok 64% @work1", "{r}");
    // --capacity still overrides.
    let r = env
        .swarm(
            &lane,
            &["report", "plan-ready", "--capacity", "low 20% @x", "--json"],
        )
        .ok()
        .json();
    assert_eq!(r["capacity"], "low 20% @x");
    let s = env.swarm(&lane, &["status", "--json"]).ok().json();
    assert_eq!(s["plans"][0]["lanes"][0]["capacity"], "low 20% @x", "{s}");
    env.swarm(&lane, &["status"])
        .ok()
        .stdout_has("capacity=low 20% @x");
}

fn transcript(dir: &Path, name: &str, messages: &[(&str, u64, u64, u64, u64)]) -> PathBuf {
    let path = dir.join(name);
    let mut text = String::new();
    for (id, input, cache_read, cache_write, output) in messages {
        text.push_str(
            &json!({"type": "assistant", "message": {"id": id, "model": "claude-sonnet-4-5", "role": "assistant",
                "usage": {"input_tokens": input, "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write, "output_tokens": output}}})
            .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn critical_at_a_boundary_hands_off_and_is_never_sent_back() {
    let (env, a, lane) = lane();
    fake_ak(
        &env,
        r#"{"state":"ok","percent_free":64,"account":"work1"}"#,
    );
    let cap = [("AGENTKIT_CAPACITY_CAP", "@work1=8")];
    env.swarm(&lane, &["task", "claim", "t1", "--plan", "p"])
        .ok();
    let start = hook(
        &env,
        &lane,
        "session-start",
        &cap,
        &json!({"session_id": "s1"}),
    )
    .ok();
    let ctx: Value = serde_json::from_str(&start.stdout).unwrap();
    let text = ctx["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("Capacity: critical 8% @work1 (command"),
        "{text}"
    );
    assert!(
        text.contains("write your handoff packet now and stop")
            && text.contains("git swarm handoff --reason capacity_critical --next"),
        "{text}"
    );
    // The stop hook sends it back to write the packet.
    let stop = hook(&env, &lane, "stop", &cap, &json!({"session_id": "s1"})).ok();
    assert!(stop.stdout.contains("\"decision\":\"block\""), "{stop:?}");
    assert!(
        stop.stdout.contains("--reason capacity_critical"),
        "{stop:?}"
    );
    // A command that is no task boundary says nothing of it.
    let show = env
        .swarm_env(
            &lane,
            &cap,
            &["task", "show", "t1", "--plan", "p", "--json"],
        )
        .ok();
    assert!(show.json().get("capacity").is_none(), "not a boundary");
    // The packet, then: the stop goes through; the account recovering does
    // not send it back (hysteresis).
    env.swarm_env(
        &lane,
        &cap,
        &[
            "handoff",
            "--reason",
            "capacity_critical",
            "--next",
            "finish t1",
            "--task",
            "t1",
        ],
    )
    .ok();
    let stop = hook(&env, &lane, "stop", &cap, &json!({"session_id": "s1"})).ok();
    assert_eq!(
        stop.stdout, "",
        "may stop once the packet is open: {stop:?}"
    );
    let stop = hook(&env, &lane, "stop", &[], &json!({"session_id": "s2"})).ok();
    assert_eq!(stop.stdout, "", "recovered, still not sent back: {stop:?}");
    let start = hook(
        &env,
        &lane,
        "session-start",
        &[],
        &json!({"session_id": "s3"}),
    )
    .ok();
    assert!(
        start.stdout.contains("Do not take the task back"),
        "{start:?}"
    );
    // The verdict and the handoff are observations in the plan's journal.
    let log = env.git(&a, &["log", "--format=%s%n%b", "refs/swarm/plans/p"]);
    assert!(
        log.contains("capacity: ann at critical 8% @work1 (hand-off:capacity_critical)"),
        "{log}"
    );
    assert!(log.contains("Swarm-Event: capacity"), "{log}");
    assert!(log.contains("capacity: ann hands off (packet"), "{log}");
}

#[test]
fn context_pressure_from_the_transcript_and_spend_in_status() {
    let (env, _a, lane) = lane();
    env.swarm(&lane, &["task", "claim", "t1", "--plan", "p"])
        .ok();
    // 130,000 of a 200,000-token window: 65 %.
    let t = transcript(
        env.root(),
        "t.jsonl",
        &[
            ("m1", 1000, 0, 0, 50),
            ("m1", 1000, 0, 0, 60),
            ("m2", 120_000, 9_000, 1_000, 40),
        ],
    );
    let input = json!({"session_id": "s1", "transcript_path": t});
    let stop = hook(&env, &lane, "stop", &[], &input).ok();
    assert!(stop.stdout.contains("\"decision\":\"block\""), "{stop:?}");
    assert!(
        stop.stdout.contains("--reason context_pressure")
            && stop.stdout.contains("context 65% used"),
        "{stop:?}"
    );
    // The stop recorded the session's spend (each message once); a second
    // report of the same session does not double count.
    hook(&env, &lane, "stop", &[], &input).ok();
    let s = env.swarm(&lane, &["status", "--json"]).ok().json();
    let want = json!({"input": 121_000, "cache_read": 9_000, "cache_write": 1_000, "output": 100});
    assert_eq!(s["spend"]["lanes"]["work"]["tokens"], want, "{s}");
    assert_eq!(s["spend"]["tasks"]["p/t1"]["tokens"], want);
    assert_eq!(s["spend"]["agents"]["ann"]["total_tokens"], 131_100);
    assert_eq!(s["spend"]["plans"]["p"]["sessions"], 1);
    assert_eq!(s["plans"][0]["lanes"][0]["spend"]["total_tokens"], 131_100);
}

#[test]
fn a_budget_reached_is_told_escalated_once_and_raising_it_resumes() {
    let (env, a, lane) = lane();
    let t = transcript(env.root(), "t.jsonl", &[("m1", 600, 0, 0, 400)]);
    hook(
        &env,
        &lane,
        "stop",
        &[],
        &json!({"session_id": "s1", "transcript_path": t}),
    )
    .ok();
    env.git(&a, &["config", "swarm.budget", "1k tokens"]);
    let b = env.swarm(&lane, &["capacity", "budget", "--json"]).code(1);
    assert_eq!(b.json()["reached"], true, "{b:?}");
    for s in ["s2", "s3"] {
        let start = hook(&env, &lane, "session-start", &[], &json!({"session_id": s})).ok();
        assert!(
            start
                .stdout
                .contains("plan p reached its budget (1000 tokens; spent 1000 tokens)"),
            "{start:?}"
        );
    }
    let log = env.git(&a, &["log", "--format=%B", "refs/swarm/plans/p"]);
    assert_eq!(log.matches("Swarm-Escalation: budget").count(), 1, "{log}");
    env.git(&a, &["config", "swarm.budget", "2k tokens"]);
    env.swarm(&lane, &["capacity", "budget"]).ok();
    let start = hook(
        &env,
        &lane,
        "session-start",
        &[],
        &json!({"session_id": "s4"}),
    )
    .ok();
    assert!(!start.stdout.contains("budget"), "{start:?}");
}

#[test]
fn install_adds_the_status_line_which_records_the_reading_and_prints_the_previous_one() {
    let (env, a, lane) = lane();
    let settings = a.join(".claude/settings.local.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"statusLine": {"type": "command", "command": "echo my-bar"}}"#,
    )
    .unwrap();
    env.swarm(&a, &["agent", "install", "--host", "claude"])
        .ok();
    let v: Value = serde_json::from_str(&env.read(&settings)).unwrap();
    let cmd = v["statusLine"]["command"].as_str().unwrap().to_string();
    assert_eq!(cmd, "git-swarm capacity statusline --then 'echo my-bar'");
    // The host runs it with its status line input.
    let input = json!({"context_window": {"used_percentage": 12},
        "rate_limits": {"five_hour": {"used_percentage": 80, "resets_at": 1767243600},
                        "seven_day": {"used_percentage": 10, "resets_at": 1767800000}}});
    let mut child = env
        .command("sh", &lane)
        .args(["-c", &cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "my-bar\n");
    let r = reading(&env, &lane);
    assert_eq!(r["capacity"], "low 20%", "{r}");
    assert_eq!(r["reading"]["source"], "claude-statusline");
    assert_eq!(r["reading"]["window"], "five_hour");
    // Uninstall puts the user's status line back.
    env.swarm(&a, &["agent", "install", "--host", "claude", "--uninstall"])
        .ok();
    let v: Value = serde_json::from_str(&env.read(&settings)).unwrap();
    assert_eq!(v["statusLine"]["command"], "echo my-bar");
}
