//! A handoff carries the lane's uncommitted work as a snapshot commit
//! published with the packet, and `accept` restores it exactly on another
//! clone (every kind of change, odd names, typechanges, EOL attributes);
//! what its reader would refuse is refused before publishing, and a forged
//! snapshot or a killed `accept --worktree` leaves the checkout as it was.
//! Two clones of one bare remote throughout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// Alice's lane `login` (plan auth), its branch pushed with a few committed
/// files; returns (env, remote, alice's clone, the lane worktree, bob's
/// clone).
pub(crate) fn lane_with_history() -> (TestEnv, PathBuf, PathBuf, PathBuf, PathBuf) {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .lane(0, "login")
        .pushed(
            0,
            "login",
            &[
                ("keep.txt", "keep\n"),
                ("staged.txt", "staged v1\n"),
                ("old.txt", "to be renamed\n"),
                ("gone.txt", "to be deleted\n"),
                ("script.sh", "#!/bin/sh\necho hi\n"),
            ],
            "login: base",
        );
    let wt = s.worktree(0, "login");
    let (env, remote, clones) = s.parts();
    (env, remote, clones[0].clone(), wt, clones[1].clone())
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
    let (env, remote, _a, wt, b) = lane_with_history();
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
    let (env, remote, _a, wt, b) = lane_with_history();
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
    let (env, remote, a, wt, _b) = lane_with_history();
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
    let (env, remote, a, wt, _b) = lane_with_history();
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
    let (env, remote, a, wt, _b) = lane_with_history();
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
    let (env, remote, a, wt, b) = lane_with_history();
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
    let (env, remote, _a, wt, _b) = lane_with_history();
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
    let (env, remote, _a, wt, b) = lane_with_history();
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
    let (env, remote, a, wt, b) = lane_with_history();
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
    let (env, remote, a, wt, b) = lane_with_history();
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
    let (env, remote, _a, wt, _b) = lane_with_history();
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
    let (env, _remote, a, wt, b) = lane_with_history();
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
    let (env, _remote, _a, wt, b) = lane_with_history();
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
    let (env, _remote, _a, wt, _b) = lane_with_history();
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

#[test]
fn a_rerun_of_ones_own_completed_accept_is_a_no_op() {
    let (env, _remote, _a, wt, b) = lane_with_history();
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    let args = [
        "--as",
        "dave",
        "accept",
        &id,
        "--worktree",
        succ.to_str().unwrap(),
    ];
    env.swarm(&b, &args).ok();
    let refs = env.all_refs(&b);
    let again = env.swarm(&b, &args).ok();
    again.expect_stdout("already accepted by you (dave)");
    assert_eq!(env.all_refs(&b), refs, "a no-op writes nothing");
    env.swarm(&succ, &["--as", "dave", "accept", &id]).ok();
    assert_eq!(
        file(&succ, "note.txt").map(|f| f.0),
        Some(b"mid-edit\n".to_vec())
    );
    // Someone else still cannot.
    env.swarm(&succ, &["--as", "erin", "accept", &id])
        .err(3, "PACKET_ALREADY_ACCEPTED");
}

/// Every file under `dir` but `.git`: path -> (bytes or link target, mode bits).
fn files(dir: &Path) -> std::collections::BTreeMap<String, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            // The lane's plan file is never part of the work.
            if rel == ".git" || rel == "PLAN.md" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let bytes = if meta.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(rel, (bytes, meta.permissions().mode()));
        }
    }
    out
}

/// What a refused `accept` must leave as it was: `git status
/// --porcelain=v2`, the index, and every file's bytes and mode.
type Checkout = (
    String,
    String,
    std::collections::BTreeMap<String, (Vec<u8>, u32)>,
);

fn checkout(env: &TestEnv, dir: &Path) -> Checkout {
    (
        env.git(dir, &["status", "--porcelain=v2", "--untracked-files=all"]),
        env.git(dir, &["ls-files", "--stage", "--debug"])
            .lines()
            .filter(|l| {
                !l.trim_start().starts_with("ctime") && !l.trim_start().starts_with("mtime")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        files(dir),
    )
}

/// Publish, in place of packet `id`'s snapshot, a commit whose working
/// tree is the real one's plus `work` (mktree lines) and whose staged
/// tree is the real one's plus `staged`, and rewrite the packet to name
/// it, as whoever can push to the remote could.
fn forge(env: &TestEnv, dir: &Path, id: &str, work: &[String], staged: &[String]) -> String {
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
    let with = |rev: &str, extra: &[String]| {
        let mut lines = env.git(dir, &["ls-tree", rev]);
        for e in extra {
            let name = e.split('\t').nth(1).unwrap();
            lines = lines
                .lines()
                .filter(|l| l.split('\t').nth(1) != Some(name))
                .collect::<Vec<_>>()
                .join("\n");
            lines.push('\n');
            lines.push_str(e);
        }
        mktree(env, dir, lines.trim_start())
    };
    let staged_tree = with(&format!("{snap}^2"), staged);
    let staged_commit = env.git(
        dir,
        &[
            "commit-tree",
            &staged_tree,
            "-p",
            &format!("{snap}^1"),
            "-m",
            "staged",
        ],
    );
    let tree = with(&snap, work);
    let forged = env.git(
        dir,
        &[
            "commit-tree",
            &tree,
            "-p",
            &format!("{snap}^1"),
            "-p",
            &staged_commit,
            "-m",
            "snapshot",
        ],
    );
    push_forged(env, dir, id, &snap, forged)
}

#[test]
fn a_forged_snapshot_refused_by_accept_changes_nothing_in_the_checkout() {
    let (env, remote, a, wt, b) = lane_with_history();
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let outside = env.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    env.git(&b, &["fetch", "--quiet", "origin"]);
    env.git(&b, &["switch", "--quiet", "feat/login"]);
    let packet_ref = format!("refs/swarm/packets/auth/{id}");
    let payload = hash_object(&env, &a, b"payload\n");
    let target = hash_object(&env, &a, outside.to_str().unwrap().as_bytes());
    let pwned = mktree(&env, &a, &format!("100644 blob {payload}\tPWNED"));
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    // (working-tree entries, staged entries, the code it must be refused with)
    let variants: Vec<(Vec<String>, Vec<String>, &str)> = vec![
        // The finding: an outside symlink staged, a directory under it in
        // the working tree.
        (
            vec![format!("040000 tree {pwned}\tsd")],
            vec![format!("120000 blob {target}\tsd")],
            "",
        ),
        // Modes outside git's set.
        (
            vec![format!("100600 blob {payload}\todd.txt")],
            vec![],
            "SNAPSHOT_UNSAFE",
        ),
        (
            vec![format!("120755 blob {target}\todd-link")],
            vec![],
            "SNAPSHOT_UNSAFE",
        ),
        (
            vec![format!("100600 blob {payload}\tnote.txt")],
            vec![],
            "SNAPSHOT_UNSAFE",
        ),
        // A file the packet does not list: fails the final comparison.
        (vec![format!("100644 blob {payload}\twork.txt")], vec![], ""),
        // A gitlink.
        (
            vec![format!("160000 commit {head}\tsm")],
            vec![format!("160000 commit {head}\tsm")],
            "",
        ),
        // Staged only: a path the packet does not list.
        (
            vec![],
            vec![format!("100644 blob {payload}\tstaged-only.txt")],
            "",
        ),
    ];
    for (i, (work, staged, code)) in variants.iter().enumerate() {
        forge(&env, &a, &id, work, staged);
        let published = env.git(&remote, &["rev-parse", &packet_ref]);
        let before = checkout(&env, &b);
        let run = env.swarm(&b, &["accept", &id]);
        assert_eq!(run.code, 1, "variant {i}: {run:#?}");
        if !code.is_empty() {
            run.expect_stderr(&format!("error[{code}]"));
        }
        assert_eq!(
            checkout(&env, &b),
            before,
            "variant {i}: the checkout changed: {run:#?}"
        );
        assert!(!outside.join("PWNED").exists(), "variant {i}");
        assert_eq!(
            env.git(&remote, &["rev-parse", &packet_ref]),
            published,
            "variant {i}"
        );
    }
}

/// Names the reader refuses (control characters, bidi controls, TAB,
/// backslash): `handoff` refuses them before publishing anything, naming
/// the path, so no packet is published that its successor cannot take.
#[test]
fn handoff_refuses_what_its_reader_would_refuse_before_publishing() {
    let (env, remote, _a, wt, _b) = lane_with_history();
    let published = env.all_refs(&remote);
    for name in [
        "new\nline.txt",
        "cr\rx",
        "esc\u{1b}[2J",
        "rlo\u{202e}txt",
        "tab\tx",
        "back\\slash",
    ] {
        std::fs::write(wt.join(name), "x\n").unwrap();
        let run = env.swarm(&wt, &["handoff", "--reason", "usage_limit"]);
        assert_eq!(run.code, 1, "{name:?}: {run:#?}");
        run.expect_stderr("error[SNAPSHOT_UNSUPPORTED]");
        assert_eq!(env.all_refs(&remote), published, "{name:?}: published");
        std::fs::remove_file(wt.join(name)).unwrap();
    }
}

/// A staged submodule (or an untracked nested repository) is refused at
/// handoff with its path named, not at accept.
#[test]
fn handoff_refuses_a_staged_submodule_by_name() {
    let (env, remote, _a, wt, _b) = lane_with_history();
    let published = env.all_refs(&remote);
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    env.git(
        &wt,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},sm"),
        ],
    );
    let run = env.swarm(&wt, &["handoff", "--reason", "usage_limit"]);
    assert_eq!(run.code, 1, "{run:#?}");
    run.expect_stderr("error[SNAPSHOT_UNSUPPORTED]");
    run.expect_stderr("sm");
    assert_eq!(env.all_refs(&remote), published);
}

/// A tracked directory replaced by a file, a file by a directory, a file
/// by a symlink: handed off and restored exactly.
#[test]
fn typechanges_are_handed_off_and_restored_exactly() {
    let (env, _remote, _a, wt, b) = lane_with_history();
    env.write(&wt.join("d/x"), "x\n");
    env.write(&wt.join("f"), "f\n");
    env.write(&wt.join("l"), "l\n");
    env.git(&wt, &["add", "d", "f", "l"]);
    env.git(&wt, &["commit", "--quiet", "--no-verify", "-m", "shapes"]);
    env.git(
        &wt,
        &["push", "--quiet", "--no-verify", "origin", "feat/login"],
    );
    std::fs::remove_dir_all(wt.join("d")).unwrap();
    env.write(&wt.join("d"), "file\n");
    std::fs::remove_file(wt.join("f")).unwrap();
    env.write(&wt.join("f/inner.txt"), "inner\n");
    std::fs::remove_file(wt.join("l")).unwrap();
    std::os::unix::fs::symlink("keep.txt", wt.join("l")).unwrap();
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    assert_eq!(state(&env, &succ), state(&env, &wt));
    assert_eq!(files(&succ), files(&wt));
}

/// An intent-to-add entry (`git add -N`) comes back as one, not untracked.
#[test]
fn an_intent_to_add_entry_is_restored_as_one() {
    let (env, _remote, _a, wt, b) = lane_with_history();
    env.write(&wt.join("ita.txt"), "intent\n");
    env.git(&wt, &["add", "-N", "ita.txt"]);
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    assert_eq!(state(&env, &succ), state(&env, &wt));
}

/// `eol=crlf` and `text` attributes: the working tree's bytes and the
/// index's blobs travel as they are and are restored without filters.
#[test]
fn eol_attributes_do_not_make_accept_impossible() {
    let (env, _remote, _a, wt, b) = lane_with_history();
    env.write(
        &wt.join(".gitattributes"),
        "crlf.txt text eol=crlf\nmixed.txt text\n",
    );
    env.write(&wt.join("crlf.txt"), "one\r\ntwo\r\n");
    env.write(&wt.join("mixed.txt"), "one\r\ntwo\n");
    env.git(&wt, &["add", "."]);
    env.git(&wt, &["commit", "--quiet", "--no-verify", "-m", "attrs"]);
    env.git(
        &wt,
        &["push", "--quiet", "--no-verify", "origin", "feat/login"],
    );
    std::fs::write(wt.join("crlf.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::write(wt.join("mixed.txt"), "a\r\nb\nc\r\n").unwrap();
    std::fs::write(wt.join("staged.txt"), "staged\r\nv2\n").unwrap();
    env.git(&wt, &["add", "staged.txt"]);
    let id = handoff_id(&env, &wt);
    let succ = b.join("succ");
    env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()])
        .ok();
    assert_eq!(state(&env, &succ), state(&env, &wt));
    assert_eq!(files(&succ), files(&wt));
}

/// `accept --worktree` SIGKILLed in the middle of the restore (at the
/// point after its first file, then at random moments later): the same
/// command run again converges — the worktree holds the work exactly, the
/// acceptance is published once, the worktree is not locked and `git
/// commit` works there.
#[test]
fn a_killed_accept_worktree_rerun_converges() {
    use crate::support::process::{run_and_kill, soak_rounds, Kill, Killed, Rng};
    let mut rng = Rng::new("accept restore kills");
    let mut mid = 0;
    for round in 0..soak_rounds(3) {
        let (env, remote, _a, wt, b) = lane_with_history();
        for i in 0..6 {
            env.write(&wt.join(format!("n{i}.txt")), &format!("note {i}\n"));
        }
        env.write(&wt.join("keep.txt"), "edited\n");
        env.write(&wt.join("d/deep.txt"), "deep\n");
        let id = handoff_id(&env, &wt);
        let succ = b.join("succ");
        let shown = succ.to_str().unwrap().to_string();
        let args = ["--as", "dave", "accept", &id, "--worktree", &shown];
        let kill = if round == 0 {
            Kill::AtPoint
        } else {
            Kill::After(rng.below(60))
        };
        if run_and_kill(&env, &b, "accept:restore", &args, kill) == Killed::MidWrite {
            mid += 1;
        }
        env.swarm(&b, &args).ok();
        assert_eq!(files(&succ), files(&wt), "round {round}");
        assert_eq!(state(&env, &succ), state(&env, &wt), "round {round}");
        let packet_ref = format!("refs/swarm/packets/auth/{id}");
        assert_eq!(env.git(&remote, &["rev-list", "--count", &packet_ref]), "2");
        let listed = env.git(&b, &["worktree", "list", "--porcelain"]);
        assert!(!listed.contains("locked"), "{listed}");
        env.git(&succ, &["add", "-A"]);
        env.git(&succ, &["commit", "--quiet", "--no-verify", "-m", "go on"]);
    }
    assert!(mid >= 1, "no kill landed mid-restore");
}

/// What a `git worktree add` killed half-way leaves (the worktree locked
/// "initializing", `HEAD.lock`) and a stale lock on the branch: `accept
/// --worktree` clears both, as `lane new` does, and the successor commits.
#[test]
fn accept_worktree_clears_what_a_killed_worktree_add_left() {
    let (env, remote, _a, wt, _b) = lane_with_history();
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let carol = env.clone_remote(&remote, "carol");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let age = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    let lock = carol.join(".git/refs/heads/feat/login.lock");
    env.write(&lock, "");
    age(&lock);
    let succ = carol.join("succ");
    env.swarm(
        &carol,
        &["accept", &id, "--worktree", succ.to_str().unwrap()],
    )
    .ok()
    .stdout_has("stale lock");
    assert!(!lock.exists());
    env.git(&succ, &["add", "-A"]);
    env.git(&succ, &["commit", "--quiet", "--no-verify", "-m", "go on"]);
}

#[test]
fn accept_worktree_clears_a_worktree_a_killed_add_left_locked() {
    let (env, remote, _a, wt, _b) = lane_with_history();
    env.write(&wt.join("note.txt"), "mid-edit\n");
    let id = handoff_id(&env, &wt);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let age = |p: &Path| {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    // The half-made worktree: locked as git's own add leaves it.
    let carol2 = env.clone_remote(&remote, "carol2");
    env.git(&carol2, &["fetch", "--quiet", "origin"]);
    let succ2 = carol2.join("succ");
    env.git(
        &carol2,
        &[
            "worktree",
            "add",
            "--quiet",
            succ2.to_str().unwrap(),
            "-b",
            "feat/login",
            "origin/feat/login",
        ],
    );
    let admin = carol2.join(".git/worktrees/succ");
    env.write(&admin.join("locked"), "initializing");
    env.write(&admin.join("HEAD.lock"), "");
    age(&admin.join("HEAD.lock"));
    env.swarm(
        &carol2,
        &["accept", &id, "--worktree", succ2.to_str().unwrap()],
    )
    .ok()
    .stdout_has("half-made");
    assert!(!admin.join("locked").exists());
    assert!(!admin.join("HEAD.lock").exists());
    env.git(&succ2, &["add", "-A"]);
    env.git(&succ2, &["commit", "--quiet", "--no-verify", "-m", "go on"]);
}

/// A name for a file of the lane: plain, or with one character some
/// reader may mind.
fn lane_name() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    (
        "[a-z]{1,4}",
        proptest::option::of(prop_oneof![
            Just('\n'),
            Just('\t'),
            Just('\\'),
            Just('\u{1b}'),
            Just('\u{202e}'),
            Just(' '),
            Just('é'),
            Just(':'),
        ]),
        "[a-z]{0,3}",
    )
        .prop_map(|(a, c, b)| format!("{a}{}{b}", c.map(String::from).unwrap_or_default()))
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: crate::support::process::soak_rounds(4) as u32,
        ..proptest::test_runner::Config::default()
    })]
    /// Every packet `handoff` publishes is accepted by `accept` on another
    /// clone, its work restored exactly; what it refuses publishes nothing.
    #[test]
    fn every_packet_handoff_publishes_is_accepted_by_accept(
        changes in proptest::collection::vec((lane_name(), 0..5u8), 1..5)
    ) {
        let (env, remote, _a, wt, b) = lane_with_history();
        for (i, (name, kind)) in changes.iter().enumerate() {
            let name = format!("{name}{i}");
            match kind {
                0 => std::fs::write(wt.join(&name), format!("untracked {i}\n")).unwrap(),
                1 => std::fs::write(wt.join("keep.txt"), format!("edited {i}\n")).unwrap(),
                2 => {
                    std::fs::write(wt.join(&name), format!("staged {i}\r\n")).unwrap();
                    env.git(&wt, &["add", "--", &name]);
                }
                3 => std::os::unix::fs::symlink("keep.txt", wt.join(&name)).unwrap(),
                _ => {
                    std::fs::create_dir_all(wt.join(&name)).unwrap();
                    std::fs::write(wt.join(&name).join("inner"), b"\x00\xffbin").unwrap();
                }
            }
        }
        let before = env.all_refs(&remote);
        let handoff = env.swarm(&wt, &["handoff", "--reason", "usage_limit", "--json"]);
        if handoff.code != 0 {
            proptest::prop_assert_eq!(handoff.code, 1, "{:#?}", handoff);
            proptest::prop_assert!(handoff.stderr.contains("error[SNAPSHOT_UNSUPPORTED]"), "{:#?}", handoff);
            proptest::prop_assert_eq!(env.all_refs(&remote), before);
            return Ok(());
        }
        let id = handoff.json()["id"].as_str().unwrap().to_string();
        let succ = b.join("succ");
        let accepted = env.swarm(&b, &["accept", &id, "--worktree", succ.to_str().unwrap()]);
        proptest::prop_assert_eq!(accepted.code, 0, "{:?}: {:#?}", changes, accepted);
        proptest::prop_assert_eq!(state(&env, &succ), state(&env, &wt));
        proptest::prop_assert_eq!(files(&succ), files(&wt));
    }
}
