//! One agent's day, end to end, in four clones of one bare remote, each
//! acting as one machine: the coordinator makes a plan and its tasks; two
//! agents take a task each with `lane new --task`, at once; they reserve,
//! commit and message; one hands off mid-task with uncommitted work, a
//! claim and a reservation; a third accepts on another machine, renews,
//! commits to the reserved paths and pushes; the coordinator merges; the
//! tasks are done; every clone's `git swarm state` is byte-identical.

use std::path::{Path, PathBuf};

use crate::fixture::Swarm;
use crate::harness::TestEnv;
use crate::process::{finish, ref_of, spawn};

fn commit(env: &TestEnv, wt: &Path, path: &str, text: &str, msg: &str) {
    env.write(&wt.join(path), text);
    env.git(wt, &["add", path]);
    env.git(wt, &["commit", "--quiet", "-m", msg]);
}

fn lane_path(run: &crate::harness::Run) -> PathBuf {
    PathBuf::from(run.json()["path"].as_str().expect("lane path"))
}

#[test]
fn one_agents_day_end_to_end_in_four_clones() {
    let (env, remote, clones) = Swarm::new(&["lead", "ann", "bob", "carol"]).parts();
    let (lead, ann, bob, carol) = (&clones[0], &clones[1], &clones[2], &clones[3]);
    let log = crate::lane_task::count_pushes(&remote);

    // Morning: the coordinator's plan and tasks.
    env.swarm(lead, &["plan", "new", "rel", "--title", "release 1.1"])
        .ok();
    env.swarm(lead, &["sync"]).ok();
    for (id, title) in [("api", "the API"), ("docs", "the guide")] {
        env.swarm(
            lead,
            &["task", "new", id, "--plan", "rel", "--title", title],
        )
        .ok();
    }
    env.swarm(
        lead,
        &["lead", "claim", "--plan", "rel", "--succession", "lead"],
    )
    .ok();

    // Two agents take a task each, at once, with nothing else first.
    let one = spawn(
        &env,
        ann,
        &[],
        &["lane", "new", "api", "--task", "api", "--json"],
    );
    let two = spawn(
        &env,
        bob,
        &[],
        &["lane", "new", "docs", "--task", "docs", "--json"],
    );
    let ann_wt = lane_path(&finish(one, "ann: lane new api --task api").ok());
    let bob_wt = lane_path(&finish(two, "bob: lane new docs --task docs").ok());

    // Reserve, commit, message.
    env.swarm(&bob_wt, &["reserve", "docs/"]).ok();
    // (ann's reserve fetches the ledger: her guard knows bob's entry.)
    env.swarm(&ann_wt, &["reserve", "src/api/"]).ok();
    commit(
        &env,
        &ann_wt,
        "src/api/mod.rs",
        "pub fn api() {}\n",
        "api: the endpoint",
    );
    commit(
        &env,
        &bob_wt,
        "docs/guide.md",
        "# Guide\n",
        "docs: the outline",
    );
    // bob's reservation keeps ann out of docs/.
    env.write(&ann_wt.join("docs/api.md"), "x\n");
    env.git(&ann_wt, &["add", "docs/api.md"]);
    let refused = env.git_run(&ann_wt, &["commit", "--quiet", "-m", "docs from api"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    env.git(&ann_wt, &["rm", "--quiet", "--cached", "docs/api.md"]);
    std::fs::remove_file(ann_wt.join("docs/api.md")).unwrap();
    env.swarm(
        &ann_wt,
        &["notify", "bob", "the API is in: document src/api"],
    )
    .ok();
    env.swarm(&bob_wt, &["wait", "--for", "message", "--timeout", "1m"])
        .ok()
        .stdout_has("the API is in");
    env.git(&ann_wt, &["push", "--quiet", "origin", "feat/api"]);

    // bob must stop mid-task: uncommitted work, a claim and a reservation.
    env.write(&bob_wt.join("docs/guide.md"), "# Guide\n\nhalf a chapter\n");
    let out = env
        .swarm(
            &bob_wt,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "finish the chapter",
                "--json",
            ],
        )
        .ok();
    let packet = out.json()["id"].as_str().unwrap().to_string();

    // carol accepts on her machine: the work, the claim and the reservation.
    let carol_wt = carol.join("docs-wt");
    env.swarm(
        carol,
        &["accept", &packet, "--worktree", carol_wt.to_str().unwrap()],
    )
    .ok()
    .stdout_has("moved to you: the claim on task rel/docs")
    .stdout_has("moved to you: reservation");
    env.swarm(&carol_wt, &["task", "renew"]).ok();
    env.write(
        &carol_wt.join("docs/guide.md"),
        "# Guide\n\na whole chapter\n",
    );
    env.git(
        &carol_wt,
        &["commit", "--quiet", "-am", "docs: the chapter"],
    );
    env.git(&carol_wt, &["push", "--quiet", "origin", "feat/docs"]);
    // bob's claim is carol's now.
    env.swarm(&bob_wt, &["task", "renew"])
        .err(3, "LEASE_NOT_HOLDER")
        .stderr_has("carol");

    // Their work pushed, the agents give their paths back.
    env.swarm(&ann_wt, &["release", "src/api/"]).ok();
    env.swarm(&carol_wt, &["release", "docs/"]).ok();

    // Evening: the coordinator merges both, fenced, and the tasks are done.
    env.swarm(lead, &["sync"]).ok();
    env.git(lead, &["fetch", "--quiet", "origin"]);
    env.git(
        lead,
        &[
            "merge",
            "--quiet",
            "--no-edit",
            "origin/feat/api",
            "origin/feat/docs",
        ],
    );
    env.swarm(lead, &["lead", "push", "--plan", "rel", "main"])
        .ok();
    env.git(&ann_wt, &["fetch", "--quiet", "origin"]);
    env.swarm(&ann_wt, &["task", "done"]).ok();
    env.git(&carol_wt, &["fetch", "--quiet", "origin"]);
    env.swarm(&carol_wt, &["task", "done"]).ok();
    for id in ["api", "docs"] {
        let tip = ref_of(&env, &remote, &format!("refs/swarm/tasks/rel/{id}")).unwrap();
        let task = env.git(&remote, &["show", &format!("{tip}:task.yaml")]);
        assert!(task.contains("status: done"), "{task}");
    }

    // Every clone ends with the same state.
    for dir in &clones {
        env.swarm(dir, &["sync"]).ok();
    }
    let states: Vec<String> = clones
        .iter()
        .map(|d| env.swarm(d, &["state"]).ok().stdout)
        .collect();
    for (d, s) in clones.iter().zip(&states) {
        assert_eq!(
            s,
            &states[0],
            "{} differs from {}",
            d.display(),
            clones[0].display()
        );
    }
    assert!(states[0].contains("rel"), "{}", states[0]);
    let pushed = crate::lane_task::pushes(&log);
    eprintln!(
        "the day took {} pushes:\n{}",
        pushed.len(),
        pushed.join("\n")
    );
}
