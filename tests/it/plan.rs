use crate::harness::{Run, TestEnv};
use crate::process::{Paused, WRITING};

#[test]
fn plan_new_show_list_log_are_readable_by_plain_git() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    let out = env
        .swarm(
            &repo,
            &["plan", "new", "auth", "--title", "Token auth", "--json"],
        )
        .ok();
    let json = out.json();
    assert_eq!(json["plan"], "auth");
    assert_eq!(json["title"], "Token auth");
    let refs = env.refs(&repo, "refs/swarm");
    assert_eq!(
        refs.keys().collect::<Vec<_>>(),
        vec!["refs/swarm/plans/auth"]
    );
    assert_eq!(
        refs["refs/swarm/plans/auth"],
        json["commit"].as_str().unwrap()
    );

    // Plain git shows the record and the journal trailers.
    let yaml = env.git(&repo, &["show", "refs/swarm/plans/auth:plan.yaml"]);
    assert!(yaml.contains("schema: swarm-plan/v1"), "{yaml}");
    assert!(yaml.contains("title: Token auth"), "{yaml}");
    let text = env.git(&repo, &["show", "refs/swarm/plans/auth:PLAN.md"]);
    assert!(text.starts_with("# Token auth"), "{text}");
    let msg = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
    );
    assert!(
        msg.contains("Swarm-Event: plan-created\nSwarm-Actor: alice"),
        "{msg}"
    );

    env.swarm(&repo, &["plan", "new", "auth-tests", "--parent", "auth"])
        .ok();
    env.swarm(&repo, &["plan", "new", "orphan", "--parent", "missing"])
        .err(2, "NOT_FOUND");
    let list = env.swarm(&repo, &["plan", "list", "--json"]).ok().json();
    let names: Vec<&str> = list["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["plan"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["auth", "auth-tests"]);

    let status = env.swarm(&repo, &["status"]).ok();
    assert!(
        status
            .stdout
            .contains("auth [active] — Token auth — no leader\n  auth-tests [active]"),
        "{}",
        status.stdout
    );
    let status = env.swarm(&repo, &["status", "--json"]).ok().json();
    assert_eq!(status["plans"][0]["children"][0]["plan"], "auth-tests");

    env.swarm(&repo, &["plan", "show", "auth"])
        .ok()
        .stdout_has("contract: v1");
    env.swarm(&repo, &["plan", "show", "auth", "--pr-body"])
        .ok()
        .stdout_has("<summary>Plan <code>auth</code>");
}

#[test]
fn plan_new_refuses_an_existing_plan_and_bad_names_without_writing() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "auth"])
        .err(2, "PLAN_EXISTS");
    env.swarm(&repo, &["plan", "new", "--", "-x"])
        .err(2, "NAME_INVALID");
    for bad in [
        "Auth",
        "a..b",
        "x.lock",
        "trailing.",
        "has/slash",
        "has space",
        &"x".repeat(64),
    ] {
        env.swarm(&repo, &["plan", "new", bad])
            .err(2, "NAME_INVALID");
    }
    env.swarm(&repo, &["plan", "show", "../etc"])
        .err(2, "NAME_INVALID");
    assert_eq!(before, env.all_refs(&repo), "a refused command moved a ref");
}

#[test]
fn malformed_yaml_and_newer_schemas_change_no_ref() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    let bad = env.root().join("bad.yaml");
    env.write(&bad, "schema: swarm-plan/v1\ntitle: [unclosed\n");
    let before = env.all_refs(&repo);
    let run = env
        .swarm(
            &repo,
            &["plan", "new", "p", "--from", bad.to_str().unwrap()],
        )
        .err(2, "YAML_INVALID");
    run.expect_stderr("bad.yaml");
    let newer = env.root().join("newer.yaml");
    env.write(&newer, "schema: swarm-plan/v2\ntitle: from the future\n");
    env.swarm(
        &repo,
        &["plan", "new", "p", "--from", newer.to_str().unwrap()],
    )
    .err(2, "SCHEMA_UNSUPPORTED");
    assert_eq!(before, env.all_refs(&repo));

    // A good YAML record is taken, with unknown fields preserved.
    let good = env.root().join("good.yaml");
    env.write(
        &good,
        "schema: swarm-plan/v1\ntitle: From yaml\nowner_team: infra\n",
    );
    env.swarm(
        &repo,
        &["plan", "new", "p", "--from", good.to_str().unwrap()],
    )
    .ok();
    let yaml = env.git(&repo, &["show", "refs/swarm/plans/p:plan.yaml"]);
    assert!(
        yaml.contains("owner_team: infra") && yaml.contains("title: From yaml"),
        "{yaml}"
    );

    // A record corrupted behind our back (written with plain git) is refused on read.
    let blob = env.git(&repo, &["hash-object", "-w", bad.to_str().unwrap()]);
    let tree = {
        let mut cmd = env.command("git", &repo);
        cmd.args(["mktree"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "100644 blob {blob}\tplan.yaml").unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    let commit = env.git(&repo, &["commit-tree", &tree, "-m", "corrupt"]);
    env.git(&repo, &["update-ref", "refs/swarm/plans/broken", &commit]);
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "show", "broken"])
        .err(2, "YAML_INVALID");
    env.swarm(&repo, &["plan", "checkout", "broken"])
        .err(2, "YAML_INVALID");
    assert_eq!(before, env.all_refs(&repo));
    assert!(!repo.join("PLAN.md").exists());
}

#[test]
fn save_and_checkout_keep_the_plan_untracked_and_refuse_to_clobber_edits() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    env.swarm(&repo, &["plan", "checkout", "auth"])
        .ok()
        .stdout_has("stays untracked");
    assert_eq!(
        env.git(&repo, &["status", "--porcelain"]),
        "",
        "PLAN.md must not show up as untracked"
    );
    assert_eq!(env.git(&repo, &["ls-files", "PLAN.md"]), "");

    // Unchanged save is a no-op; a real edit is a new journal entry.
    let head = env.refs(&repo, "refs/swarm/plans/auth");
    env.swarm(&repo, &["plan", "save", "auth"])
        .ok()
        .stdout_has("unchanged");
    assert_eq!(head, env.refs(&repo, "refs/swarm/plans/auth"));
    let v1 = env.read(&repo.join("PLAN.md"));
    env.write(&repo.join("PLAN.md"), &format!("{v1}- step one done\n"));
    // The only plan is inferred when none is named.
    env.swarm(&repo, &["plan", "save", "-m", "step one"]).ok();
    let log = env
        .swarm(&repo, &["plan", "log", "auth", "--json"])
        .ok()
        .json();
    let events: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, vec!["plan-saved", "plan-created"]);
    assert_eq!(log["entries"][0]["summary"], "step one");
    assert_eq!(
        env.git(&repo, &["show", "refs/swarm/plans/auth:PLAN.md"]),
        format!("{v1}- step one done")
    );

    // Unsaved local edits are not clobbered.
    env.write(&repo.join("PLAN.md"), "my unsaved notes\n");
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "checkout", "auth"])
        .err(1, "PLAN_DIRTY")
        .stderr_has("--force");
    assert_eq!(env.read(&repo.join("PLAN.md")), "my unsaved notes\n");
    assert_eq!(before, env.all_refs(&repo));
    env.swarm(&repo, &["plan", "checkout", "auth", "--force"])
        .ok();
    assert!(env
        .read(&repo.join("PLAN.md"))
        .ends_with("- step one done\n"));

    // An older saved version is not an edit: checkout replaces it without --force.
    env.write(&repo.join("PLAN.md"), &v1);
    env.swarm(&repo, &["plan", "checkout", "auth"]).ok();
    assert!(env
        .read(&repo.join("PLAN.md"))
        .ends_with("- step one done\n"));

    // Several plans: save without a name needs one (issue 14: no guessing
    // from the file checked out here, which the hint names).
    env.swarm(&repo, &["plan", "new", "other"]).ok();
    env.swarm(&repo, &["plan", "save"])
        .err(2, "PLAN_AMBIGUOUS")
        .stderr_has("checked out from plan 'auth'");
    // That record is a deletable cache.
    std::fs::remove_file(repo.join(".git/swarm/plan-checkout")).unwrap();
    env.swarm(&repo, &["plan", "save", "auth"])
        .ok()
        .stdout_has("plan auth: unchanged");
}

#[test]
fn racing_plan_new_in_one_repository_has_exactly_one_winner() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    // All eight find no plan of that name and write their record's commit,
    // then wait (WRITING) before moving the ref; released one by one, the
    // first creates it and every later one loses the compare-and-swap.
    let racers: Vec<Paused> = (0..8)
        .map(|i| {
            let who = format!("racer{i}");
            Paused::at(
                &env,
                &repo,
                WRITING,
                &[],
                &["--as", &who, "plan", "new", "contested", "--json"],
            )
        })
        .collect();
    let runs: Vec<Run> = racers.into_iter().map(Paused::release).collect();
    let winners: Vec<_> = runs.iter().filter(|r| r.code == 0).collect();
    assert_eq!(winners.len(), 1, "{runs:#?}");
    assert_eq!(runs[0].code, 0, "{runs:#?}");
    for r in &runs[1..] {
        assert_eq!(r.code, 3, "{r:#?}");
        assert_eq!(r.json()["error"]["code"], "CAS_FAILED", "{r:#?}");
    }
    let refs = env.refs(&repo, "refs/swarm/plans/contested");
    assert_eq!(
        refs["refs/swarm/plans/contested"],
        winners[0].json()["commit"].as_str().unwrap()
    );
    // The journal has exactly one entry: nobody wrote over the winner.
    assert_eq!(
        env.git(
            &repo,
            &["rev-list", "--count", "refs/swarm/plans/contested"]
        ),
        "1"
    );
}

#[test]
fn switching_plans_in_one_worktree_never_saves_one_plan_into_another() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "auth", "--title", "Auth"])
        .ok();
    env.swarm(
        &repo,
        &["plan", "new", "auth-tests", "--title", "Auth tests"],
    )
    .ok();
    env.swarm(&repo, &["plan", "checkout", "auth"]).ok();
    // The file holds a saved copy of auth: switching to auth-tests loses nothing.
    env.swarm(&repo, &["plan", "checkout", "auth-tests"]).ok();
    assert!(env.read(&repo.join("PLAN.md")).starts_with("# Auth tests"));
    // Edit auth-tests' text, then try to switch: refused, and the hint names auth-tests.
    env.write(
        &repo.join("PLAN.md"),
        "# Auth tests\n\n- [x] login covered\n",
    );
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "checkout", "auth"])
        .err(1, "PLAN_DIRTY")
        .stderr_has("git swarm plan save auth-tests");
    // Saving into the wrong plan by name is refused; nothing moves.
    env.swarm(&repo, &["plan", "save", "auth"])
        .err(2, "PLAN_FILE_MISMATCH")
        .stderr_has("git swarm plan save auth-tests");
    assert_eq!(before, env.all_refs(&repo));
    // With several plans, save without a name is no guess: it lists them
    // and names the plan the file came from (issue 14).
    env.swarm(&repo, &["plan", "save"])
        .err(2, "PLAN_AMBIGUOUS")
        .stderr_has("(auth, auth-tests)")
        .stderr_has("checked out from plan 'auth-tests'");
    assert_eq!(before, env.all_refs(&repo));
    env.swarm(&repo, &["plan", "save", "auth-tests"])
        .ok()
        .stdout_has("plan auth-tests: saved");
    assert_eq!(
        env.git(&repo, &["show", "refs/swarm/plans/auth:PLAN.md"])
            .lines()
            .next(),
        Some("# Auth")
    );
    assert!(env
        .git(&repo, &["show", "refs/swarm/plans/auth-tests:PLAN.md"])
        .contains("login covered"));
    // Saving on purpose into another plan is still possible with --file.
    env.swarm(&repo, &["plan", "save", "auth", "--file", "PLAN.md"])
        .ok();
    // And checkout with no name does not guess either.
    env.swarm(&repo, &["plan", "checkout", "auth"]).ok();
    env.swarm(&repo, &["plan", "checkout"])
        .err(2, "PLAN_AMBIGUOUS");
}

#[test]
fn closing_a_plan_with_work_in_progress_needs_force() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "shop"]).ok();
    env.swarm(&repo, &["plan", "new", "shop-api", "--parent", "shop"])
        .ok();
    env.swarm(&repo, &["lane", "new", "orders", "--plan", "shop-api"])
        .ok();
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "close", "shop-api"])
        .err(1, "PLAN_BUSY")
        .stderr_has("lane orders");
    env.swarm(&repo, &["plan", "close", "shop"])
        .err(1, "PLAN_BUSY")
        .stderr_has("child plan shop-api");
    assert_eq!(before, env.all_refs(&repo));
    env.swarm(&repo, &["lane", "rm", "orders"]).ok();
    env.swarm(&repo, &["plan", "close", "shop-api"]).ok();
    env.swarm(&repo, &["plan", "close", "shop"]).ok();
    let yaml = env.git(&repo, &["show", "refs/swarm/plans/shop:plan.yaml"]);
    assert!(yaml.contains("status: closed"), "{yaml}");
    env.swarm(&repo, &["plan", "close", "shop"])
        .ok()
        .stdout_has("already closed");
}
