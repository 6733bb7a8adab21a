//! Issue 18: a handoff carries the lane's uncommitted work as a snapshot
//! commit published with the packet, and `accept` restores it on another
//! clone. Two clones of one bare remote throughout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::harness::TestEnv;

/// Alice's lane `login` (plan auth), its branch pushed with a few committed
/// files; returns (remote, alice's clone, the lane worktree, bob's clone).
pub(crate) fn lane_with_history(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (remote, clones) = env.remote_with_clones(&["alice", "bob"]);
    let (a, b) = (clones[0].clone(), clones[1].clone());
    env.swarm(&a, &["plan", "new", "auth"]).ok();
    env.swarm(&a, &["sync"]).ok();
    env.swarm(&a, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = a.join("_swarm-worktrees").join("login");
    for (name, text) in [
        ("keep.txt", "keep\n"),
        ("staged.txt", "staged v1\n"),
        ("old.txt", "to be renamed\n"),
        ("gone.txt", "to be deleted\n"),
        ("script.sh", "#!/bin/sh\necho hi\n"),
    ] {
        env.write(&wt.join(name), text);
    }
    env.git(&wt, &["add", "."]);
    env.git(&wt, &["commit", "--quiet", "-m", "login: base"]);
    env.git(
        &wt,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "-u",
            "origin",
            "feat/login",
        ],
    );
    (remote, a, wt, b)
}

fn binary() -> Vec<u8> {
    (0..=255u8).cycle().take(3000).collect()
}

/// Every kind of uncommitted change at once.
fn mid_edit(env: &TestEnv, wt: &Path) {
    env.write(&wt.join("staged.txt"), "staged v2\n");
    env.git(wt, &["add", "staged.txt"]);
    env.write(&wt.join("keep.txt"), "keep, edited but not staged\n");
    env.write(&wt.join("new.txt"), "untracked\n");
    env.write(&wt.join("dir/deep.txt"), "untracked, nested\n");
    std::fs::remove_file(wt.join("gone.txt")).unwrap();
    env.git(wt, &["mv", "old.txt", "renamed.txt"]);
    std::fs::set_permissions(wt.join("script.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(wt.join("blob.bin"), binary()).unwrap();
    std::fs::write(
        wt.join("staged.bin"),
        binary().iter().rev().copied().collect::<Vec<_>>(),
    )
    .unwrap();
    env.git(wt, &["add", "staged.bin"]);
}

const PATHS: &[&str] = &[
    "keep.txt",
    "staged.txt",
    "renamed.txt",
    "script.sh",
    "new.txt",
    "dir/deep.txt",
    "blob.bin",
    "staged.bin",
    "old.txt",
    "gone.txt",
];

/// Bytes and executable bit of a path, None when absent.
pub(crate) fn file(dir: &Path, path: &str) -> Option<(Vec<u8>, bool)> {
    let full = dir.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    Some((
        std::fs::read(&full).unwrap(),
        meta.permissions().mode() & 0o111 != 0,
    ))
}

pub(crate) fn handoff_id(env: &TestEnv, wt: &Path) -> String {
    env.swarm(wt, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// What `git status` and the index say, to compare two checkouts.
pub(crate) fn state(env: &TestEnv, dir: &Path) -> (String, String) {
    (
        env.git(dir, &["status", "--porcelain=v1", "--untracked-files=all"]),
        env.git(dir, &["ls-files", "--stage"]),
    )
}

#[test]
fn every_kind_of_uncommitted_change_arrives_byte_identical_on_the_other_clone() {
    let env = TestEnv::new();
    let (remote, _a, wt, b) = lane_with_history(&env);
    mid_edit(&env, &wt);
    let before = state(&env, &wt);
    let files_before: Vec<_> = PATHS.iter().map(|p| file(&wt, p)).collect();
    let index_before = std::fs::read(env.git(&wt, &["rev-parse", "--git-path", "index"]))
        .or_else(|_| std::fs::read(wt.join(env.git(&wt, &["rev-parse", "--git-path", "index"]))))
        .unwrap();

    let id = handoff_id(&env, &wt);

    // The predecessor's checkout is exactly as it was: files, status, index.
    assert_eq!(state(&env, &wt), before);
    let files_after: Vec<_> = PATHS.iter().map(|p| file(&wt, p)).collect();
    assert_eq!(files_after, files_before);
    let index_path = env.git(
        &wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    assert_eq!(
        std::fs::read(index_path).unwrap(),
        index_before,
        "the index was rewritten"
    );
    // The snapshot went out with the packet, and the packet records it.
    let snap_ref = format!("refs/swarm/snapshots/auth/{id}");
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/auth/{id}:packet.yaml")],
    );
    let snap = env.git(&remote, &["rev-parse", &snap_ref]);
    assert!(packet.contains(&format!("commit: {snap}")), "{packet}");
    for (path, st) in [
        ("keep.txt", "unstaged"),
        ("staged.txt", "staged"),
        ("renamed.txt", "renamed"),
        ("new.txt", "untracked"),
        ("gone.txt", "deleted"),
        ("blob.bin", "untracked"),
    ] {
        assert!(
            packet.contains(&format!("  {path}:\n      state: {st}\n")),
            "{path} {st}: {packet}"
        );
    }
    // `packet show` lists the paths and their sizes.
    env.swarm(&b, &["packet", "show", &id])
        .ok()
        .stdout_has("snapshot:")
        .stdout_has("blob.bin:")
        .stdout_has("size: 3000");

    // Bob continues on his clone, in a worktree accept creates.
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok()
        .stdout_has("restored the uncommitted work from the snapshot: 9 paths (6098 bytes)");
    for (p, want) in PATHS.iter().zip(&files_before) {
        assert_eq!(&file(&succ, p), want, "{p} differs after accept");
    }
    assert_eq!(file(&succ, "old.txt"), None);
    assert_eq!(file(&succ, "gone.txt"), None);
    assert_eq!(
        state(&env, &succ).0,
        before.0,
        "staged/unstaged/untracked states differ"
    );
    // Accepted at the remote, the lane handed over to bob.
    let acc = env.git(
        &remote,
        &[
            "show",
            &format!("refs/swarm/packets/auth/{id}:acceptance.yaml"),
        ],
    );
    assert!(acc.contains("accepted_by: bob"), "{acc}");
}

#[test]
fn a_successor_with_a_conflicting_edit_is_refused_and_keeps_it() {
    let env = TestEnv::new();
    let (remote, _a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("keep.txt"), "alice's edit\n");
    let id = handoff_id(&env, &wt);
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    env.write(&b.join("keep.txt"), "bob's own edit\n");
    let packet = format!("refs/swarm/packets/auth/{id}");
    let published = env.git(&remote, &["rev-parse", &packet]);
    env.swarm(&b, &["accept", &id])
        .err(1, "PACKET_MISMATCH")
        .stderr_has("keep.txt");
    assert_eq!(env.read(&b.join("keep.txt")), "bob's own edit\n");
    assert_eq!(
        env.git(&remote, &["rev-parse", &packet]),
        published,
        "accepted"
    );

    // Clean, with --no-restore: today's behaviour, the work is missing.
    env.git(&b, &["checkout", "--quiet", "--", "keep.txt"]);
    env.swarm(&b, &["accept", &id, "--no-restore"])
        .err(1, "PACKET_MISMATCH")
        .stderr_has("keep.txt");
    assert_eq!(env.read(&b.join("keep.txt")), "keep\n");
    // Without it, the work is restored and accepted.
    let json = env.swarm(&b, &["accept", &id, "--json"]).ok().json();
    assert_eq!(json["restored"], true);
    assert_eq!(env.read(&b.join("keep.txt")), "alice's edit\n");
}

#[test]
fn a_secret_in_an_untracked_file_refuses_the_handoff_with_nothing_published() {
    let env = TestEnv::new();
    let (remote, a, wt, _b) = lane_with_history(&env);
    env.write(
        &wt.join("notes/creds.txt"),
        "hello\ndb password=Tr0ub4dor&3\n",
    );
    let local = env.all_refs(&a);
    let published = env.all_refs(&remote);
    let run = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit"])
        .err(2, "PACKET_SECRET")
        .stderr_has("`notes/creds.txt line 2`");
    assert!(!run.stderr.contains("Tr0ub4dor"), "{}", run.stderr);
    assert_eq!(env.all_refs(&a), local);
    assert_eq!(env.all_refs(&remote), published);
    assert_eq!(
        env.git(&wt, &["status", "--porcelain"]),
        "?? notes/",
        "the work was touched"
    );
}

#[test]
fn a_secret_only_in_the_staged_version_refuses_the_handoff_and_the_lane_snapshot() {
    let env = TestEnv::new();
    let (remote, a, wt, _b) = lane_with_history(&env);
    // Staged with a credential, then overwritten in the file: the staged
    // tree (the snapshot's second parent) would carry it.
    env.write(&wt.join("staged.txt"), "db password=Tr0ub4dor&3\n");
    env.git(&wt, &["add", "staged.txt"]);
    env.write(&wt.join("staged.txt"), "clean now\n");
    let local = env.all_refs(&a);
    let published = env.all_refs(&remote);
    let run = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit"])
        .err(2, "PACKET_SECRET")
        .stderr_has("staged.txt (staged) line 1");
    assert!(!run.stderr.contains("Tr0ub4dor"), "{}", run.stderr);
    let run = env
        .swarm(&wt, &["lane", "snapshot"])
        .err(2, "SNAPSHOT_SECRET");
    assert!(!run.stderr.contains("Tr0ub4dor"), "{}", run.stderr);
    assert_eq!(env.all_refs(&a), local);
    assert_eq!(env.all_refs(&remote), published);
    // A symlink's target and a file's name travel in the snapshot too.
    env.git(&wt, &["reset", "--quiet", "staged.txt"]);
    let token = format!("ghp_{}", "aB3dE5gH7jK9mN2pQ4sT6vW8yZ0cF1aB3dE5g");
    std::os::unix::fs::symlink(&token, wt.join("lnk")).unwrap();
    for args in [
        &["handoff", "--reason", "usage_limit"][..],
        &["lane", "snapshot"],
    ] {
        let run = env.swarm(&wt, args).code(2);
        run.expect_stderr("lnk (symlink target)");
        assert!(!run.stderr.contains(&token), "{}", run.stderr);
    }
    std::fs::remove_file(wt.join("lnk")).unwrap();
    env.write(&wt.join("AKIAIOSFODNN7EXAMPLE"), "x\n");
    let run = env.swarm(&wt, &["lane", "snapshot"]).code(2);
    run.expect_stderr("the name of uncommitted path #");
    assert!(
        !run.stderr.contains("AKIAIOSFODNN7EXAMPLE"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(wt.join("AKIAIOSFODNN7EXAMPLE")).unwrap();
    assert_eq!(env.all_refs(&a), local);
    assert_eq!(env.all_refs(&remote), published);
    // Unstaged again, the work hands off.
    env.swarm(&wt, &["handoff", "--reason", "usage_limit"]).ok();
}

#[test]
fn work_over_the_size_limit_is_refused_with_nothing_published() {
    let env = TestEnv::new();
    let (remote, a, wt, _b) = lane_with_history(&env);
    env.git(&a, &["config", "swarm.snapshotLimit", "1000"]);
    std::fs::write(wt.join("big.bin"), binary()).unwrap();
    let published = env.all_refs(&remote);
    env.swarm(&wt, &["handoff", "--reason", "usage_limit"])
        .err(2, "SNAPSHOT_TOO_LARGE")
        .stderr_has("big.bin (3000 bytes)")
        .stderr_has("swarm.snapshotLimit");
    assert_eq!(env.all_refs(&remote), published);
    assert!(env.refs(&a, "refs/swarm/packets/").is_empty());
    env.git(&a, &["config", "swarm.snapshotLimit", "4000"]);
    env.swarm(&wt, &["handoff", "--reason", "usage_limit"]).ok();
}

#[test]
fn a_kill_between_the_snapshot_and_the_push_publishes_neither_and_a_rerun_works() {
    let env = TestEnv::new();
    let (remote, a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("new.txt"), "half done\n");
    for point in ["handoff:snapshot", "handoff:objects"] {
        let run = env.swarm_env(
            &wt,
            &[("GIT_SWARM_FAILPOINT", point)],
            &["handoff", "--reason", "usage_limit"],
        );
        assert_ne!(run.code, 0, "{point}: not killed");
        for dir in [&remote, &a] {
            assert!(env.refs(dir, "refs/swarm/packets/").is_empty(), "{point}");
            assert!(env.refs(dir, "refs/swarm/snapshots/").is_empty(), "{point}");
        }
    }
    let id = handoff_id(&env, &wt);
    assert_eq!(env.refs(&remote, "refs/swarm/snapshots/").len(), 1);
    assert_eq!(env.refs(&remote, "refs/swarm/packets/").len(), 1);
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    env.swarm(&b, &["accept", &id]).ok();
    assert_eq!(env.read(&b.join("new.txt")), "half done\n");

    // gc archives the snapshot with its accepted packet; the commit stays
    // reachable from the archive, and sync removes the live ref remotely.
    let snap_ref = format!("refs/swarm/snapshots/auth/{id}");
    let snap = env.git(&b, &["rev-parse", &snap_ref]);
    let gc = env
        .swarm(&b, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(gc["archived"]["snapshots"], serde_json::json!([snap_ref]));
    assert_eq!(
        gc["archived"]["packets"],
        serde_json::json!([format!("refs/swarm/packets/auth/{id}")])
    );
    assert!(env.refs(&b, "refs/swarm/snapshots/").is_empty());
    env.git(
        &b,
        &[
            "merge-base",
            "--is-ancestor",
            &snap,
            "refs/swarm/archive/snapshots",
        ],
    );
    env.swarm(&b, &["sync"]).ok();
    assert!(env.refs(&remote, "refs/swarm/snapshots/").is_empty());
    env.git(
        &remote,
        &[
            "merge-base",
            "--is-ancestor",
            &snap,
            "refs/swarm/archive/snapshots",
        ],
    );
}

#[test]
fn a_lane_without_uncommitted_work_hands_off_no_snapshot() {
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
    let id = handoff_id(&env, &wt);
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/auth/{id}:packet.yaml")],
    );
    assert!(!packet.contains("snapshot"), "{packet}");
    assert!(env.refs(&remote, "refs/swarm/snapshots/").is_empty());
}

#[test]
fn a_snapshot_that_has_not_arrived_refuses_accept_with_nothing_recorded() {
    let env = TestEnv::new();
    let (remote, _a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("new.txt"), "x\n");
    let id = handoff_id(&env, &wt);
    // As if the snapshot had been lost at the remote.
    env.git(
        &remote,
        &[
            "update-ref",
            "-d",
            &format!("refs/swarm/snapshots/auth/{id}"),
        ],
    );
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    let packet = format!("refs/swarm/packets/auth/{id}");
    let before = env.git(&remote, &["rev-parse", &packet]);
    env.swarm(&b, &["accept", &id])
        .err(4, "SNAPSHOT_MISSING")
        .stderr_has("--no-restore");
    assert_eq!(env.git(&remote, &["rev-parse", &packet]), before);
    assert_eq!(env.git(&b, &["status", "--porcelain"]), "");
}

#[test]
fn an_offline_handoff_keeps_the_snapshot_here_and_sync_publishes_it() {
    let env = TestEnv::new();
    let (remote, a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("new.txt"), "offline work\n");
    let id = env
        .swarm(
            &wt,
            &["--offline", "handoff", "--reason", "usage_limit", "--json"],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let snap_ref = format!("refs/swarm/snapshots/auth/{id}");
    assert!(env
        .refs(&a, "refs/swarm/snapshots/")
        .contains_key(&snap_ref));
    assert!(env.refs(&remote, "refs/swarm/snapshots/").is_empty());
    env.swarm(&a, &["sync"]).ok();
    assert_eq!(
        env.git(&remote, &["rev-parse", &snap_ref]),
        env.git(&a, &["rev-parse", &snap_ref])
    );
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    env.swarm(&b, &["accept", &id]).ok();
    assert_eq!(env.read(&b.join("new.txt")), "offline work\n");
}

/// Replace the snapshot of packet `id` (plan auth) on the remote with a
/// commit whose tree is the real snapshot's plus `extra` entries (mktree
/// lines), as someone who can push to the remote could; the packet is
/// rewritten to name it. Returns the forged snapshot commit.
pub(crate) fn forge_snapshot(env: &TestEnv, dir: &Path, id: &str, extra: &[String]) -> String {
    let snap_ref = format!("refs/swarm/snapshots/auth/{id}");
    let packet_ref = format!("refs/swarm/packets/auth/{id}");
    env.git(
        dir,
        &[
            "fetch",
            "--quiet",
            "origin",
            &format!("+{snap_ref}:{snap_ref}"),
            &format!("+{packet_ref}:{packet_ref}"),
        ],
    );
    let snap = env.git(dir, &["rev-parse", &snap_ref]);
    let mut lines = env.git(dir, &["ls-tree", &snap]);
    for e in extra {
        lines.push('\n');
        lines.push_str(e);
    }
    let tree = mktree(env, dir, &lines);
    let forged = env.git(
        dir,
        &[
            "commit-tree",
            &tree,
            "-p",
            &format!("{snap}^1"),
            "-p",
            &format!("{snap}^2"),
            "-m",
            "snapshot",
        ],
    );
    push_forged(env, dir, id, &snap, forged)
}

/// Push `forged` in place of packet `id`'s snapshot `snap` (plan auth) and
/// a new packet version naming it, as someone who can push to the remote
/// could; returns `forged`.
pub(crate) fn push_forged(
    env: &TestEnv,
    dir: &Path,
    id: &str,
    snap: &str,
    forged: String,
) -> String {
    let snap_ref = format!("refs/swarm/snapshots/auth/{id}");
    let packet_ref = format!("refs/swarm/packets/auth/{id}");
    let yaml = env
        .git(dir, &["show", &format!("{packet_ref}:packet.yaml")])
        .replace(snap, &forged);
    let blob = hash_object(env, dir, yaml.as_bytes());
    let ptree = mktree(env, dir, &format!("100644 blob {blob}\tpacket.yaml"));
    let packet = env.git(
        dir,
        &["commit-tree", &ptree, "-p", &packet_ref, "-m", "forged"],
    );
    env.git(
        dir,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "--force",
            "origin",
            &format!("{packet}:{packet_ref}"),
            &format!("{forged}:{snap_ref}"),
        ],
    );
    forged
}

pub(crate) fn mktree(env: &TestEnv, dir: &Path, lines: &str) -> String {
    env.git_stdin(
        dir,
        &["mktree", "--missing"],
        format!("{lines}\n").as_bytes(),
    )
}

pub(crate) fn hash_object(env: &TestEnv, dir: &Path, bytes: &[u8]) -> String {
    env.git_stdin(dir, &["hash-object", "-w", "--stdin"], bytes)
}

#[test]
fn a_forged_snapshot_cannot_write_into_git_or_through_a_symlink() {
    let env = TestEnv::new();
    let (remote, a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // bob's main checkout on the lane branch, clean at the packet's head.
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    let hook = b.join(".git/hooks/pre-commit");
    let hook_before = std::fs::read(&hook).ok();
    let packet_ref = format!("refs/swarm/packets/auth/{id}");

    let script = hash_object(&env, &a, b"#!/bin/sh\ntouch PWNED\n");
    let hooks = mktree(&env, &a, &format!("100755 blob {script}\tpre-commit"));
    let dotgit = mktree(&env, &a, &format!("040000 tree {hooks}\thooks"));
    let target = hash_object(&env, &a, outside.to_str().unwrap().as_bytes());
    let pwn = mktree(&env, &a, &format!("100644 blob {script}\tpwn.txt"));
    let variants = [
        vec![format!("040000 tree {dotgit}\t.git")],
        vec![
            format!("120000 blob {target}\tlnk"),
            format!("040000 tree {pwn}\tlnk"),
        ],
    ];
    for (i, extra) in variants.iter().enumerate() {
        forge_snapshot(&env, &a, &id, extra);
        let published = env.git(&remote, &["rev-parse", &packet_ref]);
        let refused = env.swarm(&b, &["accept", &id]).err(1, "SNAPSHOT_UNSAFE");
        refused.expect_stderr("nothing was written or recorded");
        assert_eq!(
            std::fs::read(&hook).ok(),
            hook_before,
            "variant {i}: the hook changed"
        );
        assert!(
            !outside.join("pwn.txt").exists(),
            "variant {i}: wrote through the symlink"
        );
        assert!(
            !b.join("lnk").exists() && !b.join("note.txt").exists(),
            "variant {i}"
        );
        assert_eq!(env.git(&b, &["status", "--porcelain"]), "", "variant {i}");
        assert_eq!(
            env.git(&remote, &["rev-parse", &packet_ref]),
            published,
            "variant {i}: recorded"
        );
    }
    // Nothing ran: a commit in bob's checkout runs the real hook.
    env.write(&b.join("x.txt"), "x\n");
    env.git(&b, &["add", "x.txt"]);
    env.git(&b, &["commit", "--quiet", "-m", "x"]);
    assert!(!b.join("PWNED").exists());
}

#[test]
fn accept_worktree_fetches_the_packet_first_and_takes_its_worktree_back_on_failure() {
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
    // carol's clone is made before the handoff and never syncs.
    let carol = env.clone_remote(&remote, "carol");
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let succ = carol.join("succ");
    env.swarm(
        &carol,
        &[
            "--as",
            "carol",
            "accept",
            &id,
            "--worktree",
            succ.to_str().unwrap(),
        ],
    )
    .ok()
    .stdout_has("restored the uncommitted work");
    assert_eq!(
        file(&succ, "note.txt").map(|f| f.0),
        Some(b"mid-edit\n".to_vec())
    );

    // The branch is checked out there: another --worktree says so.
    let again = carol.join("again");
    env.swarm(
        &carol,
        &[
            "--as",
            "dave",
            "accept",
            &id,
            "--worktree",
            again.to_str().unwrap(),
        ],
    )
    .err(2, "USAGE")
    .stderr_has("feat/login is checked out in the worktree");
    // A second accept elsewhere fails (accepted already): the worktree it
    // made for that is taken away again, the branch is left.
    env.git(
        &carol,
        &["worktree", "remove", "--force", succ.to_str().unwrap()],
    );
    env.swarm(
        &carol,
        &[
            "--as",
            "dave",
            "accept",
            &id,
            "--worktree",
            again.to_str().unwrap(),
        ],
    )
    .err(3, "PACKET_ALREADY_ACCEPTED")
    .stderr_has("was removed again");
    assert!(!again.exists());
    let listed = env.git(&carol, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("again"), "{listed}");
}

#[test]
fn gc_archives_a_snapshot_with_its_packet_never_before_it() {
    let env = TestEnv::new();
    let (_remote, a, wt, b) = lane_with_history(&env);
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    env.swarm(&a, &["sync"]).ok();
    // The packet was accepted a moment ago: too young for a 1-day gc, and so
    // is its snapshot (whose commit carries a fixed date from 1970).
    let young = env
        .swarm(&a, &["gc", "--older-than", "1d", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(young["archived"], serde_json::json!({}), "{young}");
    let out = env
        .swarm(&a, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(
        out["archived"]["snapshots"],
        serde_json::json!([format!("refs/swarm/snapshots/auth/{id}")]),
        "{out}"
    );
    assert_eq!(
        out["archived"]["packets"],
        serde_json::json!([format!("refs/swarm/packets/auth/{id}")]),
        "{out}"
    );
}

#[test]
fn a_symlink_that_became_a_directory_is_restored_deletions_first() {
    let env = TestEnv::new();
    let (_remote, _a, wt, b) = lane_with_history(&env);
    std::os::unix::fs::symlink("keep.txt", wt.join("docs")).unwrap();
    env.git(&wt, &["add", "docs"]);
    env.git(
        &wt,
        &["commit", "--quiet", "--no-verify", "-m", "docs link"],
    );
    env.git(
        &wt,
        &["push", "--quiet", "--no-verify", "origin", "feat/login"],
    );
    // Mid-edit: the link is gone, a real directory stands in its place.
    env.git(&wt, &["rm", "--quiet", "docs"]);
    env.write(&wt.join("docs/guide.md"), "# guide\n");
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    assert!(std::fs::symlink_metadata(succ.join("docs"))
        .unwrap()
        .is_dir());
    assert_eq!(
        file(&succ, "docs/guide.md").map(|f| f.0),
        Some(b"# guide\n".to_vec())
    );
    assert_eq!(state(&env, &succ).0, state(&env, &wt).0);
}

#[test]
fn temporary_indexes_a_killed_snapshot_left_are_removed_once_old() {
    let env = TestEnv::new();
    let (_remote, _a, wt, _b) = lane_with_history(&env);
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let index = env.git(
        &wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let dir = Path::new(&index).parent().unwrap().to_path_buf();
    let old = dir.join("swarm-snapshot-index-99991");
    let young = dir.join("swarm-snapshot-index-99992");
    std::fs::write(&old, b"torn").unwrap();
    std::fs::write(&young, b"in use").unwrap();
    let touched = std::process::Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(&old)
        .status()
        .unwrap();
    assert!(touched.success());
    handoff_id(&env, &wt);
    assert!(!old.exists(), "an hour-old temporary index stays");
    assert!(
        young.exists(),
        "a fresh one (maybe another run's) was removed"
    );
}
