//! The push budget (`swarm.pushBudget`, issue 26): writes nobody races for
//! are queued in the clone and published with its next push, or by the
//! first command once the budget's window has passed; on a pinned clock
//! (`GIT_SWARM_NOW`), against a real bare remote.

use std::path::{Path, PathBuf};

use crate::support::harness::{Run, TestEnv};

const MESSAGES: &str = "refs/swarm/messages/";

/// ann and bob on one remote, plan p with task t1, ann under `6/min`.
fn setup(env: &TestEnv) -> (PathBuf, PathBuf) {
    let (remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let ann = clones[0].clone();
    env.swarm(&ann, &["plan", "new", "p"]).ok();
    env.swarm(&ann, &["task", "new", "t1", "--plan", "p", "--title", "x"])
        .ok();
    env.git(&ann, &["config", "swarm.pushBudget", "6/min"]);
    (remote, ann)
}

fn at(env: &TestEnv, dir: &Path, time: &str, args: &[&str]) -> Run {
    env.swarm_env(dir, &[("GIT_SWARM_NOW", time)], args)
}

fn pushes(run: &Run) -> u64 {
    run.json()["remote_ops"]["pushes"].as_u64().unwrap()
}

#[test]
fn a_queued_write_goes_with_the_next_claim_or_after_the_window() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    // Queued: not on the remote, no push.
    let first = at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one", "--json"],
    )
    .ok();
    assert_eq!(pushes(&first), 0);
    assert_eq!(first.json()["published"], false);
    assert_eq!(first.json()["queued"]["since"], "2026-01-01T10:00:00Z");
    assert_eq!(first.json()["queued"]["publish_by"], "2026-01-01T10:00:10Z");
    assert!(!first.stderr.contains("not published"), "{}", first.stderr);
    assert!(env.refs(&remote, MESSAGES).is_empty());
    let second = at(
        &env,
        &ann,
        "2026-01-01T10:00:05Z",
        &["notify", "bob", "--plan", "p", "two"],
    )
    .ok()
    .stdout_has("queued (swarm.pushBudget 6/min): 2 writes since 2026-01-01T10:00:00Z; they go with this clone's next push, or with the first git-swarm command from 2026-01-01T10:00:10Z");
    assert!(
        !second.stderr.contains("not published"),
        "{}",
        second.stderr
    );
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // status says what waits, since when, and until when.
    let status = at(&env, &ann, "2026-01-01T10:00:06Z", &["status", "--json"]).ok();
    let q = &status.json()["queued"];
    assert_eq!(q["budget"], "6/min");
    assert_eq!(q["since"], "2026-01-01T10:00:00Z");
    assert_eq!(q["publish_by"], "2026-01-01T10:00:10Z");
    assert_eq!(q["refs"].as_array().unwrap().len(), 2, "{q}");
    assert_eq!(pushes(&status), 0);
    at(&env, &ann, "2026-01-01T10:00:06Z", &["status"])
        .ok()
        .stdout_has("queued (swarm.pushBudget 6/min): 2 writes since 2026-01-01T10:00:00Z");
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // An arbitrated write goes at once and carries the queue: one push.
    let claim = at(
        &env,
        &ann,
        "2026-01-01T10:00:07Z",
        &["task", "claim", "t1", "--plan", "p", "--json"],
    )
    .ok();
    let ops = &claim.json()["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["refs_pushed"].clone()),
        (1.into(), 3.into()),
        "{ops}"
    );
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    assert_eq!(env.refs(&remote, MESSAGES).len(), 2);
    let status = at(&env, &ann, "2026-01-01T10:00:08Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
    assert_eq!(status.json()["queued"]["since"], serde_json::Value::Null);

    // Nothing arbitrated comes: the first command after the window
    // publishes the queue (a read, here), not one before it.
    let third = at(
        &env,
        &ann,
        "2026-01-01T10:01:00Z",
        &["notify", "bob", "--plan", "p", "three", "--json"],
    )
    .ok();
    assert_eq!(pushes(&third), 0);
    let early = at(
        &env,
        &ann,
        "2026-01-01T10:01:09Z",
        &["task", "list", "--json"],
    )
    .ok();
    assert_eq!(pushes(&early), 0);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 2);
    let after = at(
        &env,
        &ann,
        "2026-01-01T10:01:10Z",
        &["task", "list", "--json"],
    )
    .ok();
    assert_eq!(pushes(&after), 1);
    assert_eq!(
        after.json()["published_pending"].as_array().unwrap().len(),
        1
    );
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    assert_eq!(env.refs(&remote, MESSAGES).len(), 3);
    // A queued write itself publishes the queue when its window has passed
    // (the oldest waited long enough), in one push with it.
    at(
        &env,
        &ann,
        "2026-01-01T10:02:00Z",
        &["notify", "bob", "--plan", "p", "four"],
    )
    .ok();
    let fifth = at(
        &env,
        &ann,
        "2026-01-01T10:02:30Z",
        &["notify", "bob", "--plan", "p", "five", "--json"],
    )
    .ok();
    assert_eq!(pushes(&fifth), 1);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 5);
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    // Without a budget, as before: at once.
    env.git(&ann, &["config", "--unset", "swarm.pushBudget"]);
    let now = at(
        &env,
        &ann,
        "2026-01-01T10:02:31Z",
        &["notify", "bob", "--plan", "p", "six", "--json"],
    )
    .ok();
    assert_eq!(now.json()["published"], true);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 6);
}

#[test]
fn a_queued_write_survives_a_kill_at_any_point_of_its_publication() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "kept"],
    )
    .ok();
    let local = env.refs(&ann, MESSAGES);
    assert_eq!(local.len(), 1);
    // Killed as it starts to publish the due queue: nothing published, and
    // the write is still queued here.
    let killed = env.swarm_env(
        &ann,
        &[
            ("GIT_SWARM_NOW", "2026-01-01T10:00:20Z"),
            ("GIT_SWARM_FAILPOINT", "budget:flush"),
        ],
        &["task", "list"],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    assert!(env.refs(&remote, MESSAGES).is_empty());
    assert_eq!(env.refs(&ann, MESSAGES), local);
    let status = at(
        &env,
        &ann,
        "2026-01-01T10:00:15Z",
        &["--offline", "status", "--json"],
    )
    .ok();
    assert_eq!(status.json()["queued"]["refs"].as_array().unwrap().len(), 1);
    // Killed after the push landed, before this clone noted it: published.
    let killed = env.swarm_env(
        &ann,
        &[
            ("GIT_SWARM_NOW", "2026-01-01T10:00:21Z"),
            ("GIT_SWARM_FAILPOINT", "publish:pushed"),
        ],
        &["task", "list"],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    assert_eq!(env.refs(&remote, MESSAGES), local);
    // The next command finds it in step: nothing queued, nothing pushed
    // twice, the message once on the remote.
    let status = at(&env, &ann, "2026-01-01T10:00:22Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
    let sync = at(&env, &ann, "2026-01-01T10:00:23Z", &["sync", "--json"]).ok();
    assert!(
        sync.json()["pushed"].as_array().unwrap().is_empty(),
        "{}",
        sync.stdout
    );
    assert_eq!(env.refs(&remote, MESSAGES), local);
}

#[test]
fn a_push_budget_that_is_not_a_rate_is_refused_with_a_hint() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    env.git(&ann, &["config", "swarm.pushBudget", "six a minute"]);
    let before = env.all_refs(&remote);
    let run = at(&env, &ann, "2026-01-01T10:00:00Z", &["status"]).err(2, "CONFIG_INVALID");
    assert!(run.stderr.contains("6/min"), "{}", run.stderr);
    assert_eq!(env.all_refs(&remote), before);
}

/// One queued write is said in the singular.
#[test]
fn one_queued_write_is_said_in_the_singular() {
    let env = TestEnv::new();
    let (_remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one"],
    )
    .ok()
    .stdout_has("queued (swarm.pushBudget 6/min): 1 write since 2026-01-01T10:00:00Z; it goes with this clone's next push, or with the first git-swarm command from 2026-01-01T10:00:10Z");
}

/// A budgeted write under an invalid budget is refused like status, not
/// published as if no budget were set: nothing written here or there.
#[test]
fn a_budgeted_write_under_an_invalid_push_budget_is_refused() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    env.git(&ann, &["config", "swarm.pushBudget", "6"]);
    let (here, there) = (env.all_refs(&ann), env.all_refs(&remote));
    let run = at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one", "--json"],
    )
    .err(2, "CONFIG_INVALID");
    assert!(run.stderr.contains("6/min"), "{}", run.stderr);
    assert_eq!(env.all_refs(&ann), here);
    assert_eq!(env.all_refs(&remote), there);
    assert!(env.refs(&ann, MESSAGES).is_empty());
}

/// The clone's flush lock (one process publishes the queue, the others
/// leave it to it) is a kernel lock: a live holder keeps it however long
/// it holds it, a SIGKILLed one frees it, and of two processes that race
/// for it exactly one takes it. Processes, not timings: each one either
/// stops inside the lock (the `budget:flush` point) or finishes without it.
#[test]
fn the_flush_lock_has_one_holder_and_a_killed_holder_frees_it() {
    use crate::support::process::{race_to, Paused};
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "kept"],
    )
    .ok();
    let local = env.refs(&ann, MESSAGES);
    let list = ["task", "list"];
    let due = [("GIT_SWARM_NOW", "2026-01-01T10:00:20Z")];
    // A holder stops inside the lock, as a slow push would.
    let holder = Paused::at(&env, &ann, "budget:flush", &due, &list);
    // Held for as long as it lives (a lock older than a minute was once
    // taken over from a live holder): another command finds it busy,
    // leaves the queue to the holder and finishes.
    let file = ann.join(".git/swarm/flushing-origin");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    let (took, finished) = race_to(&env, "budget:flush", &[(&ann, &due, &list)]);
    let overtaken = took.len();
    for p in took {
        p.release();
    }
    assert_eq!(overtaken, 0, "a live holder's lock was taken over");
    assert_eq!(finished[0].code, 0, "{:#?}", finished[0]);
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // SIGKILLed inside the lock: the kernel frees it. Then two commands at
    // once: exactly one takes it and publishes, the other finishes.
    holder.kill();
    let (took, finished) = race_to(
        &env,
        "budget:flush",
        &[(&ann, &due, &list), (&ann, &due, &list)],
    );
    let takers = took.len();
    let runs: Vec<_> = took.into_iter().map(Paused::release).collect();
    assert_eq!(takers, 1, "{runs:#?}\n{finished:#?}");
    assert_eq!(runs[0].code, 0, "{:#?}", runs[0]);
    assert_eq!(finished[0].code, 0, "{:#?}", finished[0]);
    assert_eq!(env.refs(&remote, MESSAGES), local);
    let status = at(&env, &ann, "2026-01-01T10:00:30Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
}
