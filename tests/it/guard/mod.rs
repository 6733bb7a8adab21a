//! The guards as a user meets them: real `git commit` / `git push` running
//! the hooks `git swarm init` installed, `git swarm check` for CI, lane
//! worktrees, temporary indexes, and the pre-commit framework.

pub(crate) mod guard_mirror;
pub(crate) mod hook_cache;
pub(crate) mod reservations;

use std::path::{Path, PathBuf};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::{Run, TestEnv};

fn head(env: &TestEnv, dir: &Path) -> String {
    env.git(dir, &["rev-parse", "HEAD"])
}

fn commit(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["commit"];
    all.extend_from_slice(args);
    env.git_run(dir, &all)
}

#[test]
fn a_commit_adding_plan_md_is_refused_by_the_hook_and_by_check_range() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    let before = head(&env, &repo);
    let refs_before = env.all_refs(&repo);
    env.write(&repo.join("PLAN.md"), "# my plan\n");
    env.git(&repo, &["add", "-f", "PLAN.md"]);

    let run = commit(&env, &repo, &["-m", "add the plan"]).code(1);
    run.expect_stderr("error[GUARD_FAILED]");
    run.expect_stderr("[plan-untracked] PLAN.md");
    run.expect_stderr("fix: git rm --cached PLAN.md");
    assert_eq!(head(&env, &repo), before, "the branch moved");
    assert_eq!(env.all_refs(&repo), refs_before);

    // check --staged says the same, with the violation in --json.
    let out = env
        .swarm(&repo, &["check", "--staged", "--json"])
        .code(1)
        .json();
    assert_eq!(out["error"]["code"], "GUARD_FAILED");
    let v = &out["error"]["detail"]["violations"][0];
    assert_eq!(v["guard"], "plan-untracked");
    assert_eq!(v["subject"], "PLAN.md");

    // Committed anyway with --no-verify: CI's check --range catches it.
    commit(
        &env,
        &repo,
        &["--quiet", "--no-verify", "-m", "sneak the plan in"],
    )
    .ok();
    let sneak = head(&env, &repo);
    let run = env
        .swarm(&repo, &["check", "--range", &format!("{before}..HEAD")])
        .err(1, "GUARD_FAILED")
        .stderr_has("[plan-untracked] PLAN.md")
        .stderr_has(&sneak[..12]);
    run.expect_stderr("adds the plan file");

    // Modifying the tracked plan file is refused too.
    env.write(&repo.join("PLAN.md"), "# my plan, v2\n");
    env.git(&repo, &["add", "PLAN.md"]);
    commit(&env, &repo, &["-m", "edit the plan"])
        .code(1)
        .stderr_has("staged (modified)");
    assert_eq!(head(&env, &repo), sneak);

    // Untracking it is the fix: that commit passes, and so does its range.
    env.git(&repo, &["rm", "--quiet", "--cached", "PLAN.md"]);
    commit(&env, &repo, &["--quiet", "-m", "untrack the plan"]).ok();
    assert!(repo.join("PLAN.md").exists());
    env.swarm(&repo, &["check", "--range", &format!("{sneak}..HEAD")])
        .ok()
        .stdout_has("ok: 1 commit in ");
}

/// Stage `names` under .changeset/ in `dir`, try to commit, and assert the
/// refusal mentions each needle; then unstage and delete them again.
fn refused(env: &TestEnv, dir: &Path, names: &[&str], needles: &[&str]) {
    let before = head(env, dir);
    for n in names {
        env.write(&dir.join(".changeset").join(n), &format!("{n}\n"));
        env.git(dir, &["add", &format!(".changeset/{n}")]);
    }
    let run = commit(env, dir, &["-m", "add a changeset"]).code(1);
    run.expect_stderr("[changeset-unique]");
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "lacks {needle:?}:\n{}",
            run.stderr
        );
    }
    assert_eq!(head(env, dir), before, "the branch moved");
    for n in names {
        env.git(
            dir,
            &["rm", "--quiet", "--cached", &format!(".changeset/{n}")],
        );
        std::fs::remove_file(dir.join(".changeset").join(n)).unwrap();
    }
}

fn changeset_names(env: &TestEnv, dir: &Path, rev: &str) -> Vec<String> {
    env.git(
        dir,
        &["ls-tree", "--name-only", &format!("{rev}:.changeset")],
    )
    .lines()
    .map(|l| l.to_ascii_lowercase())
    .collect()
}

#[test]
fn changeset_names_must_be_unique_across_base_lanes_remote_lanes_and_the_commit() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    // main has a changeset and the changeset README.
    env.write(&b.join(".changeset/README.md"), "changesets\n");
    env.write(&b.join(".changeset/fix-auth.md"), "fix auth\n");
    env.git(b, &["add", ".changeset"]);
    commit(&env, b, &["--quiet", "-m", "changesets"]).ok();
    // init protects main: this setup push skips the hooks.
    env.git(b, &["push", "--quiet", "--no-verify", "origin", "main"]);
    env.git(a, &["pull", "--quiet", "--ff-only"]);

    env.swarm(a, &["plan", "new", "login"]).ok();
    env.swarm(a, &["plan", "new", "other"]).ok();
    env.swarm(a, &["lane", "new", "mine", "--plan", "login"])
        .ok();
    env.swarm(a, &["lane", "new", "other", "--plan", "other"])
        .ok();
    let mine = a.join("_swarm-worktrees/mine");
    let other = a.join("_swarm-worktrees/other");
    // Another local lane branch has other-thing.md.
    env.write(&other.join(".changeset/other-thing.md"), "x\n");
    env.git(&other, &["add", ".changeset/other-thing.md"]);
    commit(&env, &other, &["--quiet", "-m", "other thing"]).ok();
    // A lane branch that exists only on the remote has remote-thing.md.
    env.git(b, &["checkout", "--quiet", "-b", "feat/x"]);
    env.write(&b.join(".changeset/remote-thing.md"), "y\n");
    env.git(b, &["add", ".changeset/remote-thing.md"]);
    commit(&env, b, &["--quiet", "-m", "remote thing"]).ok();
    env.git(b, &["push", "--quiet", "origin", "feat/x"]);
    // main gains shared.md after alice's lane started.
    env.git(b, &["checkout", "--quiet", "main"]);
    env.write(&b.join(".changeset/shared.md"), "z\n");
    env.git(b, &["add", ".changeset/shared.md"]);
    commit(&env, b, &["--quiet", "-m", "shared"]).ok();
    env.git(b, &["push", "--quiet", "--no-verify", "origin", "main"]);
    env.git(a, &["fetch", "--quiet", "origin"]);
    assert!(env.refs(a, "refs/heads/feat/x").is_empty());
    assert_eq!(env.refs(a, "refs/remotes/origin/feat/x").len(), 1);

    // Like one on the base (origin/main, the lane's base), even in another case.
    refused(
        &env,
        &mine,
        &["shared.md"],
        &[".changeset/shared.md", "base branch origin/main"],
    );
    refused(
        &env,
        &mine,
        &["Fix-Auth.md"],
        &["differs only in case", "origin/main"],
    );
    // Like one on another lane's branch: local, or only on the remote.
    refused(
        &env,
        &mine,
        &["other-thing.md"],
        &["lane branch feat/other"],
    );
    refused(
        &env,
        &mine,
        &["Remote-Thing.md"],
        &["origin/feat/x (as remote-thing.md)"],
    );
    // The name cache is only a cache: garbage in it changes no verdict.
    let cache = a.join(".git/swarm/changeset-names.cache");
    assert!(cache.exists(), "the guard kept no cache");
    env.write(
        &cache,
        "git-swarm changeset-name-cache v2\ndir .changeset\nt zz\n",
    );
    refused(
        &env,
        &mine,
        &["other-thing.md"],
        &["lane branch feat/other"],
    );
    // A reserved bot name.
    refused(
        &env,
        &mine,
        &["pr-147-review.md"],
        &["reserved pattern `pr-<N>-review.md`"],
    );
    // Two new ones in one commit that differ only in case.
    refused(
        &env,
        &mine,
        &["new-one.md", "NEW-ONE.md"],
        &["added in the same commit"],
    );

    // A unique name passes, and the lane's own changesets are not "another lane".
    env.write(&mine.join(".changeset/mine-login.md"), "mine\n");
    env.git(&mine, &["add", ".changeset/mine-login.md"]);
    commit(&env, &mine, &["--quiet", "-m", "my changeset"]).ok();
    env.git(&mine, &["push", "--quiet", "origin", "feat/mine"]);
    env.write(&mine.join(".changeset/mine-logout.md"), "mine\n");
    env.git(&mine, &["add", ".changeset/mine-logout.md"]);
    commit(&env, &mine, &["--quiet", "-m", "another changeset"]).ok();

    // The proposed slug is free everywhere it was checked: renaming to it passes.
    env.write(&mine.join(".changeset/shared.md"), "again\n");
    env.git(&mine, &["add", ".changeset/shared.md"]);
    let out = env
        .swarm(&mine, &["check", "--staged", "--json"])
        .code(1)
        .json();
    let v = &out["error"]["detail"]["violations"][0];
    assert_eq!(v["subject"], ".changeset/shared.md");
    let proposed = v["proposed"].as_str().unwrap().to_string();
    assert!(
        proposed.ends_with(".md") && proposed != "shared.md",
        "{proposed}"
    );
    for rev in ["origin/main", "feat/other", "origin/feat/x", "HEAD"] {
        assert!(
            !changeset_names(&env, a, rev).contains(&proposed.to_ascii_lowercase()),
            "{proposed} exists on {rev}"
        );
    }
    assert!(v["fix"].as_str().unwrap().contains(&format!(
        "git mv .changeset/shared.md .changeset/{proposed}"
    )));
    env.git(
        &mine,
        &[
            "mv",
            ".changeset/shared.md",
            &format!(".changeset/{proposed}"),
        ],
    );
    commit(&env, &mine, &["--quiet", "-m", "renamed changeset"]).ok();
    assert!(changeset_names(&env, &mine, "HEAD").contains(&proposed.to_ascii_lowercase()));

    // CI: the range check finds a duplicate committed with --no-verify.
    env.write(&mine.join(".changeset/other-thing.md"), "dup\n");
    env.git(&mine, &["add", ".changeset/other-thing.md"]);
    commit(&env, &mine, &["--quiet", "--no-verify", "-m", "dup"]).ok();
    env.swarm(&mine, &["check", "--range", "origin/main..HEAD"])
        .err(1, "GUARD_FAILED")
        .stderr_has("[changeset-unique] .changeset/other-thing.md")
        .stderr_has("feat/other");
}

/// Stage `names` under .changeset/ in `dir` and commit them; the hook passes.
fn accepted(env: &TestEnv, dir: &Path, names: &[&str]) {
    for n in names {
        env.write(&dir.join(".changeset").join(n), &format!("{n}\n"));
        env.git(dir, &["add", &format!(".changeset/{n}")]);
    }
    commit(env, dir, &["--quiet", "-m", "add a changeset"]).ok();
}

#[test]
fn a_lane_started_from_a_commit_a_tag_or_an_expression_checks_against_that_commit() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    env.write(&repo.join(".changeset/on-base.md"), "base\n");
    env.git(&repo, &["add", ".changeset"]);
    commit(&env, &repo, &["--quiet", "-m", "a changeset"]).ok();
    let start = head(&env, &repo);
    env.git(&repo, &["tag", "v1", &start]);
    env.write(&repo.join("later.txt"), "later\n");
    env.git(&repo, &["add", "later.txt"]);
    commit(&env, &repo, &["--quiet", "-m", "later"]).ok();

    for (feature, base, label) in [
        ("by-sha", start.as_str(), &start[..12]),
        ("by-tag", "v1", "v1 ("),
        ("by-expr", "HEAD~1", "HEAD~1 ("),
    ] {
        env.swarm(&repo, &["plan", "new", feature]).ok();
        env.swarm(
            &repo,
            &["lane", "new", feature, "--plan", feature, "--base", base],
        )
        .ok();
        let wt = repo.join("_swarm-worktrees").join(feature);
        assert_eq!(head(&env, &wt), start, "{feature}");
        // A duplicate of a changeset on that base is refused...
        refused(
            &env,
            &wt,
            &["On-Base.md"],
            &[&format!("exists on the base branch {label}")],
        );
        // ...and a unique one is committed (no GUARD_ERROR).
        accepted(&env, &wt, &[&format!("{feature}-change.md")]);
    }
    // swarm.base may name a tag rather than a branch, too.
    env.git(&repo, &["config", "swarm.base", "v1"]);
    accepted(&env, &repo, &["on-main.md"]);
    env.git(&repo, &["config", "--unset", "swarm.base"]);

    // A lane whose base is a branch that no longer exists still fails closed.
    env.git(&repo, &["branch", "gone", &start]);
    env.swarm(&repo, &["plan", "new", "gone"]).ok();
    env.swarm(
        &repo,
        &["lane", "new", "on-gone", "--plan", "gone", "--base", "gone"],
    )
    .ok();
    env.git(&repo, &["branch", "-D", "gone"]);
    let wt = repo.join("_swarm-worktrees/on-gone");
    env.write(&wt.join(".changeset/x.md"), "x\n");
    env.git(&wt, &["add", ".changeset/x.md"]);
    env.swarm(&wt, &["check", "--staged"])
        .err(4, "GUARD_ERROR")
        .stderr_has("the base branch 'gone'");
}

#[test]
fn a_mistyped_swarm_remote_does_not_block_the_guards() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    // A lane branch on the remote with a changeset.
    env.git(b, &["checkout", "--quiet", "-b", "feat/x"]);
    env.write(&b.join(".changeset/remote-thing.md"), "y\n");
    env.git(b, &["add", ".changeset"]);
    commit(&env, b, &["--quiet", "-m", "remote thing"]).ok();
    env.git(b, &["push", "--quiet", "origin", "feat/x"]);
    env.git(a, &["fetch", "--quiet", "origin"]);

    env.git(a, &["config", "swarm.remote", "orgin"]);
    // Writing commands still say the remote is missing (reading ones warn)...
    env.swarm(a, &["sync"]).err(2, "REMOTE_MISSING");
    // ...but an ordinary commit passes the hooks,
    env.write(&a.join("x.txt"), "x\n");
    env.git(a, &["add", "x.txt"]);
    commit(&env, a, &["--quiet", "-m", "ordinary"]).ok();
    env.swarm(a, &["check", "--staged"]).ok();
    // and the guards still refuse what they refuse: remote lanes are globbed.
    refused(&env, a, &["remote-thing.md"], &["origin/feat/x"]);
    env.write(&a.join("PLAN.md"), "# plan\n");
    env.git(a, &["add", "-f", "PLAN.md"]);
    commit(&env, a, &["-m", "the plan"])
        .code(1)
        .stderr_has("[plan-untracked] PLAN.md");
    env.swarm(a, &["check", "--staged"]).err(1, "GUARD_FAILED");
}

#[test]
fn an_index_that_cannot_be_read_fails_closed() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    // A symlink loop: not "no index" (even root cannot read it).
    let looped = env.root().join("looped-index");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let index = looped.to_str().unwrap();
    env.swarm_env(&repo, &[("GIT_INDEX_FILE", index)], &["check", "--staged"])
        .err(4, "GUARD_ERROR")
        .stderr_has("could not read the index");
    env.swarm_env(&repo, &[("GIT_INDEX_FILE", index)], &["hook", "pre-commit"])
        .err(4, "GUARD_ERROR");
    // A missing one is an empty index (a fresh repository): nothing staged.
    let missing = env.root().join("no-such-index");
    env.swarm_env(
        &repo,
        &[("GIT_INDEX_FILE", missing.to_str().unwrap())],
        &["check", "--staged"],
    )
    .ok();
}

#[test]
fn reserved_changeset_patterns_come_from_swarm_reserved_changesets() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    env.git(
        &repo,
        &[
            "config",
            "swarm.reservedChangesets",
            "pr-<N>-review.md,bot-*.md",
        ],
    );
    refused(&env, &repo, &["bot-x.md"], &["reserved pattern `bot-*.md`"]);
    refused(
        &env,
        &repo,
        &["PR-12-Review.md"],
        &["reserved pattern `pr-<N>-review.md`"],
    );
    // The proposal avoids every pattern.
    env.write(&repo.join(".changeset/bot-x.md"), "x\n");
    env.git(&repo, &["add", ".changeset/bot-x.md"]);
    let out = env
        .swarm(&repo, &["check", "--staged", "--json"])
        .code(1)
        .json();
    let proposed = out["error"]["detail"]["violations"][0]["proposed"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!proposed.starts_with("bot-"), "{proposed}");
    env.git(&repo, &["rm", "--quiet", "--cached", ".changeset/bot-x.md"]);
    std::fs::remove_file(repo.join(".changeset/bot-x.md")).unwrap();
    accepted(&env, &repo, &["my-change.md"]);

    // A custom value replaces the default; several values add up.
    env.git(&repo, &["config", "swarm.reservedChangesets", "bot-*.md"]);
    env.git(
        &repo,
        &[
            "config",
            "--add",
            "swarm.reservedChangesets",
            "renovate-<N>.md",
        ],
    );
    refused(
        &env,
        &repo,
        &["renovate-3.md"],
        &["reserved pattern `renovate-<N>.md`"],
    );
    accepted(&env, &repo, &["pr-12-review.md"]);
}

#[test]
fn ai_attribution_is_blocked_stripped_or_allowed() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    let claude = "Co-authored-by: Claude <noreply@anthropic.com>";
    let footer = "🤖 Generated with [Claude Code](https://claude.com/claude-code)";
    let human = "Co-authored-by: Jane Doe <jane@example.com>";
    let mut n = 0;
    let mut stage = |env: &TestEnv| {
        n += 1;
        env.write(&repo.join(format!("f{n}.txt")), "x\n");
        env.git(&repo, &["add", "."]);
    };
    let message = |env: &TestEnv| env.git(&repo, &["log", "-1", "--format=%B"]);

    // block (the default)
    stage(&env);
    let before = head(&env, &repo);
    commit(&env, &repo, &["-m", &format!("Add one\n\n{claude}")])
        .code(1)
        .stderr_has("[attribution] commit message line 3: Co-authored-by: Claude");
    commit(
        &env,
        &repo,
        &["-m", &format!("Add one\n\nBody.\n\n{footer}")],
    )
    .code(1)
    .stderr_has("Generated with [Claude Code]");
    assert_eq!(head(&env, &repo), before);
    commit(
        &env,
        &repo,
        &["--quiet", "-m", &format!("Add one\n\n{human}")],
    )
    .ok();
    assert_eq!(message(&env), format!("Add one\n\n{human}"));

    // strip: the commit lands without the AI lines, the human co-author stays.
    env.git(&repo, &["config", "swarm.attribution", "strip"]);
    stage(&env);
    commit(
        &env,
        &repo,
        &[
            "-m",
            &format!("Add two\n\nBody.\n\n{footer}\n\n{human}\n{claude}"),
        ],
    )
    .ok()
    .stderr_has("removed line");
    assert_eq!(message(&env), format!("Add two\n\nBody.\n\n{human}"));
    let stripped = head(&env, &repo);

    // allow: kept as written.
    env.git(&repo, &["config", "swarm.attribution", "allow"]);
    stage(&env);
    commit(
        &env,
        &repo,
        &["--quiet", "-m", &format!("Add three\n\n{claude}")],
    )
    .ok();
    assert_eq!(message(&env), format!("Add three\n\n{claude}"));

    // CI sees the allowed commit once the policy is back to block.
    env.swarm(&repo, &["check", "--range", &format!("{stripped}..HEAD")])
        .ok();
    env.git(&repo, &["config", "swarm.attribution", "block"]);
    env.swarm(&repo, &["check", "--range", &format!("{stripped}..HEAD")])
        .err(1, "GUARD_FAILED")
        .stderr_has("[attribution] message line 3: Co-authored-by: Claude");
    env.swarm(
        &repo,
        &["check", "--range", &format!("{before}..{stripped}")],
    )
    .ok();

    // A policy it cannot understand fails closed.
    env.git(&repo, &["config", "swarm.attribution", "maybe"]);
    stage(&env);
    let before = head(&env, &repo);
    // (git reports any failing hook as exit 1; the hook itself exits 4.)
    commit(&env, &repo, &["-m", "Add four"])
        .code(1)
        .stderr_has("error[GUARD_ERROR]: guard attribution could not read swarm.attribution");
    assert_eq!(head(&env, &repo), before);
    env.write(&repo.join("msg.txt"), "Add four\n");
    env.swarm(&repo, &["hook", "commit-msg", "msg.txt"])
        .err(4, "GUARD_ERROR");
}

#[test]
fn fenced_publish_blocks_a_plain_push_to_a_protected_ref() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    env.git(a, &["config", "swarm.protect", "refs/heads/main"]);
    env.write(&a.join("x.txt"), "x\n");
    env.git(a, &["add", "x.txt"]);
    commit(&env, a, &["--quiet", "-m", "x"]).ok();
    let remote_main = env.git(&remote, &["rev-parse", "main"]);

    let run = env.git_run(a, &["push", "origin", "main"]);
    assert_ne!(run.code, 0, "{run:?}");
    run.expect_stderr("[fenced-publish] refs/heads/main");
    run.expect_stderr("git swarm lead push");
    assert_eq!(env.git(&remote, &["rev-parse", "main"]), remote_main);

    // Other refs are not protected.
    env.git(a, &["push", "--quiet", "origin", "main:refs/heads/feat/y"]);
    assert_eq!(env.git(&remote, &["rev-parse", "feat/y"]), head(&env, a));

    // git-swarm's own fenced push sets GIT_SWARM_FENCED_PUSH=1.
    let out = env
        .command("git", a)
        .args(["push", "--quiet", "origin", "main"])
        .env("GIT_SWARM_FENCED_PUSH", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.git(&remote, &["rev-parse", "main"]), head(&env, a));

    // pre-push also refuses to publish a commit that adds the plan file.
    env.git(a, &["checkout", "--quiet", "-b", "feat/z"]);
    env.write(&a.join("PLAN.md"), "plan\n");
    env.git(a, &["add", "-f", "PLAN.md"]);
    commit(&env, a, &["--quiet", "--no-verify", "-m", "plan"]).ok();
    let run = env.git_run(a, &["push", "origin", "feat/z"]);
    assert_ne!(run.code, 0);
    run.expect_stderr("[plan-untracked] PLAN.md");
    assert!(env.refs(&remote, "refs/heads/feat/z").is_empty());
}

#[test]
fn hooks_read_the_index_git_names_inside_a_lane_worktree() {
    let (env, repo) = Swarm::repo("alice").init(0).repo_parts();
    env.swarm(&repo, &["plan", "new", "p"]).ok();
    env.swarm(&repo, &["lane", "new", "w", "--plan", "p"]).ok();
    let wt = repo.join("_swarm-worktrees/w");
    assert!(wt.join("PLAN.md").exists());
    env.write(&wt.join("other.txt"), "v1\n");
    env.git(&wt, &["add", "other.txt"]);
    commit(&env, &wt, &["--quiet", "-m", "other v1"]).ok();

    // PLAN.md staged in the worktree's index: a plain commit is refused.
    env.git(&wt, &["add", "-f", "PLAN.md"]);
    let before = head(&env, &wt);
    commit(&env, &wt, &["-m", "everything"])
        .code(1)
        .stderr_has("[plan-untracked] PLAN.md");
    // `git commit -- other.txt` commits from a temporary index without PLAN.md: it passes.
    env.write(&wt.join("other.txt"), "v2\n");
    commit(
        &env,
        &wt,
        &["--quiet", "-m", "only other", "--", "other.txt"],
    )
    .ok();
    assert_ne!(head(&env, &wt), before);
    assert_eq!(
        env.git(&wt, &["show", "--name-only", "--format=", "HEAD"]),
        "other.txt"
    );
    assert_eq!(
        env.git(&wt, &["diff", "--cached", "--name-only"]),
        "PLAN.md"
    );
    // `git commit -- PLAN.md`: the temporary index has it: refused.
    let before = head(&env, &wt);
    commit(&env, &wt, &["-m", "only plan", "--", "PLAN.md"])
        .code(1)
        .stderr_has("[plan-untracked] PLAN.md");
    assert_eq!(head(&env, &wt), before);

    // `git commit -a` stages a modified, tracked PLAN.md in a temporary index
    // (the worktree's index still matches HEAD): refused.
    commit(&env, &wt, &["--quiet", "--no-verify", "-m", "sneak"]).ok();
    let before = head(&env, &wt);
    env.write(&wt.join("PLAN.md"), "edited\n");
    commit(&env, &wt, &["-a", "-m", "edit all"])
        .code(1)
        .stderr_has("staged (modified)");
    assert_eq!(head(&env, &wt), before);
    assert_eq!(env.git(&wt, &["diff", "--cached", "--name-only"]), "");
}

/// The interpreter that has the pre-commit framework, found with the
/// caller's own environment (the tests' hermetic HOME hides pyenv shims).
fn pre_commit_python() -> Option<String> {
    for python in ["python3", "python"] {
        let out = std::process::Command::new(python)
            .args(["-c", "import pre_commit, sys; print(sys.executable)"])
            .output();
        if let Ok(out) = out {
            if out.status.success() {
                return Some(String::from_utf8_lossy(&out.stdout).trim().to_string());
            }
        }
    }
    None
}

#[test]
fn the_pre_commit_framework_runs_the_guards_from_pre_commit_hooks_yaml() {
    let Some(python) = pre_commit_python() else {
        let hint = "the pre-commit framework is not importable (python3 -m pip install pre-commit)";
        // CI sets this: there, a missing framework is a failure, not a skip.
        if std::env::var("GIT_SWARM_REQUIRE_PRECOMMIT").is_ok_and(|v| v == "1") {
            panic!("GIT_SWARM_REQUIRE_PRECOMMIT=1 but {hint}");
        }
        eprintln!("skipping: {hint}");
        return;
    };
    let env = TestEnv::new();
    // A hooks repository holding this checkout's .pre-commit-hooks.yaml.
    let hooks_repo = env.root().join("hooks-repo");
    std::fs::create_dir_all(&hooks_repo).unwrap();
    env.git(&hooks_repo, &["init", "--quiet"]);
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.pre-commit-hooks.yaml"
    ))
    .unwrap();
    env.write(&hooks_repo.join(".pre-commit-hooks.yaml"), &manifest);
    env.git(&hooks_repo, &["add", "."]);
    env.git(&hooks_repo, &["commit", "--quiet", "-m", "hooks"]);
    let rev = head(&env, &hooks_repo);

    // A user's repository adopting them, without `git swarm init`.
    let sample = env.repo("sample");
    env.write(
        &sample.join(".pre-commit-config.yaml"),
        &format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: git-swarm-pre-commit\n      - id: git-swarm-commit-msg\n      - id: git-swarm-pre-push\n",
            hooks_repo.display()
        ),
    );
    env.git(&sample, &["add", ".pre-commit-config.yaml"]);
    env.git(&sample, &["commit", "--quiet", "-m", "pre-commit config"]);
    let out = env
        .command(&python, &sample)
        .args([
            "-m",
            "pre_commit",
            "install",
            "--hook-type",
            "pre-commit",
            "--hook-type",
            "commit-msg",
            "--hook-type",
            "pre-push",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pre-commit install failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let hook = env.read(&sample.join(".git/hooks/pre-commit"));
    assert!(hook.contains("pre-commit"), "{hook}");

    let before = head(&env, &sample);
    env.write(&sample.join("PLAN.md"), "# plan\n");
    env.git(&sample, &["add", "PLAN.md"]);
    // Without git-swarm on PATH the framework names the missing executable
    // (the entry is `git-swarm hook …`), not git's "'swarm' is not a git command".
    let out = env
        .command("git", &sample)
        .env("PATH", std::env::var("PATH").unwrap())
        .args(["commit", "-q", "-m", "add the plan"])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // (Only where no git-swarm is installed system-wide.)
    let installed = std::process::Command::new("git-swarm")
        .arg("--version")
        .output()
        .is_ok();
    if !installed {
        assert!(!out.status.success(), "{all}");
        assert!(all.contains("Executable `git-swarm` not found"), "{all}");
        assert!(!all.contains("is not a git command"), "{all}");
        assert_eq!(head(&env, &sample), before);
    }
    let run = commit(&env, &sample, &["-m", "add the plan"]);
    assert_ne!(run.code, 0, "{run:?}");
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("git-swarm guards"), "{all}");
    assert!(all.contains("[plan-untracked] PLAN.md"), "{all}");
    assert_eq!(head(&env, &sample), before);

    // An ordinary commit passes through the framework; AI attribution does not.
    env.git(&sample, &["rm", "--quiet", "--cached", "PLAN.md"]);
    std::fs::remove_file(sample.join("PLAN.md")).unwrap();
    env.write(&sample.join("a.txt"), "a\n");
    env.git(&sample, &["add", "a.txt"]);
    let run = commit(
        &env,
        &sample,
        &[
            "-m",
            "Add a\n\nCo-authored-by: Claude <noreply@anthropic.com>",
        ],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert!(format!("{}{}", run.stdout, run.stderr).contains("[attribution]"));
    assert_eq!(head(&env, &sample), before);
    commit(&env, &sample, &["--quiet", "-m", "Add a"]).ok();
    assert_ne!(head(&env, &sample), before);

    // pre-push: fenced-publish on the one ref the framework passes.
    let warning = "the pre-commit framework does not pass every pushed ref; install the native hook with `git swarm init`";
    let remote = env.root().join("sample-remote.git");
    env.git(
        env.root(),
        &["init", "--quiet", "--bare", "sample-remote.git"],
    );
    env.git(
        &sample,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    // No warning while nothing is protected.
    let run = env.git_run(&sample, &["push", "origin", "main:refs/heads/feat/a"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains(warning), "{}", run.stderr);
    env.git(&sample, &["config", "swarm.protect", "refs/heads/main"]);
    // History from the root commit: the framework passes no commits, only refs.
    env.git(&sample, &["checkout", "--quiet", "--orphan", "fresh"]);
    commit(&env, &sample, &["--quiet", "-m", "fresh start"]).ok();
    let run = env.git_run(&sample, &["push", "origin", "fresh:main"]);
    assert_ne!(run.code, 0, "{run:?}");
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("[fenced-publish] refs/heads/main"), "{all}");
    assert!(all.contains(warning), "{all}");
    assert!(env.refs(&remote, "refs/heads/main").is_empty());
    env.git(&sample, &["checkout", "--quiet", "main"]);
    // New commits for a protected ref: refused, with the warning.
    env.write(&sample.join("b.txt"), "b\n");
    env.git(&sample, &["add", "b.txt"]);
    commit(&env, &sample, &["--quiet", "-m", "Add b"]).ok();
    let run = env.git_run(&sample, &["push", "origin", "main"]);
    assert_ne!(run.code, 0, "{run:?}");
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("[fenced-publish] refs/heads/main"), "{all}");
    assert!(all.contains(warning), "{all}");
    assert!(env.refs(&remote, "refs/heads/main").is_empty());
    // Other refs pass (and are warned about while swarm.protect is set).
    env.git(
        &sample,
        &["push", "--quiet", "origin", "main:refs/heads/feat/b"],
    );

    // What the framework never passes on: commits the remote already has
    // (feat/b's, pushed to main). The native hook, added to the framework's
    // own hook script by `git swarm init`, sees every ref.
    env.swarm(&sample, &["init"]).ok();
    let run = env.git_run(
        &sample,
        &["push", "origin", "main:refs/heads/feat/c", "main:main"],
    );
    assert_ne!(run.code, 0, "{run:?}");
    run.expect_stderr("[fenced-publish] refs/heads/main");
    assert!(env.refs(&remote, "refs/heads/main").is_empty());
    assert!(env.refs(&remote, "refs/heads/feat/c").is_empty());
    // With both installed, an unprotected push still passes both.
    env.git(
        &sample,
        &["push", "--quiet", "origin", "main:refs/heads/feat/c"],
    );
}

/// A directory holding only `git`, for a PATH without git-swarm.
fn path_without_git_swarm(env: &TestEnv) -> String {
    let dir = env.root().join("git-only");
    std::fs::create_dir_all(&dir).unwrap();
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let git = String::from_utf8(git.stdout).unwrap().trim().to_string();
    std::os::unix::fs::symlink(&git, dir.join("git")).unwrap();
    dir.display().to_string()
}

#[test]
fn a_hook_without_git_swarm_on_path_says_what_is_missing_and_fails_closed() {
    let (env, repo) = Swarm::repo("a").init(0).repo_parts();
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.write(&repo.join("x.txt"), "x\n");
    env.git(&repo, &["add", "x.txt"]);
    let path = path_without_git_swarm(&env);
    let out = env
        .command("git", &repo)
        .env("PATH", &path)
        .args(["commit", "-q", "-m", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("error[GUARD_ERROR]: the git-swarm pre-commit hook cannot run: the git-swarm binary is not on PATH"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: install it (cargo install"),
        "{stderr}"
    );
    assert!(!stderr.contains("is not a git command"), "{stderr}");
    assert_eq!(
        env.git(&repo, &["rev-parse", "HEAD"]),
        head,
        "no commit made"
    );
    // The hook itself exits 4, like a guard that cannot run; so does the shim in hooks/.
    for hook in [
        repo.join(".git/hooks/pre-commit"),
        repo.join(".git/hooks/commit-msg"),
        std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/hooks/pre-push")),
    ] {
        let out = env
            .command("/bin/sh", &repo)
            .env("PATH", &path)
            .arg(&hook)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{}", hook.display());
        assert!(out.stdout.is_empty());
        assert!(String::from_utf8_lossy(&out.stderr).contains("git-swarm binary is not on PATH"));
    }
    // With the binary on PATH, the same commit goes through.
    env.git(&repo, &["commit", "-q", "-m", "x"]);
}

fn commit_changeset(
    env: &TestEnv,
    dir: &Path,
    name: &str,
    text: &str,
) -> crate::support::harness::Run {
    env.write(&dir.join(".changeset").join(name), text);
    env.git(dir, &["add", "."]);
    env.git_run(
        dir,
        &["commit", "--quiet", "-m", &format!("changeset {name}")],
    )
}

#[test]
fn a_lanes_own_changeset_merged_into_main_is_no_duplicate_for_the_hook_or_check_range() {
    let (env, _, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .plan(0, "docs")
        .run(0, &["lane", "new", "login", "--plan", "auth"])
        .parts();
    let a = &clones[0];
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
