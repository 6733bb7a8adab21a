//! The reservations guard's shortcuts never change a decision: the staged
//! changes are found only where patterns lie and skip directories whose
//! cache-tree entry is HEAD's tree, yet every kind of change under a
//! reserved path is refused, also when the cache tree is valid but HEAD
//! moved (`reset --soft`); the ledger cache (`.git/swarm/reservations.cache`)
//! answers only for the ledger commit it was read from, and a torn, edited
//! or foreign cache file is ignored. The lane identity is found without
//! spawning git. The real hooks in a lane worktree refuse another's
//! reserved path, and `check --range` catches a `--no-verify` commit. Real
//! repositories and the real binary throughout.

use std::path::Path;

use crate::reserve::lane_setup;
use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

fn env_at_now() -> TestEnv {
    let mut env = TestEnv::new();
    env.set_env("GIT_SWARM_NOW", "2026-01-01T00:00:00Z");
    env
}

/// `check --staged` in `dir`: the reserved paths it refuses (sorted), or
/// none when it passes.
fn refused(env: &TestEnv, dir: &Path) -> Vec<String> {
    let run = env.swarm(dir, &["check", "--staged", "--json"]);
    if run.code == 0 {
        return Vec::new();
    }
    let run = run.err(1, "GUARD_FAILED");
    let v = run.json();
    let mut out: Vec<String> = v["error"]["detail"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["guard"] == "reservations")
        .map(|x| x["subject"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// alice's repository: files under src/a, src/b, docs and the root; ann
/// holds `src/a/`, `docs/*.md` and `top.txt`.
fn setup(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.repo("alice");
    for f in [
        "src/a/x.rs",
        "src/a/y.rs",
        "src/b/z.rs",
        "docs/readme.md",
        "top.txt",
    ] {
        env.write(&dir.join(f), "one\n");
    }
    env.git(&dir, &["add", "."]);
    env.git(&dir, &["commit", "-q", "-m", "files"]);
    env.swarm(&dir, &["init"]).ok();
    env.swarm(
        &dir,
        &["--as", "ann", "reserve", "src/a/", "docs/*.md", "top.txt"],
    )
    .ok();
    dir
}

#[test]
fn every_kind_of_staged_change_under_a_reserved_path_is_refused() {
    let env = env_at_now();
    let dir = setup(&env);
    let reset = |env: &TestEnv| {
        env.git(&dir, &["reset", "-q", "--hard"]);
        env.git(&dir, &["clean", "-qfd"]);
    };
    assert!(refused(&env, &dir).is_empty(), "nothing staged");
    // Outside every pattern: passes.
    env.write(&dir.join("src/b/z.rs"), "two\n");
    env.write(&dir.join("docs/new.txt"), "two\n");
    env.git(&dir, &["add", "."]);
    assert!(refused(&env, &dir).is_empty());
    reset(&env);
    // Modified, deleted, mode changed, added under a glob.
    env.write(&dir.join("src/a/x.rs"), "two\n");
    env.git(&dir, &["add", "src/a/x.rs"]);
    env.git(&dir, &["rm", "-q", "--cached", "src/a/y.rs"]);
    env.git(&dir, &["update-index", "--chmod=+x", "top.txt"]);
    env.write(&dir.join("docs/new.md"), "two\n");
    env.git(&dir, &["add", "docs/new.md"]);
    assert_eq!(
        refused(&env, &dir),
        ["docs/new.md", "src/a/x.rs", "src/a/y.rs", "top.txt"]
    );
    reset(&env);
    // A reserved directory replaced by a file: its files are deleted.
    env.git(&dir, &["rm", "-q", "-r", "--cached", "src/a"]);
    std::fs::remove_dir_all(dir.join("src/a")).unwrap();
    env.write(&dir.join("src/a"), "a file now\n");
    env.git(&dir, &["add", "src/a"]);
    assert_eq!(refused(&env, &dir), ["src/a/x.rs", "src/a/y.rs"]);
    reset(&env);
    // The cache tree is valid after a commit; moving HEAD back leaves it
    // valid but no longer HEAD's tree: the change must still be seen.
    env.write(&dir.join("src/a/x.rs"), "three\n");
    env.git(&dir, &["add", "src/a/x.rs"]);
    env.git(&dir, &["commit", "-q", "--no-verify", "-m", "sneak"]);
    assert!(refused(&env, &dir).is_empty(), "the commit is HEAD now");
    env.git(&dir, &["reset", "-q", "--soft", "HEAD~1"]);
    assert_eq!(refused(&env, &dir), ["src/a/x.rs"]);
    // The same through the real hook, refusing the commit.
    let run = env.git_run(&dir, &["commit", "-q", "-m", "again"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("[reservations] src/a/x.rs"), "{run:#?}");
    // Case-insensitive checkouts compare case-insensitively (git files
    // `Docs/` under the `docs/` it has; `*.md` matches `.MD`).
    env.git(&dir, &["reset", "-q", "--hard"]);
    env.git(&dir, &["config", "core.ignoreCase", "true"]);
    env.write(&dir.join("Docs/Other.MD"), "x\n");
    env.git(&dir, &["add", "Docs/Other.MD"]);
    assert_eq!(refused(&env, &dir), ["docs/Other.MD"]);
}

#[test]
fn a_first_commit_on_an_unborn_branch_is_judged_too() {
    let env = env_at_now();
    let dir = env.root().join("fresh");
    std::fs::create_dir_all(&dir).unwrap();
    env.git(&dir, &["init", "-q"]);
    env.git(&dir, &["config", "swarm.as", "alice"]);
    env.swarm(&dir, &["--as", "ann", "reserve", "lib/"]).ok();
    env.write(&dir.join("lib/a.rs"), "x\n");
    env.write(&dir.join("other.rs"), "x\n");
    env.git(&dir, &["add", "."]);
    assert_eq!(refused(&env, &dir), ["lib/a.rs"]);
}

#[test]
fn the_ledger_cache_answers_only_for_its_own_ledger_version() {
    let env = env_at_now();
    let dir = setup(&env);
    // ann's one entry is in the shards of src/, docs/ and top.txt: a
    // version of the reservations is where all of them stand.
    use crate::support::reservations::{parts, LOCAL};
    let set = |env: &TestEnv, to: &[(String, String)]| {
        for (r, c) in to {
            env.git(&dir, &["update-ref", r, c]);
        }
    };
    let cache = dir.join(".git/swarm/reservations.cache");
    env.write(&dir.join("src/a/x.rs"), "two\n");
    env.git(&dir, &["add", "src/a/x.rs"]);
    assert_eq!(refused(&env, &dir), ["src/a/x.rs"]);
    assert!(cache.exists(), "the guard kept no ledger cache");
    let held = parts(&env, &dir, LOCAL);
    let cached_held = std::fs::read(&cache).unwrap();

    // The ledger moves on (ann releases): the very next check sees it.
    env.swarm(&dir, &["--as", "ann", "release", "src/a/"]).ok();
    let released = parts(&env, &dir, LOCAL);
    assert_ne!(held, released);
    assert!(refused(&env, &dir).is_empty());
    let cached_released = std::fs::read(&cache).unwrap();
    assert_ne!(cached_held, cached_released, "the cache follows the ledger");
    // Back to the earlier ledger (say, a reset ref): refused again, even
    // with the cache written for the later one in place.
    set(&env, &held);
    std::fs::write(&cache, &cached_released).unwrap();
    assert_eq!(refused(&env, &dir), ["src/a/x.rs"]);
    // A cache of the other version, torn, edited or foreign: ignored.
    set(&env, &released);
    let mut damaged: Vec<Vec<u8>> = (1..cached_held.len())
        .step_by(7)
        .map(|cut| cached_held[..cut].to_vec())
        .collect();
    for at in (0..cached_held.len()).step_by(5) {
        let mut edited = cached_held.clone();
        edited[at] ^= 0x01;
        damaged.push(edited);
    }
    damaged.push(b"not a cache at all".to_vec());
    damaged.push(cached_held.clone());
    for bytes in &damaged {
        std::fs::write(&cache, bytes).unwrap();
        assert!(refused(&env, &dir).is_empty(), "{} bytes", bytes.len());
    }
    // Rewritten whole by the last run; deleting it changes nothing.
    assert_eq!(std::fs::read(&cache).unwrap(), cached_released);
    std::fs::remove_file(&cache).unwrap();
    set(&env, &held);
    assert_eq!(refused(&env, &dir), ["src/a/x.rs"]);
}

#[test]
fn the_hook_knows_the_lane_owner_without_running_git() {
    let (env, _, clones) = Swarm::in_env(env_at_now(), &["coord"])
        .plan(0, "auth")
        .run(
            0,
            &["lane", "new", "login", "--plan", "auth", "--owner", "bob"],
        )
        .parts();
    let coord = clones[0].clone();
    let wt = coord.join("_swarm-worktrees/login");
    // bob (the lane's owner) holds docs/; coord holds src/.
    env.swarm(&wt, &["reserve", "docs/"]).ok();
    env.swarm(&coord, &["reserve", "src/"]).ok();
    env.write(&wt.join("docs/a.md"), "x\n");
    env.write(&wt.join("src/lib.rs"), "x\n");
    env.git(&wt, &["add", "docs/a.md", "src/lib.rs"]);
    // The hook binary itself, with no git on PATH: had it run git to
    // find the lane, it would not know bob and would refuse docs/ too.
    let bin = env.root().join("bin");
    let out = env
        .command(bin.join("git-swarm").to_str().unwrap(), &wt)
        .env("PATH", &bin)
        .args(["hook", "pre-commit"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("[reservations] src/lib.rs"), "{stderr}");
    assert!(stderr.contains("reserved exclusively by coord"), "{stderr}");
    assert!(!stderr.contains("docs/a.md"), "{stderr}");
    // Without the other's path the commit goes through, by the real hook.
    env.git(&wt, &["reset", "-q", "src/lib.rs"]);
    env.git(&wt, &["commit", "-q", "-m", "docs"]);
    assert!(env.git(&wt, &["log", "-1", "--format=%s"]).contains("docs"));
}

#[test]
fn check_prints_warn_mode_notes_in_text_and_json() {
    let env = env_at_now();
    let dir = setup(&env);
    env.git(&dir, &["config", "swarm.reservations", "warn"]);
    env.write(&dir.join("top.txt"), "two\n");
    env.git(&dir, &["add", "top.txt"]);
    let text = env.swarm(&dir, &["check", "--staged"]).ok();
    text.expect_stderr("warning (swarm.reservations=warn): top.txt is reserved exclusively by ann");
    let json = env.swarm(&dir, &["check", "--staged", "--json"]).ok();
    let notes = json.json()["notes"].clone();
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .contains("top.txt is reserved exclusively by ann"),
        "{notes}"
    );
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

#[test]
fn the_real_hooks_refuse_another_lanes_commit_and_the_ci_gate_catches_no_verify() {
    let (env, _ann, coord, wt) = lane_setup(env_at_now());
    env.write(&wt.join("src/lib.rs"), "fn main() {}\n");
    env.git(&wt, &["add", "src/lib.rs"]);
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    let run = env.git_run(&wt, &["commit", "-q", "-m", "touch lib"]);
    assert_eq!(run.code, 1, "{run:#?}");
    for needle in [
        "[reservations] src/lib.rs",
        "reserved exclusively by ann",
        "T7",
        "git swarm release",
    ] {
        assert!(run.stderr.contains(needle), "{needle}: {run:#?}");
    }
    assert_eq!(
        env.git(&wt, &["rev-parse", "HEAD"]),
        head,
        "nothing was committed"
    );
    // Unrelated paths still commit.
    env.git(&wt, &["reset", "-q"]);
    env.write(&wt.join("docs/a.md"), "a\n");
    env.git(&wt, &["add", "docs/a.md"]);
    env.git(&wt, &["commit", "-q", "-m", "docs"]);
    // --no-verify gets past pre-commit; pre-push and check --range catch it.
    env.git(&wt, &["add", "src/lib.rs"]);
    env.git(&wt, &["commit", "-q", "--no-verify", "-m", "sneak"]);
    let push = env.git_run(&wt, &["push", "origin", "feat/login"]);
    assert_ne!(push.code, 0, "{push:#?}");
    assert!(
        push.stderr.contains("[reservations] src/lib.rs"),
        "{push:#?}"
    );
    assert!(
        env.git_run(
            &coord,
            &["ls-remote", "--exit-code", "origin", "feat/login"]
        )
        .code
            != 0
    );
    let check = env.swarm(&wt, &["check", "--range", "main..HEAD", "--json"]);
    let check = check.err(1, "GUARD_FAILED");
    let v = check.json();
    let violations = v["error"]["detail"]["violations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(violations.len(), 1, "{v:#}");
    assert_eq!(violations[0]["subject"], "src/lib.rs");
    assert_eq!(
        violations[0]["commit"],
        env.git(&wt, &["rev-parse", "HEAD"])
    );
    // warn lets it through, naming it; off does not look.
    let warn = env.git_run(
        &wt,
        &[
            "-c",
            "swarm.reservations=warn",
            "swarm",
            "check",
            "--range",
            "main..HEAD",
        ],
    );
    assert_eq!(warn.code, 0, "{warn:#?}");
    let off = env.git_run(
        &wt,
        &[
            "-c",
            "swarm.reservations=off",
            "swarm",
            "check",
            "--range",
            "main..HEAD",
            "--json",
        ],
    );
    assert_eq!(off.code, 0, "{off:#?}");
    assert!(!off.stdout.contains("reservations"), "{off:#?}");
}

#[test]
fn own_and_expired_reservations_pass() {
    let (env, ann, _coord, wt) = lane_setup(env_at_now());
    // Own: ann commits under her own reservation.
    env.write(&ann.join("src/own.rs"), "x\n");
    env.git(&ann, &["add", "src/own.rs"]);
    env.git(&ann, &["commit", "-q", "-m", "own"]);
    env.git(&ann, &["push", "-q", "origin", "HEAD:refs/heads/ann-work"]);
    // Expired: bob's lane commits once ann's lease (2h) is over; it is noted.
    let later = "2026-01-01T03:00:00Z";
    env.write(&wt.join("src/lib.rs"), "x\n");
    env.git(&wt, &["add", "src/lib.rs"]);
    let mut cmd = env.command("git", &wt);
    cmd.args(["commit", "-q", "-m", "after expiry"])
        .env("GIT_SWARM_NOW", later);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expired"), "{stderr}");
    // The CI gate judges against the reservations live now: while ann's
    // lease runs the commit is caught, backdated or not; once over, it passes.
    env.swarm(&wt, &["check", "--range", "main..HEAD"])
        .err(1, "GUARD_FAILED");
    let mut cmd = env.command("git", &wt);
    cmd.args(["commit", "-q", "--amend", "--no-edit", "--no-verify"])
        .env("GIT_COMMITTER_DATE", "2020-01-01T00:00:00Z");
    assert!(cmd.output().unwrap().status.success());
    env.swarm(&wt, &["check", "--range", "main..HEAD"])
        .err(1, "GUARD_FAILED");
    env.swarm_env(
        &wt,
        &[("GIT_SWARM_NOW", later)],
        &["check", "--range", "main..HEAD"],
    )
    .ok();
}
