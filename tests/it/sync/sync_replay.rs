//! `sync` replays this clone's unpublished writes on the published version
//! (issue 35, item 2): an offline reservation is re-decided against the
//! fresh ledger (kept, or `RESERVATION_CONFLICT` naming both), an offline
//! renewal is re-applied, an id allocated offline never clashes, and a
//! packet that names an offline reservation still moves it. A write that
//! cannot be kept fails the sync (exit 3) naming it, and the local version
//! stays at `refs/swarm-lost/…`.

use std::path::{Path, PathBuf};

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::ref_of;
use crate::support::reservations::{self as stored, reserved_id as id_of, LOCAL};

/// The shard ref holding reservations of `path`.
fn shard(path: &str) -> String {
    stored::shard_of(LOCAL, path)
}

/// One entry: (id, holder, paths, lease_until).
type Row = (String, String, String, String);

fn row(e: &serde_yaml_ng::Value) -> Row {
    let paths: Vec<&str> = e["paths"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    (
        e["id"].as_str().unwrap().to_string(),
        e["holder"].as_str().unwrap().to_string(),
        paths.join(" "),
        e["lease_until"].as_str().unwrap().to_string(),
    )
}

/// Every entry of the reservations in `dir`, merged over the shards, by id.
fn entries(env: &TestEnv, dir: &Path) -> Vec<Row> {
    let mut out: Vec<Row> = stored::entries(env, dir, LOCAL).iter().map(row).collect();
    out.sort();
    out
}

fn ids(env: &TestEnv, dir: &Path) -> Vec<String> {
    stored::ids(env, dir, LOCAL)
}

/// The ids in the one version `rev` (e.g. a kept `refs/swarm-lost/…`).
fn ids_at(env: &TestEnv, dir: &Path, rev: &str) -> Vec<String> {
    let text = env.git(dir, &["show", &format!("{rev}:reservations.yaml")]);
    let y: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    let mut out: Vec<String> = y["entries"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|e| row(e).0)
        .collect();
    out.sort();
    out
}

fn lost_refs(env: &TestEnv, dir: &Path) -> Vec<(String, String)> {
    env.refs(dir, "refs/swarm-lost/").into_iter().collect()
}

fn two() -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).parts();
    let mut it = clones.into_iter();
    let (a, b) = (it.next().unwrap(), it.next().unwrap());
    (env, remote, a, b)
}

#[test]
fn an_offline_reservation_nothing_overlaps_is_kept_by_sync_under_an_id_that_cannot_clash() {
    let (env, remote, a, b) = two();
    // bob reserves at the remote; ann, offline, reserves another file of
    // the same directory (the same shard: the two versions must merge).
    let bobs = id_of(&env.swarm(&b, &["reserve", "src/lib/a.rs", "--json"]).ok());
    let run = env
        .swarm(&a, &["--offline", "reserve", "src/lib/b.rs", "--json"])
        .ok()
        .stderr_has("not published");
    let mine = run.json()["entry"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        mine,
        format!("{bobs}-ann"),
        "an offline id carries its holder's address: bob's number, not bob's id"
    );
    let src = shard("src/lib/");
    assert!(stored::in_one_shard("src/lib/"));
    let offline = ref_of(&env, &a, &src).unwrap();
    // Not `lost …: the version published first wins`, exit 0, with ann's
    // reservation gone.
    let run = env.swarm(&a, &["sync"]).ok();
    run.expect_stdout(&format!("merged   {src}"));
    run.expect_stdout(&format!("pushed   {src}"));
    assert!(!run.stdout.contains("lost"), "{}", run.stdout);
    assert_eq!(ids(&env, &remote), [bobs.clone(), mine.clone()]);
    let published = ref_of(&env, &remote, &src).unwrap();
    assert_eq!(ref_of(&env, &a, &src).as_deref(), Some(published.as_str()));
    // The offline version stays in the shard's history; nothing was lost.
    env.git(&a, &["merge-base", "--is-ancestor", &offline, &published]);
    assert!(lost_refs(&env, &a).is_empty());
    // bob sees it, and is refused the file; his next id is a new one, and
    // ann releases hers by its id.
    env.swarm(&b, &["reserve", "src/lib/b.rs"])
        .err(3, "RESERVATION_CONFLICT")
        .stderr_has(&format!("{mine} held by ann"));
    let next = id_of(&env.swarm(&b, &["reserve", "src/lib/c.rs", "--json"]).ok());
    assert!(next != bobs && next != mine, "{next}");
    env.swarm(&a, &["release", &mine]).ok();
    let mut left = vec![bobs, next];
    left.sort();
    assert_eq!(ids(&env, &remote), left);
    env.swarm(&a, &["sync"]).ok().stdout_has("up to date");
}

#[test]
fn an_offline_reservation_in_another_shard_is_pushed_by_sync_without_a_merge() {
    let (env, remote, a, b) = two();
    let (src, cargo) = (shard("src/lib/"), shard("config/app.toml"));
    assert_ne!(src, cargo, "the test needs two shards");
    assert!(stored::in_one_shard("src/lib/") && stored::in_one_shard("config/app.toml"));
    env.swarm(&b, &["reserve", "src/lib/a.rs"]).ok();
    let bobs = ref_of(&env, &remote, &src).unwrap();
    env.swarm(&a, &["--offline", "reserve", "config/app.toml"])
        .ok();
    let run = env.swarm(&a, &["sync"]).ok();
    run.expect_stdout(&format!("pushed   {cargo}"));
    assert!(!run.stdout.contains("merged"), "{}", run.stdout);
    // bob's shard was not written by ann's sync.
    assert_eq!(ref_of(&env, &remote, &src), Some(bobs));
    let holders: Vec<String> = entries(&env, &remote).into_iter().map(|e| e.1).collect();
    assert_eq!(holders.len(), 2, "{holders:?}");
    assert!(holders.contains(&"ann".to_string()) && holders.contains(&"bob".to_string()));
}

#[test]
fn an_offline_reservation_another_clone_published_over_fails_sync_naming_both_and_keeps_it() {
    let (env, remote, a, b) = two();
    let cargo = shard("config/app.toml");
    assert!(stored::in_one_shard("config/app.toml"));
    let mine = id_of(
        &env.swarm(&a, &["--offline", "reserve", "config/app.toml", "--json"])
            .ok(),
    );
    let offline = ref_of(&env, &a, &cargo).unwrap();
    let theirs = id_of(
        &env.swarm(&b, &["reserve", "config/app.toml", "src/lib/", "--json"])
            .ok(),
    );
    let bobs = ref_of(&env, &remote, &cargo).unwrap();
    let run = env.swarm(&a, &["sync"]).err(3, "RESERVATION_CONFLICT");
    run.expect_stderr(&format!("{mine} held by ann"));
    run.expect_stderr(&format!("{theirs} held by bob"));
    run.expect_stderr("config/app.toml");
    let lost = cargo.replace("refs/swarm/", "refs/swarm-lost/");
    let kept = format!("{lost}@{}", &offline[..12]);
    run.expect_stderr(&kept);
    run.expect_stdout(&format!("lost     {cargo}: [RESERVATION_CONFLICT]"));
    // The remote keeps bob's alone; ann's version is kept, not pushed.
    assert_eq!(ids(&env, &remote), [theirs]);
    let published = ref_of(&env, &remote, &cargo).unwrap();
    env.git(&a, &["merge-base", "--is-ancestor", &bobs, &published]);
    assert_eq!(lost_refs(&env, &a), [(kept.clone(), offline.clone())]);
    assert!(env.refs(&remote, "refs/swarm-lost/").is_empty());
    assert_eq!(ids_at(&env, &a, &kept), [mine]);
    // Said once: the next sync has nothing left to say.
    env.swarm(&a, &["sync"]).ok().stdout_has("up to date");
    assert_eq!(lost_refs(&env, &a), [(kept, offline)]);
}

/// The number of an id (`r12`, `r12-ann`).
fn number(id: &str) -> u64 {
    id[1..].split('-').next().unwrap().parse().unwrap()
}

#[test]
fn an_offline_renewal_is_replayed_on_the_published_ledger() {
    let (mut env, remote, a, b) = two();
    env.set_env("GIT_SWARM_NOW", "2026-03-01T10:00:00Z");
    // Two files of one directory: one shard, which both clones write.
    assert!(stored::in_one_shard("src/lib/"));
    let anns = id_of(
        &env.swarm(&a, &["reserve", "src/lib/a.rs", "--lease", "1h", "--json"])
            .ok(),
    );
    let bobs = id_of(&env.swarm(&b, &["reserve", "src/lib/b.rs", "--json"]).ok());
    env.set_env("GIT_SWARM_NOW", "2026-03-01T10:30:00Z");
    env.swarm(&a, &["--offline", "renew"])
        .ok()
        .stderr_has("not published");
    let renewed = entries(&env, &a);
    assert_eq!(renewed.len(), 1, "ann never fetched bob's: {renewed:?}");
    let until = renewed[0].3.clone();
    assert_eq!(until, "2026-03-01T12:30:00Z", "renewed for the default 2h");
    env.swarm(&a, &["sync"])
        .ok()
        .stdout_has(&format!("merged   {}", shard("src/lib/")));
    let mut want: Vec<Row> = vec![
        (anns, "ann".into(), "src/lib/a.rs".into(), until),
        (
            bobs,
            "bob".into(),
            "src/lib/b.rs".into(),
            "2026-03-01T12:00:00Z".into(),
        ),
    ];
    want.sort();
    assert_eq!(entries(&env, &remote), want);
    assert!(lost_refs(&env, &a).is_empty());
}

#[test]
fn two_clones_reserving_offline_get_ids_that_never_clash() {
    let (env, remote, a, b) = two();
    let reserve = |dir: &Path, path: &str| {
        id_of(
            &env.swarm(dir, &["--offline", "reserve", path, "--json"])
                .ok(),
        )
    };
    // One directory, one shard: the two clones' versions have to merge.
    assert!(stored::in_one_shard("dir/sub/"));
    let a1 = reserve(&a, "dir/sub/a.txt");
    let b1 = reserve(&b, "dir/sub/b.txt");
    let a2 = reserve(&a, "dir/sub/c.txt");
    assert!(a1.ends_with("-ann") && a2.ends_with("-ann") && b1.ends_with("-bob"));
    assert_eq!(
        number(&a1),
        number(&b1),
        "the same number, told apart by holder"
    );
    assert!(number(&a2) > number(&a1));
    env.swarm(&a, &["sync"]).ok();
    // Two ledgers made apart (no common version): replayed, not a conflict.
    env.swarm(&b, &["sync"]).ok().stdout_has("merged");
    env.swarm(&a, &["sync"]).ok().stdout_has("pulled");
    let mut all = vec![a1.clone(), b1, a2.clone()];
    all.sort();
    assert_eq!(ids(&env, &remote), all);
    // The next id handed out at the remote follows both clones' counters.
    let next = id_of(&env.swarm(&b, &["reserve", "dir/sub/d.txt", "--json"]).ok());
    assert!(number(&next) > number(&a2), "{next} after {a2}");
    assert!(!next.contains('-'), "an online id: {next}");
    assert!(lost_refs(&env, &a).is_empty() && lost_refs(&env, &b).is_empty());
}

#[test]
fn a_write_another_kind_cannot_replay_fails_sync_naming_it_and_is_kept() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"]).plan(0, "p").sync(0).parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(
        a,
        &["task", "new", "t", "--plan", "p", "--title", "the parser"],
    )
    .ok();
    env.swarm(b, &["sync"]).ok();
    let task = "refs/swarm/tasks/p/t";
    env.swarm(a, &["--offline", "task", "claim", "t", "--plan", "p"])
        .ok();
    let anns = ref_of(&env, a, task).unwrap();
    env.swarm(b, &["task", "claim", "t", "--plan", "p"]).ok();
    let bobs = ref_of(&env, &remote, task).unwrap();
    let run = env.swarm(a, &["sync"]).err(3, "WRITE_LOST");
    run.expect_stderr("by ann");
    run.expect_stderr(&bobs[..12]);
    let kept = format!("refs/swarm-lost/tasks/p/t@{}", &anns[..12]);
    run.expect_stderr(&kept);
    assert_eq!(ref_of(&env, a, task).as_deref(), Some(bobs.as_str()));
    assert_eq!(ref_of(&env, &remote, task).as_deref(), Some(bobs.as_str()));
    assert_eq!(ref_of(&env, a, &kept).as_deref(), Some(anns.as_str()));
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
}

#[test]
fn a_packet_written_offline_naming_an_offline_reservation_is_accepted_with_it_moved() {
    let (env, remote, clones) = Swarm::new(&["lead", "ann", "bob"])
        .plan(0, "p")
        .sync(0)
        .task(0, "t", "the parser")
        .parts();
    let (ann, bob) = (&clones[1], &clones[2]);
    let out = env
        .swarm(ann, &["lane", "new", "f1", "--task", "t", "--json"])
        .ok();
    let wt = PathBuf::from(out.json()["path"].as_str().unwrap());
    // Another agent takes an id at the remote while ann is offline.
    let bobs = id_of(&env.swarm(bob, &["reserve", "docs/", "--json"]).ok());
    let mine = id_of(
        &env.swarm(&wt, &["--offline", "reserve", "src/", "--json"])
            .ok(),
    );
    assert!(mine.ends_with("-ann"), "{mine}");
    env.write(&wt.join("src/a.txt"), "committed\n");
    env.git(&wt, &["add", "src/a.txt"]);
    env.git(&wt, &["commit", "--quiet", "-m", "parser: first half"]);
    env.write(&wt.join("src/b.txt"), "half done\n");
    let out = env
        .swarm(
            &wt,
            &[
                "--offline",
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "finish b",
                "--json",
            ],
        )
        .ok()
        .stderr_has("not published");
    let id = out.json()["id"].as_str().unwrap().to_string();
    let packet = format!("refs/swarm/packets/f1/{id}");
    let text = env.git(ann, &["show", &format!("{packet}:packet.yaml")]);
    assert!(text.contains(&mine), "{text}");
    env.swarm(&wt, &["sync"])
        .ok()
        .stdout_has(&format!("pushed   {packet}"));
    let mut both = vec![bobs.clone(), mine.clone()];
    both.sort();
    assert_eq!(ids(&env, &remote), both);
    env.git(
        &wt,
        &["push", "--quiet", "--no-verify", "origin", "feat/f1"],
    );
    // Not `NOT moved: reservation …: released or gone from the ledger`,
    // nor another's reservation named.
    let succ = bob.join("succ");
    let run = env
        .swarm(bob, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    run.expect_stdout(&format!("moved to you: reservation {mine}"));
    assert!(!run.stdout.contains("NOT moved"), "{}", run.stdout);
    let held: Vec<(String, String)> = entries(&env, &remote)
        .into_iter()
        .map(|e| (e.0, e.1))
        .collect();
    let mut want = vec![(bobs, "bob".to_string()), (mine, "bob".to_string())];
    want.sort();
    assert_eq!(held, want);
    assert!(lost_refs(&env, ann).is_empty());
}
