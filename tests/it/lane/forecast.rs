//! `git swarm forecast`: lanes on two machines (real clones of one bare
//! remote) merged in memory against each other and their base; uncommitted
//! work (`lane snapshot`, `refs/swarm/wip/*`), reserved paths, the `status`
//! line and the pre-push warning. Lanes edit the ten-line file `f` of main.

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
        let bytes = std::fs::read(e.path()).unwrap();
        let edited = if i % 2 == 0 {
            // The answer edited in place, the file's checksum left as it was.
            let from: &[u8] = b"\"same_files\":[\"f\"]";
            let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
            let mut b = bytes[..at].to_vec();
            b.extend_from_slice(b"\"same_files\":[]");
            b.extend_from_slice(&bytes[at + from.len()..]);
            b
        } else {
            b"{\"conflicts\":[],\"same_files\":[]}".to_vec()
        };
        assert_ne!(edited, bytes);
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
    let (_remote, m1, m2) = two_machines(&env);
    // divfix (on m1) changes line 2 of f and is pushed.
    lane_edit(&env, &m1, "divfix", 2, "two (divfix)");
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

/// Replace line `line` of `f` in `wt` without committing.
fn edit_uncommitted(env: &TestEnv, wt: &Path, line: usize, text: &str) {
    let old = env.read(&wt.join("f"));
    let mut lines: Vec<&str> = old.lines().collect();
    lines[line - 1] = text;
    env.write(&wt.join("f"), &(lines.join("\n") + "\n"));
}

fn index_bytes(env: &TestEnv, wt: &Path) -> Vec<u8> {
    let path = env.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    std::fs::read(path).unwrap()
}

fn lane<'a>(out: &'a serde_json::Value, feature: &str) -> &'a serde_json::Value {
    out["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["feature"] == feature)
        .unwrap_or_else(|| panic!("no lane {feature}: {out}"))
}

#[test]
fn a_published_snapshot_of_uncommitted_work_changes_the_forecast_and_a_stale_one_is_flagged() {
    let env = TestEnv::new();
    let (remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    let beta = lane_edit(&env, &m2, "beta", 9, "nine from beta");
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["pairs"][0]["verdict"], "same-files", "{out}");
    assert_eq!(out["conflicts"], 0);

    // beta edits line 2 too, uncommitted, plus an untracked file.
    edit_uncommitted(&env, &beta, 2, "two from beta, not committed");
    env.write(&beta.join("notes.txt"), "draft\n");
    let index = index_bytes(&env, &beta);
    let status = env.git(&beta, &["status", "--porcelain"]);
    let snap = env
        .swarm(&beta, &["lane", "snapshot", "--json"])
        .ok()
        .json();
    assert_eq!(snap["lane"], "beta");
    assert_eq!(snap["clean"], false);
    assert_eq!(snap["paths"], 2);
    assert_eq!(snap["published_to"], "origin");
    assert_eq!(snap["refname"], "refs/swarm/wip/beta");
    // The lane's index and files are as they were.
    assert_eq!(index_bytes(&env, &beta), index);
    assert_eq!(env.git(&beta, &["status", "--porcelain"]), status);
    let wip = snap["commit"].as_str().unwrap().to_string();
    assert_eq!(
        env.refs(&remote, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        wip
    );
    let head = env.git(&beta, &["rev-parse", "HEAD"]);
    assert_eq!(env.git(&m2, &["rev-parse", &format!("{wip}^1")]), head);

    // m1 fetches it and forecasts beta's uncommitted line: a conflict.
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    let b = lane(&out, "beta");
    assert_eq!(b["source"], "snapshot", "{out}");
    assert_eq!(b["head"], wip.as_str());
    assert_eq!(b["snapshot"]["standing"], "current");
    assert_eq!(b["snapshot"]["on"], head.as_str());
    let pair = &out["pairs"][0];
    assert_eq!(pair["verdict"], "conflict", "{out}");
    assert_eq!(
        pair["conflicts"][0]["theirs"],
        serde_json::json!(["two from beta, not committed"])
    );
    assert_eq!(out["stale_snapshots"], serde_json::json!([]));
    env.swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("uncommitted work of beta counted")
        .stdout_has("CONFLICT alpha × beta");
    // --offline: no fetch, but what was fetched before (beta's branch and
    // snapshot) still counts.
    let out = env
        .swarm(&m1, &["--offline", "forecast", "--json"])
        .ok()
        .json();
    assert_eq!(out["fetched"], false);
    assert_eq!(lane(&out, "beta")["source"], "snapshot", "{out}");
    assert_eq!(out["pairs"][0]["verdict"], "conflict");

    // The same work again, later: nothing moves.
    env.swarm_env(
        &beta,
        &[("GIT_SWARM_NOW", "2099-01-01T00:00:00Z")],
        &["lane", "snapshot"],
    )
    .ok()
    .stdout_has("unchanged");
    assert_eq!(
        env.refs(&remote, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        wip
    );

    // beta commits something else and pushes: the branch moved past the
    // snapshot, which is ignored and flagged stale.
    env.write(&beta.join("g"), "g\n");
    env.git(&beta, &["add", "g"]);
    env.git(&beta, &["commit", "--quiet", "-m", "add g"]);
    env.git(
        &beta,
        &["push", "--quiet", "--no-verify", "origin", "feat/beta"],
    );
    let moved = env.git(&beta, &["rev-parse", "HEAD"]);
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    let b = lane(&out, "beta");
    assert_eq!(b["source"], "remote", "{out}");
    assert_eq!(b["head"], moved.as_str());
    assert_eq!(b["snapshot"]["standing"], "stale");
    assert_eq!(out["stale_snapshots"], serde_json::json!(["beta"]));
    assert_eq!(out["pairs"][0]["verdict"], "same-files");
    env.swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("stale snapshot beta")
        .stdout_has("ignored");

    // A clean worktree publishes "nothing uncommitted": the branch stands.
    env.git(&beta, &["checkout", "--quiet", "--", "f"]);
    std::fs::remove_file(beta.join("notes.txt")).unwrap();
    let snap = env
        .swarm(&beta, &["lane", "snapshot", "--json"])
        .ok()
        .json();
    assert_eq!(snap["clean"], true);
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    let b = lane(&out, "beta");
    assert_eq!(b["snapshot"]["clean"], true, "{out}");
    assert_eq!(b["snapshot"]["standing"], "current");
    assert_eq!(b["head"], moved.as_str());
    assert_eq!(out["pairs"][0]["verdict"], "same-files");
}

#[test]
fn sync_keeps_the_newer_snapshot_and_gc_archives_the_wip_of_a_removed_lane() {
    let env = TestEnv::new();
    let (remote, m1, m2) = two_machines(&env);
    let beta = lane_edit(&env, &m2, "beta", 9, "nine from beta");
    fn at(t: &'static str) -> [(&'static str, &'static str); 1] {
        [("GIT_SWARM_NOW", t)]
    }
    // `lane snapshot` at time `t` (offline or not); its JSON.
    let snap = |t: &'static str, offline: bool| {
        let mut args = vec!["lane", "snapshot", "--json"];
        if offline {
            args.insert(0, "--offline");
        }
        env.swarm_env(&beta, &at(t), &args).ok().json()
    };
    edit_uncommitted(&env, &beta, 2, "published");
    let published = snap("2026-03-01T12:00:00Z", false)["commit"]
        .as_str()
        .unwrap()
        .to_string();

    // An offline snapshot taken "earlier" loses to the published one.
    edit_uncommitted(&env, &beta, 2, "older, offline");
    let older = snap("2026-03-01T11:00:00Z", true);
    assert_eq!(older["published_to"], serde_json::Value::Null);
    assert_eq!(
        env.refs(&remote, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        published
    );
    env.swarm(&m2, &["sync"])
        .ok()
        .stdout_has("replaced refs/swarm/wip/beta: the newer snapshot wins");
    assert_eq!(
        env.refs(&m2, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        published
    );

    // One taken later, offline, wins at the next sync.
    edit_uncommitted(&env, &beta, 2, "newer, offline");
    let newer = snap("2026-03-01T13:00:00Z", true)["commit"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(&m2, &["sync"])
        .ok()
        .stdout_has("refs/swarm/wip/beta");
    assert_eq!(
        env.refs(&remote, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        newer
    );
    env.swarm(&m1, &["sync"]).ok();
    assert_eq!(
        env.refs(&m1, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        newer
    );

    // The lane goes; gc archives its snapshot with it, and the deletion syncs.
    env.swarm(&m2, &["lane", "rm", "beta", "--force"]).ok();
    // (Judged from a later clock: the snapshots above are dated in 2026.)
    let gc = env
        .swarm_env(
            &m2,
            &at("2099-01-01T00:00:00Z"),
            &["gc", "--older-than", "0s", "--json"],
        )
        .ok()
        .json();
    assert_eq!(
        gc["archived"]["wip"],
        serde_json::json!(["refs/swarm/wip/beta"]),
        "{gc}"
    );
    assert!(env.refs(&m2, "refs/swarm/wip/").is_empty());
    assert!(env
        .refs(&m2, "refs/swarm/archive/wip")
        .contains_key("refs/swarm/archive/wip"));
    env.swarm(&m2, &["sync"]).ok();
    env.swarm(&m1, &["sync"]).ok();
    assert!(env.refs(&remote, "refs/swarm/wip/").is_empty());
    assert!(env.refs(&m1, "refs/swarm/wip/").is_empty());
}

#[test]
fn a_snapshot_holding_a_secret_or_too_much_is_refused_with_nothing_published() {
    let env = TestEnv::new();
    let (remote, m1, m2) = two_machines(&env);
    let beta = lane_edit(&env, &m2, "beta", 9, "nine from beta");
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    env.write(
        &beta.join("notes/creds.txt"),
        "hello\ndb password=Tr0ub4dor&3\n",
    );
    let (local, published) = (env.all_refs(&m2), env.all_refs(&remote));
    let index = index_bytes(&env, &beta);
    let run = env
        .swarm(&beta, &["lane", "snapshot"])
        .err(2, "SNAPSHOT_SECRET")
        .stderr_has("notes/creds.txt line 2");
    assert!(!run.stderr.contains("Tr0ub4dor"), "{}", run.stderr);
    assert_eq!(env.all_refs(&m2), local);
    assert_eq!(env.all_refs(&remote), published);
    assert_eq!(index_bytes(&env, &beta), index);
    assert_eq!(env.git(&beta, &["status", "--porcelain"]), "?? notes/");
    std::fs::remove_dir_all(beta.join("notes")).unwrap();

    env.git(&m2, &["config", "swarm.snapshotLimit", "10"]);
    edit_uncommitted(&env, &beta, 2, "two from beta, a long line");
    env.swarm(&beta, &["lane", "snapshot"])
        .err(2, "SNAPSHOT_TOO_LARGE")
        .stderr_has("f (");
    env.git(&m2, &["config", "--unset", "swarm.snapshotLimit"]);

    // Bad names and the wrong lane, person or place: refused, nothing written.
    for bad in ["Bad Name", "../beta", "-x", "a..b"] {
        env.swarm(&m2, &["lane", "snapshot", &format!("--lane={bad}")])
            .err(2, "NAME_INVALID");
    }
    env.swarm(&m2, &["lane", "snapshot", "--lane", "nope"])
        .err(2, "NOT_FOUND");
    env.swarm(&m2, &["lane", "snapshot"]).err(2, "USAGE");
    env.swarm(&beta, &["--as", "mallory", "lane", "snapshot"])
        .err(3, "SNAPSHOT_NOT_OWNER")
        .stderr_has("owned by m2");
    // alpha's worktree exists on this disk, but in m1's repository.
    env.swarm(&m2, &["sync"]).ok();
    env.swarm(&m2, &["--as", "m1", "lane", "snapshot", "--lane", "alpha"])
        .err(4, "LANE_NOT_HERE")
        .stderr_has("another repository");
    assert_eq!(env.refs(&m2, "refs/swarm/wip/"), Default::default());
    assert_eq!(env.refs(&remote, "refs/swarm/wip/"), Default::default());
}

#[test]
fn a_lane_changing_a_path_someone_else_reserved_is_listed() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 9, "nine from beta");
    // m2 (beta's owner) reserves f; a shared reservation of m2's blocks nobody.
    env.swarm(&m2, &["reserve", "f", "--task", "T7"]).ok();
    env.swarm(&m2, &["reserve", "README.md", "--shared"]).ok();
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    let reserved = out["reserved"].as_array().unwrap();
    assert_eq!(reserved.len(), 1, "{out}");
    let r = &reserved[0];
    assert_eq!(r["lane"], "alpha");
    assert_eq!(r["owner"], "m1");
    assert_eq!(r["path"], "f");
    assert_eq!(r["holder"], "m2");
    assert_eq!(r["reservation"], "r1");
    assert_eq!(r["task"], "T7");
    env.swarm(&m1, &["forecast"])
        .ok()
        .stdout_has("RESERVED alpha (m1) changes f: reserved by m2 (r1, task T7)")
        .stdout_has("1 changed path reserved by others");
    // Released, nothing is listed.
    env.swarm(&m2, &["release", "r1"]).ok();
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["reserved"], serde_json::json!([]));
}

#[test]
fn status_shows_the_last_forecast_per_plan_without_merging_or_fetching() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    let alpha = lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 2, "two from beta");
    lane_edit(&env, &m1, "gamma", 9, "nine from gamma");
    // Before any forecast, status says nothing of one.
    let out = env.swarm(&m1, &["status"]).ok();
    assert!(!out.stdout.contains("forecast:"), "{}", out.stdout);
    env.swarm(&m1, &["forecast"]).ok();
    let refs = env.all_refs(&m1);
    let common = env.git(
        &m1,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let cache = Path::new(&common).join("swarm/cache/forecast");
    let entries = || std::fs::read_dir(&cache).unwrap().count();
    let before = entries();
    let st = env.swarm(&m1, &["status", "--json"]).ok().json();
    let plan = |name: &str| {
        st["plans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["plan"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(plan("alpha")["forecast"]["conflicts"], 1, "{st}");
    assert_eq!(plan("beta")["forecast"]["conflicts"], 1);
    assert_eq!(plan("gamma")["forecast"]["conflicts"], 0);
    assert_eq!(plan("gamma")["forecast"]["same_files"], 2);
    assert_eq!(plan("alpha")["forecast"]["moved"], false);
    env.swarm(&m1, &["status"])
        .ok()
        .stdout_has("forecast: 1 conflict (")
        .stdout_has("forecast: 0 conflicts (");
    // status neither fetched nor merged: no ref moved, no cache entry added.
    assert_eq!(env.all_refs(&m1), refs);
    assert_eq!(entries(), before);
    // alpha moves on: status says the forecast is behind.
    edit(&env, &alpha, 5, "five from alpha");
    env.swarm(&m1, &["status"])
        .ok()
        .stdout_has("lanes moved since: `git swarm forecast`");
}

#[test]
fn the_real_pre_push_hook_warns_of_a_conflict_with_a_sibling_lane_and_the_push_succeeds() {
    let env = TestEnv::new();
    let (remote, m1, m2) = two_machines(&env);
    let alpha = lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    lane_edit(&env, &m2, "beta", 2, "two from beta");
    env.git(&m1, &["config", "transfer.unpackLimit", "100000"]);
    env.swarm(&m1, &["forecast"]).ok();
    // A new commit on alpha, pushed through the real hook (no --no-verify).
    edit_uncommitted(&env, &alpha, 5, "five from alpha");
    env.git(&alpha, &["commit", "--quiet", "-am", "five"]);
    let head = env.git(&alpha, &["rev-parse", "HEAD"]);
    let push = env.git_run(&alpha, &["push", "origin", "feat/alpha"]).ok();
    assert!(
        push.stderr
            .contains("git swarm: warning: alpha is forecast to conflict with lane beta in f"),
        "{}",
        push.stderr
    );
    assert_eq!(
        env.refs(&remote, "refs/heads/feat/")["refs/heads/feat/alpha"],
        head
    );

    // A forecast that cannot run (beta's blob is gone here) is one line of
    // warning, and the push still goes through.
    let blob = env.git(&m1, &["rev-parse", "origin/feat/beta:f"]);
    let common = env.git(
        &m1,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let loose = Path::new(&common)
        .join("objects")
        .join(&blob[..2])
        .join(&blob[2..]);
    std::fs::remove_file(&loose).unwrap_or_else(|e| panic!("{}: {e}", loose.display()));
    std::fs::remove_dir_all(Path::new(&common).join("swarm/cache/forecast")).unwrap();
    edit_uncommitted(&env, &alpha, 6, "six from alpha");
    env.git(&alpha, &["commit", "--quiet", "-am", "six"]);
    let head = env.git(&alpha, &["rev-parse", "HEAD"]);
    let push = env.git_run(&alpha, &["push", "origin", "feat/alpha"]).ok();
    let warned: Vec<&str> = push
        .stderr
        .lines()
        .filter(|l| l.contains("no conflict forecast for this push"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", push.stderr);
    assert_eq!(
        env.refs(&remote, "refs/heads/feat/")["refs/heads/feat/alpha"],
        head
    );

    // A push of a branch that is no lane forecasts nothing.
    env.git(&m1, &["checkout", "--quiet", "-b", "topic"]);
    let push = env.git_run(&m1, &["push", "origin", "topic"]).ok();
    assert!(!push.stderr.contains("forecast"), "{}", push.stderr);
}

#[test]
fn a_lane_that_never_pushed_its_branch_is_forecast_from_its_snapshot() {
    let env = TestEnv::new();
    let (_remote, m1, m2) = two_machines(&env);
    lane_edit(&env, &m1, "alpha", 2, "two from alpha");
    env.swarm(&m2, &["plan", "new", "delta"]).ok();
    env.swarm(&m2, &["lane", "new", "delta", "--plan", "delta"])
        .ok();
    env.swarm(&m2, &["sync"]).ok();
    let delta = m2.join("_swarm-worktrees/delta");
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["skipped"][0]["feature"], "delta", "{out}");
    assert_eq!(out["pairs"], serde_json::json!([]));

    edit_uncommitted(&env, &delta, 2, "two from delta");
    env.swarm(&delta, &["lane", "snapshot"]).ok();
    assert_eq!(
        env.git_run(
            &m1,
            &[
                "ls-remote",
                "--exit-code",
                "origin",
                "refs/heads/feat/delta"
            ]
        )
        .code,
        2,
        "the branch is still not pushed"
    );
    let out = env.swarm(&m1, &["forecast", "--json"]).ok().json();
    assert_eq!(out["skipped"], serde_json::json!([]), "{out}");
    assert_eq!(lane(&out, "delta")["source"], "snapshot");
    assert_eq!(out["pairs"][0]["verdict"], "conflict");
    assert_eq!(
        out["pairs"][0]["conflicts"][0]["theirs"],
        serde_json::json!(["two from delta"])
    );
}

#[test]
fn a_snapshot_dated_in_the_future_never_counts_as_the_newer() {
    let env = TestEnv::new();
    let (remote, m1, m2) = two_machines(&env);
    let beta = lane_edit(&env, &m2, "beta", 9, "nine from beta");
    edit_uncommitted(&env, &beta, 2, "the owner's");
    let mine = env
        .swarm(&beta, &["lane", "snapshot", "--json"])
        .ok()
        .json()["commit"]
        .as_str()
        .unwrap()
        .to_string();
    // Someone else pushes a snapshot commit dated 2030 over it.
    let tree = env.git(&m1, &["rev-parse", "origin/main^{tree}"]);
    let forged = {
        let mut cmd = env.command("git", &m1);
        cmd.args(["commit-tree", &tree, "-p", "origin/main", "-m", "forged"])
            .env("GIT_COMMITTER_DATE", "2030-01-01T00:00:00Z")
            .env("GIT_AUTHOR_DATE", "2030-01-01T00:00:00Z");
        String::from_utf8(cmd.output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    env.git(
        &m1,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "--force",
            "origin",
            &format!("{forged}:refs/swarm/wip/beta"),
        ],
    );
    // The owner's sync keeps the owner's and publishes it again.
    env.swarm(&m2, &["sync"]).ok();
    assert_eq!(
        env.refs(&m2, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        mine
    );
    assert_eq!(
        env.refs(&remote, "refs/swarm/wip/")["refs/swarm/wip/beta"],
        mine
    );
}
