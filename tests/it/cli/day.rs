//! One agent's day, end to end, in four clones, each acting as one
//! machine: the coordinator makes a plan and its tasks; two agents take a
//! task each with `lane new --task`, at once; they reserve, commit and
//! message, and the reservations keep the other out (at commit and at
//! push); one hands off mid-task with uncommitted work, a claim and a
//! reservation; a third accepts on another machine, renews, commits to the
//! reserved paths and pushes; the coordinator merges, fenced; the tasks
//! are done (a done releases the task's reservations); a leader taken
//! over is fenced; every clone's `git swarm state` is byte-identical.
//!
//! The same day runs with the code and the records on one remote, and on
//! two ([`Remotes::Two`]: the code on `origin`, the records on a
//! coordination remote of their own, `init --coordination-remote`), where
//! it also checks that each remote holds only its own.

use std::path::{Path, PathBuf};

use crate::support::harness::TestEnv;
use crate::support::process::{finish, ref_of, spawn};
use crate::sync::coord_remote::{join, ls_remote, two_remotes};

/// Where the day's code and records live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remotes {
    /// One bare remote, `origin`, for both.
    One,
    /// The code on `origin`, the records on the coordination remote.
    Two,
}

fn commit(env: &TestEnv, wt: &Path, path: &str, text: &str, msg: &str) {
    env.write(&wt.join(path), text);
    env.git(wt, &["add", path]);
    env.git(wt, &["commit", "--quiet", "-m", msg]);
}

fn lane_path(run: &crate::support::harness::Run) -> PathBuf {
    PathBuf::from(run.json()["path"].as_str().expect("lane path"))
}

#[test]
fn one_agents_day_end_to_end_in_four_clones() {
    day(Remotes::One, false);
}

/// The same day with `swarm.trust=require` in every clone: each agent
/// signs with its own key (`agent keygen`), listed on the base branch.
#[test]
fn one_agents_day_end_to_end_with_trust_required() {
    day(Remotes::One, true);
}

/// The same day with the code and the records on two different remotes.
#[test]
fn one_agents_day_end_to_end_with_code_and_records_on_two_remotes() {
    day(Remotes::Two, false);
}

/// Two remotes with `swarm.trust=require`: the trust list is read from the
/// base branch as the code remote has it, the records from the other.
#[test]
fn one_agents_day_end_to_end_on_two_remotes_with_trust_required() {
    day(Remotes::Two, true);
}

/// The clones of the four machines, and the code and records remotes (the
/// same one with [`Remotes::One`]).
fn machines(remotes: Remotes) -> (TestEnv, PathBuf, PathBuf, Vec<PathBuf>) {
    let names = ["lead", "ann", "bob", "carol"];
    match remotes {
        Remotes::One => {
            let (env, remote, clones) = crate::support::fixture::Swarm::new(&names).parts();
            (env, remote.clone(), remote, clones)
        }
        Remotes::Two => {
            let env = TestEnv::new();
            let (code, coord) = two_remotes(&env);
            let clones = names.map(|n| join(&env, &code, &coord, n)).to_vec();
            (env, code, coord, clones)
        }
    }
}

fn day(remotes: Remotes, trust: bool) {
    let (env, code, records, clones) = machines(remotes);
    let (lead, ann, bob, carol) = (&clones[0], &clones[1], &clones[2], &clones[3]);
    if trust {
        let lines: Vec<String> = ["lead", "ann", "bob", "carol"]
            .iter()
            .zip(&clones)
            .map(|(who, dir)| crate::trust::keygen(&env, dir, who))
            .collect();
        let dirs: Vec<&Path> = clones.iter().map(PathBuf::as_path).collect();
        crate::trust::publish_trust_list(&env, &lines, &dirs);
        for dir in &clones {
            env.git(dir, &["config", "swarm.trust", "require"]);
        }
    }
    let log = crate::lane::executor::count_pushes(&records);
    let on_code = |branch: &str| {
        env.git(
            env.root(),
            &[
                "ls-remote",
                code.to_str().unwrap(),
                &format!("refs/heads/{branch}"),
            ],
        )
    };

    // Morning: the coordinator's plan, tasks and leadership.
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
        &[
            "lead",
            "claim",
            "--plan",
            "rel",
            "--succession",
            "lead,carol",
        ],
    )
    .ok();

    // Two agents take a task each, at once, with nothing else first; their
    // lanes start from the code remote's main.
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
    let started = finish(one, "ann: lane new api --task api").ok();
    assert_eq!(started.json()["base"], "origin/main", "{}", started.stdout);
    let ann_wt = lane_path(&started);
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
    // bob's reservation keeps ann out of docs/: at commit, and, with the
    // commit hook skipped, at the push to the code remote (the pre-push
    // check reads the ledger from the records remote).
    env.write(&ann_wt.join("docs/api.md"), "x\n");
    env.git(&ann_wt, &["add", "docs/api.md"]);
    let refused = env.git_run(&ann_wt, &["commit", "--quiet", "-m", "docs from api"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    env.git(
        &ann_wt,
        &["commit", "--quiet", "--no-verify", "-m", "docs from api"],
    );
    let refused = env.git_run(&ann_wt, &["push", "--quiet", "origin", "feat/api"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("docs/"), "{refused:?}");
    assert_eq!(on_code("feat/api"), "");
    env.git(&ann_wt, &["reset", "--quiet", "--hard", "HEAD~1"]);
    env.swarm(
        &ann_wt,
        &["notify", "bob", "the API is in: document src/api"],
    )
    .ok();
    env.swarm(&bob_wt, &["wait", "--for", "message", "--timeout", "1m"])
        .ok()
        .stdout_has("the API is in");
    env.git(&ann_wt, &["push", "--quiet", "origin", "feat/api"]);

    // The forecast reads the lane records from the records remote and
    // ann's branch from the code remote.
    let f = env.swarm(bob, &["forecast", "--json"]).ok().json();
    assert_eq!(f["fetched"], true, "{f}");
    let lanes = f["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 2, "{f}");
    assert_eq!(lanes[0]["feature"], "api");
    assert_eq!(lanes[0]["source"], "remote", "{f}");
    assert_eq!(f["conflicts"], 0, "{f}");

    // bob must stop mid-task: uncommitted work, an unpushed branch, a claim
    // and a reservation. The handoff pushes the branch to the code remote,
    // then the packet to the records remote.
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
    let handed = out.json();
    assert_eq!(handed["pushed"], true, "{}", out.stdout);
    assert_eq!(handed["repo"], code.to_str().unwrap(), "{}", out.stdout);
    let bob_head = env.git(&bob_wt, &["rev-parse", "HEAD"]);
    assert!(on_code("feat/docs").starts_with(&bob_head));
    let packet = handed["id"].as_str().unwrap().to_string();

    // carol accepts on her machine: the work, the claim and the reservation.
    let carol_wt = carol.join("docs-wt");
    env.swarm(
        carol,
        &["accept", &packet, "--worktree", carol_wt.to_str().unwrap()],
    )
    .ok()
    .stdout_has("moved to you: the claim on task rel/docs")
    .stdout_has("moved to you: reservation");
    assert_eq!(env.git(&carol_wt, &["rev-parse", "HEAD"]), bob_head);
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
    // bob's lane and claim are carol's now: his old worktree says so.
    env.swarm(&bob_wt, &["task", "renew"])
        .err(1, "LANE_MOVED")
        .stderr_has("carol owns it now");

    // Her work pushed, ann gives her paths back; carol's go with her done.
    env.swarm(&ann_wt, &["release", "src/api/"]).ok();

    // A task is not done before its branch is merged on the code remote.
    env.swarm(&ann_wt, &["task", "done"]).code(1);

    // Evening: the coordinator merges both and publishes main, fenced: the
    // leader record at the records remote, then main at the code remote.
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
    let merged = env.git(lead, &["rev-parse", "HEAD"]);
    let main = on_code("main");
    assert!(main.starts_with(&merged), "{main}");

    // task done's merge check reads main from the code remote; carol's
    // done releases the reservation she took over.
    env.git(&ann_wt, &["fetch", "--quiet", "origin"]);
    env.swarm(&ann_wt, &["task", "done"]).ok();
    env.git(&carol_wt, &["fetch", "--quiet", "origin"]);
    let done = env.swarm(&carol_wt, &["task", "done", "--json"]).ok();
    assert_eq!(done.json()["released"].as_array().map(Vec::len), Some(1));
    for id in ["api", "docs"] {
        let tip = ref_of(&env, &records, &format!("refs/swarm/tasks/rel/{id}"))
            .unwrap_or_else(|| panic!("task {id} on the records remote"));
        let task = env.git(&records, &["show", &format!("{tip}:task.yaml")]);
        assert!(task.contains("status: done"), "{task}");
    }
    let left =
        crate::support::reservations::entries(&env, &records, crate::support::reservations::LOCAL);
    assert!(left.is_empty(), "reservations left: {left:?}");

    // A leader who was taken over cannot move main: fenced at the records
    // remote before anything reaches the code remote.
    env.swarm(
        carol,
        &[
            "lead",
            "takeover",
            "--plan",
            "rel",
            "--force",
            "--reason",
            "lead is away",
        ],
    )
    .ok();
    commit(&env, lead, "late.txt", "late\n", "a stale leader's change");
    env.swarm(lead, &["lead", "push", "--plan", "rel", "main"])
        .err(3, "LEAD_FENCED");
    assert_eq!(on_code("main"), main, "a fenced leader moved main");

    // Every kind of record the day wrote is on the records remote; with two
    // remotes, records only there and branches only on the code remote.
    let held = ls_remote(&env, &records);
    for prefix in [
        "refs/swarm/plans/rel",
        "refs/swarm/tasks/rel/",
        "refs/swarm/lanes/",
        "refs/swarm/packets/",
        "refs/swarm/snapshots/",
        "refs/swarm/lead/rel",
        "refs/swarm/reservations",
        "refs/swarm/messages/",
    ] {
        assert!(
            held.iter().any(|r| r.starts_with(prefix)),
            "no {prefix} on the records remote: {held:?}"
        );
    }
    if remotes == Remotes::Two {
        let on_code = ls_remote(&env, &code);
        assert!(
            on_code
                .iter()
                .all(|r| r == "HEAD" || r.starts_with("refs/heads/")),
            "the code remote holds records: {on_code:?}"
        );
        for b in ["main", "feat/api", "feat/docs"] {
            let b = format!("refs/heads/{b}");
            assert!(on_code.contains(&b), "{b} not on the code remote");
        }
        assert!(
            held.iter()
                .all(|r| r.starts_with("refs/swarm/") || r == "refs/notes/swarm"),
            "the coordination remote holds code: {held:?}"
        );
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
    if trust {
        // Every record the day wrote is signed by the actor it names.
        for dir in &clones {
            let state = env.swarm(dir, &["state"]).ok();
            assert!(!state.stdout.contains("UNTRUSTED"), "{}", state.stdout);
            assert!(!state.stderr.contains("untrusted"), "{}", state.stderr);
        }
    }
    let pushed = crate::lane::executor::pushes(&log);
    eprintln!(
        "the day took {} pushes at the records remote:\n{}",
        pushed.len(),
        pushed.join("\n")
    );
}
