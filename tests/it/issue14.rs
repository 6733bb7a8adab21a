//! Regression tests for issue 14: what a new team hit in its first
//! afternoon (lost plan text, a guessed plan, a handover that did not
//! happen, a guard that blocked the leader's own merge), each against real
//! clones of one bare remote.

use std::path::{Path, PathBuf};

use crate::harness::TestEnv;

fn plan_text(env: &TestEnv, dir: &Path, plan: &str) -> String {
    env.git(dir, &["show", &format!("refs/swarm/plans/{plan}:PLAN.md")])
}

fn worktree(dir: &Path, feature: &str) -> PathBuf {
    dir.join("_swarm-worktrees").join(feature)
}

/// A coordinator (alice) with plan `auth` and a lane machine (bob) whose
/// lane `login` has the plan file checked out, both synced.
fn coordinator_and_lane(env: &TestEnv) -> (PathBuf, PathBuf) {
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["plan", "new", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    env.swarm(&b, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    (a, b)
}

#[test]
fn plan_save_from_a_stale_checkout_merges_the_newer_plan_text_instead_of_dropping_it() {
    let env = TestEnv::new();
    let (a, b) = coordinator_and_lane(&env);
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
    let env = TestEnv::new();
    let (a, b) = coordinator_and_lane(&env);
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

fn packet_ids(env: &TestEnv, dir: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["packets", "--json"];
    all.extend_from_slice(args);
    env.swarm(dir, &all).ok().json()["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn without_plan_commands_use_the_lanes_plan_or_the_only_plan_never_the_one_last_checked_out() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
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

#[test]
fn a_packet_written_to_the_wrong_plan_is_withdrawn_by_its_author_and_refuses_accept() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["plan", "new", "billing"]).ok();
    env.swarm(a, &["sync"]).ok();
    let wrong = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "billing",
                "--json",
            ],
        )
        .ok()
        .json();
    let id = wrong["id"].as_str().unwrap().to_string();
    let refname = format!("refs/swarm/packets/billing/{id}");
    env.swarm(b, &["sync"]).ok();

    // Only the author withdraws it.
    let before = env.refs(&remote, "refs/swarm/packets/");
    env.swarm(b, &["packet", "withdraw", &id, "--reason", "not mine"])
        .err(1, "PACKET_NOT_AUTHOR")
        .stderr_has("written by alice");
    assert_eq!(env.refs(&remote, "refs/swarm/packets/"), before);

    let out = env
        .swarm(
            a,
            &[
                "packet",
                "withdraw",
                &id,
                "--reason",
                "wrong plan",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(out["changed"], true);
    // Recorded as a commit on the packet chain, published, never deleted.
    let at_remote = env.git(&remote, &["rev-parse", &refname]);
    assert_eq!(at_remote, out["commit"].as_str().unwrap());
    assert_eq!(env.git(&remote, &["rev-list", "--count", &refname]), "2");
    let w = env.git(&remote, &["show", &format!("{refname}:withdrawal.yaml")]);
    assert!(w.contains("schema: swarm-withdrawal/v1"), "{w}");
    assert!(w.contains("reason: wrong plan"), "{w}");
    assert!(env
        .git(&remote, &["show", &format!("{refname}:packet.yaml")])
        .contains(&id));
    let msg = env.git(a, &["log", "-1", "--format=%B", "refs/swarm/plans/billing"]);
    assert!(msg.contains("Swarm-Event: handoff-withdrawn"), "{msg}");

    // A second withdraw is a no-op.
    env.swarm(a, &["packet", "withdraw", &id, "--reason", "wrong plan"])
        .ok()
        .stdout_has("already withdrawn");

    // The successor cannot accept it; nothing is recorded.
    env.swarm(b, &["packets"])
        .ok()
        .stdout_has("withdrawn by alice: wrong plan");
    assert!(packet_ids(&env, b, &["--open"]).is_empty());
    assert_eq!(packet_ids(&env, b, &[]), vec![id.clone()]);
    env.swarm(b, &["accept", &id])
        .err(1, "PACKET_WITHDRAWN")
        .stderr_has("withdrawn by alice");
    assert_eq!(env.git(&remote, &["rev-parse", &refname]), at_remote);
    env.swarm(b, &["packet", "show", &id])
        .ok()
        .stdout_has("# withdrawn by its author");

    // An accepted packet can no longer be withdrawn.
    let right = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "auth",
                "--json",
            ],
        )
        .ok()
        .json();
    let id2 = right["id"].as_str().unwrap().to_string();
    env.swarm(a, &["accept", &id2]).ok();
    env.swarm(a, &["packet", "withdraw", &id2, "--reason", "late"])
        .err(3, "PACKET_ALREADY_ACCEPTED");
}

fn lane_field(env: &TestEnv, dir: &Path, rev: &str, key: &str) -> String {
    let yaml = env.git(dir, &["show", &format!("{rev}:lane.yaml")]);
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    v[key].as_str().unwrap_or_default().to_string()
}

/// Alice starts lane `login` (not synced: its record is only in her clone),
/// commits and pushes the branch, and hands off from the lane's worktree.
/// Bob's clone has the branch checked out, ready to accept.
fn handed_off_lane(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf, String) {
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["plan", "new", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&a, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = worktree(&a, "login");
    env.write(&wt.join("login.rs"), "fn login() {}\n");
    env.git(&wt, &["add", "login.rs"]);
    env.git(&wt, &["commit", "--quiet", "-m", "login"]);
    env.git(
        &wt,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "-u",
            "origin",
            "feat/login",
        ],
    );
    let id = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    (remote, a, b, id)
}

#[test]
fn handoff_publishes_the_lane_record_and_accept_on_another_clone_moves_the_lane() {
    let env = TestEnv::new();
    let (remote, a, b, id) = handed_off_lane(&env);
    // The lane record went out with the packet.
    let lane = "refs/swarm/lanes/login";
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "alice");
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/auth/{id}:packet.yaml")],
    );
    assert!(packet.contains("lane: login"), "{packet}");

    env.swarm(&b, &["accept", &id]).ok();
    // Moved at the remote in the same push as the acceptance, and here.
    let b_path = std::fs::canonicalize(&b).unwrap().display().to_string();
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "bob");
    assert_eq!(lane_field(&env, &remote, lane, "path"), b_path);
    assert_eq!(
        env.git(&b, &["rev-parse", lane]),
        env.git(&remote, &["rev-parse", lane])
    );
    // After both sync, everyone agrees, and the successor can report.
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&b, &["sync"]).ok();
    assert_eq!(lane_field(&env, &a, lane, "owner"), "bob");
    env.swarm(&b, &["report", "plan-ready"]).ok();
    let msg = env.git(&b, &["log", "-1", "--format=%B", "refs/swarm/plans/auth"]);
    assert!(msg.contains("Swarm-Actor: bob"), "{msg}");
}

#[test]
fn an_accept_killed_after_its_push_completes_with_the_published_lane_record() {
    let env = TestEnv::new();
    let (remote, _a, b, id) = handed_off_lane(&env);
    let lane = "refs/swarm/lanes/login";
    let crashed = env.swarm_env(
        &b,
        &[("GIT_SWARM_FAILPOINT", "accept:pushed")],
        &["accept", &id],
    );
    assert_ne!(crashed.code, 0);
    // Published together at the remote; not yet here.
    assert_eq!(lane_field(&env, &remote, lane, "owner"), "bob");
    env.swarm(&b, &["accept", &id])
        .ok()
        .stdout_has("completed an interrupted acceptance");
    // The local lane ref took the published record instead of a second handover.
    assert_eq!(
        env.git(&b, &["rev-parse", lane]),
        env.git(&remote, &["rev-parse", lane])
    );
}

#[test]
fn accept_refuses_while_the_lane_record_has_not_arrived_and_moves_it_once_it_has() {
    let env = TestEnv::new();
    let (remote, a, b, id) = handed_off_lane(&env);
    // As if the lane record had not reached the remote (an older client
    // published the packet alone).
    env.git(&remote, &["update-ref", "-d", "refs/swarm/lanes/login"]);
    let packet = format!("refs/swarm/packets/auth/{id}");
    let before = env.git(&remote, &["rev-parse", &packet]);
    env.swarm(&b, &["accept", &id])
        .err(1, "PACKET_LANE_MISSING")
        .stderr_has("lane login")
        .stderr_has("ask alice to run `git swarm sync`");
    assert_eq!(
        env.git(&remote, &["rev-parse", &packet]),
        before,
        "not accepted"
    );
    assert!(env.refs(&b, "refs/swarm/lanes/").is_empty());

    // The record arrives later: then accept moves it.
    env.swarm(&a, &["sync"]).ok();
    assert_eq!(
        lane_field(&env, &remote, "refs/swarm/lanes/login", "owner"),
        "alice"
    );
    env.swarm(&b, &["accept", &id]).ok();
    assert_eq!(
        lane_field(&env, &remote, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
    assert_eq!(
        lane_field(&env, &b, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
}

fn commit_changeset(env: &TestEnv, dir: &Path, name: &str, text: &str) -> crate::harness::Run {
    env.write(&dir.join(".changeset").join(name), text);
    env.git(dir, &["add", "."]);
    env.git_run(
        dir,
        &["commit", "--quiet", "-m", &format!("changeset {name}")],
    )
}

#[test]
fn a_lanes_own_changeset_merged_into_main_is_no_duplicate_for_the_hook_or_check_range() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["plan", "new", "docs"]).ok();
    env.swarm(a, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let login = worktree(a, "login");
    commit_changeset(
        &env,
        &login,
        "login-form.md",
        "---\nauth: minor\n---\nLogin form\n",
    )
    .ok();

    // The leader squashes the lane into main: the pre-commit hook lets the
    // lane's own changeset in.
    env.git(a, &["merge", "--quiet", "--squash", "feat/login"]);
    env.git_run(a, &["commit", "--quiet", "-m", "login (squashed)"])
        .ok();
    assert!(a.join(".changeset/login-form.md").exists());
    env.swarm(a, &["check", "--range", "HEAD~1..HEAD"]).ok();

    // A lane started after that inherits the file from main: not blamed.
    env.swarm(
        a,
        &["lane", "new", "manual", "--plan", "docs", "--base", "main"],
    )
    .ok();
    assert!(worktree(a, "manual")
        .join(".changeset/login-form.md")
        .exists());
    env.swarm(a, &["check", "--range", "HEAD~1..HEAD", "--json"])
        .ok();

    // A real merge and a cherry-pick of a second changeset pass check too.
    commit_changeset(&env, &login, "login-errors.md", "Login errors\n").ok();
    env.git(
        a,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "--no-verify",
            "-m",
            "merge login",
            "feat/login",
        ],
    );
    env.swarm(a, &["check", "--range", "HEAD~1..HEAD"]).ok();
    commit_changeset(&env, &login, "login-retry.md", "Login retry\n").ok();
    env.git(a, &["cherry-pick", "feat/login"]);
    env.swarm(a, &["check", "--range", "HEAD~1..HEAD"]).ok();

    // The same name with other content is still a duplicate.
    let run = commit_changeset(&env, a, "login-form-2.md", "x\n");
    run.ok();
    commit_changeset(&env, &worktree(a, "manual"), "manual.md", "Manual\n").ok();
    let run = commit_changeset(&env, a, "manual.md", "Someone else's manual\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("exists on lane branch feat/manual"),
        "{}",
        run.stderr
    );
}

#[test]
fn inside_a_lane_worktree_the_lane_owner_wins_over_the_repository_wide_swarm_as() {
    let env = TestEnv::new();
    let repo = env.repo("alice"); // swarm.as = alice, for every worktree
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    env.swarm(&repo, &["lane", "new", "login", "--owner", "bot1"])
        .ok();
    let wt = worktree(&repo, "login");
    let last_actor = || {
        env.git(
            &repo,
            &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
        )
        .lines()
        .find_map(|l| l.strip_prefix("Swarm-Actor: ").map(str::to_string))
        .unwrap()
    };
    env.swarm(&wt, &["report", "plan-ready"]).ok();
    assert_eq!(last_actor(), "bot1");
    // --as and GIT_SWARM_AS still come first.
    env.swarm(&wt, &["report", "plan-ready", "--as", "carol"])
        .ok();
    assert_eq!(last_actor(), "carol");
    env.swarm_env(&wt, &[("GIT_SWARM_AS", "dave")], &["report", "plan-ready"])
        .ok();
    assert_eq!(last_actor(), "dave");
    // Outside the lane, swarm.as.
    env.swarm(&repo, &["plan", "save", "auth", "--file", "README.md"])
        .ok();
    assert_eq!(last_actor(), "alice");
    // The hint for a missing identity no longer leads into the trap.
    env.git(&repo, &["config", "--unset", "swarm.as"]);
    env.swarm(&repo, &["plan", "new", "x"])
        .err(2, "IDENTITY_MISSING")
        .stderr_has("repository-wide");
}

#[test]
fn accept_compares_the_content_of_uncommitted_paths_not_only_their_names() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.git(a, &["switch", "--quiet", "-c", "feat/auth"]);
    env.git(
        a,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "-u",
            "origin",
            "feat/auth",
        ],
    );
    env.write(&a.join("README.md"), "hello\nhalf-done refresh logic\n");
    env.write(&a.join("notes.txt"), "todo\n");
    let out = env
        .swarm(a, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json();
    let id = out["id"].as_str().unwrap().to_string();
    let readme_blob = env.git(a, &["hash-object", "README.md"]);
    assert_eq!(
        out["uncommitted_content"]["README.md"],
        readme_blob.as_str()
    );
    let packet = format!("refs/swarm/packets/auth/{id}");
    let yaml = env.git(&remote, &["show", &format!("{packet}:packet.yaml")]);
    assert!(
        yaml.contains(&format!("README.md: {readme_blob}")),
        "{yaml}"
    );

    // Same paths, other content: refused, nothing recorded.
    env.git(b, &["fetch", "--quiet", "origin"]);
    env.git(b, &["switch", "--quiet", "feat/auth"]);
    env.write(&b.join("README.md"), "hello\nsomething else\n");
    env.write(&b.join("notes.txt"), "todo\n");
    let before = env.git(&remote, &["rev-parse", &packet]);
    let run = env
        .swarm(b, &["accept", &id])
        .err(1, "PACKET_MISMATCH")
        .stderr_has("uncommitted_content")
        .stderr_has(&format!("- README.md {readme_blob}"))
        .stderr_has("other content");
    assert!(!run.stderr.contains("notes.txt"), "{}", run.stderr);
    assert_eq!(env.git(&remote, &["rev-parse", &packet]), before);

    // The author's exact changes: accepted.
    env.write(&b.join("README.md"), "hello\nhalf-done refresh logic\n");
    env.swarm(b, &["accept", &id]).ok();
}

#[test]
fn init_protects_the_base_branch_so_a_fenced_leader_cannot_push_main_nor_take_over_at_once() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
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

#[test]
fn a_handed_over_lanes_old_worktree_says_who_owns_the_lane_now_and_prune_cleans_it_up() {
    let env = TestEnv::new();
    let (_remote, a, b, id) = handed_off_lane(&env);
    env.swarm(&b, &["accept", &id]).ok();
    env.swarm(&a, &["sync"]).ok();
    let old = worktree(&a, "login");
    let b_path = std::fs::canonicalize(&b).unwrap().display().to_string();

    env.swarm(&old, &["report", "plan-ready"])
        .err(1, "LANE_MOVED")
        .stderr_has(&format!("bob owns it now, at {b_path}"))
        .stderr_has("git swarm lane prune");
    env.swarm(&a, &["lane", "rm", "login"])
        .err(1, "LANE_ELSEWHERE")
        .stderr_has(&format!("bob owns it now, at {b_path}"))
        .stderr_has("old worktree");

    let lane_before = env.git(&a, &["rev-parse", "refs/swarm/lanes/login"]);
    env.write(&old.join("scratch.txt"), "notes\n");
    env.swarm(&a, &["lane", "prune"])
        .ok()
        .stdout_has("stays: it has uncommitted work (scratch.txt)");
    assert!(old.exists());
    std::fs::remove_file(old.join("scratch.txt")).unwrap();
    env.swarm(&a, &["lane", "prune", "--dry-run"])
        .ok()
        .stdout_has("would remove login: old worktree");
    assert!(old.exists());
    let out = env.swarm(&a, &["lane", "prune", "--json"]).ok().json();
    assert_eq!(out["old_worktrees"][0]["feature"], "login");
    assert_eq!(out["old_worktrees"][0]["owner"], "bob");
    assert!(!old.exists());
    // The lane stays bob's, and the branch stays.
    assert_eq!(
        env.git(&a, &["rev-parse", "refs/swarm/lanes/login"]),
        lane_before
    );
    assert_eq!(
        lane_field(&env, &a, "refs/swarm/lanes/login", "owner"),
        "bob"
    );
    assert!(!env.refs(&a, "refs/heads/feat/login").is_empty());
}

#[test]
fn read_only_views_show_local_plus_the_fetched_mirror_say_how_old_and_point_to_sync() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    let t0 = "2026-01-01T10:00:00Z";
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm_env(
        a,
        &[("GIT_SWARM_NOW", t0)],
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
    let packet = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "auth",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A fresh clone that only fetched: every view shows the plan, its
    // leader and the packet, says where from, and points to sync (status
    // fetches the mirror itself).
    let c = env.clone_remote(&remote, "carol");
    env.git(&c, &["fetch", "--quiet", "origin"]);
    assert!(env.refs(&c, "refs/swarm/plans/").is_empty());
    env.swarm(&c, &["status"])
        .ok()
        .stdout_has("auth [active] — auth — lead alice (epoch 1)")
        .stdout_has("the mirror of origin (fetched ")
        .stdout_has("the mirror has 2 records your local refs lack")
        .stdout_has("`git swarm sync` brings them in");
    env.swarm(&c, &["packets", "--offline"])
        .ok()
        .stdout_has(&packet)
        .stdout_has("the mirror has 1 record your local refs lack");
    let lead = env
        .swarm(
            &c,
            &["lead", "status", "--plan", "auth", "--offline", "--json"],
        )
        .ok()
        .json();
    assert_eq!(lead["leader"], "alice");
    assert_eq!(lead["mirror"]["ahead"][0], "refs/swarm/lead/auth");
    env.swarm(&c, &["sync"]).ok();
    let out = env.swarm(&c, &["status"]).ok();
    assert!(out.stdout.contains("fetched "), "{}", out.stdout);
    assert!(!out.stdout.contains("the mirror has"), "{}", out.stdout);

    // A takeover on another clone: after a fetch, status and lead status
    // --offline agree on who leads.
    env.swarm(b, &["sync"]).ok();
    env.swarm_env(
        b,
        &[("GIT_SWARM_NOW", "2026-01-01T12:00:00Z")],
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "alice silent",
        ],
    )
    .ok();
    env.git(a, &["fetch", "--quiet", "origin"]);
    let status = env.swarm(a, &["status", "--offline", "--json"]).ok().json();
    assert_eq!(status["plans"][0]["leader"], "bob");
    assert_eq!(status["plans"][0]["epoch"], 2);
    let lead = env
        .swarm(
            a,
            &["lead", "status", "--plan", "auth", "--offline", "--json"],
        )
        .ok()
        .json();
    assert_eq!(lead["leader"], "bob");
    assert_eq!(lead["epoch"], 2);
}

/// Regression: two handoffs by one author to two plans in the same second got
/// the same id, so `accept <id>` and `packet withdraw <id>` were ambiguous.
/// Ids are unique across plans: the second one takes the next suffix.
#[test]
fn packet_ids_are_unique_across_plans_within_one_second() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["alice"]);
    let a = &clones[0];
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["plan", "new", "billing"]).ok();
    let now = [("GIT_SWARM_NOW", "2026-02-01T09:00:00Z")];
    let handoff = |plan: &str| {
        env.swarm_env(
            a,
            &now,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                plan,
                "--json",
            ],
        )
        .ok()
        .json()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = handoff("billing");
    let second = handoff("auth");
    assert_eq!(first, "20260201T090000Z-alice");
    assert_eq!(second, "20260201T090000Z-alice-2");
    // Each id names exactly one packet, by id alone.
    env.swarm(a, &["packet", "show", &second])
        .ok()
        .stdout_has("auth");
    env.swarm(a, &["packet", "withdraw", &first, "--reason", "wrong plan"])
        .ok();
    assert_eq!(
        env.refs(&remote, "refs/swarm/packets/").len(),
        2,
        "both packets published"
    );
}
