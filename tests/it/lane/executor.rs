//! One executor per plan across machines: `lane new` checks the remote's
//! lanes first and publishes its start at once, the plan ref leased, so two
//! clones starting a lane of one plan cannot both keep it. Real clones of
//! one bare remote, processes lined up at the lane record write and
//! released together.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{finish, soak_rounds, spawn, wait_arrivals};

/// Everything a start leaves in a clone: the lane ref, the branch, the
/// worktree directory.
fn left_by(env: &TestEnv, dir: &Path, feature: &str) -> (bool, bool, bool) {
    let lane = env
        .refs(dir, "refs/swarm/lanes/")
        .contains_key(&format!("refs/swarm/lanes/{feature}"));
    let branch = env
        .refs(dir, "refs/heads/feat/")
        .contains_key(&format!("refs/heads/feat/{feature}"));
    let worktree = dir.join("_swarm-worktrees").join(feature).exists();
    (lane, branch, worktree)
}

fn race(env: &TestEnv, clones: &[PathBuf], round: usize, plan: &str) -> Vec<Run> {
    race_named(env, clones, round, plan, |i| format!("r{round}-c{i}"))
}

fn race_named(
    env: &TestEnv,
    clones: &[PathBuf],
    round: usize,
    plan: &str,
    feature_of: impl Fn(usize) -> String,
) -> Vec<Run> {
    let gate = env.root().join(format!("lane-gate-{round}"));
    let pause = format!("lane:record={}", gate.display());
    let vars: Vec<(&str, &str)> = vec![("GIT_SWARM_PAUSE", &pause)];
    let children: Vec<Child> = clones
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let feature = feature_of(i);
            spawn(env, dir, &vars, &["lane", "new", &feature, "--plan", plan])
        })
        .collect();
    wait_arrivals(&gate, clones.len());
    std::fs::write(gate.join("go"), "").unwrap();
    children
        .into_iter()
        .enumerate()
        .map(|(i, c)| finish(c, &format!("round {round}: clone {i}")))
        .collect()
}

#[test]
fn lanes_of_one_plan_started_at_once_on_three_clones_leave_one_executor() {
    let names = ["ann", "ben", "cat"];
    let (env, remote, clones) = Swarm::new(&names).parts();
    for round in 0..soak_rounds(4) {
        let plan = format!("p{round}");
        env.swarm(&clones[0], &["plan", "new", &plan]).ok();
        env.swarm(&clones[0], &["sync"]).ok();
        for c in &clones[1..] {
            env.swarm(c, &["sync"]).ok();
        }
        let plan_before =
            env.refs(&remote, "refs/swarm/plans/")[&format!("refs/swarm/plans/{plan}")].clone();
        let runs = race(&env, &clones, round, &plan);
        let winners: Vec<usize> = (0..3).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
        let winner = format!("r{round}-c{}", winners[0]);
        assert!(
            runs[winners[0]].stdout.contains("published:"),
            "{:#?}",
            runs[winners[0]]
        );
        for (i, run) in runs.iter().enumerate() {
            let feature = format!("r{round}-c{i}");
            if i == winners[0] {
                assert_eq!(left_by(&env, &clones[i], &feature), (true, true, true));
                continue;
            }
            // A loser lost the plan ref's lease at the remote (or, if it
            // fetched after the winner pushed, saw the winner's lane).
            assert_eq!(run.code, 1, "round {round}: {run:#?}");
            assert!(run.stderr.contains("error[PLAN_HAS_EXECUTOR]"), "{run:#?}");
            assert!(run.stderr.contains(&format!("lane '{winner}'")), "{run:#?}");
            assert_eq!(
                left_by(&env, &clones[i], &feature),
                (false, false, false),
                "round {round}: the loser's start is undone in clone {i}"
            );
            // Its local plan ref holds no entry of its own start.
            let log = env.git(
                &clones[i],
                &["log", "--format=%B", &format!("refs/swarm/plans/{plan}")],
            );
            assert!(!log.contains(&format!("lane {feature}")), "{log}");
        }
        // The remote has exactly the winner's lane, and one lane-started
        // entry on top of the plan as it was.
        let lanes: Vec<String> = env
            .refs(&remote, "refs/swarm/lanes/")
            .into_keys()
            .filter(|r| r.starts_with(&format!("refs/swarm/lanes/r{round}-")))
            .collect();
        assert_eq!(lanes, vec![format!("refs/swarm/lanes/{winner}")]);
        let plan_ref = format!("refs/swarm/plans/{plan}");
        let entries = env.git(
            &remote,
            &["rev-list", "--count", &format!("{plan_before}..{plan_ref}")],
        );
        assert_eq!(entries, "1", "round {round}");
        let trailers = env.git(&remote, &["log", "-1", "--format=%B", &plan_ref]);
        assert!(trailers.contains("Swarm-Event: lane-started"), "{trailers}");
        assert!(
            trailers.contains(&format!("Swarm-Lane: {winner}")),
            "{trailers}"
        );
    }
}

#[test]
fn a_lane_published_by_another_machine_refuses_a_second_one_before_any_sync() {
    let (env, remote, clones) = Swarm::new(&["ann", "ben"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let started = env
        .swarm(a, &["lane", "new", "login", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(started["published"], true, "{started}");
    // Published at once: the remote has the lane and a's refs equal it.
    let on_remote = env.refs(&remote, "refs/swarm/");
    assert_eq!(
        on_remote["refs/swarm/lanes/login"],
        env.refs(a, "refs/swarm/lanes/")["refs/swarm/lanes/login"]
    );
    assert_eq!(
        on_remote["refs/swarm/plans/auth"],
        env.refs(a, "refs/swarm/plans/")["refs/swarm/plans/auth"]
    );

    // ben has not synced since: his start is refused, naming ann's lane.
    let b_refs = env.all_refs(b);
    let refused = env
        .swarm(b, &["lane", "new", "signup", "--plan", "auth"])
        .err(1, "PLAN_HAS_EXECUTOR");
    refused.expect_stderr("lane 'login' (owner ann");
    assert_eq!(left_by(&env, b, "signup"), (false, false, false));
    // Nothing of ben's moved but the mirror of what he fetched.
    let moved: Vec<String> = env
        .all_refs(b)
        .into_iter()
        .filter(|(r, v)| b_refs.get(r) != Some(v) && !r.starts_with("refs/swarm-remotes/"))
        .map(|(r, _)| r)
        .collect();
    assert!(moved.is_empty(), "{moved:?}");
    assert_eq!(env.refs(&remote, "refs/swarm/"), on_remote);

    // Once ann's lane is removed and that is published, ben may start one.
    env.swarm(a, &["lane", "rm", "login", "--force"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["lane", "new", "signup", "--plan", "auth"])
        .ok();
}

#[test]
fn a_start_on_a_plan_that_moved_on_the_remote_is_written_again_on_top_and_published() {
    let (env, remote, clones) = Swarm::new(&["ann", "ben"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    // ann saves the plan text and publishes it; ben's plan ref is behind.
    env.write(&a.join("PLAN.md"), "# auth\n\n1. login\n");
    env.swarm(a, &["plan", "save", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    let saved = env.refs(&remote, "refs/swarm/plans/")["refs/swarm/plans/auth"].clone();
    let started = env
        .swarm(b, &["lane", "new", "login", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(started["published"], true, "{started}");
    let plan_ref = "refs/swarm/plans/auth";
    let published = env.refs(&remote, "refs/swarm/plans/")[plan_ref].clone();
    assert_eq!(
        env.git(&remote, &["rev-parse", &format!("{published}^")]),
        saved
    );
    assert_eq!(env.refs(b, "refs/swarm/plans/")[plan_ref], published);
    let entry = env.git(&remote, &["log", "-1", "--format=%B", plan_ref]);
    assert!(entry.contains("Swarm-Lane: login"), "{entry}");
}

#[test]
fn offline_or_with_the_remote_down_the_start_stays_local_and_sync_publishes_it() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "auth").sync(0).parts();
    let a = &clones[0];
    let offline = env
        .swarm(
            a,
            &[
                "--offline",
                "lane",
                "new",
                "login",
                "--plan",
                "auth",
                "--json",
            ],
        )
        .ok();
    assert_eq!(offline.json()["published"], false);
    // Kept here, said in the one wording of every write.
    offline.expect_stderr(
        "warning: not published: offline (--offline, or no remote); `git swarm sync` publishes it",
    );
    assert!(!env
        .refs(&remote, "refs/swarm/")
        .contains_key("refs/swarm/lanes/login"));

    // The remote unreachable: started here, with a warning naming sync.
    env.swarm(a, &["plan", "new", "ui"]).ok();
    env.git(
        a,
        &["remote", "set-url", "origin", "/nonexistent/remote.git"],
    );
    let down = env
        .swarm(a, &["lane", "new", "shell", "--plan", "ui", "--json"])
        .ok();
    assert_eq!(down.json()["published"], false);
    down.expect_stderr("not published");
    down.expect_stderr("git swarm sync");
    assert_eq!(left_by(&env, a, "shell"), (true, true, true));
    env.git(
        a,
        &["remote", "set-url", "origin", remote.to_str().unwrap()],
    );
    env.swarm(a, &["sync"]).ok();
    let on_remote = env.refs(&remote, "refs/swarm/lanes/");
    assert!(on_remote.contains_key("refs/swarm/lanes/login"));
    assert!(on_remote.contains_key("refs/swarm/lanes/shell"));
}

#[test]
fn the_same_lane_started_at_once_on_two_clones_is_kept_once() {
    let (env, remote, clones) = Swarm::new(&["ann", "ben"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let runs = race_named(&env, &clones, 0, "auth", |_| "login".to_string());
    let winners: Vec<usize> = (0..2).filter(|&i| runs[i].code == 0).collect();
    assert_eq!(winners.len(), 1, "{runs:#?}");
    let loser = 1 - winners[0];
    let lost = &runs[loser];
    assert_eq!(lost.code, 2, "{lost:#?}");
    assert!(lost.stderr.contains("error[LANE_EXISTS]"), "{lost:#?}");
    assert_eq!(
        left_by(&env, &clones[loser], "login"),
        (false, false, false)
    );
    // One lane-started entry on the remote's plan.
    let log = env.git(&remote, &["log", "--format=%B", "refs/swarm/plans/auth"]);
    assert_eq!(log.matches("Swarm-Event: lane-started").count(), 1, "{log}");
}
