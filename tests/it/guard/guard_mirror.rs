//! Every guard decides on the reservation ledger this clone knows: the
//! newer of the local one and the one its last fetch mirrored, by the one
//! read the listings use (`remote::live_tip`: the local ledger only when it
//! contains the mirrored one). The state that let a commit through: this
//! clone's own reservations had moved on offline (two `reserve --offline`,
//! so their id counters ran ahead of the published ones) while another clone's
//! reservation was published and fetched. A guard keeping whichever ledger
//! had the higher counter would keep the local one, which lacks the other
//! clone's reservation, while `reservations` lists it. Two real
//! clones of a bare remote whose base is `master`, the real hooks, in the
//! main checkout and in a lane worktree.

use std::path::{Path, PathBuf};

use crate::support::harness::TestEnv;
use crate::support::reservations::{reserved_id, shard_of, stamp, LOCAL};

/// Where the mirror of origin's reservations is.
const MIRROR: &str = "refs/swarm-remotes/origin/reservations/";

/// A bare remote whose base branch is `master` (src/lib.rs, Cargo.toml),
/// and the clones `names`, each with `git swarm init`.
fn master_remote(env: &TestEnv, names: &[&str]) -> Vec<PathBuf> {
    let remote = env.root().join("remote.git");
    env.git(env.root(), &["init", "--quiet", "--bare", "remote.git"]);
    env.git(&remote, &["symbolic-ref", "HEAD", "refs/heads/master"]);
    let seed = env.root().join("seed");
    env.git(
        env.root(),
        &["clone", "--quiet", remote.to_str().unwrap(), "seed"],
    );
    env.write(&seed.join("src/lib.rs"), "pub fn f() {}\n");
    env.write(&seed.join("Cargo.toml"), "[package]\n");
    env.git(&seed, &["add", "."]);
    env.git(&seed, &["commit", "--quiet", "-m", "initial"]);
    env.git(&seed, &["push", "--quiet", "origin", "HEAD:master"]);
    names.iter().map(|n| env.clone_remote(&remote, n)).collect()
}

/// Stage a change to src/lib.rs in `dir` and try to commit it: refused
/// by the pre-commit hook (exit 1, naming bob's reservation), HEAD and the
/// local reservations unchanged; `check --staged` refuses it too (`id`:
/// bob's reservation).
fn refused_in(env: &TestEnv, dir: &Path, id: &str) {
    env.write(&dir.join("src/lib.rs"), "pub fn f() { /* ann */ }\n");
    env.git(dir, &["add", "src/lib.rs"]);
    let head = env.git(dir, &["rev-parse", "HEAD"]);
    let ledger = stamp(env, dir, LOCAL);
    let said = format!("[reservations] src/lib.rs: reserved exclusively by bob ({id}");
    env.git_run(dir, &["commit", "--quiet", "-m", "touch lib"])
        .code(1)
        .stderr_has(&said);
    assert_eq!(env.git(dir, &["rev-parse", "HEAD"]), head);
    assert_eq!(stamp(env, dir, LOCAL), ledger);
    env.swarm(dir, &["check", "--staged"])
        .err(1, "GUARD_FAILED")
        .stderr_has(&said);
    env.git(dir, &["reset", "--quiet", "src/lib.rs"]);
    env.git(dir, &["checkout", "--quiet", "--", "src/lib.rs"]);
}

#[test]
fn a_clone_that_only_fetched_refuses_a_commit_to_a_path_another_clone_reserved() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T00:00:00Z");
    let clones = master_remote(&env, &["ann", "bob"]);
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["plan", "new", "docs"]).ok();
    env.swarm(ann, &["lane", "new", "readme-x", "--plan", "docs"])
        .ok();
    let lane = ann.join("_swarm-worktrees/readme-x");
    env.swarm(ann, &["reserve", "README.md"]).ok();
    env.swarm(bob, &["sync"]).ok();
    // ann's reservations move on offline (in every shard: a top-level file
    // and directory), never published.
    env.swarm(ann, &["reserve", "--offline", "Cargo.toml"])
        .ok()
        .stderr_has("not published");
    env.swarm(ann, &["reserve", "--offline", "docs/"]).ok();
    // bob's is published; ann's clone only fetches (no sync).
    let bobs = reserved_id(&env.swarm(bob, &["reserve", "src/lib.rs", "--json"]).ok());
    env.git(ann, &["fetch", "--quiet", "origin"]);
    let local = env.git(ann, &["rev-parse", &shard_of(LOCAL, "src/lib.rs")]);
    let mirrored = env.git(ann, &["rev-parse", &shard_of(MIRROR, "src/lib.rs")]);
    assert_ne!(
        local, mirrored,
        "ann's shard of src/lib.rs diverged from the published one"
    );
    // The listing and the guards read the same ledger.
    env.swarm(ann, &["reservations"])
        .ok()
        .stdout_has("bob")
        .stdout_has("src/lib.rs");

    refused_in(&env, ann, &bobs);
    refused_in(&env, &lane, &bobs);
    // pre-push and `check --range` refuse it as before.
    env.write(&lane.join("src/lib.rs"), "pub fn f() { /* ann */ }\n");
    env.git(&lane, &["commit", "--quiet", "--no-verify", "-am", "lib"]);
    env.swarm(&lane, &["check", "--range", "master..HEAD"])
        .err(1, "GUARD_FAILED")
        .stderr_has(&format!("reserved exclusively by bob ({bobs}"));
}

#[test]
fn the_agents_pre_tool_use_hook_refuses_an_edit_of_a_path_only_the_mirror_knows_is_reserved() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T00:00:00Z");
    let clones = master_remote(&env, &["ann", "bob"]);
    let (ann, bob) = (&clones[0], &clones[1]);
    env.swarm(ann, &["reserve", "README.md"]).ok();
    env.swarm(bob, &["sync"]).ok();
    env.swarm(ann, &["reserve", "--offline", "Cargo.toml"]).ok();
    env.swarm(ann, &["reserve", "--offline", "docs/"]).ok();
    let bobs = reserved_id(&env.swarm(bob, &["reserve", "src/lib.rs", "--json"]).ok());
    env.git(ann, &["fetch", "--quiet", "origin"]);
    let input = serde_json::json!({
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "cwd": ann.display().to_string(),
        "tool_input": { "file_path": ann.join("src/lib.rs").display().to_string() },
    })
    .to_string();
    let out = env
        .command("git", ann)
        .args(["swarm", "agent", "hook", "pre-tool-use", "--host", "claude"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("\"permissionDecision\":\"deny\""), "{said}");
    assert!(
        said.contains(&format!("src/lib.rs is reserved by bob ({bobs})")),
        "{said}"
    );
}
