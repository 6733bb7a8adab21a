use crate::harness::TestEnv;

#[test]
fn unknown_flags_are_usage_errors_with_exit_2() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let run = env
        .swarm(&repo, &["plan", "list", "--frobnicate"])
        .err(2, "USAGE");
    run.expect_stderr("--frobnicate");
    let json = env
        .swarm(&repo, &["plan", "list", "--frobnicate", "--json"])
        .code(2)
        .json();
    assert_eq!(json["error"]["code"], "USAGE");
    assert_eq!(
        json["error"]["message"],
        "unexpected argument '--frobnicate' found"
    );
    let hints: Vec<&str> = json["error"]["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert!(
        hints
            .iter()
            .any(|h| h.starts_with("usage: git swarm plan list")),
        "{hints:?}"
    );
    env.swarm(&repo, &["lead", "claim"])
        .err(2, "USAGE")
        .stderr_has("required arguments were not provided: --plan <P> --succession <A,B>");
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

#[test]
fn the_demo_runs_the_whole_swarm_and_cleans_up() {
    let env = TestEnv::new();
    let scratch = env.root().join("tmp");
    std::fs::create_dir_all(&scratch).unwrap();
    let run = env
        .swarm_env(
            env.root(),
            &[("TMPDIR", scratch.to_str().unwrap())],
            &["demo", "--json"],
        )
        .ok();
    let json = run.json();
    assert_eq!(json["ok"], true);
    let steps = json["steps"].as_array().unwrap();
    // The story the demo tells, each step with the exit code it must have.
    let find = |needle: &str| {
        steps
            .iter()
            .find(|s| s["command"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no step {needle}"))["exit"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(find("lane new api-2"), 1, "second executor refused");
    assert_eq!(find("accept"), 0);
    assert_eq!(
        find("--worktree _swarm-worktrees/api"),
        0,
        "the successor on machine B accepts and gets the work restored"
    );
    run.expect_stderr("restored the uncommitted work from the snapshot: 2 paths");
    assert_eq!(find("--as agent-x accept"), 3, "accepted once");
    // Two lanes forecast to conflict before any PR, then clear once rebased.
    assert_eq!(
        find("forecast --exit-code"),
        1,
        "the first forecast conflicts"
    );
    let last = steps
        .iter()
        .rfind(|s| s["command"] == "git-swarm forecast --exit-code")
        .unwrap();
    assert_eq!(last["exit"], 0, "rebased, the forecast clears");
    run.expect_stderr("warning: ui is forecast to conflict with lane docs in README.md");
    run.expect_stderr("uncommitted work of docs counted");
    run.expect_stderr("forecast: 1 conflict (");
    assert_eq!(find("lead handover bob"), 0);
    assert_eq!(
        find("lead push --plan shop HEAD:refs/heads/main"),
        3,
        "stale leader fenced"
    );
    // Lanes take tasks on two machines; a handoff carries the claim.
    assert_eq!(find("--as agent-m lane new catalog-model --task model"), 0);
    assert_eq!(find("--as agent-i lane new images --task images"), 0);
    assert_eq!(find("accept --lane images --worktree"), 0);
    run.expect_stderr("  claim: task catalog/images (claim 1, until ");
    run.expect_stderr("  reservation r2: images/ (until ");
    run.expect_stderr("moved to you: the claim on task catalog/images");
    run.expect_stderr("moved to you: reservation r");
    assert_eq!(find("--as agent-i2 task renew"), 0);
    assert_eq!(
        find("--as agent-i task renew"),
        3,
        "the predecessor's renew is refused"
    );
    run.expect_stderr("agent-i2 holds the claim on task 'images'");
    run.expect_stderr("images (agent-i2, lane images, ");
    run.expect_stderr("[fenced-publish]");
    run.expect_stderr("[plan-untracked]");
    run.expect_stderr("[changeset-unique]");
    run.expect_stderr("[attribution]");
    // The agent hooks, called with host-shaped input: a denial and a wake.
    run.expect_stderr("\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"git swarm: pricing/plans.md is reserved by bob");
    run.expect_stderr("while you waited, new for alice:\\n- notify from bob");
    run.expect_stderr("pricing/ is yours after the release: start with its tests\\nAct on it now");
    // Every narrated command reads back, in a shell, as exactly what ran.
    let mut quoted = 0;
    for step in steps {
        let command = step["command"].as_str().unwrap();
        let args: Vec<&str> = step["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        quoted += usize::from(command.contains('\''));
        let out = env
            .command("sh", env.root())
            .args(["-c", &format!("printf '%s\\0' {command}")])
            .output()
            .unwrap();
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(back, args, "{command}");
        assert!(
            run.stderr.contains(&format!("$ {command}\n")),
            "{command} not narrated"
        );
    }
    assert!(
        quoted > 0,
        "no step needed quoting: the check proves nothing"
    );
    // Without --keep nothing is left behind.
    assert_eq!(std::fs::read_dir(&scratch).unwrap().count(), 0);
}

#[test]
fn git_dir_and_work_tree_name_the_repository_as_for_git() {
    let env = TestEnv::new();
    let a = env.repo("a");
    let b = env.repo("b");
    env.swarm(&a, &["plan", "new", "only-in-a"]).ok();
    // From inside b, `git --git-dir=a/.git` means repository a, for us as for git.
    let git_dir = format!("--git-dir={}", a.join(".git").display());
    let out = env
        .command("git", &b)
        .args([git_dir.as_str(), "swarm", "plan", "list", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["plans"][0]["plan"], "only-in-a", "{json}");
}

#[test]
fn bash_completes_git_swarm_as_git_calls_it() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let script = env.swarm(&repo, &["completions", "bash"]).ok().stdout;
    let file = env.root().join("git-swarm.bash");
    env.write(&file, &script);
    // What git's completion does for `git swarm pl<TAB>` and `git swarm plan <TAB>`.
    let probe = format!(
        "source {}\nCOMP_WORDS=(git swarm pl); COMP_CWORD=2; _git_swarm; echo \"${{COMPREPLY[*]}}\"\nCOMP_WORDS=(git swarm plan ''); COMP_CWORD=3; _git_swarm; echo \"${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = env
        .command("bash", &repo)
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("plan"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = lines.next().unwrap_or_default();
    for sub in ["new", "show", "checkout", "save", "log", "close"] {
        assert!(
            second.split_whitespace().any(|w| w == sub),
            "{sub} missing in {second:?}"
        );
    }
    // Typed as the binary, bash calls the function registered for git-swarm.
    assert!(script
        .contains("complete -F __git_swarm_clap -o nosort -o bashdefault -o default git-swarm"));
    let probe = format!(
        "source {}\nCOMP_WORDS=(git-swarm lead ''); COMP_CWORD=2; __git_swarm_clap git-swarm '' lead; echo \"${{COMPREPLY[*]}}\"\n",
        file.display()
    );
    let out = env
        .command("bash", &repo)
        .args(["-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.split_whitespace().any(|w| w == "takeover"), "{text}");
}

#[test]
fn a_closed_stderr_loses_the_message_not_the_exit_code() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    // stderr is a pipe nobody reads any more (`2>&1 | head -c 10` once head
    // has exited): writing the error there used to panic (exit 101).
    for (args, code) in [
        (&["--as", "x", "notify", "bad..addr", "hi"][..], 2),
        (&["--as", "x", "reserve", "["][..], 2),
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = env
            .command("git-swarm", &repo)
            .args(args)
            .stderr(writer)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
    }
}

#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let repo = env.repo("r");
    let bad = std::ffi::OsStr::from_bytes(b"\xff");
    for args in [vec!["reserve"], vec!["--json", "lane", "new"]] {
        let out = env
            .command("git-swarm", &repo)
            .args(&args)
            .arg(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error[USAGE]"),
            "{out:?}"
        );
    }
}

#[test]
fn all_refs_sees_every_ref() {
    // The "nothing changed" assertions all over the suite compare two
    // all_refs maps: an empty map would make every one of them pass.
    let env = TestEnv::new();
    let repo = env.repo("r");
    env.git(&repo, &["update-ref", "refs/swarm/plans/x", "HEAD"]);
    let all = env.all_refs(&repo);
    assert!(all.contains_key("refs/heads/main"), "{all:?}");
    assert!(all.contains_key("refs/swarm/plans/x"), "{all:?}");
    env.git(
        &repo,
        &["update-ref", "refs/swarm-remotes/origin/plans/x", "HEAD"],
    );
    assert!(!env
        .all_refs(&repo)
        .contains_key("refs/swarm-remotes/origin/plans/x"));
}
