//! A swarm through one remote (issue 26): a server that answers "cannot lock
//! ref" or drops the connection is retried, never taken for a lost race; a
//! push of many independent records goes in batches the server accepts;
//! every command's `--json` counts the remote operations it made.

use std::path::Path;

use crate::fixture::Swarm;
use crate::harness::TestEnv;

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
fn a_first_sync_of_1000_records_goes_in_batches_the_server_accepts() {
    let (env, remote, clones) = Swarm::new(&["ann"]).parts();
    let ann = &clones[0];
    import_plans(&env, ann, 1000);
    refuse_more_than_25_refs(&remote);
    // In one push (a batch of 1000) the server refuses it all.
    env.git(ann, &["config", "swarm.pushBatch", "1000"]);
    env.swarm(ann, &["sync"]).err(4, "PUSH_DENIED");
    assert!(env.refs(&remote, "refs/swarm/plans/").is_empty());
    // By default, in batches of 25: all of it.
    env.git(ann, &["config", "--unset", "swarm.pushBatch"]);
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
    let ops = |run: &crate::harness::Run| run.json()["remote_ops"].clone();
    // Read offline: nothing at the remote.
    let listed = env
        .swarm(ann, &["--offline", "plan", "list", "--json"])
        .ok();
    assert_eq!(
        ops(&listed),
        serde_json::json!({"pushes": 0, "refs_pushed": 0, "fetches": 0, "queries": 0, "retries": 0})
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
