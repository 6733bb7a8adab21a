//! Hostile input from the outside attack run (issue 17): files outside the
//! repository reached through the plan file or configuration, inputs that
//! block or never end, one published record that stalls or breaks every
//! clone, addresses that are not ref-safe, an interrupted `lane new`, and
//! an invalid `GIT_SWARM_NOW`.

use std::path::Path;

use crate::harness::TestEnv;

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn mkfifo(env: &TestEnv, path: &Path) {
    let out = env
        .command("mkfifo", env.root())
        .arg(path)
        .output()
        .expect("mkfifo");
    assert!(out.status.success(), "mkfifo failed");
}

/// Every blob reachable from any swarm ref, as text: nothing from outside
/// the repository may end up there.
fn stored_text(env: &TestEnv, dir: &Path) -> String {
    let refs = env.refs(dir, "refs/swarm");
    let mut out = String::new();
    for r in refs.keys() {
        let objects = env.git(dir, &["rev-list", "--objects", r]);
        for line in objects.lines() {
            let id = line.split(' ').next().unwrap();
            if env.git(dir, &["cat-file", "-t", id]) == "blob" {
                out.push_str(&env.git(dir, &["cat-file", "-p", id]));
            }
        }
    }
    out
}

#[test]
fn plan_save_refuses_a_symlinked_plan_file_and_stores_nothing_from_outside() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let outside = env.root().join("outside-secret.txt");
    env.write(&outside, "root:x:0:0:OUTSIDE-SECRET\n");
    symlink(&outside, &repo.join("PLAN.md"));
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "save", "auth"])
        .err(2, "PLAN_FILE_UNSAFE")
        .stderr_has("symbolic link")
        .stderr_has("hint:");
    assert_eq!(env.all_refs(&repo), before);
    assert!(!stored_text(&env, &repo).contains("OUTSIDE-SECRET"));
    // Named on purpose with --file, the user's own file is read.
    let mine = env.root().join("mine.md");
    env.write(&mine, "# mine\n");
    env.swarm(
        &repo,
        &["plan", "save", "auth", "--file", mine.to_str().unwrap()],
    )
    .ok();
}

#[test]
fn plan_checkout_never_writes_through_a_symlink() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let text = env.git(&repo, &["show", "refs/swarm/plans/auth:PLAN.md"]) + "\n";
    let outside = env.root().join("outside.txt");
    let link = repo.join("PLAN.md");
    symlink(&outside, &link);
    for content in ["precious outside file\n", text.as_str()] {
        // A target that equals a saved version is no excuse either.
        env.write(&outside, content);
        for args in [
            &["plan", "checkout", "auth"][..],
            &["plan", "checkout", "auth", "--force"][..],
        ] {
            env.swarm(&repo, args).err(2, "PLAN_FILE_UNSAFE");
            assert_eq!(env.read(&outside), content);
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }
    // A dangling link is not followed into a new file either.
    std::fs::remove_file(&outside).unwrap();
    env.swarm(&repo, &["plan", "checkout", "auth", "--force"])
        .err(2, "PLAN_FILE_UNSAFE");
    assert!(!outside.exists());
}

#[test]
fn fifo_device_and_oversized_inputs_are_refused() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let fifo = env.root().join("pipe.md");
    mkfifo(&env, &fifo);
    let before = env.all_refs(&repo);
    env.swarm(
        &repo,
        &["plan", "new", "x", "--from", fifo.to_str().unwrap()],
    )
    .err(2, "FILE_NOT_REGULAR")
    .stderr_has("FIFO");
    env.swarm(&repo, &["plan", "new", "x", "--from", "/dev/zero"])
        .err(2, "FILE_NOT_REGULAR");
    env.swarm(
        &repo,
        &["plan", "save", "auth", "--file", fifo.to_str().unwrap()],
    )
    .err(2, "FILE_NOT_REGULAR");
    let big = env.root().join("big.md");
    env.write(&big, &"x".repeat(2 * 1024 * 1024));
    env.swarm(
        &repo,
        &["plan", "new", "x", "--from", big.to_str().unwrap()],
    )
    .err(2, "FILE_TOO_LARGE");
    let big_yaml = env.root().join("big.yaml");
    env.write(
        &big_yaml,
        &format!("schema: swarm-plan/v1\ntitle: {}\n", "y".repeat(100 * 1024)),
    );
    env.swarm(
        &repo,
        &["plan", "new", "x", "--from", big_yaml.to_str().unwrap()],
    )
    .err(2, "FILE_TOO_LARGE");
    // The plan file itself as a FIFO, or too large.
    mkfifo(&env, &repo.join("PLAN.md"));
    env.swarm(&repo, &["plan", "save", "auth"])
        .err(2, "PLAN_FILE_UNSAFE")
        .stderr_has("FIFO");
    env.swarm(&repo, &["plan", "checkout", "auth", "--force"])
        .err(2, "PLAN_FILE_UNSAFE");
    std::fs::remove_file(repo.join("PLAN.md")).unwrap();
    env.write(&repo.join("PLAN.md"), &"z".repeat(2 * 1024 * 1024));
    env.swarm(&repo, &["plan", "save", "auth"])
        .err(2, "FILE_TOO_LARGE");
    assert_eq!(env.all_refs(&repo), before);
}

#[test]
fn plan_file_setting_outside_the_worktree_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let outside = env.root().join("outside.md");
    env.write(&outside, "OUTSIDE-SECRET\n");
    let hook = repo.join(".git/hooks/pre-commit");
    let before = env.all_refs(&repo);
    let absolute = outside.display().to_string();
    std::fs::create_dir_all(env.root().join("elsewhere")).unwrap();
    symlink(&env.root().join("elsewhere"), &repo.join("docs"));
    for value in [
        "../outside.md",
        absolute.as_str(),
        ".git/hooks/pre-commit",
        "docs/PLAN.md",
    ] {
        env.git(&repo, &["config", "swarm.planFile", value]);
        env.swarm(&repo, &["plan", "save", "auth"])
            .err(2, "CONFIG_INVALID")
            .stderr_has("swarm.planFile");
        env.swarm(&repo, &["plan", "checkout", "auth", "--force"])
            .err(2, "CONFIG_INVALID");
        if value != "docs/PLAN.md" {
            // (a lane worktree has no such docs link: there it is fine)
            env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
                .err(2, "CONFIG_INVALID");
        }
    }
    assert_eq!(env.read(&outside), "OUTSIDE-SECRET\n");
    assert!(!hook.exists());
    assert!(!env.root().join("elsewhere/PLAN.md").exists());
    assert_eq!(env.all_refs(&repo), before);
    assert!(!stored_text(&env, &repo).contains("OUTSIDE-SECRET"));
    // A path inside the worktree is fine.
    env.git(&repo, &["config", "swarm.planFile", "notes/PLAN.md"]);
    env.swarm(&repo, &["plan", "checkout", "auth"]).ok();
    assert!(repo.join("notes/PLAN.md").is_file());
}

#[test]
fn worktree_root_outside_the_main_worktree_needs_an_explicit_allowance() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let before = env.all_refs(&repo);
    let elsewhere = env.root().join("lanes");
    let absolute = elsewhere.display().to_string();
    for value in ["../lanes", absolute.as_str(), ".git/lanes"] {
        env.git(&repo, &["config", "swarm.worktreeRoot", value]);
        env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
            .err(2, "CONFIG_INVALID")
            .stderr_has("swarm.worktreeRoot");
        assert_eq!(env.all_refs(&repo), before, "{value}");
        assert!(!elsewhere.exists());
        assert!(!repo.join(".git/lanes").exists());
    }
    // Into .git stays refused even when outside is allowed.
    env.git(&repo, &["config", "swarm.worktreeRootAllowOutside", "true"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .err(2, "CONFIG_INVALID");
    env.git(&repo, &["config", "swarm.worktreeRoot", absolute.as_str()]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    assert!(elsewhere.join("login").is_dir());
}

/// Write a record commit with real git plumbing and push it to the remote
/// under `refname`, as anyone with push access could.
pub(crate) fn push_raw_record(env: &TestEnv, dir: &Path, refname: &str, file: &str, content: &str) {
    let blob = {
        let mut cmd = env.command("git", dir);
        cmd.args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(content.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let tree = {
        let mut cmd = env.command("git", dir);
        cmd.args(["mktree"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("100644 blob {blob}\t{file}\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let commit = env.git(dir, &["commit-tree", &tree, "-m", "hostile record"]);
    env.git(
        dir,
        &["push", "--quiet", "origin", &format!("{commit}:{refname}")],
    );
}

#[test]
fn one_deep_or_malformed_published_record_is_refused_and_listings_go_on() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "good"]).ok();
    env.swarm(a, &["lane", "new", "ok", "--plan", "good"]).ok();
    env.swarm(a, &["sync"]).ok();
    let deep = format!(
        "schema: swarm-plan/v1\nplan: x\nx: {}1{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    push_raw_record(&env, a, "refs/swarm/plans/x", "plan.yaml", &deep);
    push_raw_record(
        &env,
        a,
        "refs/swarm/lanes/broken",
        "lane.yaml",
        "schema: swarm-lane/v1\nfeature: [unclosed\n",
    );
    push_raw_record(
        &env,
        a,
        "refs/swarm/packets/good/20260101T000000Z-mallory",
        "packet.yaml",
        "schema: dwp-handoff/v1\n: : :\n",
    );
    // Every clone gets them with sync, which still syncs everything else.
    env.swarm(b, &["sync"]).ok();
    assert!(env
        .refs(b, "refs/swarm/plans")
        .contains_key("refs/swarm/plans/x"));
    assert!(env
        .refs(b, "refs/swarm/plans")
        .contains_key("refs/swarm/plans/good"));

    let status = env.swarm(b, &["status"]).ok();
    status.expect_stdout("good [active]");
    status.expect_stderr("refs/swarm/plans/x");
    status.expect_stderr("RECORD_INVALID");
    status.expect_stderr("refs/swarm/lanes/broken");
    status.expect_stderr("20260101T000000Z-mallory");
    let json = env.swarm(b, &["status", "--json"]).ok().json();
    let bad: Vec<&str> = json["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["ref"].as_str().unwrap())
        .collect();
    // status lists open packets too, so it reads (and names) the bad packet.
    assert_eq!(
        bad,
        [
            "refs/swarm/plans/x",
            "refs/swarm/lanes/broken",
            "refs/swarm/packets/good/20260101T000000Z-mallory"
        ]
    );
    assert_eq!(json["unreadable"][0]["code"], "RECORD_INVALID");
    assert_eq!(json["unreadable"][0]["name"], "x");

    let list = env.swarm(b, &["plan", "list", "--json"]).ok();
    list.expect_stderr("'x'");
    let json = list.json();
    assert_eq!(json["plans"][0]["plan"], "good");
    assert_eq!(json["unreadable"][0]["ref"], "refs/swarm/plans/x");
    env.swarm(b, &["plan", "list"])
        .ok()
        .stdout_has("UNREADABLE refs/swarm/plans/x (RECORD_INVALID)");
    let lanes = env.swarm(b, &["lane", "list", "--json"]).ok();
    lanes.expect_stderr("refs/swarm/lanes/broken");
    assert_eq!(lanes.json()["lanes"][0]["feature"], "ok");
    let packets = env.swarm(b, &["packets", "--json"]).ok();
    packets.expect_stderr("20260101T000000Z-mallory");
    assert_eq!(packets.json()["unreadable"][0]["kind"], "packet");

    // Commands that need the bad record fail with its code.
    env.swarm(b, &["plan", "show", "x"])
        .err(2, "RECORD_INVALID");
    env.swarm(b, &["plan", "save", "x", "--file", "README.md"])
        .err(2, "RECORD_INVALID");
    env.swarm(b, &["lane", "new", "broken", "--plan", "good"])
        .err(2, "YAML_INVALID");
}

#[test]
fn addresses_that_are_not_ref_safe_are_refused_up_front() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let before = env.all_refs(&repo);
    for addr in ["x.lock", "a..b", "a."] {
        env.swarm(
            &repo,
            &[
                "--as",
                addr,
                "handoff",
                "--reason",
                "capacity_low",
                "--plan",
                "auth",
            ],
        )
        .err(2, "NAME_INVALID")
        .stderr_has("hint:");
        env.swarm_env(&repo, &[("GIT_SWARM_AS", addr)], &["plan", "new", "y"])
            .err(2, "NAME_INVALID");
    }
    assert_eq!(env.all_refs(&repo), before);
}

#[test]
fn lane_new_rerun_finishes_an_interrupted_start() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let killed = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane:worktree")],
        &["lane", "new", "login", "--plan", "auth"],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    // Killed after `git worktree add`, before the record.
    let wt = repo.join("_swarm-worktrees/login");
    assert!(wt.is_dir());
    assert!(env
        .refs(&repo, "refs/heads")
        .contains_key("refs/heads/feat/login"));
    assert!(env.refs(&repo, "refs/swarm/lanes").is_empty());
    env.swarm(&repo, &["lane", "rm", "login"])
        .err(2, "NOT_FOUND")
        .stderr_has("git swarm lane new login");

    let out = env
        .swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok()
        .stdout_has("interrupted");
    assert!(out.stdout.contains("finishing it"), "{}", out.stdout);
    assert!(env
        .refs(&repo, "refs/swarm/lanes")
        .contains_key("refs/swarm/lanes/login"));
    let log = env.swarm(&repo, &["plan", "log", "auth"]).ok();
    log.expect_stdout("lane-started");
    assert!(wt.join("PLAN.md").is_file());
    let list = env.swarm(&repo, &["lane", "list", "--json"]).ok().json();
    assert_eq!(list["lanes"][0]["feature"], "login");
    // And it is an ordinary lane now: removable.
    env.swarm(&repo, &["lane", "rm", "login"]).ok();
    assert!(!wt.exists());
}

#[test]
fn lane_new_rerun_after_a_kill_after_the_record_writes_the_journal_entry_once() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let killed = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane:record")],
        &["lane", "new", "login", "--plan", "auth"],
    );
    assert_ne!(killed.code, 0);
    assert!(env
        .refs(&repo, "refs/swarm/lanes")
        .contains_key("refs/swarm/lanes/login"));
    let started = |env: &TestEnv| {
        env.git(&repo, &["log", "--format=%B", "refs/swarm/plans/auth"])
            .matches("Swarm-Event: lane-started")
            .count()
    };
    assert_eq!(started(&env), 0);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok()
        .stdout_has("interrupted after writing its record");
    assert_eq!(started(&env), 1);
    // Finished: a third run is the ordinary "already active".
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .err(2, "LANE_EXISTS");
    assert_eq!(started(&env), 1);
}

#[test]
fn lane_new_after_a_kill_before_the_worktree_undoes_the_branch() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let killed = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane:worktree")],
        &["lane", "new", "login", "--plan", "auth"],
    );
    assert_ne!(killed.code, 0);
    // As if killed inside `git worktree add`: the branch, no worktree.
    let wt = repo.join("_swarm-worktrees/login");
    env.git(
        &repo,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok()
        .stdout_has("removed that branch");
    assert!(wt.is_dir());
}

#[test]
fn a_stale_lock_on_the_lane_branch_does_not_stop_lane_new() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let lock = repo.join(".git/refs/heads/feat/login.lock");
    env.write(&lock, "");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok()
        .stdout_has("stale lock");
    assert!(!lock.exists());
}

#[test]
fn an_invalid_git_swarm_now_is_refused() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    for bad in [
        "tomorrow",
        "2026-13-01T00:00:00Z",
        "1700000000",
        // RFC 3339 offsets stop at ±23:59 (the parser alone took +25:00).
        "2026-01-01T00:00:00+25:00",
        // Leases added to it would overflow later with a raw message.
        "9999-12-31T23:59:59Z",
    ] {
        env.swarm_env(&repo, &[("GIT_SWARM_NOW", bad)], &["status"])
            .err(2, "ENV_INVALID")
            .stderr_has("GIT_SWARM_NOW");
    }
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_NOW", "2026-01-01T00:00:00-23:30")],
        &["status"],
    )
    .ok();
    env.swarm_env(
        &repo,
        &[("GIT_SWARM_NOW", "2026-01-01T00:00:00Z")],
        &["status"],
    )
    .ok();
}
