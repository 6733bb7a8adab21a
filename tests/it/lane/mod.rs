//! Lanes in real worktrees: `lane new|list|rm|prune`, `report`, lane
//! records travelling through `sync`, the lane owner inside its worktree,
//! and a `lane new` interrupted or killed halfway finished by a rerun.

pub(crate) mod closed_lane;
pub(crate) mod executor;
pub(crate) mod forecast;
pub(crate) mod forged_lane;
pub(crate) mod lane_moved;
pub(crate) mod snapshot;

use std::path::{Path, PathBuf};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::TestEnv;
use crate::support::process::{assert_aborted, Paused, WRITING};

fn lane_yaml(env: &TestEnv, dir: &Path, feature: &str) -> serde_yaml_ng::Value {
    let text = env.git(
        dir,
        &["show", &format!("refs/swarm/lanes/{feature}:lane.yaml")],
    );
    serde_yaml_ng::from_str(&text).unwrap()
}

fn field(v: &serde_yaml_ng::Value, key: &str) -> String {
    v.get(key)
        .and_then(|x| x.as_str())
        .unwrap_or_else(|| panic!("lane.yaml lacks {key}: {v:?}"))
        .to_string()
}

/// A repository with `git swarm init` run and the given plans.
fn swarm_repo(plans: &[&str]) -> (TestEnv, PathBuf) {
    let mut s = Swarm::repo("alice").init(0);
    for p in plans {
        s = s.plan(0, p);
    }
    s.repo_parts()
}

fn commit_file(env: &TestEnv, dir: &Path, name: &str, text: &str) -> String {
    env.write(&dir.join(name), text);
    env.git(dir, &["add", name]);
    env.git(dir, &["commit", "--quiet", "-m", &format!("add {name}")]);
    env.git(dir, &["rev-parse", "HEAD"])
}

#[test]
fn lane_new_makes_worktree_branch_record_and_an_untracked_plan_file() {
    let (env, repo) = swarm_repo(&["auth"]);
    let main_head = env.git(&repo, &["rev-parse", "main"]);
    let out = env
        .swarm(&repo, &["lane", "new", "login", "--plan", "auth", "--json"])
        .ok()
        .json();
    let wt = std::fs::canonicalize(&repo)
        .unwrap()
        .join("_swarm-worktrees/login");
    assert_eq!(out["path"], wt.display().to_string());
    assert_eq!(out["branch"], "feat/login");
    assert!(
        wt.join(".git").is_file(),
        "not a worktree: {}",
        wt.display()
    );
    assert_eq!(
        env.git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "feat/login"
    );
    assert_eq!(env.git(&repo, &["rev-parse", "feat/login"]), main_head);

    // The record, readable by plain git.
    let y = lane_yaml(&env, &repo, "login");
    assert_eq!(field(&y, "schema"), "swarm-lane/v1");
    assert_eq!(field(&y, "feature"), "login");
    assert_eq!(field(&y, "plan"), "auth");
    assert_eq!(field(&y, "owner"), "alice");
    assert_eq!(field(&y, "branch"), "feat/login");
    assert_eq!(field(&y, "path"), wt.display().to_string());
    assert_eq!(field(&y, "base"), "main");
    assert_eq!(field(&y, "base_commit"), main_head);
    assert_eq!(field(&y, "state"), "active");

    // PLAN.md is the plan's text, untracked and invisible to git status.
    let plan_text = env.git(&repo, &["show", "refs/swarm/plans/auth:PLAN.md"]);
    assert_eq!(env.read(&wt.join("PLAN.md")).trim_end(), plan_text);
    assert_eq!(env.git(&wt, &["ls-files", "PLAN.md"]), "");
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), "");

    // The plan's journal records the start, naming the lane.
    let msg = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
    );
    assert!(msg.contains("Swarm-Event: lane-started"), "{msg}");
    assert!(msg.contains("Swarm-Lane: login"), "{msg}");

    // Identity inside the lane falls back to its owner; status shows the lane.
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has("lane login on feat/login owner alice (active)");

    // A lane started from inside another worktree still goes under the main worktree.
    env.swarm(&repo, &["plan", "new", "billing"]).ok();
    let out = env
        .swarm(
            &wt,
            &["lane", "new", "invoices", "--plan", "billing", "--json"],
        )
        .ok()
        .json();
    let expected = std::fs::canonicalize(&repo)
        .unwrap()
        .join("_swarm-worktrees/invoices");
    assert_eq!(out["path"], expected.display().to_string());
    assert!(expected.is_dir());
}

#[test]
fn a_second_lane_on_the_same_plan_is_refused_and_leaves_nothing_behind() {
    let (env, repo) = swarm_repo(&["auth"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let refs_before = env.all_refs(&repo);
    let worktrees_before = env.git(&repo, &["worktree", "list"]);

    let run = env
        .swarm(&repo, &["lane", "new", "signup", "--plan", "auth"])
        .err(1, "PLAN_HAS_EXECUTOR")
        .stderr_has("lane 'login'");
    run.expect_stderr("hint:");
    assert_eq!(
        env.all_refs(&repo),
        refs_before,
        "a ref was created or moved"
    );
    assert_eq!(env.git(&repo, &["worktree", "list"]), worktrees_before);
    assert!(!repo.join("_swarm-worktrees/signup").exists());
    assert!(
        env.git_run(&repo, &["rev-parse", "--verify", "feat/signup"])
            .code
            != 0
    );

    // The same feature twice is another error, also with nothing created.
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .err(2, "LANE_EXISTS");
    assert_eq!(env.all_refs(&repo), refs_before);

    // A removed lane no longer counts as the plan's executor.
    env.swarm(&repo, &["lane", "rm", "login"]).ok();
    assert_eq!(field(&lane_yaml(&env, &repo, "login"), "state"), "removed");
    env.swarm(&repo, &["lane", "new", "signup", "--plan", "auth"])
        .ok();
    // And a removed feature name can start again, continuing its record's history.
    env.swarm(&repo, &["plan", "new", "other"]).ok();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "other"])
        .ok();
    let log = env.git(&repo, &["log", "--format=%s", "refs/swarm/lanes/login"]);
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(log.lines().nth(1).unwrap().contains("removed"), "{log}");
}

#[test]
fn lane_new_with_a_base_that_does_not_exist_creates_nothing() {
    let (env, repo) = swarm_repo(&["auth"]);
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["lane", "new", "login", "--base", "nope"])
        .err(2, "NOT_FOUND")
        .stderr_has("'nope'");
    assert_eq!(env.all_refs(&repo), before);
    assert!(!repo.join("_swarm-worktrees/login").exists());
    // swarm.base is honoured.
    env.git(&repo, &["branch", "develop"]);
    env.git(&repo, &["config", "swarm.base", "develop"]);
    env.swarm(&repo, &["lane", "new", "login"]).ok();
    assert_eq!(field(&lane_yaml(&env, &repo, "login"), "base"), "develop");
}

#[test]
fn lane_rm_refuses_dirty_or_unmerged_work_unless_forced() {
    let (env, repo) = swarm_repo(&["auth", "billing"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");

    // Uncommitted work: refused, nothing touched.
    env.write(&wt.join("wip.txt"), "half done\n");
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["lane", "rm", "login"])
        .err(1, "LANE_DIRTY")
        .stderr_has("wip.txt");
    assert!(wt.join("wip.txt").exists());
    assert_eq!(env.all_refs(&repo), before);

    // Committed but unmerged: refused, branch kept.
    let head = commit_file(&env, &wt, "wip.txt", "half done\n");
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["lane", "rm", "login"])
        .err(1, "LANE_UNMERGED")
        .stderr_has("feat/login");
    assert!(wt.is_dir());
    assert_eq!(env.all_refs(&repo), before);

    // Unsaved plan edits count as uncommitted work too.
    let plan = wt.join("PLAN.md");
    env.write(&plan, &format!("{}- [ ] new step\n", env.read(&plan)));
    env.swarm(&repo, &["lane", "rm", "login", "--keep-branch"])
        .err(1, "LANE_DIRTY")
        .stderr_has("PLAN.md");

    // --force removes worktree and branch; the record stays, marked removed.
    let out = env
        .swarm(&repo, &["lane", "rm", "login", "--force", "--json"])
        .ok()
        .json();
    assert_eq!(out["branch_deleted"], true);
    assert_eq!(out["branch_head"], head.as_str());
    assert!(!wt.exists());
    assert!(
        env.git_run(&repo, &["rev-parse", "--verify", "feat/login"])
            .code
            != 0
    );
    assert!(!env.git(&repo, &["worktree", "list"]).contains("login"));
    let y = lane_yaml(&env, &repo, "login");
    assert_eq!(field(&y, "state"), "removed");
    let last = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/lanes/login"],
    );
    assert!(last.contains("Swarm-Event: lane-removed"), "{last}");
    env.swarm(&repo, &["lane", "rm", "login"])
        .err(2, "NOT_FOUND");

    // --keep-branch removes an unmerged lane's worktree but keeps its branch.
    env.swarm(&repo, &["lane", "new", "invoices", "--plan", "billing"])
        .ok();
    let wt2 = repo.join("_swarm-worktrees/invoices");
    let head2 = commit_file(&env, &wt2, "inv.txt", "x\n");
    env.swarm(&repo, &["lane", "rm", "invoices", "--keep-branch"])
        .ok()
        .stdout_has("branch feat/invoices kept");
    assert!(!wt2.exists());
    assert_eq!(env.git(&repo, &["rev-parse", "feat/invoices"]), head2);
}

#[test]
fn prune_removes_merged_and_verified_lanes_and_keeps_the_others() {
    let plans = ["p1", "p2", "p3", "p4", "p5", "p6"];
    let (env, repo) = swarm_repo(&plans);
    let lanes = ["merged", "squashed", "unmerged", "fresh", "ready", "dirty"];
    for (lane, plan) in lanes.iter().zip(plans) {
        env.swarm(&repo, &["lane", "new", lane, "--plan", plan])
            .ok();
    }
    let wt = |l: &str| repo.join("_swarm-worktrees").join(l);
    for l in ["merged", "squashed", "unmerged", "ready", "dirty"] {
        commit_file(&env, &wt(l), &format!("{l}.txt"), "work\n");
    }
    // merged: fast-forwarded into main. dirty: merged too, but has local changes.
    env.git(&repo, &["merge", "--quiet", "--ff-only", "feat/merged"]);
    env.git(&repo, &["merge", "--quiet", "--no-edit", "feat/dirty"]);
    env.write(&wt("dirty").join("notes.txt"), "uncommitted\n");
    // squashed: squash-merged (not an ancestor), with a recorded merged verdict.
    env.git(&repo, &["merge", "--quiet", "--squash", "feat/squashed"]);
    env.git(&repo, &["commit", "--quiet", "-m", "squash"]);
    let squashed_head = env.git(&repo, &["rev-parse", "feat/squashed"]);
    env.git(
        &repo,
        &[
            "notes",
            "--ref=swarm",
            "add",
            "-m",
            r#"{"kind":"verdict","state":"merged","pr":7}"#,
            &squashed_head,
        ],
    );
    // ready: a verdict that is not "merged" does not count.
    let ready_head = env.git(&repo, &["rev-parse", "feat/ready"]);
    env.git(
        &repo,
        &[
            "notes",
            "--ref=swarm",
            "add",
            "-m",
            r#"{"kind":"verdict","state":"ready"}"#,
            &ready_head,
        ],
    );

    let before = env.all_refs(&repo);
    let dry = env
        .swarm(&repo, &["lane", "prune", "--dry-run", "--json"])
        .ok()
        .json();
    let names = |v: &serde_json::Value| {
        let mut n: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["feature"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&dry["removed"]), vec!["merged", "squashed"]);
    assert_eq!(env.all_refs(&repo), before, "--dry-run changed refs");
    assert!(wt("merged").exists());

    let out = env.swarm(&repo, &["lane", "prune", "--json"]).ok().json();
    assert_eq!(names(&out["removed"]), vec!["merged", "squashed"]);
    assert_eq!(
        names(&out["kept"]),
        vec!["dirty", "fresh", "ready", "unmerged"]
    );
    for gone in ["merged", "squashed"] {
        assert!(!wt(gone).exists(), "{gone} worktree still there");
        assert!(
            env.git_run(&repo, &["rev-parse", "--verify", &format!("feat/{gone}")])
                .code
                != 0
        );
        assert_eq!(field(&lane_yaml(&env, &repo, gone), "state"), "removed");
    }
    for kept in ["unmerged", "fresh", "ready", "dirty"] {
        assert!(wt(kept).is_dir(), "{kept} worktree removed");
        env.git(&repo, &["rev-parse", "--verify", &format!("feat/{kept}")]);
        assert_eq!(field(&lane_yaml(&env, &repo, kept), "state"), "active");
    }
    assert!(wt("dirty").join("notes.txt").exists());
}

#[test]
fn lane_list_shows_head_ahead_behind_dirty_paths_and_last_report() {
    let (env, repo) = swarm_repo(&["auth"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");
    let head = commit_file(&env, &wt, "a.txt", "a\n");
    commit_file(&env, &repo, "main.txt", "m\n");
    env.write(&wt.join("b.txt"), "b\n");
    env.swarm(&wt, &["report", "pr-open", "https://github.com/o/r/pull/7"])
        .ok();
    let out = env.swarm(&repo, &["lane", "list", "--json"]).ok().json();
    let l = &out["lanes"][0];
    assert_eq!(l["feature"], "login");
    assert_eq!(l["plan"], "auth");
    assert_eq!(l["owner"], "alice");
    assert_eq!(l["branch"], "feat/login");
    assert_eq!(l["head"], head.as_str());
    assert_eq!(l["ahead"], 1);
    assert_eq!(l["behind"], 1);
    assert_eq!(l["dirty"], serde_json::json!(["b.txt"]));
    assert_eq!(
        l["last_report"]["text"],
        "PR open https://github.com/o/r/pull/7"
    );
    let text = env.swarm(&repo, &["lane", "list"]).ok().stdout;
    assert!(
        text.contains("login  plan auth  owner alice  feat/login @ "),
        "{text}"
    );
    assert!(text.contains("+1 -1 vs main"), "{text}");
    assert!(text.contains("dirty   b.txt"), "{text}");
    assert!(
        text.contains("report  PR open https://github.com/o/r/pull/7"),
        "{text}"
    );
}

#[test]
fn reports_are_journalled_in_the_plan_with_the_fixed_vocabulary() {
    let (env, repo) = swarm_repo(&["auth"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");
    let tree_before = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^{tree}"]);

    env.swarm(
        &wt,
        &[
            "report",
            "pr-open",
            "https://github.com/o/r/pull/7",
            "--capacity",
            "ok 64% @work1",
        ],
    )
    .ok();
    let msg = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/plans/auth"],
    );
    assert!(
        msg.starts_with("PR open https://github.com/o/r/pull/7\n\ncapacity=ok 64% @work1\n"),
        "{msg}"
    );
    assert!(msg.contains("Swarm-Event: lane-report"), "{msg}");
    assert!(msg.contains("Swarm-Lane: login"), "{msg}");
    assert!(msg.contains("Swarm-Actor: alice"), "{msg}");
    // A journal entry only: the plan's content is unchanged.
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth^{tree}"]),
        tree_before
    );

    // The rest of the vocabulary, from outside the lane with --lane.
    env.swarm(&repo, &["report", "plan-ready", "--lane", "login"])
        .ok();
    env.swarm(
        &repo,
        &[
            "report", "blocked", "creds", "needs", "an", "API", "key", "--lane", "login",
        ],
    )
    .ok();
    let packet = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(&wt, &["report", "handoff", &packet]).ok();
    env.swarm(
        &wt,
        &["report", "done", "--capacity", "capacity=low 20% @work1"],
    )
    .ok();
    let subjects = env.git(
        &repo,
        &[
            "log",
            "--format=%s",
            "--grep=Swarm-Event: lane-report",
            "-5",
            "refs/swarm/plans/auth",
        ],
    );
    let subjects: Vec<&str> = subjects.lines().collect();
    let expected_handoff = format!("handoff {packet}");
    assert_eq!(
        subjects,
        vec![
            "done",
            expected_handoff.as_str(),
            "blocked creds needs an API key",
            "plan ready",
            "PR open https://github.com/o/r/pull/7"
        ]
    );
    let y = lane_yaml(&env, &repo, "login");
    let last = y.get("last_report").unwrap();
    assert_eq!(field(last, "text"), "done");
    assert_eq!(field(last, "capacity"), "low 20% @work1");
    let log = env.swarm(&repo, &["plan", "log", "auth"]).ok().stdout;
    assert!(log.contains("lane-report"), "{log}");

    // Bad input changes nothing.
    let before = env.all_refs(&repo);
    env.swarm(&wt, &["report", "done", "--capacity", "great"])
        .err(2, "USAGE");
    env.swarm(&repo, &["report", "done"]).err(2, "USAGE");
    env.swarm(&repo, &["report", "done", "--lane", "nope"])
        .err(2, "NOT_FOUND");
    env.swarm(&wt, &["report", "handoff", "20260101T000000Z-nobody"])
        .err(2, "NOT_FOUND");
    env.swarm(&wt, &["report", "pr-open", "not-a-url"])
        .err(2, "USAGE")
        .stderr_has("is not an http(s) URL");
    assert_eq!(env.all_refs(&repo), before);
}

#[test]
fn lane_records_sync_and_the_executor_rule_holds_across_clones() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).plan(0, "auth").parts();
    let (a, b) = (&clones[0], &clones[1]);
    let out = env
        .swarm(a, &["lane", "new", "login", "--json"])
        .ok()
        .json();
    // In a clone the default base is the remote's default branch.
    assert_eq!(out["base"], "origin/main");
    env.swarm(a, &["sync"]).ok();
    let lane_ref = env.refs(a, "refs/swarm/lanes")["refs/swarm/lanes/login"].clone();
    assert_eq!(
        env.refs(&remote, "refs/swarm/lanes")["refs/swarm/lanes/login"],
        lane_ref
    );

    env.swarm(b, &["sync"]).ok();
    assert_eq!(
        env.refs(b, "refs/swarm/lanes")["refs/swarm/lanes/login"],
        lane_ref
    );
    let list = env.swarm(b, &["lane", "list", "--json"]).ok().json();
    assert_eq!(list["lanes"][0]["feature"], "login");
    assert_eq!(list["lanes"][0]["worktree"], "elsewhere");
    let before = env.all_refs(b);
    env.swarm(b, &["lane", "new", "signup", "--plan", "auth"])
        .err(1, "PLAN_HAS_EXECUTOR");
    // bob cannot remove alice's lane by accident, and prune leaves it alone.
    env.swarm(b, &["lane", "rm", "login"])
        .err(1, "LANE_ELSEWHERE");
    env.swarm(b, &["lane", "prune"])
        .ok()
        .stdout_has("kept         login");
    assert_eq!(env.all_refs(b), before);

    // A report in alice's lane reaches bob through the plan's journal.
    let wt = a.join("_swarm-worktrees/login");
    env.swarm(&wt, &["report", "done"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    let subject = env.git(b, &["log", "-1", "--format=%s", "refs/swarm/plans/auth"]);
    assert_eq!(subject, "done");
}

#[test]
fn two_lanes_racing_for_one_plan_one_starts_and_the_other_leaves_nothing() {
    let (env, repo) = swarm_repo(&["auth"]);
    // Both find the plan without an executor, make their worktree and write
    // their lane record's commit, and wait there (WRITING) before either has
    // journalled the plan: only the plan's compare-and-swap can stop one.
    let left = Paused::at(
        &env,
        &repo,
        WRITING,
        &[],
        &["lane", "new", "left", "--plan", "auth"],
    );
    let right = Paused::at(
        &env,
        &repo,
        WRITING,
        &[],
        &["lane", "new", "right", "--plan", "auth"],
    );
    left.release().ok();
    let (winner, loser) = ("left", "right");
    // The loser passed the up-front check, so it lost the CAS on the plan
    // and rolled back what it had made.
    right
        .release()
        .err(3, "CAS_FAILED")
        .stderr_has("nothing was kept");
    assert!(repo.join("_swarm-worktrees").join(winner).is_dir());
    assert!(!repo.join("_swarm-worktrees").join(loser).exists());
    assert!(
        env.git_run(&repo, &["rev-parse", "--verify", &format!("feat/{loser}")])
            .code
            != 0
    );
    // No active record for the loser (a record it wrote was rolled back).
    let lanes = env.swarm(&repo, &["lane", "list", "--json"]).ok().json();
    let active: Vec<&str> = lanes["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["feature"].as_str().unwrap())
        .collect();
    assert_eq!(active, vec![winner]);
}

#[test]
fn without_a_remote_or_main_the_base_is_the_branch_checked_out() {
    let env = TestEnv::new();
    let repo = env.root().join("legacy");
    std::fs::create_dir_all(&repo).unwrap();
    env.git(&repo, &["init", "--quiet", "--initial-branch=master"]);
    env.git(
        &repo,
        &["commit", "--quiet", "--allow-empty", "-m", "initial"],
    );
    env.swarm(&repo, &["--as", "a", "plan", "new", "p"]).ok();
    let out = env
        .swarm(
            &repo,
            &["--as", "a", "lane", "new", "f", "--plan", "p", "--json"],
        )
        .ok()
        .json();
    assert_eq!(out["base"], "master", "{out}");
    assert_eq!(
        env.git(&repo, &["rev-parse", "feat/f"]),
        env.git(&repo, &["rev-parse", "master"])
    );
}

fn lane_ref_of(env: &TestEnv, dir: &Path, feature: &str) -> String {
    env.git(dir, &["rev-parse", &format!("refs/swarm/lanes/{feature}")])
}

fn branch_exists(env: &TestEnv, dir: &Path, branch: &str) -> bool {
    env.git_run(dir, &["rev-parse", "--verify", "--quiet", branch])
        .code
        == 0
}

#[test]
fn lane_rm_records_the_removal_first_and_a_rerun_finishes_it() {
    let (env, repo) = swarm_repo(&["auth", "billing", "docs", "ops"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");

    // Stopped right after its record is written: the lane is recorded as
    // removed while its worktree and branch are still all there.
    let run = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane-rm:recorded")],
        &["lane", "rm", "login"],
    );
    assert_aborted(&run, "lane-rm:recorded");
    assert_eq!(field(&lane_yaml(&env, &repo, "login"), "state"), "removed");
    let record = lane_ref_of(&env, &repo, "login");
    assert!(wt.join("PLAN.md").is_file(), "the worktree is still there");
    assert!(branch_exists(&env, &repo, "feat/login"));
    // The same command again completes it, without a second record.
    env.swarm(&repo, &["lane", "rm", "login"])
        .ok()
        .stdout_has("completed the removal of lane login");
    assert!(!wt.exists());
    assert!(!branch_exists(&env, &repo, "feat/login"));
    assert!(!env.git(&repo, &["worktree", "list"]).contains("login"));
    assert_eq!(lane_ref_of(&env, &repo, "login"), record);
    env.swarm(&repo, &["lane", "rm", "login"])
        .err(2, "NOT_FOUND");

    // A report rewrites the lane record while rm is between its checks and
    // its write: rm loses the compare-and-swap and nothing is deleted.
    env.swarm(&repo, &["lane", "new", "invoices", "--plan", "billing"])
        .ok();
    let wt2 = repo.join("_swarm-worktrees/invoices");
    let paused = Paused::at(
        &env,
        &repo,
        "lane-rm:checked",
        &[],
        &["lane", "rm", "invoices"],
    );
    env.swarm(&repo, &["report", "plan-ready", "--lane", "invoices"])
        .ok();
    paused.release().err(3, "CAS_FAILED");
    assert!(wt2.join("PLAN.md").is_file());
    assert!(branch_exists(&env, &repo, "feat/invoices"));
    let y = lane_yaml(&env, &repo, "invoices");
    assert_eq!(field(&y, "state"), "active");
    assert_eq!(field(y.get("last_report").unwrap(), "text"), "plan ready");
    env.swarm(&repo, &["lane", "rm", "invoices"]).ok();
    assert!(!wt2.exists());

    // Work that appears after the checks is looked for again right before
    // the worktree goes: kept, and the re-run says why until it is forced.
    env.swarm(&repo, &["lane", "new", "guide", "--plan", "docs"])
        .ok();
    let wt3 = repo.join("_swarm-worktrees/guide");
    let paused = Paused::at(
        &env,
        &repo,
        "lane-rm:recorded",
        &[],
        &["lane", "rm", "guide"],
    );
    env.write(&wt3.join("late.txt"), "written during the removal\n");
    paused.release().err(1, "LANE_DIRTY").stderr_has("late.txt");
    assert!(wt3.join("late.txt").is_file());
    assert!(branch_exists(&env, &repo, "feat/guide"));
    assert_eq!(field(&lane_yaml(&env, &repo, "guide"), "state"), "removed");
    env.swarm(&repo, &["lane", "rm", "guide"])
        .err(1, "LANE_DIRTY")
        .stderr_has("late.txt");
    env.swarm(&repo, &["lane", "rm", "guide", "--force"])
        .ok()
        .stdout_has("completed the removal of lane guide");
    assert!(!wt3.exists());
    assert!(!branch_exists(&env, &repo, "feat/guide"));

    // --keep-branch is part of the record: the run that completes an
    // interrupted removal keeps the (unmerged) branch too; so does prune.
    env.swarm(&repo, &["lane", "new", "deploy", "--plan", "ops"])
        .ok();
    let wt4 = repo.join("_swarm-worktrees/deploy");
    let head = commit_file(&env, &wt4, "deploy.sh", "echo\n");
    let run = env.swarm_env(
        &repo,
        &[("GIT_SWARM_FAILPOINT", "lane-rm:recorded")],
        &["lane", "rm", "deploy", "--keep-branch"],
    );
    assert_aborted(&run, "lane-rm:recorded");
    let y = lane_yaml(&env, &repo, "deploy");
    assert_eq!(y.get("branch_kept").and_then(|b| b.as_bool()), Some(true));
    assert!(wt4.is_dir());
    env.swarm(&repo, &["lane", "prune"])
        .ok()
        .stdout_has("removed      deploy: removal completed");
    assert!(!wt4.exists());
    assert_eq!(env.git(&repo, &["rev-parse", "feat/deploy"]), head);
    env.swarm(&repo, &["lane", "rm", "deploy"])
        .err(2, "NOT_FOUND");
}

#[test]
fn report_errors_other_than_a_lost_race_on_the_lane_record_are_errors() {
    let (env, repo) = swarm_repo(&["auth"]);
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let plan_before = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);

    // Something git-swarm cannot clear blocks the lane ref's lock: the lane
    // record cannot be written. That is an error with its own exit code,
    // which says the report itself is journalled.
    let lock = repo.join(".git/refs/swarm/lanes/login.lock");
    std::fs::create_dir_all(&lock).unwrap();
    let old = std::process::Command::new("touch")
        .args(["-d", "2000-01-01T00:00:00Z"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(old.success());
    env.swarm(&repo, &["report", "done", "--lane", "login"])
        .err(4, "GIT_FAILED")
        .stderr_has("the same report run again completes it without a second entry");
    let plan_after = env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]);
    assert_ne!(plan_after, plan_before, "the report is journalled");
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", &plan_after]),
        "done"
    );
    assert!(lane_yaml(&env, &repo, "login").get("last_report").is_none());
    std::fs::remove_dir(&lock).unwrap();

    // The same report run again takes the journalled entry as its own (it is
    // still the plan's head): no second entry, only the copy is completed.
    env.swarm(&repo, &["report", "done", "--lane", "login"])
        .ok();
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/swarm/plans/auth"]),
        plan_after,
        "no second journal entry"
    );
    let y = lane_yaml(&env, &repo, "login");
    let last = y.get("last_report").expect("the copy is written");
    assert_eq!(field(last, "commit"), plan_after);
    assert_eq!(field(last, "text"), "done");

    // A lost race is not one: a newer report that got to the lane record
    // first stays the last report, and the older one still succeeds.
    let paused = Paused::at(
        &env,
        &repo,
        "report:journalled",
        &[],
        &["report", "plan-ready", "--lane", "login"],
    );
    env.swarm(
        &repo,
        &[
            "report",
            "pr-open",
            "https://github.com/o/r/pull/9",
            "--lane",
            "login",
        ],
    )
    .ok();
    let run = paused.release().ok();
    assert!(!run.stderr.contains("warning"), "{run:?}");
    let y = lane_yaml(&env, &repo, "login");
    assert_eq!(
        field(y.get("last_report").unwrap(), "text"),
        "PR open https://github.com/o/r/pull/9"
    );

    // The lane removed meanwhile: the report stands, with a warning.
    let paused = Paused::at(
        &env,
        &repo,
        "report:journalled",
        &[],
        &["report", "done", "--lane", "login", "--json"],
    );
    env.swarm(&repo, &["lane", "rm", "login", "--force"]).ok();
    let run = paused.release().ok();
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        json["warnings"][0]
            .as_str()
            .unwrap()
            .contains("was removed meanwhile"),
        "{json}"
    );
    assert_eq!(field(&lane_yaml(&env, &repo, "login"), "state"), "removed");
}

#[test]
fn warnings_for_missing_hooks_another_plan_in_a_lane_and_a_bad_pr_url() {
    let (env, repo) = Swarm::repo("alice")
        .plan(0, "api")
        .plan(0, "other")
        .repo_parts();
    // No `git swarm init` yet: lane new says the commits would go unchecked.
    env.swarm(&repo, &["lane", "new", "orders", "--plan", "api"])
        .ok()
        .stderr_has("warning: the guard hooks are not installed in this repository");
    env.swarm(&repo, &["init"]).ok();
    let run = env
        .swarm(&repo, &["lane", "new", "billing", "--plan", "other"])
        .ok();
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    // Checking out another plan inside a lane is allowed, with a warning.
    let wt = repo.join("_swarm-worktrees/orders");
    env.swarm(&wt, &["plan", "checkout", "other", "--force"])
        .ok()
        .stderr_has("warning: this is lane orders's worktree, whose plan is 'api'");
    let before = env.all_refs(&repo);
    env.swarm(&wt, &["report", "pr-open", "https://"])
        .err(2, "USAGE")
        .stderr_has("is not an http(s) URL");
    assert_eq!(before, env.all_refs(&repo));
}

#[test]
fn lane_rm_after_an_interrupted_lane_new_hints_to_run_it_again() {
    let (env, repo) = Swarm::repo("alice").plan(0, "fp").repo_parts();
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
fn lane_new_rerun_finishes_an_interrupted_start() {
    let (env, repo) = Swarm::repo("alice").init(0).plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
fn lane_new_starts_from_the_remotes_base_or_says_it_could_not() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "one")
        .plan(0, "two")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
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

/// The clone's worktree lock (one `git worktree add` at a time) is freed by
/// the kernel when its holder is SIGKILLed: the next `lane new` proceeds at
/// once instead of waiting for a stale lock file to age.
#[test]
fn a_lane_new_killed_while_it_adds_its_worktree_does_not_hold_up_the_next() {
    let (env, repo) = swarm_repo(&["auth", "billing"]);
    Paused::at(
        &env,
        &repo,
        "worktree:add",
        &[],
        &["lane", "new", "login", "--plan", "auth"],
    )
    .kill();
    let out = env
        .swarm(
            &repo,
            &["lane", "new", "invoices", "--plan", "billing", "--json"],
        )
        .ok()
        .json();
    let wt = std::fs::canonicalize(&repo)
        .unwrap()
        .join("_swarm-worktrees/invoices");
    assert_eq!(out["path"], wt.display().to_string());
    assert!(wt.join(".git").is_file());
    assert_eq!(
        env.git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
        "feat/invoices"
    );
}
