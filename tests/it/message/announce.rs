//! Leadership changes are announced: `lead claim`, `handover` and
//! `takeover` post one message to the plan (new leader, epoch, reason) that
//! the lanes' agent hooks show, that wakes `wait`, and that the clone of the
//! one who lost or gained the leadership through someone else shows at its
//! next command. Exactly one per change, also when re-run after a kill.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::assert_aborted;

const ANNOUNCED: &str = "refs/swarm/messages/auth/";

/// The announcement refs of plan auth on `dir` (ids `lead-e…`).
fn announcements(env: &TestEnv, dir: &Path) -> Vec<String> {
    env.refs(dir, ANNOUNCED)
        .into_keys()
        .filter(|k| k.contains("lead-e"))
        .collect()
}

fn hook(env: &TestEnv, dir: &Path, input: &Value) -> Run {
    let mut child = env
        .command("git-swarm", dir)
        .args(["agent", "hook", "user-prompt-submit", "--host", "codex"])
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
        shown: "agent hook user-prompt-submit --host codex".into(),
    }
}

#[test]
fn claim_handover_and_takeover_each_post_one_announcement_every_clone_sees() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob", "cat"]).parts();
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    let claim = env
        .swarm(
            a,
            &[
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "bob,cat",
                "--json",
            ],
        )
        .ok()
        .json();
    let first = &claim["announced"]["message"];
    assert_eq!(first["to"], "all", "{claim}");
    assert_eq!(first["urgent"], true);
    assert_eq!(first["leader"], "ann");
    assert_eq!(first["epoch"], 1);
    assert_eq!(claim["announced"]["published"], true);
    assert_eq!(announcements(&env, &remote).len(), 1);

    // cat's agent, at its next prompt, is shown it (an urgent broadcast).
    env.swarm(c, &["sync"]).ok();
    let prompt = json!({"session_id": "s1", "cwd": c, "hook_event_name": "UserPromptSubmit", "prompt": "go"});
    let shown = hook(&env, c, &prompt).ok();
    assert!(
        shown
            .stdout
            .contains("ann leads plan auth from epoch 1: claimed"),
        "{}",
        shown.stdout
    );
    assert_eq!(hook(&env, c, &prompt).ok().stdout, "", "shown once");

    // A waiting agent wakes on the next announcement (the first one read).
    env.swarm(c, &["inbox"]).ok();
    let handover = env
        .swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok()
        .stdout_has("announced to plan auth");
    assert!(
        handover.stdout.contains("handed over by ann"),
        "{}",
        handover.stdout
    );
    let woke = env
        .swarm_env(
            c,
            &[("GIT_SWARM_VIRTUAL_WAITS", "1")],
            &["wait", "--for", "message", "--timeout", "1m", "--json"],
        )
        .ok()
        .json();
    let bodies: Vec<&str> = woke["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["body"].as_str())
        .collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("bob leads plan auth from epoch 2")),
        "{woke}"
    );

    // bob, the new leader, is told at his next command, once.
    let told = env.swarm(b, &["status"]).ok();
    assert!(
        told.stderr
            .contains("plan auth: you lead it from epoch 2, handed over by ann"),
        "{}",
        told.stderr
    );
    let again = env.swarm(b, &["status"]).ok();
    assert!(!again.stderr.contains("you lead it"), "{}", again.stderr);

    // cat takes over; bob's clone says so at bob's next command.
    env.swarm(
        c,
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--force",
            "--reason",
            "bob is away",
        ],
    )
    .ok()
    .stdout_has("took over from bob (forced: bob is away)");
    let fenced = env
        .swarm(b, &["lead", "push", "--plan", "auth"])
        .err(3, "LEAD_FENCED");
    assert!(
        fenced
            .stderr
            .contains("plan auth: cat leads it from epoch 3, you no longer do"),
        "{}",
        fenced.stderr
    );
    let later = env.swarm(b, &["status"]).ok();
    assert!(
        !later.stderr.contains("you no longer do"),
        "{}",
        later.stderr
    );

    // One announcement per change, on the remote and in every clone.
    let on_remote = announcements(&env, &remote);
    assert_eq!(on_remote.len(), 3, "{on_remote:?}");
    for (i, e) in ["lead-e1-", "lead-e2-", "lead-e3-"].iter().enumerate() {
        assert!(on_remote[i].contains(e), "{on_remote:?}");
    }
    // ann, who handed over herself, is not told again: she did it.
    let ann = env.swarm(a, &["status"]).ok();
    assert!(
        !ann.stderr.contains("leads it from epoch"),
        "{}",
        ann.stderr
    );
    // The inbox lists them like any broadcast.
    env.swarm(a, &["inbox"])
        .ok()
        .stdout_has("cat leads plan auth from epoch 3");
}

/// A command lists the message refs for announcements only when one of
/// them moved since the reader's last look (every command ends with that
/// look, and a clone may hold thousands of messages): with bob's record of
/// the announcements he saw removed, a command at the same refs tells him
/// nothing again; once a message ref moves, the listing runs and does.
#[test]
fn announcements_are_listed_again_only_when_a_message_ref_moved() {
    let (env, _remote, clones) = Swarm::new(&["ann", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(
        a,
        &["lead", "claim", "--plan", "auth", "--succession", "bob"],
    )
    .ok();
    env.swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok();
    // The ref directories' times must be older than the stamp's window
    // (a change within one tick would not show), as in any real pause.
    let settle = || std::thread::sleep(std::time::Duration::from_millis(250));
    let told = env.swarm(b, &["sync"]).ok();
    assert!(
        told.stderr.contains("you lead it from epoch 2"),
        "{}",
        told.stderr
    );
    settle();
    env.swarm(b, &["status"]).ok();
    let seen = b.join(".git/swarm/announced/bob");
    let at = b.join(".git/swarm/announced-at/bob");
    let stamp = std::fs::read_to_string(&at).expect("the stamp of bob's last look");
    assert!(stamp.contains("refs/swarm/messages"), "{stamp}");
    std::fs::remove_file(&seen).unwrap();

    let quiet = env.swarm(b, &["status"]).ok();
    assert!(!quiet.stderr.contains("you lead it"), "{}", quiet.stderr);
    assert!(
        !seen.exists(),
        "nothing was listed, nothing recorded as seen"
    );
    assert_eq!(std::fs::read_to_string(&at).unwrap(), stamp);

    env.swarm(a, &["notify", "bob", "hello"]).ok();
    let again = env.swarm(b, &["status"]).ok();
    assert!(
        again.stderr.contains("you lead it from epoch 2"),
        "{}",
        again.stderr
    );
    assert!(seen.exists());
}

#[test]
fn a_leader_command_killed_around_its_announcement_announces_once_when_run_again() {
    // Killed after the record was pushed (before the local ref moved): the
    // re-run finds the change published and announces it. Killed after the
    // announcement was written here (the change complete): the re-run is
    // refused as the handover is done, and publishes the announcement.
    let takeover: &[&str] = &[
        "lead",
        "takeover",
        "--plan",
        "auth",
        "--force",
        "--reason",
        "crash test",
    ];
    let handover: &[&str] = &["lead", "handover", "bob", "--plan", "auth"];
    for (point, by, args) in [
        ("lead:pushed", 1, takeover),
        ("announce:written", 0, handover),
    ] {
        let (env, remote, clones) = Swarm::new(&["ann", "bob"])
            .plan(0, "auth")
            .leader(0, "bob")
            .parts();
        let dir = &clones[by];
        let crashed = env.swarm_env(dir, &[("GIT_SWARM_FAILPOINT", point)], args);
        assert_aborted(&crashed, point);
        assert_eq!(
            announcements(&env, &remote).len(),
            1,
            "{point}: only the claim's is published"
        );
        let local = announcements(&env, dir);
        assert_eq!(
            local.iter().filter(|r| r.contains("lead-e2-")).count(),
            usize::from(point == "announce:written"),
            "{point}: {local:?}"
        );
        // Either way the re-run finds its own handover done (exit 0) and
        // publishes the one announcement the killed run left.
        let again = env.swarm(dir, &[args, &["--json"]].concat()).ok().json();
        assert_eq!(again["epoch"], 2, "{point}: {again}");
        assert_eq!(again["already"], true, "{point}: {again}");
        assert_eq!(
            again["announced"]["message"]["epoch"], 2,
            "{point}: {again}"
        );
        assert_eq!(again["announced"]["published"], true, "{point}: {again}");
        let published = announcements(&env, &remote);
        assert_eq!(
            published.iter().filter(|r| r.contains("lead-e2-")).count(),
            1,
            "{point}: exactly one announcement of the change: {published:?}"
        );
        assert_eq!(published.len(), 2, "{point}: {published:?}");
        // A sync adds none.
        env.swarm(dir, &["sync"]).ok();
        assert_eq!(announcements(&env, &remote), published, "{point}");
    }
}
