//! An older git than the newest: `wait` and the agents' idle hook work
//! without `git fetch --porcelain` (git 2.41), reading `git fetch --dry-run`'s
//! lines instead, and what needs a newer git says so at once (`GIT_TOO_OLD`,
//! exit 4, naming the installed version, the one needed and what for).
//!
//! The git here is the real one behind a wrapper that only answers
//! `git --version` with an older number, so these run on any git; CI also
//! runs them, the demo and the wait tests with Debian's own 2.39
//! (`GIT_SWARM_TEST_GIT=/usr/bin/git`, see .ci/run).

use std::io::Write;
use std::process::Stdio;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::{finish, spawn};

/// Put a `git` first on PATH that says it is `version` and is otherwise
/// the real git.
fn claim_version(env: &TestEnv, version: &str) {
    let real = env.git(env.root(), &["--exec-path"]);
    let real = std::path::Path::new(&real).join("git");
    let real = if real.exists() { real } else { which_git(env) };
    let shim = env.bin.join("git");
    let _ = std::fs::remove_file(&shim);
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'git version {version}'; exit 0; fi\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        env.git(env.root(), &["--version"]),
        format!("git version {version}")
    );
}

/// `git-swarm <args>` run directly (`git swarm` would put git's exec-path,
/// with the real git, first on PATH), tracing the gits it runs into
/// `trace`.
fn direct(
    env: &TestEnv,
    dir: &std::path::Path,
    trace: &std::path::Path,
    vars: &[(&str, &str)],
    args: &[&str],
) -> crate::support::harness::Run {
    let mut all = vec![("GIT_TRACE", trace.to_str().unwrap())];
    all.extend_from_slice(vars);
    finish(
        spawn(env, dir, &all, args),
        &format!("git-swarm {}", args.join(" ")),
    )
}

/// What the traced gits asked the remote: `asked` (`ls-remote` for the
/// messages, `fetch --dry-run` for the other kinds), never `fetch
/// --porcelain` (which this git would not know).
fn asked_without_porcelain(trace: &std::path::Path, asked: &str) {
    let text = std::fs::read_to_string(trace).unwrap();
    assert!(text.contains(asked), "{text}");
    assert!(
        !text.contains("--porcelain --prune"),
        "no fetch --porcelain: {text}"
    );
}

fn which_git(env: &TestEnv) -> std::path::PathBuf {
    let out = env
        .command("sh", env.root())
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn wait_wakes_on_a_message_from_another_clone_with_git_2_39() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    claim_version(&env, "2.39.5");
    // Posted first: only the remote round of the wait can find it.
    env.swarm(ann, &["notify", "bob", "--plan", "p", "wake up"])
        .ok();
    let trace = env.root().join("trace");
    let woke = direct(
        &env,
        bob,
        &trace,
        &[],
        &[
            "wait",
            "--for",
            "message",
            "--json",
            "--timeout",
            "120s",
            "--interval",
            "100ms",
        ],
    );
    asked_without_porcelain(&trace, "built-in: git ls-remote");
    assert_eq!(woke.code, 0, "{woke:#?}");
    let doc = woke.json();
    assert_eq!(doc["messages"][0]["body"], "wake up", "{doc}");
    assert_eq!(doc["cost"]["remote_errors"], 0, "{doc}");
    assert!(doc["cost"]["fetches"].as_u64().unwrap() >= 1, "{doc}");
    // Nothing new: a virtual 10-minute wait asks the remote every round and
    // never fails to.
    let timed_out = direct(
        &env,
        bob,
        &trace,
        &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
        &["wait", "--for", "message", "--timeout", "10m", "--json"],
    )
    .err(1, "WAIT_TIMEOUT");
    let cost = &timed_out.json()["error"]["detail"]["cost"];
    assert_eq!(cost["remote_errors"], 0, "{cost}");
    assert_eq!(cost["fetches"], 0, "{cost}");
    assert!(cost["remote_queries"].as_u64().unwrap() > 5, "{cost}");
}

/// A claim in another clone (a fast-forward of the task ref) wakes a
/// `wait --for task`, asked by the dry run's lines.
#[test]
fn wait_for_task_wakes_on_a_claim_with_git_2_39() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .task(0, "t1", "first")
        .sync(1)
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    claim_version(&env, "2.39.5");
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    let trace = env.root().join("trace");
    let run = direct(
        &env,
        bob,
        &trace,
        &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
        &[
            "wait",
            "--for",
            "task",
            "--plan",
            "p",
            "--timeout",
            "1m",
            "--json",
        ],
    )
    .ok();
    asked_without_porcelain(&trace, "fetch --dry-run --prune");
    let doc = run.json();
    assert_eq!(
        doc["refs"],
        serde_json::json!(["refs/swarm/tasks/p/t1"]),
        "{doc}"
    );
}

#[test]
fn the_idle_hook_wakes_on_a_message_from_another_clone_with_git_2_39() {
    let (env, _, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    claim_version(&env, "2.39.5");
    env.git(bob, &["config", "swarm.agentIdleWait", "60s"]);
    env.swarm(ann, &["notify", "bob", "--plan", "p", "start on the ui"])
        .ok();
    let trace = env.root().join("trace");
    let mut child = env
        .command("git-swarm", bob)
        .env("GIT_TRACE", &trace)
        .args(["agent", "hook", "stop", "--host", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"hook_event_name":"Stop","session_id":"s","stop_hook_active":false}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["decision"], "block", "{answer}");
    asked_without_porcelain(&trace, "built-in: git ls-remote");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("start on the ui"),
        "{answer}"
    );
}

#[test]
fn the_forecast_on_git_2_37_is_git_too_old_naming_both_versions_and_what_for() {
    let (env, _, clones) = Swarm::new(&["ann"]).plan(0, "p").lane(0, "ui").parts();
    let ann = &clones[0];
    claim_version(&env, "2.37.1");
    let before = env.all_refs(ann);
    let trace = env.root().join("trace");
    let run = direct(&env, ann, &trace, &[], &["forecast"]).err(4, "GIT_TOO_OLD");
    run.expect_stderr("git 2.38 or newer");
    run.expect_stderr("`git merge-tree --write-tree`");
    run.expect_stderr("the installed git is 2.37");
    assert_eq!(env.all_refs(ann), before, "nothing written");
    // Everything else works on it.
    direct(&env, ann, &trace, &[], &["status"]).ok();
}
