//! The method's drill with the real Claude Code CLI (pinned in
//! tests/agents/setup.sh): a bare remote, two clones (ann, bob), a plan of
//! four tasks (t3 depends on t1), a pool of four accounts (two declared on
//! each clone), each with its own scripted model on 127.0.0.1, and a
//! `git swarm run --lead` runner on each clone. t1's agent hands off
//! (`handoff --reason capacity_critical`) and a successor on another
//! account accepts the packet and finishes; t2's agent is killed by SIGKILL
//! and its lane resumed; ann's runner (the coordinator's) is killed by
//! SIGKILL and bob's runner takes over and finishes the plan.
//!
//! Without `GIT_SWARM_CLAUDE` the test skips with a note, unless
//! `GIT_SWARM_REQUIRE_AGENTS=1` (CI), where it fails instead.

use std::path::Path;
use std::sync::atomic::Ordering;

use serde_json::Value;

use git_swarm::ops::demo::drill::script;

use crate::run::run_live::{add_account, claude, serve_with, Model};
use crate::run::run_recover::{claim_lead, pool_pids, until};
use crate::support::fixture::Swarm;
use crate::support::process;

/// The drill and `demo --agents` each run eight Claude Code sessions on
/// 15 s leases: on two cores, run at once they starve each other's leases,
/// so they take turns.
static ONE_DRILL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn lead_status(env: &crate::support::harness::TestEnv, dir: &Path) -> Value {
    env.swarm(dir, &["lead", "status", "--plan", "p", "--json"])
        .json()
}

#[test]
fn drill_handoff_agent_loss_and_succession_finish_the_plan() {
    let Some(claude) = claude() else { return };
    let _turn = ONE_DRILL.lock().unwrap_or_else(|e| e.into_inner());
    let (mut env, remote, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    let marks = env.root().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    env.set_env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-tests");
    env.set_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    env.set_env("DISABLE_TELEMETRY", "1");
    env.set_env("DISABLE_AUTOUPDATER", "1");
    env.set_env("GIT_SWARM_RUN_TICK_MS", "300");
    env.swarm(&a, &["plan", "new", "p", "--title", "The drill"])
        .ok();
    for t in ["t1", "t2", "t3", "t4"] {
        let mut args = vec!["task", "new", t, "--plan", "p", "--title", t];
        if t == "t3" {
            args.extend(["--depends-on", "t1"]);
        }
        env.swarm(&a, &args).ok();
    }
    let models: Vec<Model> = (0..4)
        .map(|_| {
            let m = marks.clone();
            serve_with(move |brief| script(brief, &m))
        })
        .collect();
    for (i, m) in models.iter().enumerate() {
        let name = format!("w{}", i + 1);
        add_account(&env, if i < 2 { &a } else { &b }, &name, m);
    }
    for c in &clones {
        env.git(c, &["config", "swarm.protect", "refs/heads/release"]);
        env.git(
            c,
            &[
                "config",
                "swarm.host.claude.command",
                &format!("{} --allowedTools Bash", claude.display()),
            ],
        );
        for k in ["swarm.poolLease", "swarm.taskLease"] {
            env.git(c, &["config", k, "15s"]);
        }
    }
    claim_lead(&env, &a, "15s");
    for c in &clones {
        env.swarm(c, &["sync"]).ok();
    }
    // ann's runner says each step as it goes (it is killed before it could
    // print a summary); bob's prints its steps as JSON when it stops.
    let run = ["run", "--plan", "p", "--lead", "--max-lanes", "2", "--json"];
    let ann = process::spawn(&env, &a, &[("GIT_SWARM_MACHINE", "box-a")], &run[..6]);
    let bob = process::spawn(&env, &b, &[("GIT_SWARM_MACHINE", "box-b")], &run);

    // t2's agent hangs: kill it (the Claude process and its Bash tool's
    // shell) by SIGKILL, and let its model forget the session it served.
    let t2 = marks.join("t2.pid");
    until("t2's agent is at work", || t2.exists());
    let shell: i32 = std::fs::read_to_string(&t2)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pool = env.swarm(&b, &["pool", "list", "--json"]).json();
    let lease = pool["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["lease"]["lane"] == "t2")
        .unwrap_or_else(|| panic!("no lease for t2: {pool:#}"))
        .clone();
    let agent = lease["lease"]["agent"]["pid"].as_i64().unwrap() as i32;
    std::fs::remove_file(&t2).unwrap();
    // SAFETY: SIGKILL to the agent and shell this test's runner started.
    unsafe {
        libc::kill(agent, libc::SIGKILL);
        libc::kill(shell, libc::SIGKILL);
    }
    for m in &models {
        if m.commands
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.contains("t2.pid"))
        {
            m.live.lock().unwrap().clear();
        }
    }
    // Once t2's resumed agent has finished its command, the coordinator's
    // runner dies. (Killed while that agent was mid-command, the agent dies
    // with its runner and its lane was seen unrecovered for over 120 s
    // under load in CI: issue 36's note.)
    until("t2's lane resumed and done", || {
        models.iter().any(|m| {
            m.commands
                .lock()
                .unwrap()
                .iter()
                .any(|c| c.starts_with("result:") && c.contains("task p/t2 is done"))
        })
    });
    let before = lead_status(&env, &b);
    assert_eq!(before["leader"], "ann", "{before:#}");
    // SAFETY: SIGKILL to a runner this test started.
    unsafe {
        libc::kill(ann.id() as i32, libc::SIGKILL);
    }
    let ann = process::finish(ann, "ann's run");
    until("bob leads", || lead_status(&env, &b)["leader"] == "bob");
    let done = |t: &&str| {
        env.swarm(&b, &["task", "show", t, "--plan", "p", "--json"])
            .json()["task"]["status"]
            == "done"
    };
    for _ in 0..1200 {
        if ["t1", "t2", "t3", "t4"].iter().all(done) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let left: Vec<&str> = ["t1", "t2", "t3", "t4"]
        .into_iter()
        .filter(|t| !done(t))
        .collect();
    if !left.is_empty() {
        for (i, m) in models.iter().enumerate() {
            eprintln!("w{}: {:#?}", i + 1, m.commands.lock().unwrap());
        }
        eprintln!("{:#}", env.swarm(&b, &["status", "--json"]).json());
        eprintln!("ann's runner, killed:\n{}{}", ann.stdout, ann.stderr);
        // SAFETY: SIGTERM to a runner this test started.
        unsafe {
            libc::kill(bob.id() as i32, libc::SIGTERM);
        }
        let bob = process::finish(bob, "bob's run");
        eprintln!("bob's runner: {bob:#?}");
        panic!("never done: {left:?}");
    }
    let free = (0..600).any(|_| {
        let none = pool_pids(&env, &b).is_empty();
        if !none {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        none
    });
    // SAFETY: SIGTERM to a runner this test started.
    unsafe {
        libc::kill(bob.id() as i32, libc::SIGTERM);
    }
    let ran = process::finish(bob, "bob's run");
    assert!(
        free,
        "an account is still leased once every task is done: {:#}\nbob's runner: {ran:#?}",
        env.swarm(&b, &["pool", "list", "--json"]).json()
    );
    for (i, m) in models.iter().enumerate() {
        eprintln!("w{}: {:#?}", i + 1, m.commands.lock().unwrap());
    }
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(ann.code, -1, "ann's runner died by a signal: {ann:#?}");
    let out: Value = serde_json::from_str(&ran.stdout).unwrap();
    let whats: Vec<&str> = out["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    assert!(whats.contains(&"takeover"), "{out:#}");

    // Every packet accepted once, by another account than its writer's.
    let packets = env
        .swarm(&b, &["packets", "--plan", "t1", "--json"])
        .ok()
        .json();
    let packets = packets["packets"].as_array().unwrap();
    assert_eq!(packets.len(), 1, "{packets:#?}");
    assert!(packets[0]["accepted_by"].is_string(), "{packets:#?}");
    // No account ever served two sessions at once.
    for (i, m) in models.iter().enumerate() {
        assert!(m.max_concurrent.load(Ordering::SeqCst) <= 1, "w{}", i + 1);
    }
    // The records on the remote hold every delegation (a lease per lane,
    // t1's twice), the handoff and its acceptance, t2's loss and the
    // succession.
    let mut leases = String::new();
    for w in ["w1", "w2", "w3", "w4"] {
        leases += &env.git(
            &remote,
            &["log", "--format=%s", &format!("refs/swarm/pool/{w}")],
        );
    }
    for t in ["t1", "t2", "t3", "t4"] {
        assert!(
            leases.contains(&format!("for lane {t}")),
            "{t} was never delegated: {leases}"
        );
    }
    assert!(
        leases.matches("for lane t1").count() >= 2 && leases.matches("for lane t2").count() >= 2,
        "t1's successor and t2's resumption each got a lease: {leases}"
    );
    let lead = env.git(&remote, &["log", "--format=%B", "refs/swarm/lead/p"]);
    assert!(lead.contains("intent since is missing"), "{lead}");
    let s = lead_status(&env, &b);
    assert_eq!(
        (s["leader"].as_str(), s["epoch"].as_u64()),
        (Some("bob"), Some(2)),
        "{s:#}"
    );
}

/// The leader's runner stopped (SIGSTOP) past its lease: the succession's
/// runner takes over; continued (SIGCONT), the old leader's runner finds its
/// renew fenced and steps down instead of writing over its successor.
#[test]
fn a_leaders_runner_stopped_past_its_lease_steps_down_when_continued() {
    let (mut env, _remote, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    crate::run::run_recover::setup(&mut env, &clones, "5s");
    env.swarm(&a, &["plan", "new", "p", "--title", "P"]).ok();
    claim_lead(&env, &a, "5s");
    env.swarm(&b, &["sync"]).ok();
    let run = ["run", "--plan", "p", "--lead", "--json"];
    let ann = process::spawn(&env, &a, &[], &run);
    let bob = process::spawn(&env, &b, &[], &run);
    let first = lead_status(&env, &b);
    until("ann's runner renewed", || {
        let s = lead_status(&env, &b);
        s["leader"] == "ann" && s["lease_until"] != first["lease_until"]
    });
    let signal = |child: &std::process::Child, sig| {
        // SAFETY: a signal to a runner this test started.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
    };
    signal(&ann, libc::SIGSTOP);
    until("bob leads", || lead_status(&env, &b)["leader"] == "bob");
    signal(&ann, libc::SIGCONT);
    // Stopped, ann's runner may have missed its renewal by a whole lease:
    // it tries it at once, and is refused.
    std::thread::sleep(std::time::Duration::from_secs(3));
    signal(&ann, libc::SIGTERM);
    signal(&bob, libc::SIGTERM);
    let (ran_a, ran_b) = (
        process::finish(ann, "ann's run"),
        process::finish(bob, "bob's run"),
    );
    assert_eq!((ran_a.code, ran_b.code), (0, 0), "{ran_a:#?}\n{ran_b:#?}");
    let out: Value = serde_json::from_str(&ran_a.stdout).unwrap();
    let down = out["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["text"].as_str())
        .find(|t| t.contains("steps down"))
        .unwrap_or_else(|| panic!("ann's runner never stepped down: {out:#}"));
    assert!(down.contains("LEAD_FENCED"), "{down}");
    let s = lead_status(&env, &a);
    assert_eq!(
        (s["leader"].as_str(), s["epoch"].as_u64()),
        (Some("bob"), Some(2)),
        "{s:#}"
    );
}

/// `git swarm demo --agents` is the same drill, run by the binary itself
/// with the scripted models it starts: it exits 0, narrates the handoff,
/// the kills and the takeover, and leaves nothing behind in its TMPDIR.
#[test]
fn demo_agents_runs_the_drill_with_the_real_host_and_cleans_up() {
    let Some(claude) = claude() else { return };
    let _turn = ONE_DRILL.lock().unwrap_or_else(|e| e.into_inner());
    let mut env = crate::support::harness::TestEnv::new();
    env.set_env("GIT_SWARM_CLAUDE", claude.to_str().unwrap());
    let scratch = env.root().join("tmp");
    std::fs::create_dir_all(&scratch).unwrap();
    let run = env.swarm_env(
        env.root(),
        &[("TMPDIR", scratch.to_str().unwrap())],
        &["demo", "--agents", "--json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json = run.json();
    assert_eq!(json["ok"], true);
    let commands: Vec<&str> = json["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    for step in [
        "pool add w4",
        "lead claim --plan drill",
        "packets --plan t1",
    ] {
        assert!(
            commands.iter().any(|c| c.contains(step)),
            "no step {step}: {commands:#?}"
        );
    }
    let err = &run.stderr;
    // The models had t1 handed off and accepted, t2 hang and resume.
    assert!(
        err.contains("git swarm handoff --reason capacity_critical"),
        "{err}"
    );
    assert!(err.contains("git swarm accept 2"), "{err}");
    assert!(err.contains("kill -9"), "{err}");
    assert!(err.contains("leader:     bob"), "{err}");
    assert!(err.contains("epoch:      2"), "{err}");
    assert!(err.contains("accepted by w"), "{err}");
    for t in ["t1", "t2", "t3", "t4"] {
        let line = err
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("drill/{t} ")))
            .unwrap_or_else(|| panic!("no task line for {t}: {err}"));
        assert!(line.contains("done"), "{line}");
    }
    // Only the demo's own directory counts: the host keeps its own
    // temporary files (claude-*) under TMPDIR.
    let left: Vec<String> = std::fs::read_dir(&scratch)
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("git-swarm-demo-"))
        .collect();
    assert!(
        left.is_empty(),
        "the demo left its repositories behind: {left:?}"
    );
}

/// Without the Claude Code CLI, `demo --agents` says what it needs and runs
/// nothing: exit 4, AGENT_HOST_MISSING, no repository made.
#[test]
fn demo_agents_without_the_host_says_what_it_needs_and_runs_nothing() {
    let env = crate::support::harness::TestEnv::new();
    let scratch = env.root().join("tmp");
    let empty = env.root().join("empty-path");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::create_dir_all(&empty).unwrap();
    // Only git and git-swarm on PATH: no claude.
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let git = String::from_utf8(git.stdout).unwrap();
    std::os::unix::fs::symlink(git.trim(), empty.join("git")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_git-swarm"), empty.join("git-swarm")).unwrap();
    let run = env.swarm_env(
        env.root(),
        &[
            ("TMPDIR", scratch.to_str().unwrap()),
            ("PATH", empty.to_str().unwrap()),
            ("GIT_SWARM_CLAUDE", ""),
        ],
        &["demo", "--agents"],
    );
    assert_eq!(run.code, 4, "{run:#?}");
    assert!(
        run.stderr.contains("error[AGENT_HOST_MISSING]"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("GIT_SWARM_CLAUDE"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(
        std::fs::read_dir(&scratch).unwrap().count(),
        0,
        "a repository was made"
    );
}
