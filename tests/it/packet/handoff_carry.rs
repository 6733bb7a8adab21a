//! A handoff carries everything the successor needs: the branch head goes
//! out with the packet (the predecessor never pushes by hand), and the
//! claim on the lane's task and the reservations the predecessor holds move
//! to the successor in the same atomic push as the acceptance.

use std::path::{Path, PathBuf};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::TestEnv;
use crate::support::process::ref_of;

fn yaml(env: &TestEnv, dir: &Path, rev: &str, file: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:{file}")])).expect("YAML")
}

/// Coordinator `lead` with plan p and task t; `ann` takes t in lane f1
/// (not pushed), reserves src/, commits one file, leaves one uncommitted,
/// and hands off. Returns (env, remote, clones, ann's lane worktree,
/// packet id).
fn handed_off(env: TestEnv) -> (TestEnv, PathBuf, Vec<PathBuf>, PathBuf, String) {
    let (env, remote, clones) = Swarm::in_env(env, &["lead", "ann", "bob"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t", "the parser")
        .parts();
    let ann = &clones[1];
    let out = env
        .swarm(ann, &["lane", "new", "f1", "--task", "t", "--json"])
        .ok();
    let wt = PathBuf::from(out.json()["path"].as_str().unwrap());
    env.swarm(&wt, &["reserve", "src/"]).ok();
    env.write(&wt.join("src/a.txt"), "committed\n");
    env.git(&wt, &["add", "src/a.txt"]);
    env.git(&wt, &["commit", "--quiet", "-m", "parser: first half"]);
    env.write(&wt.join("src/b.txt"), "half done\n");
    let out = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "finish b",
                "--json",
            ],
        )
        .ok();
    let id = out.json()["id"].as_str().unwrap().to_string();
    (env, remote, clones, wt, id)
}

#[test]
fn a_handoff_from_a_lane_whose_branch_was_never_pushed_is_accepted_on_another_machine() {
    let (env, remote, clones, wt, id) = handed_off(TestEnv::new());
    let bob = &clones[2];
    // The branch went out with the packet, at the packet's head.
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(
        ref_of(&env, &remote, "refs/heads/feat/f1"),
        Some(head.clone())
    );
    let succ = bob.join("succ");
    env.swarm(bob, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok()
        .stdout_has("restored the uncommitted work");
    assert_eq!(env.git(&succ, &["rev-parse", "HEAD"]), head);
    assert_eq!(env.read(&succ.join("src/b.txt")), "half done\n");
}

/// The acceptance's note on the head joins the published notes (the
/// handoff's line stays under it) and goes out with the accept: nothing is
/// left unpublished, and a later sync has nothing to merge.
#[test]
fn accept_publishes_its_note_on_top_of_the_published_notes() {
    let (env, remote, clones, _wt, id) = handed_off(TestEnv::new());
    let bob = &clones[2];
    let handoff_notes = ref_of(&env, &remote, "refs/notes/swarm").expect("the handoff's note");
    let succ = bob.join("succ");
    env.swarm(bob, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    let local = ref_of(&env, bob, "refs/notes/swarm").expect("bob's notes");
    env.git(
        bob,
        &["merge-base", "--is-ancestor", &handoff_notes, &local],
    );
    assert_eq!(
        ref_of(&env, &remote, "refs/notes/swarm"),
        Some(local.clone())
    );
    let status = env.swarm(bob, &["status", "--json"]).ok();
    assert_eq!(status.json()["unpublished"], 0, "{}", status.stdout);
    let head = env.git(&succ, &["rev-parse", "HEAD"]);
    let note = env.git(bob, &["notes", "--ref=swarm", "show", &head]);
    assert!(note.contains(r#""kind":"handoff""#), "{note}");
    assert!(note.contains(r#""kind":"acceptance""#), "{note}");
    env.swarm(bob, &["sync"]).ok();
    assert_eq!(ref_of(&env, bob, "refs/notes/swarm"), Some(local));
}

#[test]
fn accept_moves_the_claim_and_the_reservations_to_the_successor() {
    let (env, remote, clones, wt, id) = handed_off(TestEnv::new());
    let bob = &clones[2];
    let packet = yaml(
        &env,
        &remote,
        &format!("refs/swarm/packets/f1/{id}"),
        "packet.yaml",
    );
    assert_eq!(packet["claim"]["task"].as_str(), Some("t"));
    assert_eq!(packet["claim"]["holder"].as_str(), Some("ann"));
    assert_eq!(packet["reservations"][0]["paths"][0].as_str(), Some("src/"));
    let succ = bob.join("succ");
    let log = crate::lane::executor::count_pushes(&remote);
    let out = env
        .swarm(bob, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    // One push: the acceptance, the lane, the claim and the ledger (the
    // plan's journal entry follows it, as every write publishes at once).
    let pushed = crate::lane::executor::pushes(&log);
    assert!(
        pushed[1..]
            .iter()
            .all(|p| !p.contains("tasks/") && !p.contains("reservations/")),
        "{pushed:?}"
    );
    for r in [
        "refs/swarm/packets/f1/",
        "refs/swarm/lanes/f1",
        "refs/swarm/tasks/p/t",
        // `src/` is in every shard, the first of them shard-00.
        "refs/swarm/reservations/shard-00",
    ] {
        assert!(pushed[0].contains(r), "{r} not in {pushed:?}");
    }
    out.expect_stdout("moved to you: the claim on task p/t");
    out.expect_stdout("moved to you: reservation r1");
    // One push: the task and the ledger at the remote name bob.
    let task = yaml(&env, &remote, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(
        task["epoch"].as_u64(),
        Some(2),
        "the claim counter increased"
    );
    assert_eq!(task["previous_owner"].as_str(), Some("ann"));
    let ledger = yaml(
        &env,
        &remote,
        "refs/swarm/reservations/shard-00",
        "reservations.yaml",
    );
    assert_eq!(ledger["entries"][0]["holder"].as_str(), Some("bob"));
    assert_eq!(
        ledger["entries"][0]["task"].as_str(),
        Some("p/t"),
        "reserved in the lane: for the lane's task"
    );
    // bob renews with no id (the lane's task), commits to the reserved
    // paths (the guard passes) and pushes.
    env.swarm(&succ, &["task", "renew"])
        .ok()
        .stdout_has("task p/t is claimed by bob");
    env.git(&succ, &["add", "src/b.txt"]);
    env.git(&succ, &["commit", "--quiet", "-m", "parser: second half"]);
    env.git(&succ, &["push", "--quiet", "origin", "feat/f1"]);
    // ann's renew and release in her old worktree are refused: the lane
    // is bob's now (LANE_MOVED, before the claim is even looked at).
    env.swarm(&wt, &["task", "renew"])
        .err(1, "LANE_MOVED")
        .stderr_has("bob owns it now");
    env.swarm(&wt, &["task", "release", "t", "--plan", "p"])
        .err(1, "LANE_MOVED")
        .stderr_has("bob owns it now");
    // Elsewhere (her main checkout) the claim itself refuses her, naming bob.
    let ann = wt.parent().unwrap().parent().unwrap();
    env.swarm(ann, &["task", "release", "t", "--plan", "p"])
        .err(3, "LEASE_NOT_HOLDER")
        .stderr_has("bob");
}

#[test]
fn a_claim_recovered_by_someone_else_is_named_as_not_moved() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-03-01T10:00:00Z");
    let (mut env, remote, clones, _wt, id) = handed_off(env);
    let (lead, bob) = (&clones[0], &clones[2]);
    // ann's lease ran out; the coordinator recovered the task meanwhile.
    env.set_env("GIT_SWARM_NOW", "2026-03-01T11:00:00Z");
    env.swarm(
        lead,
        &[
            "task",
            "recover",
            "t",
            "--plan",
            "p",
            "--reason",
            "ann is gone",
        ],
    )
    .ok();
    let succ = bob.join("succ");
    let out = env
        .swarm(
            bob,
            &[
                "accept",
                &id,
                "--worktree",
                succ.to_str().unwrap(),
                "--json",
            ],
        )
        .ok();
    let json = out.json();
    let not_moved = json["moved"]["not_moved"].as_array().unwrap();
    assert!(
        not_moved
            .iter()
            .any(|l| l.as_str().unwrap().contains("claimed by lead")),
        "{json}"
    );
    assert_eq!(json["moved"]["reservations"][0].as_str(), Some("r1"));
    let task = yaml(&env, &remote, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(
        task["claim"]["holder"].as_str(),
        Some("lead"),
        "left as it was"
    );
    let acc = yaml(
        &env,
        &remote,
        &format!("refs/swarm/packets/f1/{id}"),
        "acceptance.yaml",
    );
    assert!(acc["moved"]["not_moved"][0]
        .as_str()
        .unwrap()
        .contains("lead"));
}

fn lane_field(env: &TestEnv, dir: &Path, rev: &str, key: &str) -> String {
    let yaml = env.git(dir, &["show", &format!("{rev}:lane.yaml")]);
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    v[key].as_str().unwrap_or_default().to_string()
}

/// Alice starts lane `login` (not synced: its record is only in her clone),
/// commits and pushes the branch, and hands off from the lane's worktree.
/// Bob's clone has the branch checked out, ready to accept.
fn handed_off_lane() -> (TestEnv, PathBuf, PathBuf, PathBuf, String) {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .lane(0, "login")
        .pushed(0, "login", &[("login.rs", "fn login() {}\n")], "login");
    let id = s.handoff(0, "login");
    let (env, remote, clones) = s.switched(1, "feat/login").parts();
    (env, remote, clones[0].clone(), clones[1].clone(), id)
}

#[test]
fn handoff_publishes_the_lane_record_and_accept_on_another_clone_moves_the_lane() {
    let (env, remote, a, b, id) = handed_off_lane();
    // The lane record went out with the packet.
    let lane = "refs/swarm/lanes/login";
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "alice");
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/auth/{id}:packet.yaml")],
    );
    assert!(packet.contains("lane: login"), "{packet}");

    env.swarm(&b, &["accept", &id]).ok();
    // Moved at the remote in the same push as the acceptance, and here.
    let b_path = std::fs::canonicalize(&b).unwrap().display().to_string();
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "bob");
    assert_eq!(lane_field(&env, &remote, lane, "path"), b_path);
    assert_eq!(
        env.git(&b, &["rev-parse", lane]),
        env.git(&remote, &["rev-parse", lane])
    );
    // After both sync, everyone agrees, and the successor can report.
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    assert_eq!(lane_field(&env, &a, lane, "owner"), "bob");
    env.swarm(&b, &["report", "plan-ready"]).ok();
    let msg = env.git(&b, &["log", "-1", "--format=%B", "refs/swarm/plans/auth"]);
    assert!(msg.contains("Swarm-Actor: bob"), "{msg}");
}

#[test]
fn an_accept_killed_after_its_push_completes_with_the_published_lane_record() {
    let (env, remote, _a, b, id) = handed_off_lane();
    let lane = "refs/swarm/lanes/login";
    let crashed = env.swarm_env(
        &b,
        &[("GIT_SWARM_FAILPOINT", "accept:pushed")],
        &["accept", &id],
    );
    assert_ne!(crashed.code, 0);
    // Published together at the remote; not yet here.
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "bob");
    env.swarm(&b, &["accept", &id])
        .ok()
        .stdout_has("completed an interrupted acceptance");
    // The local lane ref took the published record instead of a second handover.
    assert_eq!(
        env.git(&b, &["rev-parse", lane]),
        env.git(&remote, &["rev-parse", lane])
    );
}

#[test]
fn accept_refuses_while_the_lane_record_has_not_arrived_and_moves_it_once_it_has() {
    let (env, remote, a, b, id) = handed_off_lane();
    // As if the lane record had not reached the remote (an older client
    // published the packet alone).
    env.git(&remote, &["update-ref", "-d", "refs/swarm/lanes/login"]);
    let packet = format!("refs/swarm/packets/auth/{id}");
    let before = env.git(&remote, &["rev-parse", &packet]);
    env.swarm(&b, &["accept", &id])
        .err(1, "PACKET_LANE_MISSING")
        .stderr_has("lane login")
        .stderr_has("ask alice to run `git swarm sync`");
    assert_eq!(
        env.git(&remote, &["rev-parse", &packet]),
        before,
        "not accepted"
    );
    assert!(env.refs(&b, "refs/swarm/lanes/").is_empty());

    // The record arrives later: then accept moves it.
    env.swarm(&a, &["sync"]).ok();
    assert_eq!(
        lane_field(&env, &remote, "refs/swarm/lanes/login", "owner"),
        "alice"
    );
    env.swarm(&b, &["accept", &id]).ok();
    assert_eq!(
        lane_field(&env, &remote, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
    assert_eq!(
        lane_field(&env, &b, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
}

#[test]
fn a_handed_over_lanes_old_worktree_says_who_owns_the_lane_now_and_prune_cleans_it_up() {
    let (env, _remote, a, b, id) = handed_off_lane();
    env.swarm(&b, &["accept", &id]).ok();
    env.swarm(&a, &["sync"]).ok();
    let old = worktree(&a, "login");
    let b_path = std::fs::canonicalize(&b).unwrap().display().to_string();

    env.swarm(&old, &["report", "plan-ready"])
        .err(1, "LANE_MOVED")
        .stderr_has(&format!("bob owns it now, at {b_path}"))
        .stderr_has("git swarm lane prune");
    env.swarm(&a, &["lane", "rm", "login"])
        .err(1, "LANE_ELSEWHERE")
        .stderr_has(&format!("bob owns it now, at {b_path}"))
        .stderr_has("old worktree");

    let lane_before = env.git(&a, &["rev-parse", "refs/swarm/lanes/login"]);
    env.write(&old.join("scratch.txt"), "notes\n");
    env.swarm(&a, &["lane", "prune"])
        .ok()
        .stdout_has("stays: it has uncommitted work (scratch.txt)");
    assert!(old.exists());
    std::fs::remove_file(old.join("scratch.txt")).unwrap();
    env.swarm(&a, &["lane", "prune", "--dry-run"])
        .ok()
        .stdout_has("would remove login: old worktree");
    assert!(old.exists());
    let out = env.swarm(&a, &["lane", "prune", "--json"]).ok().json();
    assert_eq!(out["old_worktrees"][0]["feature"], "login");
    assert_eq!(out["old_worktrees"][0]["owner"], "bob");
    assert!(!old.exists());
    // The lane stays bob's, and the branch stays.
    assert_eq!(
        env.git(&a, &["rev-parse", "refs/swarm/lanes/login"]),
        lane_before
    );
    assert_eq!(
        lane_field(&env, &a, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
    assert!(!env.refs(&a, "refs/heads/feat/login").is_empty());
}

/// An offline accept writes the claim and the ledger in the acceptance's
/// own local CAS: killed right after it, the re-run finds them moved (they
/// were written after the acceptance, and a re-run that found its own
/// acceptance never wrote them).
#[test]
fn an_offline_accept_killed_after_its_acceptance_has_moved_the_claim_and_the_reservations() {
    let (env, _remote, clones, _wt, id) = handed_off(TestEnv::new());
    let bob = &clones[2];
    env.swarm(bob, &["sync"]).ok();
    env.git(bob, &["fetch", "--quiet", "origin"]);
    env.git(bob, &["branch", "feat/f1", "origin/feat/f1"]);
    let succ = bob.join("succ");
    let succ = succ.to_str().unwrap();
    let crashed = env.swarm_env(
        bob,
        &[("GIT_SWARM_FAILPOINT", "accept:ref")],
        &["--offline", "accept", &id, "--worktree", succ],
    );
    crate::support::process::assert_aborted(&crashed, "accept:ref");
    let task = yaml(&env, bob, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(task["previous_owner"].as_str(), Some("ann"));
    let ledger = yaml(
        &env,
        bob,
        "refs/swarm/reservations/shard-00",
        "reservations.yaml",
    );
    assert_eq!(ledger["entries"][0]["holder"].as_str(), Some("bob"));
    let again = env
        .swarm(
            bob,
            &["--offline", "accept", &id, "--worktree", succ, "--json"],
        )
        .ok()
        .json();
    assert_eq!(again["resumed"], true);
    let task = yaml(&env, bob, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(task["epoch"].as_u64(), Some(2), "moved once");
}
