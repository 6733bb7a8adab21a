//! The protected base branch: `init` protects it, so only `lead push`,
//! fenced by the leader's epoch, moves it; the pre-push fence is local.

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

#[test]
fn init_in_a_clone_of_an_empty_remote_protects_the_lanes_base() {
    let env = TestEnv::new();
    env.git(env.root(), &["init", "--quiet", "--bare", "e.git"]);
    env.git(
        env.root(),
        &[
            "-c",
            "init.defaultBranch=master",
            "clone",
            "--quiet",
            "e.git",
            "e",
        ],
    );
    let e = env.root().join("e");
    env.git(&e, &["config", "swarm.as", "alice"]);
    let out = env.swarm(&e, &["init", "--json"]).ok();
    // The JSON of the very run that protected it says so.
    assert_eq!(
        out.json()["protect"],
        serde_json::json!(["refs/heads/main"]),
        "{}",
        out.stdout
    );
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("protected refs/heads/main"), "{text}");
    assert!(text.contains("no default branch yet"), "{text}");
    assert_eq!(
        env.git(&e, &["config", "--get-all", "swarm.protect"]),
        "refs/heads/main"
    );

    // Someone else publishes main; lanes base on origin/main, and a plain
    // push to it from the guarded clone is refused.
    let other = env.root().join("other");
    env.git(env.root(), &["clone", "--quiet", "e.git", "other"]);
    env.write(&other.join("README.md"), "hello\n");
    env.git(&other, &["add", "."]);
    env.git(&other, &["commit", "-q", "-m", "initial"]);
    env.git(&other, &["push", "-q", "origin", "HEAD:main"]);
    env.git(&e, &["fetch", "-q", "origin"]);
    env.git(&e, &["reset", "-q", "--hard", "origin/main"]);
    env.write(&e.join("f.txt"), "x\n");
    env.git(&e, &["add", "."]);
    env.git(&e, &["commit", "-q", "-m", "change"]);
    let run = env.git_run(&e, &["push", "origin", "HEAD:main"]);
    assert_ne!(run.code, 0, "{run:?}");
}

#[test]
fn the_docs_say_the_pre_push_fence_is_local_and_it_is() {
    for (path, text) in crate::support::harness::project_docs() {
        assert!(
            !text.contains("blocks every other way"),
            "{} overstates the fence",
            path.display()
        );
    }
    let lead =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lead.md")).unwrap();
    assert!(
        lead.contains("--no-verify"),
        "docs/lead.md names the bypass"
    );
    // What the docs now say: the hook stops a plain push, not a bypass.
    let (env, _, clones) = Swarm::new(&["a"]).parts();
    let a = &clones[0];
    env.write(&a.join("f.txt"), "x\n");
    env.git(a, &["add", "."]);
    env.git(a, &["commit", "-q", "-m", "change"]);
    assert_ne!(env.git_run(a, &["push", "origin", "HEAD:main"]).code, 0);
    env.git(a, &["push", "-q", "--no-verify", "origin", "HEAD:main"]);
}

#[test]
fn init_protects_the_base_branch_so_a_fenced_leader_cannot_push_main_nor_take_over_at_once() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    // init (run by the harness for each clone) protected main, and says so.
    assert_eq!(
        env.git(a, &["config", "--get-all", "swarm.protect"]),
        "refs/heads/main"
    );
    let fresh = env.root().join("carol");
    env.git(
        env.root(),
        &["clone", "--quiet", remote.to_str().unwrap(), "carol"],
    );
    env.swarm(&fresh, &["init"])
        .ok()
        .stdout_has("protected refs/heads/main")
        .stdout_has("--no-protect");
    env.swarm(&fresh, &["init"])
        .ok()
        .stdout_has("nothing to change");
    // Opting out is recorded, so a later init leaves it alone.
    let optout = env.root().join("dave");
    env.git(
        env.root(),
        &["clone", "--quiet", remote.to_str().unwrap(), "dave"],
    );
    env.swarm(&optout, &["init", "--no-protect"])
        .ok()
        .stdout_has("unprotected");
    env.swarm(&optout, &["init"])
        .ok()
        .stdout_has("nothing to change");
    assert_eq!(
        env.git(&optout, &["config", "--get-all", "swarm.protect"]),
        ""
    );

    let t0 = "2026-01-01T10:00:00Z";
    fn at(t: &str) -> [(&str, &str); 1] {
        [("GIT_SWARM_NOW", t)]
    }
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm_env(
        a,
        &at(t0),
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "alice,bob",
            "--lease",
            "1h",
        ],
    )
    .ok();
    env.swarm(b, &["sync"]).ok();
    env.swarm_env(
        b,
        &at("2026-01-01T12:00:00Z"),
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "alice silent",
            "--lease",
            "1h",
        ],
    )
    .ok();

    // The stale leader's plain push to main is refused by the hook.
    env.write(&a.join("x.txt"), "x\n");
    env.git(a, &["add", "x.txt"]);
    env.git(a, &["commit", "--quiet", "-m", "hotfix"]);
    let main_before = env.git(&remote, &["rev-parse", "main"]);
    let run = env.git_run(a, &["push", "origin", "HEAD:main"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    run.expect_stderr("[fenced-publish] refs/heads/main");
    assert_eq!(env.git(&remote, &["rev-parse", "main"]), main_before);
    // Taking over again needs the new leader's lease to have expired, as for anyone.
    env.swarm_env(
        a,
        &at("2026-01-01T12:30:00Z"),
        &["lead", "takeover", "--plan", "auth", "--reason", "back"],
    )
    .err(3, "LEASE_LIVE")
    .stderr_has("bob");
    env.swarm_env(
        a,
        &at("2026-01-01T13:30:00Z"),
        &["lead", "takeover", "--plan", "auth", "--reason", "back"],
    )
    .ok()
    .stdout_has("epoch 3");
}
