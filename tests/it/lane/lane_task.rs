//! `lane new --task`: a lane takes a task of its coordinator's plan. The
//! lane starts on a child plan made for it, the task is claimed for the
//! lane's owner and tied to the branch, and all of it reaches the remote in
//! one atomic push, or none of it does.

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::{finish, ref_of, spawn};

/// Count the pushes the remote receives: a `pre-receive` hook writes one
/// line per push, listing the refs it updates.
pub(crate) fn count_pushes(remote: &Path) -> std::path::PathBuf {
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
fn coordinator_with_tasks(
    names: &[&str],
    tasks: &[&str],
) -> (TestEnv, std::path::PathBuf, Vec<std::path::PathBuf>) {
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
    let wt = std::path::PathBuf::from(json["path"].as_str().unwrap());
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
