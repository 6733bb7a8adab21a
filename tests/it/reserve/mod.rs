//! Path reservations across machines: a bare remote and clones driven as
//! separate processes; racing reservations lined up at the ledger write;
//! release, recovery and the ledger with tasks and lanes. What the guards
//! make of a reservation is in `guard::reservations`. Each test asserts
//! exit codes, messages and the refs left behind.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{finish, soak_rounds, spawn, wait_arrivals};
use crate::support::reservations::{self as stored, LOCAL};

/// The harness dates every commit at this instant.
const NOW: &str = "2026-01-01T00:00:00Z";

/// The live entries (not released) of the remote's ledger: (holder, paths).
fn entries(env: &TestEnv, remote: &Path) -> Vec<(String, Vec<String>)> {
    stored::entries(env, remote, LOCAL)
        .iter()
        .filter(|e| e["released_at"].is_null())
        .map(|e| {
            let paths = e["paths"].as_sequence().unwrap();
            (
                e["holder"].as_str().unwrap().to_string(),
                paths
                    .iter()
                    .map(|p| p.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn env_at_now() -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", NOW);
    env
}

/// Run the same kind of reservation from every clone at once, lined up at
/// the ledger write (all decide on the same ledger, then all push).
fn race(
    env: &TestEnv,
    clones: &[std::path::PathBuf],
    round: usize,
    args: &[Vec<String>],
) -> Vec<Run> {
    let gate = env.root().join(format!("gate-{round}"));
    let pause = format!("reserve:objects={}", gate.display());
    let vars: Vec<(&str, &str)> = vec![("GIT_SWARM_PAUSE", &pause)];
    let children: Vec<Child> = clones
        .iter()
        .zip(args)
        .map(|(dir, a)| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            spawn(env, dir, &vars, &a)
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
fn racing_overlapping_reservations_leave_exactly_one_holder_per_round() {
    let names = ["ann", "ben", "cat"];
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &names).parts();
    for round in 0..soak_rounds(6) {
        let area = format!("area{round}/sub");
        // Three overlapping shapes: a directory, a file under it, a glob
        // over it (all in the one shard of `area<n>/sub`).
        let args: Vec<Vec<String>> = [
            format!("{area}/"),
            format!("{area}/x.rs"),
            format!("{area}/*.rs"),
        ]
        .into_iter()
        .map(|p| vec!["reserve".into(), p, "--task".into(), format!("T{round}")])
        .collect();
        let runs = race(&env, &clones, round, &args);
        let winners: Vec<usize> = (0..3).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
        let winner = names[winners[0]];
        for (i, run) in runs.iter().enumerate() {
            if i == winners[0] {
                continue;
            }
            assert_eq!(run.code, 3, "round {round}: {run:#?}");
            assert!(
                run.stderr.contains("error[RESERVATION_CONFLICT]"),
                "{run:#?}"
            );
            assert!(
                run.stderr.contains(&format!("held by {winner}")),
                "{run:#?}"
            );
        }
        let held: Vec<_> = entries(&env, &remote)
            .into_iter()
            .filter(|(_, paths)| paths.iter().any(|p| p.starts_with(&area)))
            .collect();
        assert_eq!(held.len(), 1, "round {round}: {held:?}");
        assert_eq!(held[0].0, winner);
    }
    // The shards' histories have one version per winning reservation
    // between them (each area is in one shard).
    assert!(stored::in_one_shard("area0/sub/"));
    let versions: usize = stored::parts(&env, &remote, LOCAL)
        .iter()
        .map(|(r, _)| {
            env.git(&remote, &["rev-list", "--count", r])
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(versions, soak_rounds(6));
}

#[test]
fn non_overlapping_reservations_made_at_once_all_succeed() {
    let names = ["ann", "ben", "cat"];
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &names).parts();
    for round in 0..3 {
        let args: Vec<Vec<String>> = names
            .iter()
            .map(|n| vec!["reserve".into(), format!("{n}{round}/"), "--json".into()])
            .collect();
        let runs = race(&env, &clones, round, &args);
        for r in &runs {
            assert_eq!(r.code, 0, "round {round}: {r:#?}");
        }
        let mut ids: Vec<String> = runs
            .iter()
            .map(|r| r.json()["entry"]["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3, "every reservation got its own id: {ids:?}");
    }
    let all = entries(&env, &remote);
    assert_eq!(all.len(), 9, "{all:?}");
    for n in names {
        assert_eq!(all.iter().filter(|(h, _)| h == n).count(), 3);
    }
}

#[test]
fn hostile_paths_are_refused_with_nothing_written() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann"]).parts();
    let ann = &clones[0];
    env.swarm(ann, &["reserve", "ok/"]).ok();
    std::os::unix::fs::symlink("/tmp", ann.join("out")).unwrap();
    std::os::unix::fs::symlink(".git", ann.join("gitlink")).unwrap();
    std::fs::create_dir_all(ann.join("sub")).unwrap();
    let before = (env.all_refs(ann), env.all_refs(&remote));
    for bad in [
        "/etc/passwd",
        "../x",
        "a/../../b",
        "a\u{1b}[2Jb",
        "a\nb",
        ".git/hooks/",
        "out/secret",
        "out/",
        "",
        "a\\b",
        "a\tb",
        "[",
        "gitlink/config",
    ] {
        let run = env.swarm(ann, &["reserve", bad, "--json"]);
        run.err(2, "RESERVATION_PATH_INVALID");
    }
    // Credentials in anything the ledger would publish: refused, named,
    // never echoed.
    let token = format!("ghp_{}", "aB3dE5gH7jK9mN2pQ4sT6vW8yZ0cF1aB3dE5g");
    for args in [
        vec!["reserve", "fine/", "--reason", &format!("token {token}")],
        vec!["reserve", "fine/", "--task", token.as_str()],
        vec!["reserve", &format!("{token}.txt")],
        vec!["reserve", "fine/", "--reason", "password=hunter2hunter2"],
    ] {
        let run = env.swarm(ann, &args).err(2, "SECRET_IN_TEXT");
        assert!(
            !run.stderr.contains(&token) && !run.stderr.contains("hunter2"),
            "{run:#?}"
        );
    }
    // From a subdirectory, '..' is refused too (not resolved).
    let sub = ann.join("sub");
    env.swarm(&sub, &["reserve", "../ok/x"])
        .err(2, "RESERVATION_PATH_INVALID");
    // A control character in the task is refused as text.
    env.swarm(ann, &["reserve", "fine/", "--task", "t\u{7}"])
        .err(2, "TEXT_INVALID");
    assert_eq!((env.all_refs(ann), env.all_refs(&remote)), before);
    // A relative path from a subdirectory is stored from the root.
    let run = env.swarm(&sub, &["reserve", "inner.rs", "--json"]).ok();
    assert_eq!(run.json()["entry"]["paths"][0], "sub/inner.rs");
    let inner = run.json()["entry"]["id"].as_str().unwrap().to_string();
    // A directory named without its '/' is reserved as the directory, and
    // a name reserved as a file overlaps a directory of that name.
    env.swarm(ann, &["--as", "bob", "reserve", "sub"])
        .err(3, "RESERVATION_CONFLICT")
        .stderr_has(&format!("sub/ overlaps {inner} held by ann"));
    env.swarm(ann, &["--as", "bob", "reserve", "ok"])
        .err(3, "RESERVATION_CONFLICT");
    std::fs::create_dir_all(ann.join("dir8")).unwrap();
    let run = env.swarm(ann, &["reserve", "dir8", "--json"]).ok();
    assert_eq!(run.json()["entry"]["paths"][0], "dir8/");
}

#[test]
fn release_recover_and_check_across_clones() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann", "ben"]).parts();
    let (ann, ben) = (&clones[0], &clones[1]);
    let r = env
        .swarm(
            ann,
            &["reserve", "src/", "--task", "T1", "--lease", "1h", "--json"],
        )
        .ok();
    let id = r.json()["entry"]["id"].as_str().unwrap().to_string();
    // ben sees the conflict with --check (exit 1), and cannot release it.
    env.swarm(ben, &["reserve", "--check", "src/lib.rs"])
        .code(1)
        .stdout_has("ann")
        .stdout_has("T1");
    env.swarm(ben, &["reserve", "--check", "docs/"])
        .ok()
        .stdout_has("no conflicts");
    let before = env.all_refs(&remote);
    env.swarm(ben, &["release", &id])
        .err(3, "RESERVATION_NOT_HOLDER");
    env.swarm(ben, &["reserve", "--recover", &id, "--reason", "away"])
        .err(3, "RESERVATION_NOT_EXPIRED");
    env.swarm(ben, &["release", "r99"])
        .err(2, "RESERVATION_NOT_FOUND");
    assert_eq!(env.all_refs(&remote), before);
    // Two hours later the lease is over: ben recovers it, naming why.
    let later = [("GIT_SWARM_NOW", "2026-01-01T02:00:00Z")];
    let rec = env
        .swarm_env(
            ben,
            &later,
            &[
                "reserve",
                "--recover",
                &id,
                "--reason",
                "ann is away",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(rec["entry"]["holder"], "ben");
    assert_eq!(rec["entry"]["recovered_from"]["previous_holder"], "ann");
    assert_eq!(
        rec["entry"]["recovered_from"]["expired_at"],
        "2026-01-01T01:00:00Z"
    );
    assert_eq!(
        entries(&env, &remote),
        vec![("ben".to_string(), vec!["src/".to_string()])]
    );
    let list = env
        .swarm_env(ben, &later, &["reservations", "--json"])
        .ok()
        .json();
    assert_eq!(list["reservations"].as_array().unwrap().len(), 1);
    assert_eq!(list["reservations"][0]["holder"], "ben");
    let new_id = rec["entry"]["id"].as_str().unwrap().to_string();
    env.swarm_env(ben, &later, &["release", "src/"])
        .ok()
        .stdout_has(&new_id);
    assert!(entries(&env, &remote).is_empty());
    // History keeps every version.
    let src = stored::shard_of(LOCAL, "src/");
    let log = env.git(&remote, &["log", "--format=%s", &src]);
    assert!(log.contains("ann reserves src/"), "{log}");
    assert!(log.contains("ben recovers"), "{log}");
}

/// ann reserves `src/` in her clone; bob works in a lane of another clone:
/// (env, ann's clone, the coordinator's clone, bob's lane worktree).
pub(crate) fn lane_setup(env: TestEnv) -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let s = Swarm::in_env(env, &["ann", "coord"])
        .plan(1, "auth")
        .lane_with(1, "login", &["--owner", "bob"])
        .run(0, &["reserve", "src/", "--task", "T7"])
        .sync(1);
    let wt = s.worktree(1, "login");
    let (env, _, clones) = s.parts();
    (env, clones[0].clone(), clones[1].clone(), wt)
}

#[test]
fn status_counts_live_reservations_per_plan() {
    let (env, _ann, coord, wt) = lane_setup(env_at_now());
    // bob, the lane's owner, reserves from his worktree (holder = owner).
    let r = env.swarm(&wt, &["reserve", "docs/", "--json"]).ok().json();
    assert_eq!(r["entry"]["holder"], "bob");
    let s = env.swarm(&coord, &["status", "--json"]).ok().json();
    assert_eq!(s["reservations"], 2, "{s:#}");
    assert_eq!(s["plans"][0]["plan"], "auth");
    assert_eq!(s["plans"][0]["reservations"], 1, "{s:#}");
    env.swarm(&coord, &["status"])
        .ok()
        .stdout_has("1 reservation held by its lane owners")
        .stdout_has("2 reservations live");
}

#[test]
fn a_name_reserved_as_a_file_holds_the_directory_it_becomes() {
    let (env, ann, coord, wt) = lane_setup(env_at_now());
    // `docs` does not exist yet: reserved as a file name, it still holds
    // `docs/…` once someone makes it a directory.
    env.swarm(&ann, &["reserve", "docs", "--json"]).ok();
    env.swarm(&coord, &["sync"]).ok();
    env.write(&wt.join("docs/guide.md"), "# guide\n");
    env.git(&wt, &["add", "docs/guide.md"]);
    let run = env.git_run(&wt, &["commit", "-q", "-m", "docs"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("[reservations] docs/guide.md"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("reserved exclusively by ann"),
        "{run:#?}"
    );
}

#[test]
fn an_unreadable_ledger_is_repaired_from_its_last_readable_version() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["reserve", "src/", "--task", "T1"]).ok();
    let shard = stored::shard_of(LOCAL, "src/");
    let good = env.git(&remote, &["rev-parse", &shard]);
    // Someone pushes a version nobody can read, on top of the good one.
    let bad_yaml = b"schema: swarm-reservations/v1\nentries: [unclosed\n";
    let bad = stored::push_version(&env, ann, &shard, bad_yaml, Some(&good));
    env.swarm(bob, &["sync"]).ok();
    // The guard fails closed, and says how to get out.
    let wt = bob.join("x.txt");
    env.write(&wt, "x\n");
    env.git(bob, &["add", "x.txt"]);
    let hook = env.swarm(bob, &["check", "--staged"]).code(4);
    hook.expect_stderr("reservations --repair --reason");

    let refused = env.swarm(bob, &["reservations"]).code(2);
    refused.expect_stderr("reservations --repair --reason");
    env.swarm(bob, &["reserve", "docs/"]).code(2);
    env.swarm(bob, &["reservations", "--repair"]).code(2);
    let fixed = env
        .swarm(
            bob,
            &[
                "reservations",
                "--repair",
                "--reason",
                "forged version",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(fixed["unreadable"], bad.as_str());
    assert_eq!(fixed["restored_from"], good.as_str());
    assert_eq!(fixed["published"], true);
    assert_eq!(fixed["parts"][0]["refname"], shard.as_str(), "{fixed}");
    assert_eq!(fixed["parts"].as_array().map(Vec::len), Some(1), "{fixed}");
    // On the remote: a new version on top of the bad one (history keeps it),
    // holding the good one's content.
    let tip = env.git(&remote, &["rev-parse", &shard]);
    assert_eq!(env.git(&remote, &["rev-parse", &format!("{tip}^")]), bad);
    assert_eq!(
        env.git(&remote, &["rev-parse", &format!("{tip}^{{tree}}")]),
        env.git(&remote, &["rev-parse", &format!("{good}^{{tree}}")])
    );
    let listed = env.swarm(bob, &["reservations", "--json"]).ok().json();
    assert_eq!(listed["reservations"][0]["holder"], "ann", "{listed}");
    assert_eq!(listed["mirror"]["remote"], "origin", "{listed}");
    env.swarm(bob, &["reservations"])
        .ok()
        .stdout_has("shown: local records plus the mirror of origin");
    // A readable ledger is left alone.
    env.swarm(bob, &["reservations", "--repair", "--reason", "again"])
        .err(2, "USAGE")
        .stderr_has("read fine");
    assert_eq!(env.git(&remote, &["rev-parse", &shard]), tip);
}

#[test]
fn release_takes_a_directory_by_the_name_it_was_reserved_with() {
    let (env, _, clones) = Swarm::new(&["ann"]).parts();
    let ann = &clones[0];
    env.write(&ann.join("mydir/a.txt"), "a\n");
    let r = env.swarm(ann, &["reserve", "mydir", "--json"]).ok().json();
    assert_eq!(r["entry"]["paths"][0], "mydir/", "{r:#}");
    env.swarm(ann, &["release", "mydir"]).ok();
    env.swarm(ann, &["reserve", "other/"]).ok();
    env.swarm(ann, &["release", "other"]).ok();
    let left = env.swarm(ann, &["reservations", "--json"]).ok().json();
    assert_eq!(
        left["reservations"].as_array().map(Vec::len),
        Some(0),
        "{left:#}"
    );
}

/// `task done` releases the reservations its actor holds for the task
/// (`--task <id>` or `--task <plan>/<id>`, as a lane with a task fills it
/// in) in the same atomic push as the done: one push, no `release`
/// afterwards. Others' entries, entries for other tasks (another plan's
/// task of the same id too) and entries tied to no task stay.
#[test]
fn task_done_releases_the_tasks_reservations_in_its_own_push() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann", "bob"])
        .plan(0, "q")
        .task(0, "t1", "the other plan's t1")
        .plan(0, "p")
        .task(0, "t1", "one")
        .task(0, "t2", "two")
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    let mut ids = Vec::new();
    for (path, task) in [
        ("a/", Some("t1")),
        ("b/", Some("p/t1")),
        ("c/", Some("t2")),
        ("d/", None),
        ("e/", Some("q/t1")),
    ] {
        let mut args = vec!["reserve", path, "--json"];
        if let Some(t) = task {
            args.extend(["--task", t]);
        }
        let id = env.swarm(ann, &args).ok().json()["entry"]["id"].clone();
        ids.push(id.as_str().unwrap().to_string());
    }
    env.swarm(bob, &["reserve", "f/", "--task", "p/t1"]).ok();
    env.swarm(ann, &["sync"]).ok();
    let done = env
        .swarm(
            ann,
            &[
                "task",
                "done",
                "t1",
                "--plan",
                "p",
                "--unverified",
                "--reason",
                "no branch",
                "--json",
            ],
        )
        .ok();
    let doc = done.json();
    let mut released: Vec<String> = serde_json::from_value(doc["released"].clone()).unwrap();
    released.sort();
    let mut want = ids[..2].to_vec();
    want.sort();
    assert_eq!(released, want, "{doc}");
    assert_eq!(doc["remote_ops"]["pushes"], 1, "{doc}");
    // The refs left: the task done and the reservations without a/ and
    // b/, on the remote and here alike.
    let task = "refs/swarm/tasks/p/t1";
    let yaml = env.git(&remote, &["show", &format!("{task}:task.yaml")]);
    assert!(yaml.contains("status: done"), "{yaml}");
    assert_eq!(
        entries(&env, &remote),
        [("ann", "c/"), ("ann", "d/"), ("ann", "e/"), ("bob", "f/")]
            .map(|(h, p)| (h.to_string(), vec![p.to_string()]))
            .to_vec()
    );
    assert_eq!(
        env.git(ann, &["rev-parse", task]),
        env.git(&remote, &["rev-parse", task])
    );
    assert_eq!(
        stored::stamp(&env, ann, LOCAL),
        stored::stamp(&env, &remote, LOCAL)
    );
    let why = env.git(
        &remote,
        &["log", "-1", "--format=%B", &stored::shard_of(LOCAL, "a/")],
    );
    assert!(why.contains("Swarm-Event: released"), "{why}");
    assert!(why.contains("task p/t1 done"), "{why}");
    // What was released is free to others.
    env.swarm(bob, &["reserve", "a/", "b/"]).ok();
    // Said in the text too.
    env.swarm(ann, &["task", "claim", "t2", "--plan", "p"]).ok();
    env.swarm(
        ann,
        &[
            "task",
            "done",
            "t2",
            "--plan",
            "p",
            "--unverified",
            "--reason",
            "no branch",
        ],
    )
    .ok()
    .stdout_has(&format!(
        "task p/t2 is done; released {} (its reservations)",
        ids[2]
    ));
}

/// A ledger that keeps changing does not cost the done: after its release
/// rounds the done goes alone, and says which reservations are still held
/// and how to release them. Stand-in for a herd on the ledger: bob moved
/// it, and the remote hides it from fetches (`uploadpack.hideRefs`), so
/// every round of ann's decides on a ledger the remote has moved past and
/// loses its lease.
#[test]
fn task_done_goes_alone_when_the_ledger_keeps_changing_and_says_what_is_held() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann", "bob"])
        .plan(0, "p")
        .task(0, "t1", "one")
        .parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["task", "claim", "t1", "--plan", "p"]).ok();
    // Two directories under one two-level one: one shard, which bob moves.
    let held = env
        .swarm(ann, &["reserve", "a/b/one/", "--task", "t1", "--json"])
        .ok()
        .json();
    let id = held["entry"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        stored::shard_of(LOCAL, "a/b/one/"),
        stored::shard_of(LOCAL, "a/b/two/")
    );
    assert!(stored::in_one_shard("a/b/one/"));
    env.swarm(bob, &["reserve", "a/b/two/"]).ok();
    env.git(&remote, &["config", "uploadpack.hideRefs", LOCAL]);
    let ledger_before = stored::stamp(&env, &remote, LOCAL);
    let done = env
        .swarm(
            ann,
            &[
                "task",
                "done",
                "t1",
                "--plan",
                "p",
                "--unverified",
                "--reason",
                "no branch",
                "--json",
            ],
        )
        .ok()
        .stderr_has(&format!("the task's reservations {id} are still held"))
        .stderr_has(&format!("`git swarm release {id}`"));
    let doc = done.json();
    assert_eq!(doc["still_reserved"], serde_json::json!([id]), "{doc}");
    assert!(doc.get("released").is_none(), "{doc}");
    // Twelve rounds with the release, lost; the thirteenth, the done
    // alone, published. (One more push, the command's closing publish of
    // what the clone holds that its mirror lacks, offers the ledger the
    // hidden ref makes look absent there, and is refused: an artefact of
    // the stand-in.)
    assert_eq!(doc["remote_ops"]["pushes"], 14, "{doc}");
    let yaml = env.git(&remote, &["show", "refs/swarm/tasks/p/t1:task.yaml"]);
    assert!(yaml.contains("status: done"), "{yaml}");
    assert_eq!(stored::stamp(&env, &remote, LOCAL), ledger_before);
    assert_eq!(
        entries(&env, &remote),
        [("ann", "a/b/one/"), ("bob", "a/b/two/")]
            .map(|(h, p)| (h.to_string(), vec![p.to_string()]))
            .to_vec()
    );
}

/// The one-ref ledger an older clone wrote (`refs/swarm/reservations/ledger`)
/// is read beside the shards, enforced, and moved into them by the first
/// write: it is left empty with its `next`, the entries keep their ids.
#[test]
fn the_one_ref_ledger_of_an_older_clone_is_read_and_moved_into_the_shards_by_the_first_write() {
    let (env, remote, clones) = Swarm::in_env(env_at_now(), &["ann", "bob"]).parts();
    let (ann, bob) = (&clones[0], &clones[1]);
    let old = "schema: swarm-reservations/v1\nnext: 3\nentries:\n- id: r1\n  holder: ann\n  paths: [src/]\n  created_at: '2026-01-01T00:00:00Z'\n  lease_until: '2026-01-01T02:00:00Z'\n- id: r2\n  holder: ann\n  paths: ['*.md']\n  created_at: '2026-01-01T00:00:00Z'\n  lease_until: '2026-01-01T02:00:00Z'\n";
    let legacy = "refs/swarm/reservations/ledger";
    stored::push_version(&env, ann, legacy, old.as_bytes(), None);
    // Read beside the shards: listed, and in the way of bob.
    let listed = env.swarm(bob, &["reservations", "--json"]).ok().json();
    let ids: Vec<&str> = listed["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2"], "{listed}");
    let before = env.all_refs(&remote);
    env.swarm(bob, &["reserve", "src/x.rs"])
        .err(3, "RESERVATION_CONFLICT")
        .stderr_has("r1 held by ann");
    env.swarm(bob, &["reserve", "README.md"])
        .err(3, "RESERVATION_CONFLICT")
        .stderr_has("r2 held by ann");
    assert_eq!(env.all_refs(&remote), before, "a refusal writes nothing");
    // The first write moves them: the old ledger empty, its next kept; the
    // entries in their shards, under their ids; the new id above them.
    let made = env
        .swarm(bob, &["reserve", "web/x.rs", "--json"])
        .ok()
        .json();
    let id = made["entry"]["id"].as_str().unwrap().to_string();
    let n: u64 = id[1..].parse().unwrap();
    assert!(n >= 3, "{id}");
    let left = env.git(&remote, &["show", &format!("{legacy}:reservations.yaml")]);
    let left: serde_yaml_ng::Value = serde_yaml_ng::from_str(&left).unwrap();
    assert_eq!(left["next"].as_u64(), Some(3), "{left:?}");
    assert!(
        left["entries"].as_sequence().is_none_or(Vec::is_empty),
        "{left:?}"
    );
    let src = stored::shard_of(LOCAL, "src/");
    let in_src = env.git(&remote, &["show", &format!("{src}:reservations.yaml")]);
    assert!(in_src.contains("id: r1"), "{in_src}");
    // `*.md` is in every shard.
    for (r, _) in stored::parts(&env, &remote, LOCAL) {
        if r != legacy {
            let y = env.git(&remote, &["show", &format!("{r}:reservations.yaml")]);
            assert!(y.contains("id: r2"), "{r}: {y}");
        }
    }
    let mut all = vec!["r1".to_string(), "r2".to_string(), id];
    all.sort();
    assert_eq!(stored::ids(&env, &remote, LOCAL), all);
}
