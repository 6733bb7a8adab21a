//! Findings from an outside try-out, each pinned by a test.

use crate::harness::TestEnv;

#[test]
fn git_dash_c_swarm_settings_are_honoured() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.git(&repo, &["swarm", "init"]);

    // swarm.as from `git -c` wins over the repository's swarm.as.
    env.git(&repo, &["-c", "swarm.as=zed", "swarm", "plan", "new", "x"]);
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/x"]);
    assert!(msg.contains("Swarm-Actor: zed"), "{msg}");
    // Section and key names are case-insensitive, as in git; the last wins.
    env.git(
        &repo,
        &[
            "-c",
            "SWARM.AS=yan",
            "-c",
            "Swarm.As=wu",
            "swarm",
            "plan",
            "new",
            "y",
        ],
    );
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/y"]);
    assert!(msg.contains("Swarm-Actor: wu"), "{msg}");
    // `-c` wins over GIT_CONFIG_COUNT, which wins over the files.
    let mut cmd = env.command("git", &repo);
    cmd.args(["-c", "swarm.as=cli", "swarm", "plan", "new", "z"])
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "swarm.as")
        .env("GIT_CONFIG_VALUE_0", "envy");
    assert!(cmd.status().unwrap().success());
    let msg = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/z"]);
    assert!(msg.contains("Swarm-Actor: cli"), "{msg}");

    // An unsafe swarm.planFile from `-c` is refused, not ignored.
    let run = env.git_run(
        &repo,
        &[
            "-c",
            "swarm.planFile=../x",
            "swarm",
            "plan",
            "checkout",
            "x",
            "--force",
        ],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert!(!repo.join("PLAN.md").exists());
    assert!(!env.root().join("x").exists());

    // Hooks see `git -c` too.
    env.write(&repo.join("f.txt"), "x\n");
    env.git(&repo, &["add", "."]);
    let claude = "Add\n\nCo-authored-by: Claude <noreply@anthropic.com>";
    env.git_run(&repo, &["commit", "-q", "-m", claude]).code(1);
    env.git(
        &repo,
        &[
            "-c",
            "swarm.attribution=allow",
            "commit",
            "-q",
            "-m",
            claude,
        ],
    );
}

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
    for (path, text) in crate::harness::project_docs() {
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
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["a"]);
    let a = &clones[0];
    env.write(&a.join("f.txt"), "x\n");
    env.git(a, &["add", "."]);
    env.git(a, &["commit", "-q", "-m", "change"]);
    assert_ne!(env.git_run(a, &["push", "origin", "HEAD:main"]).code, 0);
    env.git(a, &["push", "-q", "--no-verify", "origin", "HEAD:main"]);
}

#[test]
fn lane_rm_after_an_interrupted_lane_new_hints_to_run_it_again() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "fp"]).ok();
    let run = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane:worktree")],
        &["lane", "new", "f1", "--plan", "fp"],
    );
    assert_ne!(run.code, 0);
    let run = env.swarm(&repo, &["lane", "rm", "f1"]).err(2, "NOT_FOUND");
    let first_hint = run
        .stderr
        .lines()
        .find(|l| l.starts_with("hint:"))
        .unwrap_or_default()
        .to_string();
    assert!(
        first_hint.contains("run `git swarm lane new f1` again"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("list lanes"), "{}", run.stderr);
}

#[test]
fn a_closed_plan_takes_no_lane_and_no_save() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "cz"]).ok();
    env.swarm(&repo, &["plan", "close", "cz"]).ok();
    env.swarm(&repo, &["lane", "new", "czl", "--plan", "cz"])
        .err(1, "PLAN_CLOSED")
        .stderr_has("git swarm plan reopen cz");
    assert!(env.refs(&repo, "refs/swarm/lanes").is_empty());
    env.write(&env.root().join("text.md"), "# new\n");
    let file = env.root().join("text.md");
    env.swarm(
        &repo,
        &["plan", "save", "cz", "--file", file.to_str().unwrap()],
    )
    .err(1, "PLAN_CLOSED");
    env.swarm(&repo, &["plan", "reopen", "cz"]).ok();
    env.swarm(
        &repo,
        &["plan", "save", "cz", "--file", file.to_str().unwrap()],
    )
    .ok();
    env.swarm(&repo, &["lane", "new", "czl", "--plan", "cz"])
        .ok();
}
