//! Plans: `plan new|show|list|log|save|checkout|close|reopen`, which plan a
//! command means when none is named, and plan text saved from a stale
//! checkout merged instead of dropped.

pub(crate) mod finish;

use std::path::{Path, PathBuf};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{Paused, WRITING};

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
fn plan_new_repeated_identically_succeeds_and_refuses_a_different_plan_and_bad_names_without_writing(
) {
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
    let before = env.all_refs(&repo);
    // The same person repeating the same creation: done already, exit 0.
    let again = env.swarm(&repo, &["plan", "new", "auth"]).ok();
    again.stdout_has("plan auth was already created");
    let json = env
        .swarm(&repo, &["plan", "new", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(json["already"], true, "{json}");
    assert_eq!(json["plan"], "auth", "{json}");
    assert_eq!(before, env.all_refs(&repo), "a repeat moved a ref");
    // Not the same creation: another title, another parent, another actor.
    env.swarm(&repo, &["plan", "new", "auth", "--title", "Other"])
        .err(2, "PLAN_EXISTS");
    env.swarm(&repo, &["plan", "new", "other"]).ok();
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "auth", "--parent", "other"])
        .err(2, "PLAN_EXISTS");
    env.swarm(&repo, &["--as", "bob", "plan", "new", "auth"])
        .err(2, "PLAN_EXISTS");
    let notes = env.root().join("notes.md");
    env.write(&notes, "# Other text\n");
    env.swarm(
        &repo,
        &["plan", "new", "auth", "--from", notes.to_str().unwrap()],
    )
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
    let (env, repo) = Swarm::repo("alice").init(0).plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
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
    let (env, repo) = Swarm::repo("alice").init(0).plan(0, "shop").repo_parts();
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

#[test]
fn a_closed_plan_takes_no_lane_and_no_save() {
    let (env, repo) = Swarm::repo("alice").plan(0, "cz").repo_parts();
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

#[test]
fn plan_reopen_is_the_inverse_of_close_even_after_gc() {
    let (env, repo) = Swarm::repo("a").plan(0, "auth").repo_parts();
    let open = env
        .swarm(&repo, &["plan", "reopen", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(open["changed"], false);
    assert_eq!(open["status"], "active");
    env.swarm(&repo, &["plan", "close", "auth"]).ok();
    let before = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);
    env.swarm(&repo, &["plan", "reopen", "auth"])
        .ok()
        .stdout_has("plan auth: reopened\n");
    let show = env
        .swarm(&repo, &["plan", "show", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(show["status"], "active", "{show}");
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^"]),
        before
    );
    let log = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
    );
    assert!(log.contains("Swarm-Event: plan-reopened"), "{log}");

    // Closed and archived by gc: reopen brings the live ref back on top of
    // the archived history.
    env.swarm(&repo, &["plan", "close", "auth"]).ok();
    let closed = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);
    env.swarm(&repo, &["gc", "--older-than", "0s"]).ok();
    assert!(env.refs(&repo, "refs/swarm/plans/").is_empty());
    let json = env
        .swarm(&repo, &["plan", "reopen", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(json["unarchived"], true);
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^"]),
        closed
    );
    env.swarm(&repo, &["plan", "list"]).ok().stdout_has("auth");
    env.swarm(&repo, &["plan", "reopen", "nope"])
        .err(2, "NOT_FOUND");
}

fn plan_text(env: &TestEnv, dir: &Path, plan: &str) -> String {
    env.git(dir, &["show", &format!("refs/swarm/plans/{plan}:PLAN.md")])
}

/// A coordinator (alice) with plan `auth` and a lane machine (bob) whose
/// lane `login` has the plan file checked out, both synced: (env, alice's
/// clone, bob's clone).
fn coordinator_and_lane() -> (TestEnv, PathBuf, PathBuf) {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .lane(1, "login")
        .parts();
    (env, clones[0].clone(), clones[1].clone())
}

#[test]
fn plan_save_from_a_stale_checkout_merges_the_newer_plan_text_instead_of_dropping_it() {
    let (env, a, b) = coordinator_and_lane();
    let wt = worktree(&b, "login");
    let stale = env.read(&wt.join("PLAN.md"));

    // The coordinator adds a line under Goal and publishes it.
    env.swarm(&a, &["plan", "checkout", "auth"]).ok();
    let text = env.read(&a.join("PLAN.md")).replace(
        "(What is true when this plan is done.)",
        "Tokens expire after 1h.",
    );
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(&a, &["plan", "save", "auth", "-m", "goal"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    let newer = env.git(&b, &["rev-parse", "refs/swarm/plans/auth"]);

    // The lane, from its older copy, records progress under Tasks.
    let progress = stale.replace("1. (first task)", "1. login form done");
    env.write(&wt.join("PLAN.md"), &progress);
    let out = env
        .swarm(&wt, &["plan", "save", "-m", "lane progress"])
        .ok()
        .stdout_has("merged with the newer version");
    assert!(out.stdout.contains(&newer[..12]), "{}", out.stdout);
    let saved = plan_text(&env, &b, "auth");
    assert!(saved.contains("Tokens expire after 1h."), "{saved}");
    assert!(saved.contains("1. login form done"), "{saved}");
    // The saved version builds on the newer one, and the file shows it.
    let parent = env.git(&b, &["rev-parse", "refs/swarm/plans/auth^"]);
    assert_eq!(parent, newer);
    assert_eq!(env.read(&wt.join("PLAN.md")), format!("{saved}\n"));

    // A second save from the same file is a no-op, not a second merge.
    env.swarm(&wt, &["plan", "save"])
        .ok()
        .stdout_has("unchanged");
}

#[test]
fn plan_save_refuses_with_plan_save_conflict_when_a_stale_checkout_changed_the_same_lines() {
    let (env, a, b) = coordinator_and_lane();
    let wt = worktree(&b, "login");
    let stale = env.read(&wt.join("PLAN.md"));

    env.swarm(&a, &["plan", "checkout", "auth"]).ok();
    let text = env
        .read(&a.join("PLAN.md"))
        .replace("1. (first task)", "1. coordinator's task");
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(&a, &["plan", "save", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    let before = env.all_refs(&b);
    let newer = env.git(&b, &["rev-parse", "refs/swarm/plans/auth"]);

    env.write(
        &wt.join("PLAN.md"),
        &stale.replace("1. (first task)", "1. lane's task"),
    );
    let out = env
        .swarm(&wt, &["plan", "save", "-m", "lane progress"])
        .err(3, "PLAN_SAVE_CONFLICT")
        .stderr_has("hint: see the newer text");
    assert!(out.stderr.contains(&newer[..12]), "{}", out.stderr);
    assert_eq!(env.all_refs(&b), before, "nothing was saved");
    assert!(plan_text(&env, &b, "auth").contains("1. coordinator's task"));
    // The lane's edit is still in its file.
    assert!(env.read(&wt.join("PLAN.md")).contains("1. lane's task"));
}

#[test]
fn without_plan_commands_use_the_lanes_plan_or_the_only_plan_never_the_one_last_checked_out() {
    let (env, _, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    for p in ["auth", "billing", "search"] {
        env.swarm(a, &["plan", "new", p]).ok();
    }
    env.swarm(a, &["lane", "new", "login", "--plan", "search"])
        .ok();
    // The main worktree last checked out billing: that is no reason to use it.
    env.swarm(a, &["plan", "checkout", "billing"]).ok();
    let before = env.all_refs(a);
    env.swarm(a, &["handoff", "--reason", "usage_limit"])
        .err(2, "PLAN_AMBIGUOUS")
        .stderr_has("3 plans exist")
        .stderr_has("(auth, billing, search)")
        .stderr_has("--plan P");
    env.swarm(a, &["lane", "new", "signup"])
        .err(2, "PLAN_AMBIGUOUS");
    env.swarm(a, &["plan", "save"]).err(2, "PLAN_AMBIGUOUS");
    assert_eq!(env.all_refs(a), before, "nothing was written");
    assert!(!worktree(a, "signup").exists());

    // In the lane's worktree, the lane's plan wins over a file checked out
    // from another plan.
    let wt = worktree(a, "login");
    env.swarm(&wt, &["plan", "checkout", "auth", "--force"])
        .ok();
    let out = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json();
    assert_eq!(out["plan"], "search");
    assert!(env
        .refs(a, "refs/swarm/packets/search/")
        .contains_key(out["ref"].as_str().unwrap()));
    assert!(env.refs(a, "refs/swarm/packets/auth/").is_empty());
}
