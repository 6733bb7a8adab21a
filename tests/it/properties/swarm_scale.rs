//! A swarm through one remote (issue 26): a server that answers "cannot lock
//! ref" or drops the connection is retried, never taken for a lost race; a
//! push of many independent records goes in batches the server accepts;
//! every command's `--json` counts the remote operations it made.

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// Every ref of a repository (`TestEnv::all_refs` asks for-each-ref for the
/// pattern "", which matches nothing).
fn every_ref(env: &TestEnv, dir: &Path) -> std::collections::BTreeMap<String, String> {
    env.refs(dir, "refs/")
}

fn hook(remote: &Path, name: &str, body: &str) {
    let path = remote.join("hooks").join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A `pre-receive` hook that answers the next `n` pushes as a server whose
/// ref is locked (as GitHub does under concurrent pushes), then accepts.
fn lock_the_next_pushes(remote: &Path, n: usize) {
    std::fs::write(remote.join("locked-pushes"), n.to_string()).unwrap();
    hook(
        remote,
        "pre-receive",
        r#"cat >/dev/null
n=$(cat locked-pushes)
if [ "$n" -gt 0 ]; then
  echo $((n - 1)) > locked-pushes
  echo "error: cannot lock ref 'refs/swarm/x': Unable to create 'refs/swarm/x.lock': File exists." >&2
  exit 1
fi
"#,
    );
}

#[test]
fn a_locked_ref_is_retried_and_the_claim_lands() {
    let (env, remote, clones) = Swarm::new(&["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "do it")
        .parts();
    lock_the_next_pushes(&remote, 2);
    let run = env
        .swarm(
            &clones[0],
            &["task", "claim", "t1", "--plan", "p", "--json"],
        )
        .ok();
    assert_eq!(env.read(&remote.join("locked-pushes")).trim(), "0");
    let claimed = env.refs(&remote, "refs/swarm/tasks/p/t1");
    let local = env.refs(&clones[0], "refs/swarm/tasks/p/t1");
    assert_eq!(
        claimed.values().collect::<Vec<_>>(),
        local.values().collect::<Vec<_>>()
    );
    let tip = claimed.values().next().unwrap();
    let yaml = env.git(&remote, &["show", &format!("{tip}:task.yaml")]);
    assert!(yaml.contains("ann"), "{yaml}");
    // Three pushes made it: two answered "locked", the third landed.
    let ops = &run.json()["remote_ops"];
    assert_eq!(ops["pushes"], 3, "{ops}");
    assert_eq!(ops["retries"], 2, "{ops}");
    assert_eq!(ops["refs_pushed"], 3, "{ops}");
}

#[test]
fn a_ref_locked_through_every_retry_is_the_environment_not_a_lost_race() {
    let (env, remote, clones) = Swarm::new(&["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "do it")
        .parts();
    let remote_before = every_ref(&env, &remote);
    let local_before = env.refs(&clones[0], "refs/swarm/tasks/");
    lock_the_next_pushes(&remote, 1000);
    env.swarm(&clones[0], &["task", "claim", "t1", "--plan", "p"])
        .err(4, "REMOTE_BUSY")
        .stderr_has("not a lost race");
    assert_eq!(env.read(&remote.join("locked-pushes")).trim(), "995");
    assert_eq!(every_ref(&env, &remote), remote_before);
    assert_eq!(env.refs(&clones[0], "refs/swarm/tasks/"), local_before);
}

#[test]
fn a_transaction_the_server_aborts_is_retried_then_reported_as_the_environment() {
    let (env, remote, clones) = Swarm::new(&["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "do it")
        .parts();
    let remote_before = every_ref(&env, &remote);
    // The server dies mid-push on the first two attempts (the client sees
    // a dropped connection), then lets the third through.
    std::fs::write(remote.join("aborts"), "2").unwrap();
    hook(
        &remote,
        "reference-transaction",
        r#"cat >/dev/null
[ "$1" = prepared ] || exit 0
n=$(cat aborts)
[ "$n" -gt 0 ] || exit 0
echo $((n - 1)) > aborts
exit 1
"#,
    );
    env.swarm(&clones[0], &["task", "claim", "t1", "--plan", "p"])
        .ok();
    assert_eq!(env.read(&remote.join("aborts")).trim(), "0");
    let claimed = every_ref(&env, &remote);
    assert_ne!(claimed, remote_before);
    assert_eq!(
        claimed.get("refs/swarm/tasks/p/t1"),
        env.refs(&clones[0], "refs/swarm/tasks/")
            .get("refs/swarm/tasks/p/t1")
    );
    // Aborted every time: exit 4, and the release is nowhere.
    let local_before = env.refs(&clones[0], "refs/swarm/tasks/");
    std::fs::write(remote.join("aborts"), "1000").unwrap();
    env.swarm(&clones[0], &["task", "release", "t1", "--plan", "p"])
        .err(4, "REMOTE_BUSY");
    assert_eq!(every_ref(&env, &remote), claimed);
    assert_eq!(env.refs(&clones[0], "refs/swarm/tasks/"), local_before);
}

/// `n` plan records written straight into `dir`'s refs (fast-import).
fn import_plans(env: &TestEnv, dir: &Path, n: usize) {
    let mut stream = String::new();
    for i in 0..n {
        let yaml = format!(
            "schema: swarm-plan/v1\nplan: q{i:04}\ntitle: Plan {i}\ncontract: v1\nstatus: active\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: ann\nupdated_at: 2026-01-01T00:00:00Z\n"
        );
        let text = format!("# Plan {i}\n");
        stream.push_str(&format!(
            "commit refs/swarm/plans/q{i:04}\ncommitter ann <ann@git-swarm.invalid> 1767225600 +0000\ndata 5\nplan\n\nM 100644 inline plan.yaml\ndata {}\n{yaml}\nM 100644 inline PLAN.md\ndata {}\n{text}\n\n",
            yaml.len(),
            text.len()
        ));
    }
    env.git_stdin(dir, &["fast-import", "--quiet"], stream.as_bytes());
}

/// A `pre-receive` hook that refuses a push of more than 25 refs (as
/// GitHub answers large pushes with HTTP 500) and logs each push's size.
fn refuse_more_than_25_refs(remote: &Path) {
    hook(
        remote,
        "pre-receive",
        r#"n=$(wc -l)
echo "$n" >> push-sizes
if [ "$n" -gt 25 ]; then
  echo "refusing a push of $n refs (at most 25)" >&2
  exit 1
fi
"#,
    );
}

#[test]
fn a_first_sync_of_1000_records_goes_in_one_push_or_in_the_batches_the_server_accepts() {
    let (env, remote, clones) = Swarm::new(&["ann"]).parts();
    let ann = &clones[0];
    import_plans(&env, ann, 1000);
    refuse_more_than_25_refs(&remote);
    // By default (a remote not on GitHub), in one push: the server refuses
    // it all.
    env.swarm(ann, &["sync"]).err(4, "PUSH_DENIED");
    assert!(env.refs(&remote, "refs/swarm/plans/").is_empty());
    // In batches of 25 (GitHub's default): all of it.
    env.git(ann, &["config", "swarm.pushBatch", "25"]);
    std::fs::remove_file(remote.join("push-sizes")).unwrap();
    let run = env.swarm(ann, &["sync", "--json"]).ok();
    assert_eq!(run.json()["pushed"].as_array().unwrap().len(), 1000);
    assert_eq!(run.json()["pushes"], 40);
    let ops = &run.json()["remote_ops"];
    assert_eq!(ops["pushes"], 40, "{ops}");
    assert_eq!(ops["refs_pushed"], 1000, "{ops}");
    assert_eq!(ops["retries"], 0, "{ops}");
    let local = env.refs(ann, "refs/swarm/plans/");
    assert_eq!(local.len(), 1000);
    assert_eq!(env.refs(&remote, "refs/swarm/plans/"), local);
    let sizes: Vec<usize> = env
        .read(&remote.join("push-sizes"))
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(sizes, vec![25; 40]);
    // In step: a second sync pushes nothing.
    let again = env.swarm(ann, &["sync", "--json"]).ok();
    assert!(again.json()["pushed"].as_array().unwrap().is_empty());
}

#[test]
fn every_json_document_counts_the_remote_operations_of_its_command() {
    let (env, remote, clones) = Swarm::new(&["ann"]).plan(0, "p").sync(0).parts();
    let ann = &clones[0];
    let ops = |run: &crate::support::harness::Run| run.json()["remote_ops"].clone();
    // Read offline: nothing at the remote.
    let listed = env
        .swarm(ann, &["--offline", "plan", "list", "--json"])
        .ok();
    assert_eq!(
        ops(&listed),
        serde_json::json!({"pushes": 0, "refs_pushed": 0, "fetches": 0, "queries": 0, "retries": 0, "backoff_ms": 0})
    );
    // A claim: it fetches what it decides on and pushes one ref.
    env.swarm(
        ann,
        &["task", "new", "t1", "--plan", "p", "--title", "do it"],
    )
    .ok();
    let claimed = env
        .swarm(ann, &["task", "claim", "t1", "--plan", "p", "--json"])
        .ok();
    let o = ops(&claimed);
    assert_eq!(
        (o["pushes"].clone(), o["refs_pushed"].clone()),
        (1.into(), 1.into()),
        "{o}"
    );
    assert!(o["fetches"].as_u64().unwrap() >= 1, "{o}");
    // A refusal says what it cost too.
    lock_the_next_pushes(&remote, 1000);
    let refused = env.swarm(ann, &["task", "release", "t1", "--plan", "p", "--json"]);
    let refused = refused.err(4, "REMOTE_BUSY");
    assert_eq!(refused.json()["error"]["code"], "REMOTE_BUSY");
    let o = ops(&refused);
    assert_eq!(
        (o["pushes"].clone(), o["retries"].clone()),
        (5.into(), 4.into()),
        "{o}"
    );
}

/// A `pre-receive` hook that, for the next `n` pushes, moves the pushed
/// refs itself first (another writer winning the race at the server: the
/// push then finds them "at X but expected Y"), then lets pushes through.
fn race_the_next_pushes(remote: &Path, n: usize) {
    std::fs::write(remote.join("raced-pushes"), n.to_string()).unwrap();
    hook(
        remote,
        "pre-receive",
        r#"n=$(cat raced-pushes)
if [ "$n" -le 0 ]; then cat >/dev/null; exit 0; fi
echo $((n - 1)) > raced-pushes
while read old new ref; do
  [ "$old" = 0000000000000000000000000000000000000000 ] && continue
  tree=$(git rev-parse "$old^{tree}")
  moved=$(echo "moved by another writer" | env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git commit-tree "$tree" -p "$old")
  env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git update-ref "$ref" "$moved" "$old"
done
"#,
    );
}

/// The jittered backoff between attempts, as the process counted it.
fn slept(run: &crate::support::harness::Run) -> u64 {
    run.json()["remote_ops"]["backoff_ms"].as_u64().unwrap()
}

#[test]
fn the_retries_pause_with_a_bounded_jittered_backoff_seeded_for_tests() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_JITTER_SEED", "26");
    let (env, remote, clones) = Swarm::in_env(env, &["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "do it")
        .task(0, "t2", "do it")
        .parts();
    let ann = &clones[0];
    // A server that answers "locked" twice: two pauses, 50–100 ms then
    // 100–200 ms.
    lock_the_next_pushes(&remote, 2);
    let first = env
        .swarm(ann, &["task", "claim", "t1", "--plan", "p", "--json"])
        .ok();
    let ops = &first.json()["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["retries"].clone()),
        (3.into(), 2.into()),
        "{ops}"
    );
    let ms = slept(&first);
    assert!((150..=300).contains(&ms), "{ops}");
    // The same seed, the same pauses: a test sees the same run every time.
    lock_the_next_pushes(&remote, 2);
    let again = env
        .swarm(ann, &["task", "claim", "t2", "--plan", "p", "--json"])
        .ok();
    assert_eq!(slept(&again), ms);
    // Another seed, other pauses (the jitter is not a constant).
    lock_the_next_pushes(&remote, 2);
    let other = env
        .swarm_env(
            ann,
            &[("GIT_SWARM_JITTER_SEED", "27")],
            &["task", "release", "t2", "--plan", "p", "--json"],
        )
        .ok();
    assert!((150..=300).contains(&slept(&other)));
    assert_ne!(slept(&other), ms);

    // The publish loop: the first three pushes lose the race at the server
    // (another writer moved the task just before), each lost round is
    // followed by a pause (50–100, 100–200, 200–400 ms), and the fourth
    // round, decided on the fresh task, lands.
    race_the_next_pushes(&remote, 3);
    let before = env.refs(&remote, "refs/swarm/tasks/p/t2");
    let raced = env
        .swarm(ann, &["task", "claim", "t2", "--plan", "p", "--json"])
        .ok();
    assert_eq!(env.read(&remote.join("raced-pushes")).trim(), "0");
    let ops = &raced.json()["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["retries"].clone()),
        (4.into(), 0.into()),
        "{ops}"
    );
    let ms = slept(&raced);
    assert!((350..=700).contains(&ms), "{ops}");
    let tip = env.refs(&remote, "refs/swarm/tasks/p/t2")["refs/swarm/tasks/p/t2"].clone();
    assert_ne!(Some(&tip), before.get("refs/swarm/tasks/p/t2"));
    // Three commits of "another writer" under the claim, which is ann's.
    let log = env.git(&remote, &["log", "--format=%s", "-4", &tip]);
    assert_eq!(log.matches("moved by another writer").count(), 3, "{log}");
    let yaml = env.git(&remote, &["show", &format!("{tip}:task.yaml")]);
    assert!(yaml.contains("ann"), "{yaml}");
    assert_eq!(
        env.refs(ann, "refs/swarm/tasks/p/t2")["refs/swarm/tasks/p/t2"],
        tip
    );
}

/// The leases of `who`'s reservations in `dir`'s view of the remote ledger.
fn ledger_leases(env: &TestEnv, dir: &Path) -> Vec<(String, String, String)> {
    let run = env.swarm(dir, &["reservations", "--json"]).ok();
    run.json()["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_string(),
                e["holder"].as_str().unwrap().to_string(),
                e["lease_until"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn one_push_renews_every_claim_and_reservation_an_agent_holds() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T10:00:00Z");
    let mut swarm = Swarm::in_env(env, &["ann", "bob"]).plan(0, "p").sync(0);
    for t in ["t1", "t2", "t3", "t4"] {
        swarm = swarm.task(0, t, "work");
    }
    let (mut env, remote, clones) = swarm.parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    for t in ["t1", "t2", "t3"] {
        env.swarm(ann, &["task", "claim", t, "--plan", "p"]).ok();
    }
    env.swarm(ann, &["reserve", "src/a/"]).ok();
    env.swarm(ann, &["reserve", "docs/b.md", "--shared"]).ok();
    env.swarm(bob, &["task", "claim", "t4", "--plan", "p"]).ok();
    env.swarm(bob, &["reserve", "src/c/"]).ok();
    let tasks_before = env.refs(&remote, "refs/swarm/tasks/");
    let leases_before = ledger_leases(&env, bob);
    // Twenty minutes on: ann's claims have ten minutes left.
    env.set_env("GIT_SWARM_NOW", "2026-01-01T10:20:00Z");
    let run = env.swarm(ann, &["renew", "--json"]).ok();
    let doc = run.json();
    assert_eq!(doc["tasks"], serde_json::json!(["p/t1", "p/t2", "p/t3"]));
    assert_eq!(doc["reservations"].as_array().unwrap().len(), 2, "{doc}");
    assert_eq!(doc["task_lease_until"], "2026-01-01T10:50:00Z");
    assert_eq!(doc["reservation_lease_until"], "2026-01-01T12:20:00Z");
    // One push for five holdings: three task refs and the shards of the
    // two reservations (each in one shard).
    use crate::support::reservations::{in_one_shard, shard_of, LOCAL};
    assert!(in_one_shard("src/a/") && in_one_shard("docs/b.md"));
    let shards: std::collections::BTreeSet<String> = ["src/a/", "docs/b.md"]
        .iter()
        .map(|p| shard_of(LOCAL, p))
        .collect();
    let ops = &doc["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["refs_pushed"].clone()),
        (1.into(), (3 + shards.len()).into()),
        "{ops}"
    );
    // At the remote: ann's three claims moved, bob's did not.
    let tasks_after = env.refs(&remote, "refs/swarm/tasks/");
    for t in ["t1", "t2", "t3"] {
        let r = format!("refs/swarm/tasks/p/{t}");
        assert_ne!(tasks_after[&r], tasks_before[&r], "{t}");
        let yaml = env.git(
            &remote,
            &["show", &format!("{}:task.yaml", tasks_after[&r])],
        );
        assert!(yaml.contains("2026-01-01T10:50:00Z"), "{yaml}");
        assert_eq!(env.refs(ann, &r)[&r], tasks_after[&r]);
    }
    let t4 = "refs/swarm/tasks/p/t4";
    assert_eq!(tasks_after[t4], tasks_before[t4]);
    // The ledger: ann's two entries renewed, bob's as it was.
    let leases_after = ledger_leases(&env, bob);
    for (before, after) in leases_before.iter().zip(&leases_after) {
        assert_eq!((&before.0, &before.1), (&after.0, &after.1));
        if after.1 == "ann" {
            assert_eq!(after.2, "2026-01-01T12:20:00Z");
        } else {
            assert_eq!(after, before);
        }
    }
    // --due with nothing past half its lease: nothing fetched or pushed.
    let quiet = env.swarm(ann, &["renew", "--due", "--json"]).ok();
    assert_eq!(quiet.json()["nothing"], true);
    assert_eq!(quiet.json()["remote_ops"]["pushes"], 0);
    // Bob holds one claim and one reservation: one push of two refs.
    let bobs = env.swarm(bob, &["renew", "--json"]).ok();
    let ops = &bobs.json()["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["refs_pushed"].clone()),
        (1.into(), 2.into()),
        "{ops}"
    );
}

/// `renew --due` runs after every tool use: when nothing is due it writes
/// no object (no commit, no signature) and moves no ref. Offline, a renewal
/// moves the claims and the ledger together in this clone.
#[test]
fn renew_due_writes_nothing_until_due_and_offline_moves_every_holding_at_once() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T10:00:00Z");
    let (mut env, remote, clones) = Swarm::in_env(env, &["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "work")
        .parts();
    let ann = &clones[0];
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    env.swarm(ann, &["reserve", "src/a/"]).ok();
    let objects = |env: &TestEnv| env.git(ann, &["count-objects", "-v"]);
    let (refs_before, objects_before) = (env.refs(ann, "refs/swarm/"), objects(&env));
    // Five minutes on: nothing is past half its lease.
    env.set_env("GIT_SWARM_NOW", "2026-01-01T10:05:00Z");
    let doc = env.swarm(ann, &["renew", "--due", "--json"]).ok().json();
    assert_eq!(doc["nothing"], true, "{doc}");
    assert_eq!(env.refs(ann, "refs/swarm/"), refs_before);
    assert_eq!(objects(&env), objects_before, "no object written");
    // Twenty minutes on, offline: the claim and the ledger move together here.
    env.set_env("GIT_SWARM_NOW", "2026-01-01T10:20:00Z");
    let remote_before = env.refs(&remote, "refs/swarm/");
    let run = env.swarm(ann, &["--offline", "renew", "--json"]).ok();
    run.expect_stderr("not published");
    let doc = run.json();
    assert_eq!(doc["tasks"], serde_json::json!(["p/t1"]), "{doc}");
    assert_eq!(doc["reservations"].as_array().unwrap().len(), 1, "{doc}");
    let after = env.refs(ann, "refs/swarm/");
    let shard = crate::support::reservations::shard_of("refs/swarm/reservations/", "src/a/");
    for r in ["refs/swarm/tasks/p/t1", shard.as_str()] {
        assert_ne!(after[r], refs_before[r], "{r} moved here");
    }
    assert_eq!(env.refs(&remote, "refs/swarm/"), remote_before);
}

/// A renewal whose push landed while another write here built on it (a
/// second renewal of the same claim): the local ref already holds what was
/// published and more, so there is nothing to reconcile and no error.
#[test]
fn a_renewal_whose_local_ref_moved_past_its_published_version_succeeds() {
    let swarm = Swarm::new(&["ann"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t1", "work");
    let (env, remote, clones) = swarm.parts();
    let ann = &clones[0];
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    let paused = crate::support::process::Paused::at(&env, ann, "renew:pushed", &[], &["renew"]);
    let published = env.refs(&remote, "refs/swarm/tasks/p/t1");
    env.swarm(ann, &["task", "renew", "t1", "--plan", "p"]).ok();
    let later = env.refs(ann, "refs/swarm/tasks/p/t1");
    assert_ne!(published, later, "the second renewal moved the claim on");
    let run = paused.release().ok();
    assert!(!run.stderr.contains("CAS_FAILED"), "{run:?}");
    // Nothing moved back: here and at the remote, the later renewal.
    assert_eq!(env.refs(ann, "refs/swarm/tasks/p/t1"), later);
    assert_eq!(env.refs(&remote, "refs/swarm/tasks/p/t1"), later);
}
