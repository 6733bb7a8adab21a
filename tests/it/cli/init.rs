//! `git swarm init`: the hook shims (installed once, upgraded in place,
//! kept beside the user's own lines), the mirror refspecs, and outside a
//! repository.

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

#[test]
fn init_twice_is_byte_identical_and_keeps_an_existing_hook() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let hooks = repo.join(".git/hooks");
    env.write(
        &hooks.join("pre-commit"),
        "#!/bin/sh\necho user-hook-ran\nexit 0\n",
    );

    let first = env.swarm(&repo, &["init"]).ok();
    first.expect_stdout("installed the pre-commit hook");
    let after_first: Vec<String> = ["pre-commit", "commit-msg", "pre-push"]
        .iter()
        .map(|h| env.read(&hooks.join(h)))
        .collect();
    let exclude_first = env.read(&repo.join(".git/info/exclude"));

    let second = env.swarm(&repo, &["init"]).ok();
    assert_eq!(second.stdout, "already swarm-ready: nothing to change\n");
    let after_second: Vec<String> = ["pre-commit", "commit-msg", "pre-push"]
        .iter()
        .map(|h| env.read(&hooks.join(h)))
        .collect();
    assert_eq!(after_first, after_second, "second init changed a hook");
    assert_eq!(exclude_first, env.read(&repo.join(".git/info/exclude")));

    // The user's lines survive, and our block sits before their `exit 0`.
    let pre_commit = &after_first[0];
    assert!(
        pre_commit.starts_with("#!/bin/sh\n# >>> git-swarm >>>"),
        "{pre_commit}"
    );
    let ours = pre_commit.find("git swarm hook pre-commit").unwrap();
    let theirs = pre_commit.find("echo user-hook-ran").unwrap();
    assert!(ours < theirs);
    assert!(pre_commit.ends_with("echo user-hook-ran\nexit 0\n"));
    // Executable.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(hooks.join("commit-msg"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    assert!(exclude_first.lines().any(|l| l == "/PLAN.md"));
    assert!(exclude_first.lines().any(|l| l == "/_swarm-worktrees/"));
}

#[test]
fn init_installs_into_the_hooks_dir_git_uses_and_adds_mirror_refspecs() {
    let (env, _, clones) = Swarm::new(&["a"]).parts();
    let a = &clones[0];
    let fetch = env.git(a, &["config", "--get-all", "remote.origin.fetch"]);
    assert!(
        fetch.contains("+refs/swarm/*:refs/swarm-remotes/origin/*"),
        "{fetch}"
    );
    assert!(
        fetch.contains("+refs/notes/swarm*:refs/swarm-remotes/origin/notes/swarm*"),
        "{fetch}"
    );
    // The refspecs are added once.
    env.swarm(a, &["init"]).ok();
    assert_eq!(
        env.git(a, &["config", "--get-all", "remote.origin.fetch"]),
        fetch
    );

    // With core.hooksPath set by the user, git uses that directory: so do we.
    let b = env.repo("b");
    env.git(&b, &["config", "core.hooksPath", "custom-hooks"]);
    env.swarm(&b, &["init", "--json"]).ok();
    assert!(b.join("custom-hooks/pre-commit").exists());
    assert!(!b.join(".git/hooks/pre-commit").exists());
}

#[test]
fn init_no_hooks_and_outside_a_repository() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let out = env.swarm(&repo, &["init", "--no-hooks", "--json"]).ok();
    let json = out.json();
    assert_eq!(json["changed"], true);
    assert!(!repo.join(".git/hooks/pre-commit").exists());

    let outside = env.root().join("nowhere");
    std::fs::create_dir_all(&outside).unwrap();
    env.swarm(&outside, &["init"]).err(4, "NOT_A_REPO");
    let json = env.swarm(&outside, &["status", "--json"]).code(4).json();
    assert_eq!(json["error"]["code"], "NOT_A_REPO");
}

#[test]
fn init_upgrades_old_shims_in_place_once() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let hook = repo.join(".git/hooks/pre-commit");
    // What an earlier `git swarm init` wrote, plus a user's own line.
    env.write(
        &hook,
        "#!/bin/sh\n# >>> git-swarm >>> (managed by `git swarm init`; keep your own lines outside this block)\ngit swarm hook pre-commit \"$@\" || exit $?\n# <<< git-swarm <<<\necho mine\n",
    );
    env.swarm(&repo, &["init"])
        .ok()
        .stdout_has("installed the pre-commit hook");
    let text = env.read(&hook);
    assert!(text.contains("command -v git-swarm"), "{text}");
    assert_eq!(text.matches("# >>> git-swarm >>>").count(), 1, "{text}");
    assert!(text.ends_with("# <<< git-swarm <<<\necho mine\n"), "{text}");
    assert_eq!(
        env.swarm(&repo, &["init"]).ok().stdout,
        "already swarm-ready: nothing to change\n"
    );
    assert_eq!(env.read(&hook), text);
}

#[test]
fn init_in_a_clone_whose_remote_is_not_origin_says_how_to_share_the_records() {
    // `git clone -o upstream`: no origin, so no shared remote is chosen and
    // every record would stay in this clone; init must say so and how.
    let env = TestEnv::new();
    let remote = env.root().join("remote.git");
    env.git(
        env.root(),
        &[
            "init",
            "--quiet",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    env.git(
        env.root(),
        &[
            "clone",
            "--quiet",
            "-o",
            "upstream",
            remote.to_str().unwrap(),
            "a",
        ],
    );
    let a = env.root().join("a");
    let first = env.swarm(&a, &["init", "--json"]).ok();
    assert_eq!(first.json()["remote"], serde_json::Value::Null);
    assert!(
        first.stderr.contains("warning: no shared remote")
            && first.stderr.contains("upstream")
            && first.stderr.contains("git swarm init --remote upstream"),
        "{}",
        first.stderr
    );
    // A second run still says it (nothing else to change).
    env.swarm(&a, &["init"])
        .ok()
        .stderr_has("git swarm init --remote upstream");
    // Followed, the warning goes.
    let shared = env.swarm(&a, &["init", "--remote", "upstream"]).ok();
    assert!(
        !shared.stderr.contains("no shared remote"),
        "{}",
        shared.stderr
    );
    // A repository with no remote at all is a swarm of one clone: no warning.
    let solo = env.repo("solo");
    let run = env.swarm(&solo, &["init"]).ok();
    assert!(!run.stderr.contains("no shared remote"), "{}", run.stderr);
}
