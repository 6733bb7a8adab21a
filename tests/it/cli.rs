use crate::harness::TestEnv;

#[test]
fn unknown_flags_are_usage_errors_with_exit_2() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let run = env
        .swarm(&repo, &["plan", "list", "--frobnicate"])
        .err(2, "USAGE");
    assert!(run.stderr.contains("--frobnicate"), "{}", run.stderr);
    let json = env
        .swarm(&repo, &["plan", "list", "--frobnicate", "--json"])
        .code(2)
        .json();
    assert_eq!(json["error"]["code"], "USAGE");
}

#[test]
fn help_and_version_reach_our_binary() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["-h"])
        .ok()
        .stdout_has("Usage: git swarm");
    env.swarm(&repo, &["plan", "-h"])
        .ok()
        .stdout_has("checkout");
    env.swarm(&repo, &["--version"])
        .ok()
        .stdout_has(env!("CARGO_PKG_VERSION"));
}

#[test]
fn commands_needing_an_identity_say_how_to_give_one() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.git(&repo, &["config", "--unset", "swarm.as"]);
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "p"])
        .err(2, "IDENTITY_MISSING")
        .stderr_has("hint: pass --as <address>");
    assert_eq!(before, env.all_refs(&repo));
    // Each source of identity works, in order of precedence.
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_AS", "from-env")],
        &["plan", "new", "p"],
    )
    .ok();
    let log = env.git(
        &repo,
        &["log", "-1", "--format=%an %B", "refs/swarm/plans/p"],
    );
    assert!(log.contains("Swarm-Actor: from-env"), "{log}");
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_AS", "from-env")],
        &["--as", "from-flag", "plan", "new", "q"],
    )
    .ok();
    let log = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/q"]);
    assert!(log.contains("Swarm-Actor: from-flag"), "{log}");
    env.swarm(&repo, &["--as", "bad address", "plan", "new", "r"])
        .err(2, "NAME_INVALID");
    assert!(env.refs(&repo, "refs/swarm/plans/r").is_empty());
}

#[test]
fn completions_and_man_page() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["completions", "bash"])
        .ok()
        .stdout_has("git-swarm");
    env.swarm(&repo, &["man"]).ok().stdout_has(".TH git-swarm");
    let man1 = env.root().join("man/man1");
    env.swarm(
        &repo,
        &["man", "--install", "--dir", man1.to_str().unwrap()],
    )
    .ok();
    assert!(env
        .read(&man1.join("git-swarm.1"))
        .contains(".TH git-swarm"));
}
