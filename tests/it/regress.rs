//! Regression tests for bugs met while using git-swarm as a team would
//! (a coordinator and several lanes, one afternoon of work): each test is
//! named after the behaviour it holds.

use std::path::{Path, PathBuf};

use crate::harness::{Run, TestEnv};

fn worktree(dir: &Path, feature: &str) -> PathBuf {
    dir.join("_swarm-worktrees").join(feature)
}

fn commit_changeset(env: &TestEnv, dir: &Path, name: &str, text: &str) -> Run {
    env.write(&dir.join(".changeset").join(name), text);
    env.git(dir, &["add", "."]);
    env.git_run(
        dir,
        &["commit", "--quiet", "-m", &format!("changeset {name}")],
    )
}

/// Two sibling lanes of one clone, `login` (plan alpha) and `search` (plan
/// beta), with `.changeset/` on main or not.
fn sibling_lanes(env: &TestEnv, with_dir: bool) -> PathBuf {
    let repo = env.repo("alice");
    if with_dir {
        env.write(&repo.join(".changeset/README.md"), "changesets\n");
        env.git(&repo, &["add", "."]);
        env.git(&repo, &["commit", "--quiet", "-m", "changesets"]);
    }
    env.swarm(&repo, &["init"]).ok();
    env.swarm(&repo, &["plan", "new", "alpha"]).ok();
    env.swarm(&repo, &["plan", "new", "beta"]).ok();
    env.swarm(
        &repo,
        &[
            "lane", "new", "login", "--plan", "alpha", "--owner", "lane-1",
        ],
    )
    .ok();
    env.swarm(
        &repo,
        &[
            "lane", "new", "search", "--plan", "beta", "--owner", "lane-2",
        ],
    )
    .ok();
    repo
}

#[test]
fn a_sibling_lanes_changeset_with_the_same_text_is_still_a_duplicate() {
    for with_dir in [false, true] {
        let env = TestEnv::new();
        let repo = sibling_lanes(&env, with_dir);
        let login = worktree(&repo, "login");
        let search = worktree(&repo, "search");
        let text = "---\napp: patch\n---\nFix the login flow\n";
        commit_changeset(&env, &login, "login-flow-fix.md", text).ok();

        let head = env.git(&search, &["rev-parse", "HEAD"]);
        let run = commit_changeset(&env, &search, "login-flow-fix.md", text).code(1);
        run.expect_stderr("error[GUARD_FAILED]");
        run.expect_stderr("exists on lane branch feat/login");
        run.expect_stderr(
            "git mv .changeset/login-flow-fix.md .changeset/search-login-flow-fix.md",
        );
        assert_eq!(env.git(&search, &["rev-parse", "HEAD"]), head);

        // check --staged says so too, with the caches gone.
        std::fs::remove_dir_all(repo.join(".git/swarm")).ok();
        let out = env
            .swarm(&search, &["check", "--staged", "--json"])
            .code(1)
            .json();
        assert_eq!(out["error"]["code"], "GUARD_FAILED");
        assert_eq!(
            out["error"]["detail"]["violations"][0]["subject"],
            ".changeset/login-flow-fix.md"
        );

        // Committed anyway: CI's range check of the lane finds it as well.
        env.git(
            &search,
            &["commit", "--quiet", "--no-verify", "-m", "sneak it in"],
        );
        env.swarm(&search, &["check", "--range", "main..feat/search"])
            .code(1)
            .stderr_has("exists on lane branch feat/login");
        env.git(&search, &["reset", "--quiet", "--hard", "HEAD~1"]);

        // Bringing the sibling's very changeset in through git is no
        // duplicate: a merge of feat/login whose commit the hook sees ...
        env.write(&search.join("search.txt"), "search\n");
        env.git(&search, &["add", "."]);
        env.git(&search, &["commit", "--quiet", "-m", "search"]);
        env.git(&search, &["merge", "--quiet", "--no-commit", "feat/login"]);
        env.git_run(&search, &["commit", "--quiet", "-m", "merge login"])
            .ok();
        env.swarm(&search, &["check", "--range", "main..feat/search"])
            .ok();
        // ... and the base taking the lane in by a squash merge.
        env.git(&repo, &["merge", "--quiet", "--squash", "feat/login"]);
        env.git_run(&repo, &["commit", "--quiet", "-m", "login (squashed)"])
            .ok();
    }
}

/// Commit as `author` (hooks skipped: what is judged here is the push).
fn commit_as(env: &TestEnv, dir: &Path, author: &str, file: &str, text: &str) {
    env.write(&dir.join(file), text);
    env.git(dir, &["add", "."]);
    env.git(
        dir,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "--author",
            &format!("{author} <{author}@example.invalid>"),
            "-m",
            &format!("{author}: {file}"),
        ],
    );
}

#[test]
fn the_leader_publishes_a_merge_of_the_holders_own_work_and_a_release_it_did_not_fetch() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T00:00:00Z");
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "calc"]).ok();
    env.swarm(
        a,
        &["lead", "claim", "--plan", "calc", "--succession", "alice"],
    )
    .ok();
    // bob reserves calc/ and pushes his work on a branch of his own.
    env.swarm(b, &["reserve", "calc/"]).ok();
    env.git(b, &["switch", "--quiet", "-c", "feat/divfix"]);
    commit_as(
        &env,
        b,
        "bob",
        "calc/ops.py",
        "def div(a, b): return a / b\n",
    );
    env.git(b, &["push", "--quiet", "origin", "feat/divfix"]);

    // alice merges it (the merge commit is hers) and publishes main.
    env.git(a, &["fetch", "--quiet", "origin"]);
    env.git(
        a,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "merge divfix",
            "origin/feat/divfix",
        ],
    );
    env.swarm(a, &["lead", "push", "--plan", "calc", "HEAD:main"])
        .ok();
    assert_eq!(
        env.git(&remote, &["rev-parse", "main"]),
        env.git(a, &["rev-parse", "HEAD"])
    );

    // A change of alice's own under calc/ is refused while bob holds it,
    // one hint line per line of the guard's report.
    commit_as(
        &env,
        a,
        "alice",
        "calc/ops.py",
        "def div(a, b): return a // b\n",
    );
    let before = env.all_refs(&remote);
    let run = env
        .swarm(a, &["lead", "push", "--plan", "calc", "HEAD:main"])
        .err(1, "GUARD_FAILED");
    run.expect_stderr("hint:   [reservations] calc/ops.py");
    run.expect_stderr("reserved exclusively by bob");
    assert!(!run.stderr.contains(" / "), "{}", run.stderr);
    assert!(
        run.stderr
            .lines()
            .filter(|l| !l.is_empty())
            .all(|l| l.starts_with("error[") || l.starts_with("hint: ")),
        "{}",
        run.stderr
    );
    assert_eq!(env.all_refs(&remote), before);

    // bob releases; alice's clone has not fetched since: the push passes.
    env.swarm(b, &["release", "calc/"]).ok();
    env.swarm(a, &["lead", "push", "--plan", "calc", "HEAD:main"])
        .ok();
    assert_eq!(
        env.git(&remote, &["rev-parse", "main"]),
        env.git(a, &["rev-parse", "HEAD"])
    );
}

/// Replace line `line` of `f` in `dir` and commit (hooks skipped).
fn edit_f(env: &TestEnv, dir: &Path, line: usize, text: &str) {
    let old = env.read(&dir.join("f"));
    let mut lines: Vec<&str> = old.lines().collect();
    lines[line - 1] = text;
    env.write(&dir.join("f"), &(lines.join("\n") + "\n"));
    env.git(
        dir,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "-am",
            &format!("f line {line}"),
        ],
    );
}

#[test]
fn the_push_forecast_blames_a_lane_only_for_conflicts_in_its_own_changes() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = crate::forecast::two_machines(&env);
    // divfix (on m1) changes line 2 of f and is pushed.
    crate::forecast::lane_edit(&env, &m1, "divfix", 2, "two (divfix)");
    // main then changes the same line another way (a merged PR).
    edit_f(&env, &m1, 2, "two (main)");
    env.git(
        &m1,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );

    // docs (on m2) starts from the new main and only touches README.md:
    // main's line 2 conflicts with divfix, not docs' work.
    env.git(&m2, &["pull", "--quiet", "--ff-only"]);
    env.git(&m2, &["fetch", "--quiet", "origin"]);
    env.swarm(&m2, &["plan", "new", "docs"]).ok();
    env.swarm(&m2, &["lane", "new", "docs", "--plan", "docs"])
        .ok();
    let docs = m2.join("_swarm-worktrees/docs");
    env.write(&docs.join("README.md"), "hello, docs\n");
    env.git(&docs, &["commit", "--quiet", "-am", "docs"]);
    let run = env
        .git_run(&docs, &["push", "--quiet", "origin", "feat/docs"])
        .ok();
    assert!(
        !run.stderr.contains("forecast to conflict"),
        "{}",
        run.stderr
    );

    // When docs does change that line, the conflict is its own.
    edit_f(&env, &docs, 2, "two (docs)");
    env.git_run(&docs, &["push", "--quiet", "origin", "feat/docs"])
        .ok()
        .stderr_has("warning: docs is forecast to conflict with lane divfix in f");
}

#[test]
fn ask_lead_in_a_lane_worktree_asks_the_leader_of_the_lanes_plan() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["plan", "new", "other"]).ok();
    env.swarm(
        a,
        &["lead", "claim", "--plan", "auth", "--succession", "alice"],
    )
    .ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    env.swarm(b, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let login = worktree(b, "login");

    let out = env
        .swarm(&login, &["ask", "lead", "which", "hash?", "--json"])
        .ok()
        .json();
    assert_eq!(out["message"]["to"], "alice");
    assert_eq!(out["message"]["plan"], "auth");
    let inbox = env.swarm(a, &["inbox", "--json"]).ok();
    inbox.expect_stdout("which hash?");

    // A lane on a child plan with no leader of its own asks the parent's.
    env.swarm(b, &["plan", "new", "signup", "--parent", "auth"])
        .ok();
    env.swarm(b, &["lane", "new", "signup", "--plan", "signup"])
        .ok();
    let out = env
        .swarm(&worktree(b, "signup"), &["ask", "lead", "ok?", "--json"])
        .ok()
        .json();
    assert_eq!(out["message"]["to"], "alice");
    assert_eq!(out["message"]["plan"], "signup");

    // Outside a lane the plan must still be named, and the hint says so.
    env.swarm(b, &["ask", "lead", "hello"])
        .err(2, "MESSAGE_INVALID")
        .stderr_has("--plan");
}

#[test]
fn task_done_fetches_the_base_before_judging_the_merge() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "p"]).ok();
    env.swarm(
        a,
        &[
            "task", "new", "x", "--plan", "p", "--title", "x", "--branch", "feat/x",
        ],
    )
    .ok();
    env.swarm(a, &["task", "claim", "x", "--plan", "p"]).ok();
    env.git(a, &["switch", "--quiet", "-c", "feat/x"]);
    env.write(&a.join("x.txt"), "x\n");
    env.git(a, &["add", "."]);
    env.git(a, &["commit", "--quiet", "-m", "x"]);
    env.git(a, &["push", "--quiet", "origin", "feat/x"]);

    // bob merges it on his machine and publishes main.
    env.git(b, &["fetch", "--quiet", "origin"]);
    env.git(
        b,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            "merge x",
            "origin/feat/x",
        ],
    );
    env.git(
        b,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    let merged = env.git(&remote, &["rev-parse", "main"]);

    // ann has not fetched: task done fetches the base itself.
    assert_ne!(env.git(a, &["rev-parse", "origin/main"]), merged);
    let done = env
        .swarm(a, &["task", "done", "x", "--plan", "p", "--json"])
        .ok()
        .json();
    assert_eq!(done["task"]["status"], "done");
    assert_eq!(env.git(a, &["rev-parse", "origin/main"]), merged);
}

#[test]
fn lane_new_starts_from_the_remotes_base_or_says_it_could_not() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "one"]).ok();
    env.swarm(a, &["plan", "new", "two"]).ok();
    // bob moves main; ann has not fetched.
    env.write(&b.join("new.txt"), "new\n");
    env.git(b, &["add", "."]);
    env.git(b, &["commit", "--quiet", "-m", "new"]);
    env.git(
        b,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    let tip = env.git(&remote, &["rev-parse", "main"]);

    let out = env
        .swarm(a, &["lane", "new", "one", "--plan", "one", "--json"])
        .ok();
    assert_eq!(out.json()["base_commit"], tip.as_str());
    assert!(worktree(a, "one").join("new.txt").exists());

    // The remote gone: the lane starts from the local copy, and says so.
    std::fs::rename(&remote, env.root().join("elsewhere.git")).unwrap();
    let run = env.swarm(a, &["lane", "new", "two", "--plan", "two"]).ok();
    run.expect_stderr("could not fetch main from origin");
    run.expect_stderr("started from this clone's copy of origin/main as of 20");
    run.expect_stdout(&format!("from origin/main ({})", &tip[..12]));
}

#[test]
fn a_typo_of_a_known_name_or_address_gets_a_did_you_mean() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(
        a,
        &[
            "task", "new", "login", "--plan", "auth", "--title", "log in",
        ],
    )
    .ok();
    env.swarm(a, &["lane", "new", "tokenizer", "--plan", "auth"])
        .ok();
    env.swarm(b, &["notify", "alice", "hello from bob"]).ok();
    env.swarm(a, &["sync"]).ok();

    // A known address: no warning. A typo of one: posted, with a warning.
    let run = env.swarm(a, &["notify", "bob", "hi"]).ok();
    assert!(!run.stderr.contains("no record"), "{}", run.stderr);
    let run = env.swarm(a, &["notify", "bobb", "hi", "--json"]).ok();
    assert_eq!(run.json()["message"]["to"], "bobb");
    run.expect_stderr("no record in this clone knows the address 'bobb' (did you mean 'bob'?;");
    // Nothing near: the warning names none.
    let run = env.swarm(a, &["notify", "zed", "hi"]).ok();
    run.expect_stderr("knows the address 'zed' (`git swarm sync`");

    // NOT_FOUND names the likely meant one, as NAME_INVALID does.
    let before = env.all_refs(a);
    env.swarm(a, &["lane", "rm", "tokenzier"])
        .err(2, "NOT_FOUND")
        .stderr_has("hint: did you mean 'tokenizer'?");
    env.swarm(a, &["plan", "show", "atuh"])
        .err(2, "NOT_FOUND")
        .stderr_has("hint: did you mean 'auth'?");
    env.swarm(a, &["task", "show", "lgoin", "--plan", "auth"])
        .err(2, "TASK_NOT_FOUND")
        .stderr_has("hint: did you mean 'login'?");
    env.swarm(a, &["lane", "rm", "other"])
        .err(2, "NOT_FOUND")
        .expect_stderr("list lanes");
    assert_eq!(env.all_refs(a), before);
}

#[test]
fn task_claim_help_describes_its_id_and_plan() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    let run = env.swarm(&repo, &["task", "claim", "-h"]).ok();
    let line = |start: &str| {
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start} line\n{}", run.stdout))
            .to_string()
    };
    assert!(line("<ID>").contains("The task id"), "{}", run.stdout);
    assert!(
        line("--plan <P>").contains("The task's plan"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_commit_is_not_refused_for_a_reservation_released_on_another_machine() {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T00:00:00Z");
    let (_remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(b, &["reserve", "README.md"]).ok();
    env.git(a, &["fetch", "--quiet", "origin"]);
    env.write(&a.join("README.md"), "alice's words\n");
    env.git(a, &["add", "."]);
    let head = env.git(a, &["rev-parse", "HEAD"]);
    env.git_run(a, &["commit", "--quiet", "-m", "readme"])
        .code(1)
        .stderr_has("reserved exclusively by bob");
    assert_eq!(env.git(a, &["rev-parse", "HEAD"]), head);

    // bob releases; alice's clone has not fetched: her commit passes.
    env.swarm(b, &["release", "README.md"]).ok();
    env.git_run(a, &["commit", "--quiet", "-m", "readme"]).ok();
    assert_ne!(env.git(a, &["rev-parse", "HEAD"]), head);
}
