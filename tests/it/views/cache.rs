//! The record cache (`<common dir>/swarm/cache/records/`): every listing
//! gives byte-identical output with it, bypassing it and after deleting it;
//! a warm listing reads no record object; a damaged shard, a second writer
//! at the same moment and a writer killed mid-write leave nothing that is
//! trusted; the size bound holds; an unreadable record is never cached.

use std::path::{Path, PathBuf};

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{run_and_kill, Kill, Killed, Paused};

const NOW: &str = "2026-01-01T00:10:00Z";

fn cache_dir(dir: &Path) -> PathBuf {
    dir.join(".git/swarm/cache/records")
}

/// Every file of the cache, by path below it, with its bytes.
fn cache_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let root = cache_dir(dir);
    let mut out = std::collections::BTreeMap::new();
    let Ok(kinds) = std::fs::read_dir(&root) else {
        return out;
    };
    for kind in kinds.flatten() {
        for f in std::fs::read_dir(kind.path()).unwrap().flatten() {
            let name = format!(
                "{}/{}",
                kind.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            );
            out.insert(name, std::fs::read(f.path()).unwrap());
        }
    }
    out
}

/// A clone of a bare remote holding every listed kind: plans, a lane with
/// its worktree, a handoff packet, tasks (one claimed, one after it), a
/// message; the clock pinned so that lease times read alike every run.
fn swarm() -> (TestEnv, PathBuf, String) {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", NOW);
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    env.swarm(&a, &["plan", "new", "auth", "--title", "Log in"])
        .ok();
    env.swarm(&a, &["plan", "new", "ui", "--title", "The shell"])
        .ok();
    env.swarm(&a, &["lane", "new", "shell", "--plan", "ui"])
        .ok();
    let wt = a.join("_swarm-worktrees/shell");
    env.swarm(
        &wt,
        &["handoff", "--reason", "capacity_low", "--next", "go on"],
    )
    .ok();
    for args in [
        &["task", "new", "t1", "--plan", "auth", "--title", "One"][..],
        &[
            "task",
            "new",
            "t2",
            "--plan",
            "auth",
            "--title",
            "Two",
            "--depends-on",
            "t1",
        ],
        &["task", "claim", "t1", "--plan", "auth"],
        &["notify", "bob", "--plan", "auth", "hello bob"],
    ] {
        env.swarm(&a, args).ok();
    }
    let packets = env.swarm(&a, &["packets", "--json"]).ok().json();
    let id = packets["packets"][0]["id"].as_str().unwrap().to_string();
    (env, a, id)
}

/// Every listing and show, text and `--json`.
fn listings(packet: &str) -> Vec<Vec<String>> {
    let base: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["plan", "list"],
        vec!["plan", "show", "auth"],
        vec!["lane", "list"],
        vec!["lane", "list", "--all"],
        vec!["packets"],
        vec!["packets", "--open"],
        vec!["packet", "show", packet],
        vec!["task", "list"],
        vec!["task", "ready"],
        vec!["task", "show", "t2", "--plan", "auth"],
        vec!["inbox", "--peek", "--all", "--as", "bob"],
        vec!["state"],
        vec!["lead", "status", "--plan", "auth"],
        vec!["reservations"],
    ];
    let mut out = Vec::new();
    for args in base {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.push("--offline".into());
        out.push(a.clone());
        a.push("--json".into());
        out.push(a);
    }
    out
}

fn run_all(env: &TestEnv, dir: &Path, extra_env: &[(&str, &str)], packet: &str) -> Vec<Run> {
    listings(packet)
        .iter()
        .map(|args| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            env.swarm_env(dir, extra_env, &args)
        })
        .collect()
}

#[track_caller]
fn assert_same(what: &str, expected: &[Run], got: &[Run]) {
    for (e, g) in expected.iter().zip(got) {
        assert_eq!(e.code, g.code, "{what}: exit of {}", e.shown);
        assert_eq!(e.stdout, g.stdout, "{what}: stdout of {}", e.shown);
        assert_eq!(e.stderr, g.stderr, "{what}: stderr of {}", e.shown);
    }
}

#[test]
fn every_listing_reads_alike_with_the_cache_without_it_and_after_deleting_it() {
    let (env, a, packet) = swarm();
    std::fs::remove_dir_all(cache_dir(&a)).ok();
    let bypassed = run_all(&env, &a, &[("GIT_SWARM_NO_CACHE", "1")], &packet);
    for r in &bypassed {
        assert_eq!(r.code, 0, "{r:#?}");
    }
    assert!(
        cache_files(&a).is_empty(),
        "GIT_SWARM_NO_CACHE writes no cache"
    );

    let cold = run_all(&env, &a, &[], &packet);
    assert_same("cold (filling the cache)", &bypassed, &cold);
    let kinds: std::collections::BTreeSet<String> = cache_files(&a)
        .keys()
        .map(|k| k.split('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["lanes", "messages", "packets", "plans", "tasks"],
        "every listed kind is cached"
    );
    let filled = cache_files(&a);
    let warm = run_all(&env, &a, &[], &packet);
    assert_same("warm", &bypassed, &warm);
    assert_eq!(cache_files(&a), filled, "a warm run rewrites nothing");
    let flag: Vec<Run> = listings(&packet)
        .iter()
        .map(|args| {
            let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
            args.insert(0, "--no-cache");
            env.swarm(&a, &args)
        })
        .collect();
    assert_same("--no-cache", &bypassed, &flag);
    std::fs::remove_dir_all(cache_dir(&a)).unwrap();
    let deleted = run_all(&env, &a, &[], &packet);
    assert_same("after deleting the cache", &bypassed, &deleted);
    assert_eq!(
        cache_files(&a),
        filled,
        "refilled alike: the cache is a function of the records"
    );
}

/// The loose object files of the records under `prefix` (their commits,
/// trees and blobs), which a warm listing must not need.
fn record_objects(env: &TestEnv, dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for tip in env.refs(dir, prefix).values() {
        let tree = env.git(dir, &["rev-parse", &format!("{tip}^{{tree}}")]);
        let blobs = env.git(dir, &["ls-tree", "--format=%(objectname)", &tree]);
        for id in [tip.as_str(), tree.as_str()]
            .into_iter()
            .chain(blobs.lines())
        {
            let path = dir.join(".git/objects").join(&id[..2]).join(&id[2..]);
            assert!(path.exists(), "{id} is a loose object");
            out.push(path);
        }
    }
    out
}

#[test]
fn a_warm_listing_reads_no_record_object() {
    let (env, a, _) = swarm();
    let cold = env.swarm(&a, &["task", "list", "--offline"]).ok();
    let tasks = record_objects(&env, &a, "refs/swarm/tasks/");
    for path in &tasks {
        std::fs::remove_file(path).unwrap();
    }
    let warm = env.swarm(&a, &["task", "list", "--offline"]).ok();
    assert_eq!(warm.stdout, cold.stdout, "served from the cache");
    // Without the cache the same listing has to read the objects, now gone.
    let bypassed = env
        .swarm(&a, &["--no-cache", "task", "list", "--offline"])
        .ok();
    assert_eq!(
        bypassed.stdout.matches("UNREADABLE").count(),
        2,
        "{bypassed:#?}"
    );
}

#[test]
fn a_torn_edited_or_foreign_shard_is_ignored_and_rewritten() {
    let (env, a, packet) = swarm();
    std::fs::remove_dir_all(cache_dir(&a)).ok();
    let expected = run_all(&env, &a, &[("GIT_SWARM_NO_CACHE", "1")], &packet);
    run_all(&env, &a, &[], &packet);
    let good = cache_files(&a);
    assert!(good.len() >= 5, "{:?}", good.keys());
    // Damage every shard: cut short, one bit flipped, emptied, replaced by
    // another shard's bytes (a valid file, for other records) or by garbage.
    let names: Vec<&String> = good.keys().collect();
    for (n, name) in names.iter().enumerate() {
        let bytes = &good[*name];
        let damaged: Vec<u8> = match n % 5 {
            0 => bytes[..bytes.len() / 2].to_vec(),
            1 => {
                let mut b = bytes.clone();
                let at = b.len() / 3;
                b[at] ^= 0x20;
                b
            }
            2 => Vec::new(),
            3 => good[names[(n + 1) % names.len()]].clone(),
            _ => b"not a cache at all".to_vec(),
        };
        std::fs::write(cache_dir(&a).join(name), damaged).unwrap();
    }
    // A left-over temporary file is never read either.
    let first = names[0].split('/').next().unwrap();
    let tmp = cache_dir(&a).join(first).join("00.tmp-1-0");
    std::fs::write(&tmp, b"half a shard").unwrap();
    let got = run_all(&env, &a, &[], &packet);
    assert_same("damaged shards", &expected, &got);
    for (name, bytes) in cache_files(&a) {
        if name.contains(".tmp-") {
            continue;
        }
        // Every damaged shard, the copied one too (its header names another
        // shard), was ignored and written again as a fresh run writes it.
        assert_eq!(good.get(&name), Some(&bytes), "{name} rewritten as before");
    }
    assert!(
        tmp.exists(),
        "a fresh temporary file may belong to a live writer"
    );
}

#[test]
fn two_writers_at_once_leave_a_readable_cache() {
    let (env, a, _) = swarm();
    std::fs::remove_dir_all(cache_dir(&a)).ok();
    let expected = env.swarm(&a, &["--no-cache", "status", "--offline"]).ok();
    // Both fill the cache and stop half-way through writing their first
    // shard; released together, both rename.
    let one = Paused::at(&env, &a, "cache:write", &[], &["status", "--offline"]);
    let two = Paused::at(&env, &a, "cache:write", &[], &["status", "--offline"]);
    let (r1, r2) = (one.release(), two.release());
    assert_eq!(r1.ok().stdout, expected.stdout);
    assert_eq!(r2.ok().stdout, expected.stdout);
    let after = cache_files(&a);
    assert!(
        after.keys().all(|k| !k.contains(".tmp-")),
        "{:?}",
        after.keys()
    );
    // The cache left is whole: a listing served from it alone (the plan
    // objects removed) reads as before.
    let plans = record_objects(&env, &a, "refs/swarm/plans/");
    for path in &plans {
        std::fs::remove_file(path).unwrap();
    }
    let warm = env.swarm(&a, &["plan", "list", "--offline"]).ok();
    assert!(!warm.stdout.contains("UNREADABLE"), "{warm:#?}");
    assert!(warm.stdout.contains("auth") && warm.stdout.contains("ui"));
}

#[test]
fn a_writer_killed_mid_write_leaves_no_trusted_garbage() {
    let (env, a, packet) = swarm();
    let expected = run_all(&env, &a, &[("GIT_SWARM_NO_CACHE", "1")], &packet);
    let mut mid_write = 0;
    for (round, kill) in [Kill::AtPoint, Kill::After(2), Kill::After(8), Kill::AtPoint]
        .into_iter()
        .enumerate()
    {
        std::fs::remove_dir_all(cache_dir(&a)).ok();
        let args = ["status", "--offline"];
        if run_and_kill(&env, &a, "cache:write", &args, kill) == Killed::MidWrite {
            mid_write += 1;
        }
        let left = cache_files(&a);
        if round == 0 {
            assert!(
                left.keys().any(|k| k.contains(".tmp-")),
                "killed with half a shard written: {:?}",
                left.keys()
            );
        }
        let got = run_all(&env, &a, &[], &packet);
        assert_same("after a killed writer", &expected, &got);
    }
    assert!(mid_write >= 2, "killed mid-write {mid_write} times");
    // An abandoned temporary file goes once it is old and a later run writes.
    let tmps: Vec<String> = cache_files(&a)
        .into_keys()
        .filter(|k| k.contains(".tmp-"))
        .collect();
    assert!(!tmps.is_empty());
    for t in &tmps {
        let path = cache_dir(&a).join(t);
        let old = std::process::Command::new("touch")
            .args(["-d", "2020-01-01T00:00:00", path.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(old.success());
    }
    // Every shard gone (the temporary files left): the next runs write
    // every kind's directory again.
    for name in cache_files(&a).into_keys().filter(|k| !k.contains(".tmp-")) {
        std::fs::remove_file(cache_dir(&a).join(name)).unwrap();
    }
    let got = run_all(&env, &a, &[], &packet);
    assert_same("after a killed writer", &expected, &got);
    let left: Vec<String> = cache_files(&a)
        .into_keys()
        .filter(|k| k.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "stale temporary files removed: {left:?}");
}

#[test]
fn the_size_bound_holds_when_filled_past_it() {
    let env = TestEnv::new();
    let a = env.repo("alice");
    // 300 plans through fast-import, each with a text of 400 bytes.
    let mut stream = String::new();
    for n in 0..300 {
        let yaml = format!(
            "schema: swarm-plan/v1\nplan: p{n:03}\ntitle: Plan {n}\ncontract: v1\nstatus: active\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: alice\nupdated_at: 2026-01-01T00:00:00Z\n"
        );
        let text = format!("# Plan {n}\n{}\n", "x".repeat(400));
        stream.push_str(&format!(
            "commit refs/swarm/plans/p{n:03}\ncommitter alice <alice@git-swarm.invalid> 1767225600 +0000\ndata 5\nplan\n\nM 100644 inline plan.yaml\ndata {}\n{yaml}\nM 100644 inline PLAN.md\ndata {}\n{text}\n\n",
            yaml.len(),
            text.len()
        ));
    }
    env.git_stdin(&a, &["fast-import", "--quiet"], stream.as_bytes());
    let expected = env
        .swarm(&a, &["--no-cache", "plan", "list", "--json"])
        .ok();
    assert_eq!(expected.json()["plans"].as_array().unwrap().len(), 300);

    // Unbounded (the default), every plan is kept.
    env.swarm(&a, &["plan", "list", "--json"]).ok();
    let unbounded: usize = cache_files(&a).values().map(Vec::len).sum();
    std::fs::remove_dir_all(cache_dir(&a)).unwrap();
    // 16 shards of 1 KiB of values each: one plan a shard (of about 19).
    let limit: usize = 16 * 1024;
    env.git(&a, &["config", "swarm.recordCacheLimit", "16k"]);
    for _ in 0..3 {
        let got = env.swarm(&a, &["plan", "list", "--json"]).ok();
        assert_eq!(got.stdout, expected.stdout);
    }
    let files = cache_files(&a);
    let total: usize = files.values().map(Vec::len).sum();
    // A shard: under 100 bytes of header and checksum around its values.
    for (name, bytes) in &files {
        assert!(bytes.len() <= 1024 + 100, "{name}: {} bytes", bytes.len());
    }
    assert!(total <= limit + files.len() * 100, "{total} bytes");
    assert!(
        total < unbounded,
        "the bound dropped some: {total} of {unbounded}"
    );
    let text = env.swarm(&a, &["plan", "list"]).ok();
    let plain = env.swarm(&a, &["--no-cache", "plan", "list"]).ok();
    assert_eq!(text.stdout, plain.stdout);
}

#[test]
fn an_unreadable_record_is_listed_as_such_every_time_and_never_cached() {
    let (env, a) = Swarm::repo("alice").plan(0, "good").repo_parts();
    // A forged plan record: YAML nested too deep to be read.
    let bad = format!(
        "schema: swarm-plan/v1\nplan: x\ntitle: {}1{}\n",
        "[".repeat(100),
        "]".repeat(100)
    );
    std::fs::write(a.join("plan.yaml"), bad).unwrap();
    let blob = env.git(&a, &["hash-object", "-w", "plan.yaml"]);
    std::fs::remove_file(a.join("plan.yaml")).unwrap();
    let entry = format!("100644 blob {blob}\tplan.yaml\n");
    let tree = env.git_stdin(&a, &["mktree"], entry.as_bytes());
    let commit = env.git(&a, &["commit-tree", &tree, "-m", "forged"]);
    env.git(&a, &["update-ref", "refs/swarm/plans/x", &commit]);
    for _ in 0..3 {
        let run = env.swarm(&a, &["plan", "list"]).ok();
        run.expect_stdout("UNREADABLE refs/swarm/plans/x (RECORD_INVALID)");
        run.expect_stdout("good");
        let json = env.swarm(&a, &["status", "--json"]).ok().json();
        assert_eq!(json["unreadable"][0]["ref"], "refs/swarm/plans/x");
    }
    let raw = gix_hex(&commit);
    for (name, bytes) in cache_files(&a) {
        assert!(
            !bytes.windows(raw.len()).any(|w| w == raw),
            "{name} holds the unreadable record's commit"
        );
    }
    assert!(
        cache_files(&a).keys().any(|k| k.starts_with("plans/")),
        "the good plan is cached"
    );
}

/// The raw bytes of a hex object id.
fn gix_hex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn fifos_and_devices_in_place_of_cache_files_stall_nothing_and_change_no_answer() {
    let (env, a, packet) = swarm();
    let expected = run_all(&env, &a, &[("GIT_SWARM_NO_CACHE", "1")], &packet);
    run_all(&env, &a, &[], &packet); // fill the caches
    let git = a.join(".git/swarm");
    let mut planted = Vec::new();
    for kind in std::fs::read_dir(cache_dir(&a)).unwrap().flatten() {
        for x in 0..16 {
            planted.push(kind.path().join(format!("{x:x}")));
        }
    }
    planted.push(git.join("cache/forecast/summary.json"));
    for hook_cache in [
        "lane-refs.cache",
        "changeset-names.cache",
        "reservations.cache",
    ] {
        planted.push(git.join(hook_cache));
    }
    for (i, path) in planted.iter().enumerate() {
        let _ = std::fs::remove_file(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if i % 2 == 0 {
            let made = std::process::Command::new("mkfifo")
                .arg(path)
                .status()
                .unwrap();
            assert!(made.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", path).unwrap();
        }
    }
    // Each listing under `timeout`: a read that blocks would be killed (124).
    for args in listings(&packet) {
        let out = env
            .command("timeout", &a)
            .args(["60", "git", "swarm"])
            .args(&args)
            .output()
            .unwrap();
        let want = expected
            .iter()
            .find(|r| r.shown.ends_with(&args.join(" ")))
            .unwrap();
        assert_eq!(out.status.code(), Some(want.code), "{args:?}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want.stdout,
            "{args:?}"
        );
    }
    // The pre-commit hook too.
    env.write(&a.join("x.txt"), "x\n");
    env.git(&a, &["add", "x.txt"]);
    let out = env
        .command("timeout", &a)
        .args(["60", "git", "commit", "-q", "-m", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}
