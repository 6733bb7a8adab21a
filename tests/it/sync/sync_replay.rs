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

const LEDGER: &str = "refs/swarm/reservations/ledger";

/// The ledger's entries at `rev` in `dir`: (id, holder, paths, lease_until).
fn entries(env: &TestEnv, dir: &Path, rev: &str) -> Vec<(String, String, String, String)> {
    let text = env.git(dir, &["show", &format!("{rev}:reservations.yaml")]);
    let y: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("YAML");
    y["entries"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|e| {
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
        })
        .collect()
}

fn ids(env: &TestEnv, dir: &Path, rev: &str) -> Vec<String> {
    let mut out: Vec<String> = entries(env, dir, rev).into_iter().map(|e| e.0).collect();
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
    // bob reserves at the remote (r1); ann, offline, reserves another file.
    env.swarm(&b, &["reserve", "src/lib.rs"])
        .ok()
        .stdout_has("r1");
    let run = env
        .swarm(&a, &["--offline", "reserve", "Cargo.toml", "--json"])
        .ok()
        .stderr_has("not published");
    let mine = run.json()["entry"]["id"].as_str().unwrap().to_string();
    assert_eq!(mine, "r1-ann", "an offline id carries its holder's address");
    let offline = ref_of(&env, &a, LEDGER).unwrap();
    // Not `lost refs/swarm/reservations/ledger: the version published
    // first wins`, exit 0, with ann's reservation gone.
    let run = env.swarm(&a, &["sync"]).ok();
    run.expect_stdout(&format!("merged   {LEDGER}"));
    run.expect_stdout(&format!("pushed   {LEDGER}"));
    assert!(!run.stdout.contains("lost"), "{}", run.stdout);
    assert_eq!(ids(&env, &remote, LEDGER), ["r1", "r1-ann"]);
    let published = ref_of(&env, &remote, LEDGER).unwrap();
    assert_eq!(
        ref_of(&env, &a, LEDGER).as_deref(),
        Some(published.as_str())
    );
    // The offline version stays in the ledger's history; nothing was lost.
    env.git(&a, &["merge-base", "--is-ancestor", &offline, &published]);
    assert!(lost_refs(&env, &a).is_empty());
    // bob sees it, and is refused the file; the next online id is r2, and
    // ann releases hers by its id.
    env.swarm(&b, &["reserve", "Cargo.toml"])
        .err(3, "RESERVATION_CONFLICT")
        .stderr_has("r1-ann held by ann");
    env.swarm(&b, &["reserve", "README.md"])
        .ok()
        .stdout_has("r2");
    env.swarm(&a, &["release", "r1-ann"]).ok();
    assert_eq!(ids(&env, &remote, LEDGER), ["r1", "r2"]);
    env.swarm(&a, &["sync"]).ok().stdout_has("up to date");
}

#[test]
fn an_offline_reservation_another_clone_published_over_fails_sync_naming_both_and_keeps_it() {
    let (env, remote, a, b) = two();
    env.swarm(&a, &["--offline", "reserve", "Cargo.toml"]).ok();
    let offline = ref_of(&env, &a, LEDGER).unwrap();
    env.swarm(&b, &["reserve", "Cargo.toml", "src/"]).ok();
    let bobs = ref_of(&env, &remote, LEDGER).unwrap();
    let run = env.swarm(&a, &["sync"]).err(3, "RESERVATION_CONFLICT");
    run.expect_stderr("r1-ann held by ann");
    run.expect_stderr("r1 held by bob");
    run.expect_stderr("Cargo.toml");
    let kept = format!("refs/swarm-lost/reservations/ledger@{}", &offline[..12]);
    run.expect_stderr(&kept);
    run.expect_stdout(&format!("lost     {LEDGER}: [RESERVATION_CONFLICT]"));
    // The remote keeps bob's alone; ann's version is kept, not pushed.
    assert_eq!(ids(&env, &remote, LEDGER), ["r1"]);
    let published = ref_of(&env, &remote, LEDGER).unwrap();
    env.git(&a, &["merge-base", "--is-ancestor", &bobs, &published]);
    assert_eq!(lost_refs(&env, &a), [(kept.clone(), offline.clone())]);
    assert!(env.refs(&remote, "refs/swarm-lost/").is_empty());
    assert_eq!(ids(&env, &a, &kept), ["r1-ann"]);
    // Said once: the next sync has nothing left to say.
    env.swarm(&a, &["sync"]).ok().stdout_has("up to date");
    assert_eq!(lost_refs(&env, &a), [(kept, offline)]);
}

#[test]
fn an_offline_renewal_is_replayed_on_the_published_ledger() {
    let (mut env, remote, a, b) = two();
    env.set_env("GIT_SWARM_NOW", "2026-03-01T10:00:00Z");
    env.swarm(&a, &["reserve", "Cargo.toml", "--lease", "1h"])
        .ok();
    env.swarm(&b, &["reserve", "src/"]).ok();
    env.set_env("GIT_SWARM_NOW", "2026-03-01T10:30:00Z");
    env.swarm(&a, &["--offline", "renew"])
        .ok()
        .stderr_has("not published");
    let renewed = entries(&env, &a, LEDGER);
    assert_eq!(renewed.len(), 1, "ann never fetched bob's: {renewed:?}");
    let until = renewed[0].3.clone();
    assert_eq!(until, "2026-03-01T12:30:00Z", "renewed for the default 2h");
    env.swarm(&a, &["sync"]).ok().stdout_has("merged");
    let published = entries(&env, &remote, LEDGER);
    assert_eq!(
        published,
        [
            ("r1".into(), "ann".into(), "Cargo.toml".into(), until),
            (
                "r2".into(),
                "bob".into(),
                "src/".into(),
                "2026-03-01T12:00:00Z".into()
            ),
        ]
    );
    assert!(lost_refs(&env, &a).is_empty());
}

#[test]
fn two_clones_reserving_offline_get_ids_that_never_clash() {
    let (env, remote, a, b) = two();
    env.swarm(&a, &["--offline", "reserve", "a.txt"])
        .ok()
        .stdout_has("r1-ann");
    env.swarm(&b, &["--offline", "reserve", "b.txt"])
        .ok()
        .stdout_has("r1-bob");
    env.swarm(&a, &["--offline", "reserve", "c.txt"])
        .ok()
        .stdout_has("r2-ann");
    env.swarm(&a, &["sync"]).ok();
    // Two ledgers made apart (no common version): replayed, not a conflict.
    env.swarm(&b, &["sync"]).ok().stdout_has("merged");
    env.swarm(&a, &["sync"]).ok().stdout_has("pulled");
    assert_eq!(ids(&env, &remote, LEDGER), ["r1-ann", "r1-bob", "r2-ann"]);
    // The next id handed out at the remote follows both clones' counters.
    env.swarm(&b, &["reserve", "d.txt"]).ok().stdout_has("r3");
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
    // Another agent takes r1 at the remote while ann is offline.
    env.swarm(bob, &["reserve", "docs/"]).ok().stdout_has("r1");
    env.swarm(&wt, &["--offline", "reserve", "src/"])
        .ok()
        .stdout_has("r1-ann");
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
    assert!(text.contains("r1-ann"), "{text}");
    env.swarm(&wt, &["sync"])
        .ok()
        .stdout_has(&format!("pushed   {packet}"));
    assert_eq!(ids(&env, &remote, LEDGER), ["r1", "r1-ann"]);
    env.git(
        &wt,
        &["push", "--quiet", "--no-verify", "origin", "feat/f1"],
    );
    // Not `NOT moved: reservation r3: released or gone from the ledger`,
    // nor another's r1 named.
    let succ = bob.join("succ");
    let run = env
        .swarm(bob, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    run.expect_stdout("moved to you: reservation r1-ann");
    assert!(!run.stdout.contains("NOT moved"), "{}", run.stdout);
    let held: Vec<(String, String)> = entries(&env, &remote, LEDGER)
        .into_iter()
        .map(|e| (e.0, e.1))
        .collect();
    assert_eq!(
        held,
        [
            ("r1".to_string(), "bob".to_string()),
            ("r1-ann".to_string(), "bob".to_string())
        ]
    );
    assert!(lost_refs(&env, ann).is_empty());
}
