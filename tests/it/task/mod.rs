//! Tasks across machines: a bare remote and clones driven as separate
//! processes. Each test asserts the exit code, the message and the task
//! refs left behind, locally and on the remote.

pub(crate) mod blocked;
pub(crate) mod claim_next;
pub(crate) mod task_batch;

use std::path::Path;
use std::process::Child;

use crate::lane::snapshot::{hash_object, mktree};
use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{
    assert_aborted, assert_fsck_clean, finish, ref_of, run_and_kill, soak_rounds, spawn,
    wait_arrivals, Kill, Killed, Rng, WRITING,
};

const T0: &str = "2026-03-01T10:00:00Z";

fn at(mins: i64) -> String {
    let t: jiff::Timestamp = T0.parse().unwrap();
    (t + jiff::SignedDuration::from_mins(mins)).to_string()
}

fn task_ref(plan: &str, id: &str) -> String {
    format!("refs/swarm/tasks/{plan}/{id}")
}

/// The task record at a commit, as YAML.
fn yaml_at(env: &TestEnv, dir: &Path, rev: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:task.yaml")]))
        .expect("task.yaml is YAML")
}

/// The task as the remote holds it.
fn published(env: &TestEnv, remote: &Path, id: &str) -> serde_yaml_ng::Value {
    let tip = ref_of(env, remote, &task_ref("p", id)).expect("the task is published");
    yaml_at(env, remote, &tip)
}

fn swarm_at(env: &TestEnv, dir: &Path, mins: i64, args: &[&str]) -> Run {
    let now = at(mins);
    env.swarm_env(dir, &[("GIT_SWARM_NOW", &now)], args)
}

fn new_task(env: &TestEnv, dir: &Path, id: &str, extra: &[&str]) -> Run {
    let mut args = vec!["task", "new", id, "--plan", "p", "--title", "do it"];
    args.extend_from_slice(extra);
    env.swarm(dir, &args)
}

fn commit_file(env: &TestEnv, dir: &Path, name: &str) {
    env.write(&dir.join(name), name);
    env.git(dir, &["add", name]);
    env.git(dir, &["commit", "--quiet", "--no-verify", "-m", name]);
}

#[test]
fn racing_claims_have_exactly_one_winner_per_round() {
    let names = ["ann", "bob", "cy"];
    let (env, remote, clones) = Swarm::new(&names).plan(0, "p").sync(0).parts();
    let rounds = soak_rounds(8);
    for round in 0..rounds {
        new_task(&env, &clones[0], &format!("t{round}"), &[]).ok();
    }
    for round in 0..rounds {
        let id = format!("t{round}");
        // Even rounds: lined up after their decision and released together,
        // so the three pushes really race at the remote's compare-and-swap.
        // Odd rounds: all three start at once.
        let lined_up = round % 2 == 0;
        let gate = env.root().join(format!("gate-{round}"));
        let pause = format!("task:objects={}", gate.display());
        let vars: Vec<(&str, &str)> = if lined_up {
            vec![("GIT_SWARM_PAUSE", &pause)]
        } else {
            vec![]
        };
        let args = ["task", "claim", id.as_str(), "--plan", "p"];
        let children: Vec<Child> = clones
            .iter()
            .map(|dir| spawn(&env, dir, &vars, &args))
            .collect();
        if lined_up {
            wait_arrivals(&gate, names.len());
            std::fs::write(gate.join("go"), "").unwrap();
        }
        let runs: Vec<Run> = children
            .into_iter()
            .zip(names)
            .map(|(c, n)| finish(c, &format!("round {round}: {n} claims")))
            .collect();
        let winners: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
        let winner = names[winners[0]];
        let rec = published(&env, &remote, &id);
        assert_eq!(
            rec["claim"]["holder"].as_str(),
            Some(winner),
            "round {round}"
        );
        assert_eq!(rec["epoch"].as_u64(), Some(1), "round {round}: one claim");
        assert_eq!(rec["status"].as_str(), Some("in_progress"));
        for (i, run) in runs.iter().enumerate() {
            if i != winners[0] {
                assert_eq!(run.code, 3, "round {round}: {run:#?}");
                assert!(run.stderr.contains("error[LEASE_HELD]"), "{run:#?}");
                assert!(
                    run.stderr.contains(&format!("claimed by {winner} until")),
                    "round {round}: the loser is told who holds it\n{run:#?}"
                );
            }
        }
        // Nothing doubled: created, then claimed once, in one line.
        let tip = ref_of(&env, &remote, &task_ref("p", &id)).unwrap();
        let count = env.git(&remote, &["rev-list", "--count", &tip]);
        assert_eq!(count.trim(), "2", "round {round}");
        // The losers' local refs are absent, the created version, or the winner's.
        for dir in &clones {
            if let Some(local) = ref_of(&env, dir, &task_ref("p", &id)) {
                env.git_run(&remote, &["merge-base", "--is-ancestor", &local, &tip])
                    .ok();
            }
        }
    }
}

#[test]
fn only_the_holder_acts_and_an_expired_claim_waits_for_recover() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    new_task(&env, a, "t", &[]).ok();
    let claim = swarm_at(&env, a, 0, &["task", "claim", "t", "--plan", "p", "--json"]).ok();
    let json = claim.json();
    assert_eq!(json["task"]["claim"]["holder"], "ann");
    assert_eq!(json["task"]["claim"]["lease_until"], at(30).as_str());
    assert_eq!(json["published"], true);
    let claimed = ref_of(&env, &remote, &task_ref("p", "t")).unwrap();
    assert_eq!(json["commit"], claimed.as_str(), "published at once");

    for verb in ["renew", "release", "done", "block", "cancel"] {
        swarm_at(&env, b, 5, &["task", verb, "t", "--plan", "p"])
            .err(3, "LEASE_NOT_HOLDER")
            .stderr_has("ann holds the claim");
    }
    swarm_at(&env, b, 5, &["task", "claim", "t", "--plan", "p"]).err(3, "LEASE_HELD");
    swarm_at(
        &env,
        b,
        5,
        &["task", "recover", "t", "--plan", "p", "--reason", "gone"],
    )
    .err(3, "LEASE_NOT_EXPIRED");
    // The holder renews: one push, same claim.
    let renewed = swarm_at(
        &env,
        a,
        15,
        &["task", "renew", "t", "--plan", "p", "--json"],
    )
    .ok();
    assert_eq!(
        renewed.json()["task"]["claim"]["lease_until"],
        at(45).as_str()
    );
    let renewed_tip = ref_of(&env, &remote, &task_ref("p", "t")).unwrap();
    assert_ne!(renewed_tip, claimed);

    // Expired: never taken silently.
    swarm_at(&env, b, 50, &["task", "claim", "t", "--plan", "p"])
        .err(3, "LEASE_EXPIRED")
        .stderr_has("task recover");
    swarm_at(
        &env,
        b,
        50,
        &["task", "recover", "t", "--plan", "p", "--reason", " "],
    )
    .err(2, "USAGE");
    env.swarm(b, &["task", "recover", "t", "--plan", "p"])
        .code(2);
    assert_eq!(
        ref_of(&env, &remote, &task_ref("p", "t")).as_deref(),
        Some(renewed_tip.as_str()),
        "nothing written by the refusals"
    );
    let rec = swarm_at(
        &env,
        b,
        50,
        &[
            "task",
            "recover",
            "t",
            "--plan",
            "p",
            "--reason",
            "ann went quiet",
        ],
    )
    .ok()
    .stdout_has("recovered from ann");
    drop(rec);
    let rec = published(&env, &remote, "t");
    assert_eq!(rec["previous_owner"].as_str(), Some("ann"));
    assert_eq!(rec["previous_lease_until"].as_str(), Some(at(45).as_str()));
    assert_eq!(rec["recovery_reason"].as_str(), Some("ann went quiet"));
    assert_eq!(rec["claim"]["holder"].as_str(), Some("bob"));
    assert_eq!(rec["epoch"].as_u64(), Some(2));
    let show = env.swarm(b, &["task", "show", "t", "--plan", "p"]).ok();
    show.expect_stdout("previous: ann");
    show.expect_stdout("recovery: ann went quiet");
    swarm_at(&env, a, 51, &["task", "renew", "t", "--plan", "p"]).err(3, "LEASE_NOT_HOLDER");
    // The audit trail: the task's git log.
    let log = env.git(&remote, &["log", "--format=%s", &task_ref("p", "t")]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert!(
        lines[0].contains("recovered from ann for bob: ann went quiet"),
        "{log}"
    );
}

#[test]
fn dependencies_and_transitions() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let a = &clones[0];
    new_task(&env, a, "a", &[]).ok();
    new_task(&env, a, "b", &["--depends-on", "a"]).ok();
    new_task(&env, a, "c", &["--depends-on", "zz"]).err(2, "TASK_UNKNOWN_DEPENDENCY");
    // The same task again converges (a re-run); another under its id is refused.
    new_task(&env, a, "a", &[]).ok().stdout_has("already so");
    env.swarm(a, &["task", "new", "a", "--plan", "p", "--title", "other"])
        .err(2, "TASK_EXISTS");
    new_task(&env, a, "c", &["--depends-on", "c"]).err(2, "TASK_DEPENDENCY_CYCLE");
    env.swarm(
        a,
        &["task", "update", "a", "--plan", "p", "--depends-on", "b"],
    )
    .err(2, "TASK_DEPENDENCY_CYCLE")
    .stderr_has("a → b → a");
    assert!(ref_of(&env, &remote, &task_ref("p", "c")).is_none());
    let ready = env
        .swarm(a, &["task", "ready", "--plan", "p", "--json"])
        .ok();
    let ids: Vec<String> = ready.json()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["a"]);
    let before = ref_of(&env, &remote, &task_ref("p", "b"));
    env.swarm(a, &["task", "claim", "b", "--plan", "p"])
        .err(1, "TASK_DEPENDENCY_NOT_READY")
        .stderr_has("a (open)");
    assert_eq!(ref_of(&env, &remote, &task_ref("p", "b")), before);

    // open → blocked → open is not a path; blocked → in_progress is.
    env.swarm(
        a,
        &["task", "block", "a", "--plan", "p", "--reason", "waiting"],
    )
    .ok();
    env.swarm(a, &["task", "block", "a", "--plan", "p"])
        .ok()
        .stdout_has("already so");
    env.swarm(a, &["task", "done", "a", "--plan", "p"])
        .err(1, "TASK_INVALID_TRANSITION");
    env.swarm(a, &["task", "claim", "a", "--plan", "p"]).ok();
    env.swarm(a, &["task", "release", "a", "--plan", "p"])
        .ok()
        .stdout_has("is open");
    env.swarm(a, &["task", "claim", "a", "--plan", "p"]).ok();
    env.swarm(a, &["task", "done", "a", "--plan", "p"])
        .ok()
        .stdout_has("is done");
    env.swarm(a, &["task", "done", "a", "--plan", "p"])
        .ok()
        .stdout_has("already so");
    for verb in ["claim", "block", "cancel"] {
        env.swarm(a, &["task", verb, "a", "--plan", "p"])
            .err(1, "TASK_INVALID_TRANSITION");
    }
    // b is ready now.
    env.swarm(a, &["task", "ready", "--plan", "p"])
        .ok()
        .stdout_has("p/b");
    env.swarm(a, &["task", "cancel", "b", "--plan", "p"]).ok();
    env.swarm(a, &["task", "claim", "b", "--plan", "p"])
        .err(1, "TASK_INVALID_TRANSITION");
    let list = env
        .swarm(a, &["task", "list", "--status", "done,cancelled", "--json"])
        .ok();
    assert_eq!(list.json()["tasks"].as_array().unwrap().len(), 2);
    env.swarm(a, &["task", "list", "--status", "later"])
        .err(2, "USAGE");
    env.swarm(a, &["task", "show", "zz", "--plan", "p"])
        .err(2, "TASK_NOT_FOUND");
    env.swarm(a, &["task", "claim", "a", "--plan", "p", "--lease", "0s"])
        .err(2, "LEASE_INVALID_DURATION");
}

#[test]
fn done_is_refused_until_the_work_is_merged() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let a = &clones[0];
    for (id, branch) in [("x", "feat/x"), ("y", "feat/y"), ("z", "feat/z")] {
        new_task(&env, a, id, &["--branch", branch]).ok();
        env.swarm(a, &["task", "claim", id, "--plan", "p"]).ok();
        env.git(a, &["checkout", "--quiet", "-b", branch, "main"]);
        commit_file(&env, a, &format!("{id}.txt"));
        env.git(a, &["checkout", "--quiet", "main"]);
    }
    let before = ref_of(&env, &remote, &task_ref("p", "x"));
    env.swarm(a, &["task", "done", "x", "--plan", "p"])
        .err(1, "TASK_NOT_MERGED")
        .stderr_has("feat/x is not merged into origin/main");
    assert_eq!(ref_of(&env, &remote, &task_ref("p", "x")), before);
    // A real merge, published.
    env.git(a, &["merge", "--quiet", "--no-edit", "feat/x"]);
    env.git(a, &["push", "--quiet", "--no-verify", "origin", "main"]);
    let done = env
        .swarm(a, &["task", "done", "x", "--plan", "p", "--json"])
        .ok();
    assert_eq!(done.json()["task"]["status"], "done");
    assert_eq!(
        published(&env, &remote, "x")["done_unverified"].as_bool(),
        Some(false)
    );
    // A squash merge: not an ancestor, so refused until a verdict note says merged.
    env.git(a, &["merge", "--quiet", "--squash", "feat/y"]);
    env.git(a, &["commit", "--quiet", "--no-verify", "-m", "squash y"]);
    env.git(a, &["push", "--quiet", "--no-verify", "origin", "main"]);
    env.swarm(a, &["task", "done", "y", "--plan", "p"])
        .err(1, "TASK_NOT_MERGED");
    let head = env.git(a, &["rev-parse", "feat/y"]);
    let note = r#"{"kind":"verdict","state":"merged","pr":7}"#;
    env.git(a, &["notes", "--ref=swarm", "add", "-m", note, &head]);
    env.swarm(a, &["task", "done", "y", "--plan", "p"]).ok();
    // Unverified: recorded so, and shown so.
    env.swarm(a, &["task", "done", "z", "--plan", "p", "--unverified"])
        .code(2);
    env.swarm(
        a,
        &[
            "task",
            "done",
            "z",
            "--plan",
            "p",
            "--unverified",
            "--reason",
            "merged elsewhere",
        ],
    )
    .ok();
    let z = published(&env, &remote, "z");
    assert_eq!(z["done_unverified"].as_bool(), Some(true));
    assert_eq!(z["done_reason"].as_str(), Some("merged elsewhere"));
    env.swarm(a, &["task", "list", "--plan", "p"])
        .ok()
        .stdout_has("done (unverified)");
}

#[test]
fn offline_claims_say_they_are_unpublished() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    new_task(&env, a, "t", &[]).ok();
    let published_tip = ref_of(&env, &remote, &task_ref("p", "t"));
    let run = env
        .swarm(
            a,
            &["--offline", "task", "claim", "t", "--plan", "p", "--json"],
        )
        .ok()
        .stderr_has("not published");
    assert_eq!(run.json()["published"], false);
    assert_eq!(ref_of(&env, &remote, &task_ref("p", "t")), published_tip);
    assert_ne!(ref_of(&env, a, &task_ref("p", "t")), published_tip);
    // bob claims it at the remote; ann's sync is told her claim lost, and
    // takes the published version (a claim is never merged away).
    env.swarm(b, &["task", "claim", "t", "--plan", "p"]).ok();
    let bobs = ref_of(&env, &remote, &task_ref("p", "t")).unwrap();
    // ann's claim exited 0: the sync that cannot keep it fails naming it.
    let sync = env
        .swarm(a, &["sync", "--json"])
        .err(3, "WRITE_LOST")
        .json();
    let sync = &sync["error"]["detail"];
    assert_eq!(sync["lost"][0]["ref"], task_ref("p", "t").as_str());
    let lost: Vec<&str> = sync["superseded"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["ref"].as_str())
        .collect();
    assert_eq!(lost, [task_ref("p", "t").as_str()], "{sync:#}");
    assert_eq!(
        ref_of(&env, &remote, &task_ref("p", "t")).as_deref(),
        Some(bobs.as_str())
    );
    assert_eq!(
        ref_of(&env, a, &task_ref("p", "t")).as_deref(),
        Some(bobs.as_str())
    );
    env.swarm(a, &["task", "show", "t", "--plan", "p"])
        .ok()
        .stdout_has("claim:    bob");
}

#[test]
fn a_kill_at_any_step_of_claim_renew_recover_leaves_the_task_whole() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    let mut n = 0;
    for point in ["task:objects", "task:pushed", "publish:pushed"] {
        n += 1;
        let id = format!("k{n}");
        new_task(&env, a, &id, &[]).ok();
        let created = ref_of(&env, &remote, &task_ref("p", &id)).unwrap();
        let now = at(0);
        let kill = |dir: &Path, args: &[&str], now: &str| {
            env.swarm_env(
                dir,
                &[("GIT_SWARM_FAILPOINT", point), ("GIT_SWARM_NOW", now)],
                args,
            )
        };
        let claim = ["task", "claim", id.as_str(), "--plan", "p"];
        assert_aborted(&kill(a, &claim, &now), point);
        let tip = ref_of(&env, &remote, &task_ref("p", &id)).unwrap();
        let whole = yaml_at(&env, &remote, &tip);
        if point == "task:objects" {
            assert_eq!(tip, created, "{point}: nothing published");
        } else {
            assert_eq!(whole["claim"]["holder"].as_str(), Some("ann"), "{point}");
        }
        swarm_at(&env, a, 0, &claim).ok();
        assert_eq!(
            published(&env, &remote, &id)["epoch"].as_u64(),
            Some(1),
            "{point}: converged"
        );
        assert_eq!(
            ref_of(&env, a, &task_ref("p", &id)),
            ref_of(&env, &remote, &task_ref("p", &id)),
            "{point}: the local ref caught up"
        );
        let renew = ["task", "renew", id.as_str(), "--plan", "p"];
        assert_aborted(&kill(a, &renew, &at(10)), point);
        swarm_at(&env, a, 10, &renew).ok();
        assert_eq!(
            published(&env, &remote, &id)["claim"]["lease_until"].as_str(),
            Some(at(40).as_str())
        );
        let recover = [
            "task",
            "recover",
            id.as_str(),
            "--plan",
            "p",
            "--reason",
            "ann died",
        ];
        assert_aborted(&kill(b, &recover, &at(60)), point);
        let whole = published(&env, &remote, &id);
        assert!(
            whole["claim"]["holder"].as_str().is_some(),
            "{point}: whole"
        );
        swarm_at(&env, b, 60, &recover).ok();
        let rec = published(&env, &remote, &id);
        assert_eq!(rec["claim"]["holder"].as_str(), Some("bob"), "{point}");
        assert_eq!(rec["previous_owner"].as_str(), Some("ann"), "{point}");
        assert_eq!(rec["epoch"].as_u64(), Some(2), "{point}: recovered once");
    }
}

/// The push budget of docs/tasks.md: 20 agents, each holding one task with the
/// default 30m lease and renewing at half of it, on a virtual clock for one
/// hour; every renewal is one real push to the bare remote. Counts the
/// renewal commits the remote received in the hour.
#[test]
fn a_swarm_of_20_renewing_at_half_the_lease_pushes_80_times_an_hour() {
    let (env, remote, clones) = Swarm::new(&["c0", "c1", "c2", "c3"])
        .plan(0, "p")
        .sync(0)
        .parts();
    let agents: Vec<String> = (0..20).map(|i| format!("agent{i}")).collect();
    let clone_of = |i: usize| &clones[i % clones.len()];
    for (i, agent) in agents.iter().enumerate() {
        new_task(&env, &clones[0], &format!("w{i}"), &[]).ok();
        let id = format!("w{i}");
        let args = [
            "--as",
            agent.as_str(),
            "task",
            "claim",
            id.as_str(),
            "--plan",
            "p",
        ];
        swarm_at(&env, clone_of(i), 0, &args).ok();
    }
    let lease = 30;
    let renew_every = lease / 2;
    let mut minute = 0;
    while minute + renew_every <= 60 {
        minute += renew_every;
        for (i, agent) in agents.iter().enumerate() {
            let id = format!("w{i}");
            let args = [
                "--as",
                agent.as_str(),
                "task",
                "renew",
                id.as_str(),
                "--plan",
                "p",
            ];
            swarm_at(&env, clone_of(i), minute, &args).ok();
            // Renewed before it lapsed: the claim never expired.
            let rec = published(&env, &remote, &id);
            assert_eq!(
                rec["claim"]["lease_until"].as_str(),
                Some(at(minute + lease).as_str())
            );
        }
    }
    let renewals: usize = (0..agents.len())
        .map(|i| {
            let log = env.git(
                &remote,
                &["log", "--format=%B", &task_ref("p", &format!("w{i}"))],
            );
            log.matches("Swarm-Event: task-renewed").count()
        })
        .sum();
    assert_eq!(renewals, 80, "20 agents x 60/15 renewals in one hour");
    // Each is one push: claims and renewals left one commit each, no more.
    let commits: usize = (0..agents.len())
        .map(|i| {
            let n = env.git(
                &remote,
                &["rev-list", "--count", &task_ref("p", &format!("w{i}"))],
            );
            n.trim().parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(
        commits,
        20 * (1 + 1 + 4),
        "created, claimed, 4 renewals each"
    );
}

#[test]
fn gc_archives_finished_tasks_of_closed_plans_only() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let a = &clones[0];
    new_task(&env, a, "d", &[]).ok();
    new_task(&env, a, "o", &[]).ok();
    env.swarm(a, &["task", "claim", "d", "--plan", "p"]).ok();
    env.swarm(a, &["task", "done", "d", "--plan", "p"]).ok();
    // The plan is open: nothing of it is finished.
    env.swarm(a, &["gc", "--older-than", "0s"]).ok();
    assert!(ref_of(&env, a, &task_ref("p", "d")).is_some());
    env.swarm(a, &["plan", "close", "p", "--force"]).ok();
    env.swarm(a, &["gc", "--older-than", "0s"]).ok();
    assert!(
        ref_of(&env, a, &task_ref("p", "d")).is_none(),
        "done: archived"
    );
    assert!(ref_of(&env, a, &task_ref("p", "o")).is_some(), "open: kept");
    env.swarm(a, &["sync"]).ok();
    assert!(ref_of(&env, &remote, &task_ref("p", "d")).is_none());
    let archived = env.git(a, &["log", "--format=%s", "refs/swarm/archive/tasks"]);
    assert!(!archived.is_empty());
    env.swarm(a, &["task", "list", "--plan", "p"])
        .ok()
        .stdout_has("p/o");
}

#[test]
fn lane_new_with_a_task_claims_it_and_ties_the_branch() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    new_task(&env, a, "t", &[]).ok();
    env.swarm(b, &["sync"]).ok();
    env.swarm(a, &["lane", "new", "one", "--plan", "p", "--task", "t"])
        .ok()
        .stdout_has("task p/t claimed by ann");
    let rec = published(&env, &remote, "t");
    assert_eq!(rec["claim"]["holder"].as_str(), Some("ann"));
    assert_eq!(rec["lane"].as_str(), Some("one"));
    assert_eq!(rec["branch"].as_str(), Some("feat/one"));
    // bob loses the task, and gets no lane.
    env.swarm(b, &["lane", "new", "two", "--plan", "p", "--task", "t"])
        .err(3, "LEASE_HELD")
        .stderr_has("claimed by ann");
    assert!(ref_of(&env, b, "refs/heads/feat/two").is_none());
    assert!(ref_of(&env, b, "refs/swarm/lanes/two").is_none());
    // status shows the plan's tasks: ready, in progress (holder, lease left), blocked, done.
    new_task(&env, a, "u", &["--depends-on", "t"]).ok();
    new_task(&env, a, "v", &[]).ok();
    env.swarm(a, &["task", "block", "v", "--plan", "p"]).ok();
    let status = env.swarm(a, &["status"]).ok();
    status.expect_stdout("tasks: ready -; in progress t (ann, ");
    status.expect_stdout("blocked v; done -");
    let json = env.swarm(a, &["status", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["tasks"]["in_progress"][0]["holder"], "ann");
    assert_eq!(json["plans"][0]["tasks"]["blocked"][0], "v");
    // The lane's branch is what `done` checks.
    env.swarm(a, &["task", "done", "t", "--plan", "p"])
        .err(1, "TASK_NOT_MERGED")
        .stderr_has("feat/one");
}

#[test]
fn a_sigkill_at_a_random_moment_of_claim_renew_recover_converges() {
    let (mut env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    let mut rng = Rng::new("task kills");
    for round in 0..soak_rounds(4) {
        let id = format!("r{round}");
        new_task(&env, &a, &id, &[]).ok();
        let refname = task_ref("p", &id);
        let claim = ["task", "claim", id.as_str(), "--plan", "p"];
        let renew = ["task", "renew", id.as_str(), "--plan", "p"];
        let recover = [
            "task",
            "recover",
            id.as_str(),
            "--plan",
            "p",
            "--reason",
            "gone",
        ];
        let steps: [(&Path, i64, &[&str]); 3] =
            [(&a, 0, &claim), (&a, 10, &renew), (&b, 60, &recover)];
        for (dir, mins, args) in steps {
            env.set_env("GIT_SWARM_NOW", &at(mins));
            let before = ref_of(&env, &remote, &refname).unwrap();
            let kill = Kill::draw(&mut rng, round, 150);
            let got = run_and_kill(&env, dir, WRITING, args, kill);
            assert_ne!(
                got,
                Killed::NeverWrote,
                "round {round}: {args:?} wrote nothing"
            );
            assert_fsck_clean(&env, dir);
            // The remote holds a whole record: the one before, or exactly one more.
            let after = ref_of(&env, &remote, &refname).unwrap();
            yaml_at(&env, &remote, &after);
            if after != before {
                let parent = env.git(&remote, &["rev-parse", &format!("{after}^")]);
                assert_eq!(parent.trim(), before, "round {round}: {args:?}");
            }
            if let Some(local) = ref_of(&env, dir, &refname) {
                env.git_run(&remote, &["merge-base", "--is-ancestor", &local, &after])
                    .ok();
            }
            // Running it again completes it.
            env.swarm(dir, args).ok();
        }
        let rec = published(&env, &remote, &id);
        assert_eq!(
            rec["claim"]["holder"].as_str(),
            Some("bob"),
            "round {round}"
        );
        assert_eq!(rec["previous_owner"].as_str(), Some("ann"));
        assert_eq!(rec["previous_lease_until"].as_str(), Some(at(40).as_str()));
        assert_eq!(
            rec["epoch"].as_u64(),
            Some(2),
            "round {round}: one claim, one recovery"
        );
    }
}

#[test]
fn a_task_record_that_cannot_be_read_is_never_taken_for_absent_and_overwritten() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    // From a newer version of git-swarm, or pushed by hand: unreadable here.
    crate::support::fixture::push_raw_record(
        &env,
        b,
        &task_ref("p", "fut"),
        "task.yaml",
        "schema: swarm-task/v2\nid: fut\nplan: p\ntitle: from the future\n",
    );
    let before = ref_of(&env, &remote, &task_ref("p", "fut"));
    env.swarm(a, &["task", "show", "fut"])
        .err(2, "SCHEMA_UNSUPPORTED");
    new_task(&env, a, "fut", &[]).err(2, "SCHEMA_UNSUPPORTED");
    env.swarm(a, &["task", "claim", "fut", "--plan", "p"])
        .err(2, "SCHEMA_UNSUPPORTED");
    assert_eq!(ref_of(&env, &remote, &task_ref("p", "fut")), before);
    // Listings still show it, as unreadable.
    env.swarm(a, &["task", "list", "--plan", "p"])
        .ok()
        .stdout_has("UNREADABLE");
}

/// Two clones change dependencies at the same moment, each decided on the
/// same graph (lined up after deciding, released together): A makes wx
/// depend on wy, B wy on wx. Never both: the loser decides again on the
/// winner's graph and is refused as a cycle. `task list` names a cycle
/// that is there anyway.
#[test]
fn racing_dependency_updates_never_leave_a_cycle() {
    use crate::support::process::{finish, spawn, wait_arrivals};
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    for round in 0..4 {
        let (x, y) = (format!("x{round}"), format!("y{round}"));
        for t in [&x, &y] {
            env.swarm(a, &["task", "new", t, "--plan", "p", "--title", "t"])
                .ok();
        }
        env.swarm(b, &["sync"]).ok();
        let gate = env.root().join(format!("deps-gate-{round}"));
        let pause = format!("task:objects={}", gate.display());
        let vars = [("GIT_SWARM_PAUSE", pause.as_str())];
        let one = spawn(
            &env,
            a,
            &vars,
            &["task", "update", &x, "--plan", "p", "--depends-on", &y],
        );
        let two = spawn(
            &env,
            b,
            &vars,
            &["task", "update", &y, "--plan", "p", "--depends-on", &x],
        );
        wait_arrivals(&gate, 2);
        std::fs::write(gate.join("go"), "").unwrap();
        let runs = [finish(one, "ann"), finish(two, "bob")];
        let won: Vec<&crate::support::harness::Run> = runs.iter().filter(|r| r.code == 0).collect();
        assert_eq!(won.len(), 1, "round {round}: {runs:#?}");
        let lost = runs.iter().find(|r| r.code != 0).unwrap();
        assert!(
            lost.stderr.contains("error[TASK_DEPENDENCY_CYCLE]"),
            "round {round}: {lost:#?}"
        );
        let deps = |t: &str| {
            let yaml = env.git(
                &remote,
                &["show", &format!("refs/swarm/tasks/p/{t}:task.yaml")],
            );
            let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
            v["depends_on"].as_sequence().map(Vec::len).unwrap_or(0)
        };
        assert_eq!(deps(&x) + deps(&y), 1, "round {round}: one edge, no cycle");
    }
    // The plan's journal says what moved it; both clones converge.
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    env.swarm(a, &["plan", "log", "p"])
        .ok()
        .stdout_has("dependencies changed");
    assert_eq!(
        env.git(a, &["rev-parse", "refs/swarm/plans/p"]),
        env.git(b, &["rev-parse", "refs/swarm/plans/p"])
    );
    // A cycle that is there anyway (written by hand): `task list` names it.
    let yaml = env.git(a, &["show", "refs/swarm/tasks/p/x0:task.yaml"]);
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    let has = v["depends_on"].as_sequence().map(Vec::len).unwrap_or(0) > 0;
    let (from, to) = if has { ("y0", "x0") } else { ("x0", "y0") };
    let yaml = env.git(
        a,
        &["show", &format!("refs/swarm/tasks/p/{from}:task.yaml")],
    );
    v = serde_yaml_ng::from_str(&yaml).unwrap();
    v["depends_on"] = serde_yaml_ng::to_value(vec![to]).unwrap();
    let blob = hash_object(&env, a, serde_yaml_ng::to_string(&v).unwrap().as_bytes());
    let tree = mktree(&env, a, &format!("100644 blob {blob}\ttask.yaml"));
    let parent = env.git(a, &["rev-parse", &format!("refs/swarm/tasks/p/{from}")]);
    let forged = env.git(a, &["commit-tree", &tree, "-p", &parent, "-m", "by hand"]);
    env.git(
        a,
        &["update-ref", &format!("refs/swarm/tasks/p/{from}"), &forged],
    );
    env.swarm(a, &["--offline", "task", "list", "--plan", "p"])
        .ok()
        .stderr_has("form a cycle (");
}

#[test]
fn task_done_fetches_the_base_before_judging_the_merge() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "p")
        .run(
            0,
            &[
                "task", "new", "x", "--plan", "p", "--title", "x", "--branch", "feat/x",
            ],
        )
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["task", "claim", "x", "--plan", "p"]).ok();
    env.git(a, &["switch", "--quiet", "-c", "feat/x"]);
    env.write(&a.join("x.txt"), "x\n");
    env.git(a, &["add", "."]);
    env.git(a, &["commit", "--quiet", "-m", "x"]);
    env.git(a, &["push", "--quiet", "origin", "feat/x"]);

    // bob merges it on his machine and publishes main.
    env.git(b, &["fetch", "--quiet", "origin"]);
    env.git(
        b,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "merge x",
            "origin/feat/x",
        ],
    );
    env.git(
        b,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    let merged = env.git(&remote, &["rev-parse", "main"]);

    // ann has not fetched: task done fetches the base itself.
    assert_ne!(env.git(a, &["rev-parse", "origin/main"]), merged);
    let done = env
        .swarm(a, &["task", "done", "x", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(done["task"]["status"], "done");
    assert_eq!(env.git(a, &["rev-parse", "origin/main"]), merged);
}

#[test]
fn task_claim_help_describes_its_id_and_plan() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    let run = env.swarm(&repo, &["task", "claim", "-h"]).ok();
    let line = |start: &str| {
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} line\n{}", run.stdout))
            .to_string()
    };
    assert!(line("[ID]").contains("The task id"), "{}", run.stdout);
    assert!(
        line("--plan <P>").contains("The task's plan"),
        "{}",
        run.stdout
    );
}
