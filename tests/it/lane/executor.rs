//! One executor per plan, and per task, across machines: `lane new` checks
//! the remote's lanes first and publishes its start at once, the plan ref
//! leased, so two clones starting a lane of one plan cannot both keep it.
//! With `--task` a lane takes a task of its coordinator's plan: it starts
//! on a child plan made for it, the task is claimed for the lane's owner and
//! tied to the branch, and all of it reaches the remote in one atomic push,
//! or none of it does. Real clones of one bare remote, processes lined up
//! at the lane record write and released together.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{finish, ref_of, soak_rounds, spawn, wait_arrivals};

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

/// Count the pushes the remote receives: a `pre-receive` hook writes one
/// line per push, listing the refs it updates.
pub(crate) fn count_pushes(remote: &Path) -> PathBuf {
    let log = remote.join("pushes.log");
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nrefs=$(awk '{{print $3}}' | tr '\\n' ' ')\necho \"$refs\" >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

/// The pushes logged since [`count_pushes`], one line each.
pub(crate) fn pushes(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

fn yaml(env: &TestEnv, dir: &Path, rev: &str, file: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:{file}")])).expect("YAML")
}

/// A remote; clones; the coordinator (first clone) makes plan p and tasks.
fn coordinator_with_tasks(names: &[&str], tasks: &[&str]) -> (TestEnv, PathBuf, Vec<PathBuf>) {
    let mut s = Swarm::new(names)
        .plan_with(0, "p", &["--title", "the release"])
        .sync(0);
    for t in tasks {
        s = s.task(0, t, &format!("do {t}"));
    }
    s.parts()
}

#[test]
fn lane_new_task_on_a_clone_that_never_synced_the_plan_starts_everything_in_one_push() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "bob"], &["t2"]);
    let b = &clones[1];
    // bob never ran `sync`: plan p and its tasks are only on the remote.
    assert!(ref_of(&env, b, "refs/swarm/plans/p").is_none());
    let log = count_pushes(&remote);
    let out = env.swarm(b, &["lane", "new", "f2", "--task", "t2"]).ok();
    // One push carried the child plan, the lane record and the claim.
    let pushed = pushes(&log);
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    for r in [
        "refs/swarm/plans/f2",
        "refs/swarm/lanes/f2",
        "refs/swarm/tasks/p/t2",
    ] {
        assert!(pushed[0].contains(r), "{r} not in {pushed:?}");
    }
    out.expect_stdout("task p/t2 claimed by bob");
    // The child plan f2 of p, titled after the task, has the lane.
    let plan = ref_of(&env, &remote, "refs/swarm/plans/f2").expect("child plan published");
    let rec = yaml(&env, &remote, &plan, "plan.yaml");
    assert_eq!(rec["parent"].as_str(), Some("p"));
    assert_eq!(rec["title"].as_str(), Some("do t2"));
    let lane = ref_of(&env, &remote, "refs/swarm/lanes/f2").expect("lane published");
    let lane = yaml(&env, &remote, &lane, "lane.yaml");
    assert_eq!(lane["plan"].as_str(), Some("f2"));
    assert_eq!(lane["task"].as_str(), Some("p/t2"));
    let task = ref_of(&env, &remote, "refs/swarm/tasks/p/t2").unwrap();
    let task = yaml(&env, &remote, &task, "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(task["lane"].as_str(), Some("f2"));
    assert_eq!(task["branch"].as_str(), Some("feat/f2"));
    // The three refs moved in one push: the remote's reflog is not needed,
    // every one is there and the local ones equal them.
    for r in [
        "refs/swarm/plans/f2",
        "refs/swarm/lanes/f2",
        "refs/swarm/tasks/p/t2",
    ] {
        assert_eq!(ref_of(&env, b, r), ref_of(&env, &remote, r), "{r}");
    }
}

#[test]
fn lane_new_task_that_cannot_start_publishes_nothing() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "bob"], &["t2"]);
    let b = &clones[1];
    // Something in the way of the lane on bob's clone: its branch exists.
    env.git(b, &["branch", "feat/f2"]);
    env.git(b, &["commit", "--quiet", "--allow-empty", "-m", "own work"]);
    env.git(b, &["branch", "-f", "feat/f2", "HEAD"]);
    let before = env.all_refs(&remote);
    env.swarm(b, &["lane", "new", "f2", "--task", "t2"])
        .err(2, "LANE_EXISTS");
    assert_eq!(env.all_refs(&remote), before, "nothing was published");
    assert!(ref_of(&env, b, "refs/swarm/lanes/f2").is_none());
    assert!(ref_of(&env, b, "refs/swarm/plans/f2").is_none());
}

#[test]
fn two_agents_on_two_clones_take_two_tasks_of_one_plan_at_once() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "ann", "bob"], &["api", "docs"]);
    let (lead, a, b) = (&clones[0], &clones[1], &clones[2]);
    // No sync, no extra step: each agent names a task and starts.
    let one = spawn(&env, a, &[], &["lane", "new", "api", "--task", "api"]);
    let two = spawn(&env, b, &[], &["lane", "new", "docs", "--task", "docs"]);
    let one = finish(one, "ann: lane new api --task api").ok();
    let two = finish(two, "bob: lane new docs --task docs").ok();
    one.expect_stdout("task p/api claimed by ann");
    two.expect_stdout("task p/docs claimed by bob");
    for (lane, who) in [("api", "ann"), ("docs", "bob")] {
        let tip = ref_of(&env, &remote, &format!("refs/swarm/tasks/p/{lane}")).unwrap();
        let task = yaml(&env, &remote, &tip, "task.yaml");
        assert_eq!(task["claim"]["holder"].as_str(), Some(who));
        assert_eq!(task["lane"].as_str(), Some(lane));
        let plan = ref_of(&env, &remote, &format!("refs/swarm/plans/{lane}")).unwrap();
        assert_eq!(
            yaml(&env, &remote, &plan, "plan.yaml")["parent"].as_str(),
            Some("p")
        );
    }
    // The coordinator's status shows p's tasks with the lanes on them
    // (status reads what the clone last fetched: sync fetches).
    env.swarm(lead, &["sync"]).ok();
    let status = env.swarm(lead, &["status"]).ok();
    status.expect_stdout("api (ann, lane api, ");
    status.expect_stdout("docs (bob, lane docs, ");
    // One executor per plan still holds, for the child plan.
    env.swarm(a, &["lane", "new", "api2", "--plan", "api"])
        .err(1, "PLAN_HAS_EXECUTOR");
    // A taken task refuses a second lane, with nothing made or published.
    let before = env.all_refs(&remote);
    env.swarm(a, &["lane", "new", "docs2", "--task", "docs"])
        .err(3, "LEASE_HELD")
        .stderr_has("bob");
    assert_eq!(env.all_refs(&remote), before);
    assert!(ref_of(&env, a, "refs/swarm/plans/docs2").is_none());
    assert!(ref_of(&env, a, "refs/heads/feat/docs2").is_none());
}

#[test]
fn lane_new_task_without_a_remote_starts_and_claims_here() {
    let (env, repo) = Swarm::repo("solo")
        .init(0)
        .plan(0, "p")
        .task(0, "t", "the t")
        .repo_parts();
    let out = env
        .swarm(&repo, &["lane", "new", "f", "--task", "t", "--json"])
        .ok();
    let json = out.json();
    assert_eq!(json["plan"], "f");
    assert_eq!(json["published"], false);
    assert_eq!(json["task"]["holder"], "solo");
    let task = yaml(&env, &repo, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("solo"));
    assert_eq!(task["lane"].as_str(), Some("f"));
    let plan = yaml(&env, &repo, "refs/swarm/plans/f", "plan.yaml");
    assert_eq!(plan["parent"].as_str(), Some("p"));
    assert_eq!(plan["title"].as_str(), Some("the t"));
    // In the lane's worktree the task commands default to the lane's task.
    let wt = PathBuf::from(json["path"].as_str().unwrap());
    env.swarm(&wt, &["task", "show"]).ok().stdout_has("p/t");
    env.swarm(&wt, &["task", "release"])
        .ok()
        .stdout_has("task p/t is open");
    // Outside a lane, a task command without an id says what to do.
    env.swarm(&repo, &["task", "renew"]).err(2, "USAGE");
}

#[test]
fn two_lanes_racing_for_one_task_leave_one_lane_and_nothing_of_the_other() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "ann", "bob"], &["t"]);
    let (a, b) = (&clones[1], &clones[2]);
    // Both decide on the open task, then push at once.
    let gate = env.root().join("gate");
    let pause = format!("lane:worktree={}", gate.display());
    let one = spawn(
        &env,
        a,
        &[("GIT_SWARM_PAUSE", &pause)],
        &["lane", "new", "x", "--task", "t"],
    );
    let two = spawn(
        &env,
        b,
        &[("GIT_SWARM_PAUSE", &pause)],
        &["lane", "new", "y", "--task", "t"],
    );
    crate::support::process::wait_arrivals(&gate, 2);
    std::fs::write(gate.join("go"), "").unwrap();
    let runs = [finish(one, "ann"), finish(two, "bob")];
    let won: Vec<&crate::support::harness::Run> = runs.iter().filter(|r| r.code == 0).collect();
    assert_eq!(won.len(), 1, "{runs:#?}");
    let lost = runs.iter().find(|r| r.code != 0).unwrap();
    assert_eq!(lost.code, 3, "{lost:#?}");
    assert!(lost.stderr.contains("error[LEASE_HELD]"), "{lost:#?}");
    let (winner, loser, wdir, ldir) = if runs[0].code == 0 {
        ("x", "y", a, b)
    } else {
        ("y", "x", b, a)
    };
    let task = yaml(&env, &remote, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["lane"].as_str(), Some(winner));
    assert!(ref_of(&env, wdir, &format!("refs/swarm/lanes/{winner}")).is_some());
    for r in [
        format!("refs/swarm/plans/{loser}"),
        format!("refs/swarm/lanes/{loser}"),
        format!("refs/heads/feat/{loser}"),
    ] {
        assert!(ref_of(&env, &remote, &r).is_none(), "{r} at the remote");
        assert!(
            ref_of(&env, ldir, &r).is_none(),
            "{r} left on the loser's clone"
        );
    }
}

#[test]
fn an_interrupted_lane_new_task_finished_by_a_rerun_keeps_the_claim_with_the_lane() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "ann"], &["t"]);
    let a = &clones[1];
    let killed = env.swarm_env(
        a,
        &[("GIT_SWARM_FAILPOINT", "lane:record")],
        &["lane", "new", "f", "--task", "t"],
    );
    crate::support::process::assert_aborted(&killed, "lane:record");
    assert!(
        ref_of(&env, &remote, "refs/swarm/lanes/f").is_none(),
        "nothing published"
    );
    env.swarm(a, &["lane", "new", "f", "--task", "t"]).ok();
    let task = yaml(&env, a, "refs/swarm/tasks/p/t", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("ann"));
    assert_eq!(task["lane"].as_str(), Some("f"));
    env.swarm(a, &["sync"]).ok();
    for r in [
        "refs/swarm/plans/f",
        "refs/swarm/lanes/f",
        "refs/swarm/tasks/p/t",
    ] {
        assert_eq!(ref_of(&env, a, r), ref_of(&env, &remote, r), "{r}");
    }
}

/// `lane new --task` decides a claim, as `task claim` does: with the remote
/// unreachable it refuses (exit 4, the hint names `--offline`) and makes
/// nothing, so two machines are never both told they hold the task;
/// `--offline` starts the lane and claims the task here, and says so.
#[test]
fn lane_new_task_refuses_when_the_remote_cannot_be_reached_unless_offline() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "bob"], &["t2"]);
    let b = &clones[1];
    // bob knows plan p and its task.
    env.swarm(b, &["sync"]).ok();
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let before = env.all_refs(b);
    let run = env
        .swarm(b, &["lane", "new", "f2", "--task", "t2"])
        .err(4, "REMOTE_UNREACHABLE");
    run.expect_stderr("--offline");
    assert!(!run.stderr.contains("not published"), "{}", run.stderr);
    assert_eq!(env.all_refs(b), before, "nothing written");
    assert!(
        !crate::support::fixture::worktree(b, "f2").exists(),
        "no worktree"
    );
    // Asked to decide here, it does.
    let json = env
        .swarm(
            b,
            &["--offline", "lane", "new", "f2", "--task", "t2", "--json"],
        )
        .ok()
        .stderr_has("not published: offline (--offline, or no remote)")
        .json();
    assert_eq!(json["published"], false, "{json}");
    assert_eq!(json["task"]["holder"], "bob", "{json}");
    let task = yaml(&env, b, "refs/swarm/tasks/p/t2", "task.yaml");
    assert_eq!(task["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(task["lane"].as_str(), Some("f2"));
}

/// The remote gone between the start's reads and its push: the start is
/// undone (worktree, branch, lane record, child plan), the claim is not
/// kept here, exit 4 naming `--offline`.
#[test]
fn lane_new_task_whose_push_finds_the_remote_gone_keeps_nothing() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "bob"], &["t2"]);
    let b = &clones[1];
    env.swarm(b, &["sync"]).ok();
    let before = env.all_refs(b);
    let paused = crate::support::process::Paused::at(
        &env,
        b,
        "lane:worktree",
        &[],
        &["lane", "new", "f2", "--task", "t2"],
    );
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let run = paused.release().err(4, "REMOTE_UNREACHABLE");
    run.expect_stderr("--offline");
    run.expect_stderr("nothing was kept");
    assert!(!run.stderr.contains("not published"), "{}", run.stderr);
    assert_eq!(env.all_refs(b), before, "nothing written");
    assert!(
        !crate::support::fixture::worktree(b, "f2").exists(),
        "no worktree"
    );
}

#[test]
fn lane_new_without_a_task_on_a_plan_with_ready_tasks_is_refused_naming_them() {
    let (env, remote, clones) = coordinator_with_tasks(&["lead", "bob"], &["t1", "t2"]);
    let b = &clones[1];
    env.swarm(b, &["sync"]).ok();
    let before = env.all_refs(&remote);
    env.swarm(b, &["lane", "new", "f", "--plan", "p"])
        .err(1, "LANE_NEEDS_TASK")
        .stderr_has("t1 (do t1), t2 (do t2)")
        .stderr_has("git swarm lane new f --task t1 --plan p");
    assert_eq!(env.all_refs(&remote), before, "nothing published");
    assert!(ref_of(&env, b, "refs/swarm/lanes/f").is_none());
    assert!(ref_of(&env, b, "refs/heads/feat/f").is_none());
    // --no-task starts it anyway; --task takes one.
    env.swarm(b, &["lane", "new", "f", "--plan", "p", "--no-task"])
        .ok();
    assert!(ref_of(&env, b, "refs/swarm/lanes/f").is_some());
    env.swarm(b, &["lane", "new", "g", "--task", "t1", "--no-task"])
        .code(2);
}
