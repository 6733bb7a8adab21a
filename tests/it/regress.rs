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
