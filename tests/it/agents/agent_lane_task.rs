//! The agent hooks in a lane started with `--task`: the session-start
//! context names the task the lane holds (of the parent plan) instead of
//! sending the agent to claim another, and after a handoff whose packet
//! carries that claim the stop hook lets the agent stop instead of sending
//! it back to release the claim the packet is to move.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::{Run, TestEnv};

fn hook(env: &TestEnv, dir: &Path, event: &str, input: &Value) -> Run {
    let mut child = env
        .command("git-swarm", dir)
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
        shown: format!("agent hook {event} --host claude"),
    }
}

/// bob's lane f1 took task t1 of plan p (the coordinator's); its worktree.
fn lane_with_task() -> (TestEnv, std::path::PathBuf, std::path::PathBuf) {
    let (env, remote, clones) = Swarm::new(&["lead", "bob"])
        .plan_with(0, "p", &["--title", "the release"])
        .sync(0)
        .task(0, "t1", "do t1")
        .task(0, "t2", "do t2")
        .parts();
    let b = clones[1].clone();
    env.swarm(&b, &["lane", "new", "f1", "--task", "t1"]).ok();
    let wt = worktree(&b, "f1");
    (env, remote, wt)
}

#[test]
fn the_session_start_of_a_lane_started_with_a_task_names_that_task() {
    let (env, _remote, wt) = lane_with_task();
    let start = json!({"session_id": "s1", "cwd": wt, "hook_event_name": "SessionStart", "source": "startup"});
    let run = hook(&env, &wt, "session-start", &start).ok();
    assert!(run.stdout.contains("lane f1"), "{}", run.stdout);
    assert!(run.stdout.contains("Your task t1: do t1"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Next: work on t1"),
        "the next step is the lane's task: {}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("claim a task"),
        "the agent is sent to claim a second task: {}",
        run.stdout
    );
}

#[test]
fn after_a_handoff_that_carries_the_claim_the_stop_hook_lets_the_agent_stop() {
    let (env, remote, wt) = lane_with_task();
    let stop = json!({"session_id": "s1", "cwd": wt, "hook_event_name": "Stop", "stop_hook_active": false});
    // Holding the task with no handoff: the stop is blocked, naming it.
    let blocked = hook(&env, &wt, "stop", &stop).ok();
    let answer: Value = serde_json::from_str(&blocked.stdout).expect("a JSON answer");
    assert_eq!(answer["decision"], "block", "{}", blocked.stdout);
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("you hold task t1"),
        "{answer}"
    );
    // The handoff's packet carries the claim to the successor.
    let id = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "capacity_low",
                "--next",
                "finish t1",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/f1/{id}:packet.yaml")],
    );
    assert!(packet.contains("task: t1"), "{packet}");
    let claim_before = env.git(&remote, &["rev-parse", "refs/swarm/tasks/p/t1"]);
    let stop = json!({"session_id": "s2", "cwd": wt, "hook_event_name": "Stop", "stop_hook_active": false});
    let run = hook(&env, &wt, "stop", &stop).ok();
    assert_eq!(
        run.stdout.trim(),
        "",
        "the stop is settled by the packet: {}",
        run.stdout
    );
    // Nothing was released: the claim waits for the successor.
    assert_eq!(
        env.git(&remote, &["rev-parse", "refs/swarm/tasks/p/t1"]),
        claim_before
    );
    let task = env
        .swarm(&wt, &["task", "show", "t1", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(task["task"]["claim"]["holder"], "bob", "{task:#}");
}
