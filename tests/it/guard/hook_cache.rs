//! The pre-commit hook's lane-ref cache (`.git/swarm/lane-refs.cache`) never
//! gives a stale answer: every way a lane branch comes, moves or goes —
//! loose, nested, packed, fetched as remote-tracking — is seen by the very
//! next check, run right after the cache was written (the same second, and
//! often the same clock tick: the racy case), and a damaged or outdated
//! cache file is ignored. No assertion depends on timing.

use std::path::Path;

use crate::support::harness::TestEnv;

const NAME: &str = ".changeset/dup.md";

/// `git swarm check --staged` with `.changeset/dup.md` staged: refused
/// (naming `lane`) or allowed.
fn verdict(env: &TestEnv, dir: &Path, refused_on: Option<&str>) {
    match refused_on {
        Some(lane) => {
            let run = env.swarm(dir, &["check", "--staged"]).code(1);
            run.expect_stderr("[changeset-unique] .changeset/dup.md");
            run.expect_stderr(&format!("lane branch {lane}"));
        }
        None => {
            env.swarm(dir, &["check", "--staged"]).ok();
        }
    }
}

/// A clone on main with `dup.md` staged, and two commits to point lanes
/// at: `with` (main plus `.changeset/dup.md`) and `without` (main).
fn setup(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf, String, String) {
    let (remote, clones) = env.remote_with_clones(&["alice"]);
    let a = clones[0].clone();
    let without = env.git(&a, &["rev-parse", "HEAD"]);
    env.git(&a, &["checkout", "--quiet", "-b", "scratch"]);
    env.write(&a.join(NAME), "a lane's changeset\n");
    env.git(&a, &["add", NAME]);
    env.git(&a, &["commit", "--quiet", "-m", "a lane's changeset"]);
    let with = env.git(&a, &["rev-parse", "HEAD"]);
    env.git(&a, &["checkout", "--quiet", "main"]);
    env.git(&a, &["update-ref", "refs/keep/with", &with]);
    env.git(&a, &["branch", "--quiet", "-D", "scratch"]);
    env.write(&a.join(NAME), "mine\n");
    env.git(&a, &["add", NAME]);
    (remote, a, with, without)
}

#[test]
fn the_lane_ref_cache_sees_loose_nested_and_packed_lane_branches_at_once() {
    let env = TestEnv::new();
    let (_remote, a, with, without) = setup(&env);
    let cache = a.join(".git/swarm/lane-refs.cache");
    verdict(&env, &a, None);
    assert!(cache.exists(), "the hook kept no lane-ref cache");
    let no_lanes = std::fs::read(&cache).unwrap();

    // Created as a loose ref right after the cache was written.
    env.git(&a, &["update-ref", "refs/heads/feat/one", &with]);
    verdict(&env, &a, Some("feat/one"));
    verdict(&env, &a, Some("feat/one"));
    // Moved (a loose ref rewritten in place by git's lock-and-rename).
    env.git(&a, &["update-ref", "refs/heads/feat/one", &without]);
    verdict(&env, &a, None);
    env.git(&a, &["update-ref", "refs/heads/feat/one", &with]);
    verdict(&env, &a, Some("feat/one"));
    // Packed, then deleted from packed-refs.
    env.git(&a, &["pack-refs", "--all"]);
    assert!(!a.join(".git/refs/heads/feat/one").exists());
    verdict(&env, &a, Some("feat/one"));
    env.git(&a, &["update-ref", "-d", "refs/heads/feat/one"]);
    verdict(&env, &a, None);
    // A packed ref shadowed by a newer loose one, and back.
    env.git(&a, &["update-ref", "refs/heads/feat/one", &without]);
    env.git(&a, &["pack-refs", "--all"]);
    verdict(&env, &a, None);
    env.git(&a, &["update-ref", "refs/heads/feat/one", &with]);
    verdict(&env, &a, Some("feat/one"));
    env.git(&a, &["update-ref", "refs/heads/feat/one", &without]);
    verdict(&env, &a, None);

    // Nested: an update inside feat/team/ changes only that directory.
    env.git(&a, &["update-ref", "refs/heads/feat/team/two", &without]);
    verdict(&env, &a, None);
    env.git(&a, &["update-ref", "refs/heads/feat/team/two", &with]);
    verdict(&env, &a, Some("feat/team/two"));
    env.git(&a, &["update-ref", "refs/heads/feat/team/two", &without]);
    verdict(&env, &a, None);
    env.git(
        &a,
        &["update-ref", "refs/heads/feat/team/deep/three", &with],
    );
    verdict(&env, &a, Some("feat/team/deep/three"));
    env.git(
        &a,
        &["update-ref", "refs/heads/feat/team/deep/three", &without],
    );
    verdict(&env, &a, None);
    env.git(
        &a,
        &["update-ref", "refs/heads/feat/team/deep/three", &with],
    );
    verdict(&env, &a, Some("feat/team/deep/three"));
    env.git(&a, &["update-ref", "-d", "refs/heads/feat/team/deep/three"]);
    verdict(&env, &a, None);

    // A cache file left from before any lane existed is outdated, not trusted.
    env.git(&a, &["update-ref", "refs/heads/feat/one", &with]);
    std::fs::write(&cache, &no_lanes).unwrap();
    verdict(&env, &a, Some("feat/one"));

    // Torn at any point, or garbage: ignored, never trusted.
    let whole = std::fs::read(&cache).unwrap();
    for cut in [0, 1, whole.len() / 3, whole.len() / 2, whole.len() - 1] {
        std::fs::write(&cache, &whole[..cut]).unwrap();
        verdict(&env, &a, Some("feat/one"));
    }
    std::fs::write(
        &cache,
        "git-swarm lane-refs-cache v1\ns 9999999999 0\nx 0\n",
    )
    .unwrap();
    verdict(&env, &a, Some("feat/one"));
    std::fs::remove_file(&cache).unwrap();
    verdict(&env, &a, Some("feat/one"));

    // The hook git runs agrees: the commit is refused, then allowed once
    // the lane no longer has the name.
    let before = env.git(&a, &["rev-parse", "HEAD"]);
    env.git_run(&a, &["commit", "-m", "dup"]).code(1);
    assert_eq!(env.git(&a, &["rev-parse", "HEAD"]), before);
    env.git(&a, &["update-ref", "refs/heads/feat/one", &without]);
    env.git_run(&a, &["commit", "--quiet", "-m", "dup"]).ok();
}

#[test]
fn the_lane_ref_cache_sees_fetched_and_pruned_remote_lane_branches() {
    let env = TestEnv::new();
    let (remote, a, with, _without) = setup(&env);
    // The commit reaches the remote under a ref that fetch does not track.
    env.git(
        &a,
        &["push", "--quiet", "origin", "refs/keep/with:refs/keep/with"],
    );
    verdict(&env, &a, None);

    env.git(&remote, &["update-ref", "refs/heads/feat/r", &with]);
    env.git(&a, &["fetch", "--quiet", "origin"]);
    assert_eq!(env.refs(&a, "refs/remotes/origin/feat/r").len(), 1);
    verdict(&env, &a, Some("origin/feat/r"));
    env.git(&remote, &["update-ref", "-d", "refs/heads/feat/r"]);
    env.git(&a, &["fetch", "--quiet", "--prune", "origin"]);
    assert!(env.refs(&a, "refs/remotes/origin/feat/r").is_empty());
    verdict(&env, &a, None);

    // Fetched into a nested remote directory, then packed.
    env.git(&remote, &["update-ref", "refs/heads/feat/team/r2", &with]);
    env.git(&a, &["fetch", "--quiet", "origin"]);
    verdict(&env, &a, Some("origin/feat/team/r2"));
    env.git(&a, &["pack-refs", "--all"]);
    verdict(&env, &a, Some("origin/feat/team/r2"));
    env.git(&remote, &["update-ref", "-d", "refs/heads/feat/team/r2"]);
    env.git(&a, &["fetch", "--quiet", "--prune", "origin"]);
    verdict(&env, &a, None);

    // From a linked worktree (its own git dir; lane refs live in the common one).
    let wt = env.root().join("wt");
    env.git(
        &a,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "side",
            wt.to_str().unwrap(),
        ],
    );
    env.write(&wt.join(NAME), "mine\n");
    env.git(&wt, &["add", NAME]);
    verdict(&env, &wt, None);
    env.git(&remote, &["update-ref", "refs/heads/feat/r3", &with]);
    env.git(&a, &["fetch", "--quiet", "origin"]);
    verdict(&env, &wt, Some("origin/feat/r3"));
    env.git(&a, &["update-ref", "refs/heads/feat/local", &with]);
    verdict(&env, &a, Some("feat/local"));
    verdict(&env, &wt, Some("feat/local"));
}
