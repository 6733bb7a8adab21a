//! `git swarm forecast`: lanes on two machines (real clones of one bare
//! remote) merged in memory against each other and their base.

use std::path::{Path, PathBuf};

use crate::support::harness::TestEnv;

const TEN: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

/// A remote whose main has `f` (ten lines), and two clones m1, m2.
pub(crate) fn two_machines(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let (remote, clones) = env.remote_with_clones(&["m1", "m2"]);
    let (m1, m2) = (clones[0].clone(), clones[1].clone());
    env.write(&m1.join("f"), TEN);
    env.git(&m1, &["add", "f"]);
    env.git(&m1, &["commit", "--quiet", "-m", "add f"]);
    // main is protected by the guards: this stands for a merged PR.
    env.git(
        &m1,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    env.git(&m2, &["pull", "--quiet", "--ff-only"]);
    (remote, m1, m2)
}

/// Start lane `feature` (in plan `feature`) on `machine`, replace line
/// `line` (1-based) of `f` with `text`, commit, push the branch and publish
/// the lane record. Returns the lane's worktree.
pub(super) fn lane_edit(
    env: &TestEnv,
    machine: &Path,
    feature: &str,
    line: usize,
    text: &str,
) -> PathBuf {
    env.swarm(machine, &["plan", "new", feature, "--title", feature])
        .ok();
    env.swarm(machine, &["lane", "new", feature, "--plan", feature])
        .ok();
    let wt = machine.join("_swarm-worktrees").join(feature);
    edit(env, &wt, line, text);
    env.swarm(machine, &["sync"]).ok();
    wt
}

/// Replace line `line` of `f` in `wt`, commit and push the lane branch.
pub(crate) fn edit(env: &TestEnv, wt: &Path, line: usize, text: &str) {
    let old = env.read(&wt.join("f"));
    let mut lines: Vec<&str> = old.lines().collect();
    lines[line - 1] = text;
    env.write(&wt.join("f"), &(lines.join("\n") + "\n"));
    env.git(
        wt,
        &["commit", "--quiet", "-am", &format!("edit line {line}")],
    );
    let branch = env.git(wt, &["rev-parse", "--abbrev-ref", "HEAD"]);
    // --no-verify: a push to main stands for a merged PR (main is guarded).
    env.git(wt, &["push", "--quiet", "--no-verify", "origin", &branch]);
}

#[test]
fn lanes_on_two_machines_editing_the_same_lines_are_forecast_to_conflict() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 2, "two from beta");
    let swarm_before = env.refs(&m1, "refs/swarm/");
    let heads_before = env.refs(&m1, "refs/heads/");

    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["fetched"], true);
    let lanes = out["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 2, "{out}");
    assert_eq!(lanes[0]["feature"], "alpha");
    assert_eq!(lanes[0]["source"], "local");
    assert_eq!(lanes[1]["feature"], "beta");
    assert_eq!(lanes[1]["source"], "remote", "beta lives on m2: {out}");
    let pair = &out["pairs"][0];
    assert_eq!(
        (pair["a"].as_str(), pair["b"].as_str()),
        (Some("alpha"), Some("beta"))
    );
    assert_eq!(pair["verdict"], "conflict");
    assert_eq!(pair["via"], "merged");
    let c = &pair["conflicts"][0];
    assert_eq!(c["path"], "f");
    assert_eq!(c["kinds"], serde_json::json!(["contents"]));
    assert_eq!(c["ours"], serde_json::json!(["two from alpha"]));
    assert_eq!(c["theirs"], serde_json::json!(["two from beta"]));
    assert_eq!(out["conflicts"], 1);
    assert_eq!(out["merged"], 1);

    let text = env
        .swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("CONFLICT alpha × beta")
        .stdout_has("f (contents)")
        .stdout_has("| two from alpha")
        .stdout_has("| two from beta");
    assert!(text.stdout.contains("1 conflict;"), "{}", text.stdout);

    // CI: --exit-code fails with the stable code, the forecast still shown.
    env.swarm(&m1, &["forecast", "--exit-code"])
        .err(1, "FORECAST_CONFLICT")
        .stdout_has("CONFLICT alpha × beta");
    let err = env
        .swarm(&m1, &["forecast", "--exit-code", "--json"])
        .err(1, "FORECAST_CONFLICT")
        .json();
    assert_eq!(err["error"]["detail"]["pairs"][0]["verdict"], "conflict");

    // Read-only for records and branches: only the fetched mirror and
    // remote-tracking branches move (beta's branch is now known here).
    assert_eq!(env.refs(&m1, "refs/swarm/"), swarm_before);
    assert_eq!(env.refs(&m1, "refs/heads/"), heads_before);
    assert!(env
        .refs(&m1, "refs/remotes/origin/feat/")
        .contains_key("refs/remotes/origin/feat/beta"));
    // The other machine sees the same forecast.
    let out = env.swarm(&m2, &["forecast", "--json"]).ok().json();
    assert_eq!(out["pairs"][0]["verdict"], "conflict");
    assert_eq!(out["lanes"][0]["source"], "remote");
}

#[test]
fn edits_to_different_lines_of_one_file_are_clean_but_listed_as_the_same_file() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 9, "nine from beta");
    let out = env
        .swarm(&m1, &["forecast", "--json", "--exit-code"])
        .ok()
        .json();
    let pair = &out["pairs"][0];
    assert_eq!(pair["verdict"], "same-files", "{out}");
    assert_eq!(pair["same_files"], serde_json::json!(["f"]));
    assert_eq!(pair["conflicts"], serde_json::json!([]));
    assert_eq!(out["conflicts"], 0);
    assert_eq!(out["same_files"], 1);
    env.swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("same files alpha × beta: f (merge clean)")
        .stdout_has("0 conflicts;");
}

#[test]
fn a_lane_is_forecast_against_its_moved_base() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m1, "gamma", 9, "nine from gamma");
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    for b in out["bases"].as_array().unwrap() {
        assert_eq!(b["base_moved"], false, "{out}");
        assert_eq!(b["verdict"], "clean");
        assert_eq!(b["via"], "trivial");
    }
    // main moves on the other machine: line 2 changed there too.
    edit(&env, &m2, 2, "two on main");
    let main = env.git(&m2, &["rev-parse", "HEAD"]);
    let out = env
        .swarm(&m1, &["forecast", "--json", "--plan", "alpha"])
        .ok()
        .json();
    assert_eq!(out["plan"], "alpha");
    let bases = out["bases"].as_array().unwrap();
    assert_eq!(bases.len(), 1, "only alpha's lane with --plan alpha: {out}");
    let b = &bases[0];
    assert_eq!(b["lane"], "alpha");
    assert_eq!(b["base_moved"], true);
    assert_eq!(b["base_commit"], main.as_str());
    assert_eq!(b["verdict"], "conflict");
    assert_eq!(
        b["conflicts"][0]["ours"],
        serde_json::json!(["two on main"])
    );
    assert_eq!(
        b["conflicts"][0]["theirs"],
        serde_json::json!(["two from alpha"])
    );
    // gamma's edit is elsewhere: its base moved, yet it merges cleanly.
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    let gamma = out["bases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["lane"] == "gamma")
        .unwrap()
        .clone();
    assert_eq!(gamma["base_moved"], true);
    assert_eq!(gamma["verdict"], "same-files");
    env.swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("CONFLICT alpha against its base origin/main");

    // Rebased onto the new main (taking main's line), the forecast clears.
    let wt = m1.join("_swarm-worktrees/alpha");
    env.git(&wt, &["fetch", "--quiet", "origin"]);
    env.git(&wt, &["reset", "--quiet", "--hard", "origin/main"]);
    edit_force(&env, &wt, 3, "three from alpha");
    let out = env
        .swarm(&m1, &["forecast", "--json", "--plan", "alpha"])
        .ok()
        .json();
    assert_eq!(out["bases"][0]["verdict"], "clean", "{out}");
    assert_eq!(out["bases"][0]["base_moved"], false);
    assert_eq!(out["conflicts"], 0);
}

/// Like [`edit`], force-pushing the rewritten branch.
fn edit_force(env: &TestEnv, wt: &Path, line: usize, text: &str) {
    let old = env.read(&wt.join("f"));
    let mut lines: Vec<&str> = old.lines().collect();
    lines[line - 1] = text;
    env.write(&wt.join("f"), &(lines.join("\n") + "\n"));
    env.git(wt, &["commit", "--quiet", "-am", "rebased edit"]);
    env.git(wt, &["push", "--quiet", "--force", "origin", "HEAD"]);
}

#[test]
fn a_repeated_forecast_merges_only_the_pairs_that_changed() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 5, "five from beta");
    let gamma = lane_edit(&env, &m1, "gamma", 9, "nine from gamma");
    let count = |out: &serde_json::Value| {
        (
            out["merged"].as_u64().unwrap(),
            out["cached"].as_u64().unwrap(),
            out["trivial"].as_u64().unwrap(),
        )
    };
    let cold = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(
        count(&cold),
        (3, 0, 3),
        "3 pairs merged, 3 base checks trivial"
    );
    let cache = PathBuf::from(env.git(&m1, &["rev-parse", "--git-common-dir"]));
    let cache = m1.join(cache).join("swarm/cache/forecast");
    // Beside the entries, only the summary `status` reads.
    let mut names: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.retain(|n| n != "summary.json");
    assert_eq!(
        names.len(),
        3,
        "one cache entry per merge in {}: {names:?}",
        cache.display()
    );
    assert!(names.iter().all(|n| n.starts_with("v2-")), "{names:?}");

    let warm = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(count(&warm), (0, 3, 3));
    assert_eq!(warm["pairs"], {
        let mut p = cold["pairs"].clone();
        for x in p.as_array_mut().unwrap() {
            x["via"] = "cached".into();
        }
        p
    });

    // gamma moves on: only its two pairs are merged again.
    edit(&env, &gamma, 10, "ten from gamma");
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(count(&out), (2, 1, 3), "{out}");
    let via: Vec<(String, String)> = out["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                format!("{}×{}", p["a"].as_str().unwrap(), p["b"].as_str().unwrap()),
                p["via"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        via,
        vec![
            ("alpha×beta".to_string(), "cached".to_string()),
            ("alpha×gamma".to_string(), "merged".to_string()),
            ("beta×gamma".to_string(), "merged".to_string()),
        ]
    );
    // `--no-cache` reads and writes none of it: the same answer, merged.
    let bypassed = env
        .swarm(&m1, &["--no-cache", "forecast", "--json"])
        .ok()
        .json();
    assert_eq!(count(&bypassed), (3, 0, 3));
    // Entries edited to say "clean" (or another answer) are not trusted:
    // every pair is merged again.
    for (i, e) in std::fs::read_dir(&cache).unwrap().flatten().enumerate() {
        if e.file_name() == "summary.json" {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        let edited = if i % 2 == 0 {
            text.replace("\"same_files\":[\"f\"]", "\"same_files\":[]")
        } else {
            "{\"conflicts\":[],\"same_files\":[]}".to_string()
        };
        assert_ne!(edited, text);
        std::fs::write(e.path(), edited).unwrap();
    }
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(count(&out), (3, 0, 3), "{out}");
    assert_eq!(out["same_files"].as_u64(), Some(3), "{out}");
    // A deleted cache only costs merges again.
    std::fs::remove_dir_all(&cache).unwrap();
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(count(&out), (3, 0, 3));
}

#[test]
fn an_unknown_plan_is_refused_and_an_empty_swarm_forecasts_nothing() {
    let env = TestEnv::new();
    let (_remote, m1, _m2) = two_machines(&env);
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["pairs"], serde_json::json!([]));
    assert_eq!(out["merged"], 0);
    let before = env.all_refs(&m1);
    env.swarm(&m1, &["forecast", "--plan", "nope"])
        .err(2, "NOT_FOUND")
        .stderr_has("git swarm plan list");
    env.swarm(&m1, &["forecast", "--plan", "Bad Name"])
        .err(2, "NAME_INVALID");
    assert_eq!(env.all_refs(&m1), before);
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
    let (_remote, m1, m2) = crate::lane::forecast::two_machines(&env);
    // divfix (on m1) changes line 2 of f and is pushed.
    crate::lane::forecast::lane_edit(&env, &m1, "divfix", 2, "two (divfix)");
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
