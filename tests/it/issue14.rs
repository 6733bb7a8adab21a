//! Regression tests for issue 14: what a new team hit in its first
//! afternoon (lost plan text, a guessed plan, a handover that did not
//! happen, a guard that blocked the leader's own merge), each against real
//! clones of one bare remote.

use std::path::{Path, PathBuf};

use crate::harness::TestEnv;

fn plan_text(env: &TestEnv, dir: &Path, plan: &str) -> String {
    env.git(dir, &["show", &format!("refs/swarm/plans/{plan}:PLAN.md")])
}

fn worktree(dir: &Path, feature: &str) -> PathBuf {
    dir.join("_swarm-worktrees").join(feature)
}

/// A coordinator (alice) with plan `auth` and a lane machine (bob) whose
/// lane `login` has the plan file checked out, both synced.
fn coordinator_and_lane(env: &TestEnv) -> (PathBuf, PathBuf) {
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["plan", "new", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    env.swarm(&b, &["lane", "new", "login", "--plan", "auth"]).ok();
    (a, b)
}

#[test]
fn plan_save_from_a_stale_checkout_merges_the_newer_plan_text_instead_of_dropping_it() {
    let env = TestEnv::new();
    let (a, b) = coordinator_and_lane(&env);
    let wt = worktree(&b, "login");
    let stale = env.read(&wt.join("PLAN.md"));

    // The coordinator adds a line under Goal and publishes it.
    env.swarm(&a, &["plan", "checkout", "auth"]).ok();
    let text = env
        .read(&a.join("PLAN.md"))
        .replace("(What is true when this plan is done.)", "Tokens expire after 1h.");
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(&a, &["plan", "save", "auth", "-m", "goal"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    let newer = env.git(&b, &["rev-parse", "refs/swarm/plans/auth"]);

    // The lane, from its older copy, records progress under Tasks.
    let progress = stale.replace("1. (first task)", "1. login form done");
    env.write(&wt.join("PLAN.md"), &progress);
    let out = env
        .swarm(&wt, &["plan", "save", "-m", "lane progress"])
        .ok()
        .stdout_has("merged with the newer version");
    assert!(out.stdout.contains(&newer[..12]), "{}", out.stdout);
    let saved = plan_text(&env, &b, "auth");
    assert!(saved.contains("Tokens expire after 1h."), "{saved}");
    assert!(saved.contains("1. login form done"), "{saved}");
    // The saved version builds on the newer one, and the file shows it.
    let parent = env.git(&b, &["rev-parse", "refs/swarm/plans/auth^"]);
    assert_eq!(parent, newer);
    assert_eq!(env.read(&wt.join("PLAN.md")), format!("{saved}\n"));

    // A second save from the same file is a no-op, not a second merge.
    env.swarm(&wt, &["plan", "save"])
        .ok()
        .stdout_has("unchanged");
}

#[test]
fn plan_save_refuses_with_plan_save_conflict_when_a_stale_checkout_changed_the_same_lines() {
    let env = TestEnv::new();
    let (a, b) = coordinator_and_lane(&env);
    let wt = worktree(&b, "login");
    let stale = env.read(&wt.join("PLAN.md"));

    env.swarm(&a, &["plan", "checkout", "auth"]).ok();
    let text = env
        .read(&a.join("PLAN.md"))
        .replace("1. (first task)", "1. coordinator's task");
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(&a, &["plan", "save", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    let before = env.all_refs(&b);
    let newer = env.git(&b, &["rev-parse", "refs/swarm/plans/auth"]);

    env.write(
        &wt.join("PLAN.md"),
        &stale.replace("1. (first task)", "1. lane's task"),
    );
    let out = env
        .swarm(&wt, &["plan", "save", "-m", "lane progress"])
        .err(3, "PLAN_SAVE_CONFLICT")
        .stderr_has("hint: see the newer text");
    assert!(out.stderr.contains(&newer[..12]), "{}", out.stderr);
    assert_eq!(env.all_refs(&b), before, "nothing was saved");
    assert!(plan_text(&env, &b, "auth").contains("1. coordinator's task"));
    // The lane's edit is still in its file.
    assert!(env.read(&wt.join("PLAN.md")).contains("1. lane's task"));
}
