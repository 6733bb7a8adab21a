//! Hostile files: a plan file or setting that reaches outside the
//! repository (symlinks, paths), inputs that block or never end (FIFOs,
//! devices, oversized files).

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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
