//! Issue 30: what an outside attack on the coordination layer broke —
//! forged snapshots, packets their own reader rejects, killed accepts,
//! racing dependency updates, odd working trees, message bodies, release
//! by the typed name, and what `wait` asks the remote for. Each test is the
//! reproduction of one finding; real clones of one bare remote throughout.

use std::path::Path;

use crate::harness::TestEnv;
use crate::snapshot::{
    file, handoff_id, hash_object, lane_with_history, mktree, push_forged, state,
};

#[test]
fn release_takes_a_directory_by_the_name_it_was_reserved_with() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["ann"]);
    let ann = &clones[0];
    env.write(&ann.join("mydir/a.txt"), "a\n");
    let r = env.swarm(ann, &["reserve", "mydir", "--json"]).ok().json();
    assert_eq!(r["entry"]["paths"][0], "mydir/", "{r:#}");
    env.swarm(ann, &["release", "mydir"]).ok();
    env.swarm(ann, &["reserve", "other/"]).ok();
    env.swarm(ann, &["release", "other"]).ok();
    let left = env.swarm(ann, &["reservations", "--json"]).ok().json();
    assert_eq!(
        left["reservations"].as_array().map(Vec::len),
        Some(0),
        "{left:#}"
    );
}

#[test]
fn a_body_file_that_is_not_utf8_is_refused_at_its_offset() {
    let env = TestEnv::new();
    let (_remote, clones) = env.remote_with_clones(&["ann"]);
    let ann = &clones[0];
    let before = env.all_refs(ann);
    let body = env.root().join("body.txt");
    std::fs::write(&body, b"abc \xff\xfe \xc3(").unwrap();
    env.swarm(
        ann,
        &["notify", "bob", "--body-file", body.to_str().unwrap()],
    )
    .err(2, "TEXT_INVALID")
    .stderr_has("offset 4 (0xff)");
    assert_eq!(env.all_refs(ann), before, "nothing written");
    std::fs::write(&body, "caf\u{e9} ok\n").unwrap();
    env.swarm(
        ann,
        &["notify", "bob", "--body-file", body.to_str().unwrap()],
    )
    .ok();
}

#[test]
fn a_rerun_of_ones_own_completed_accept_is_a_no_op() {
    let env = TestEnv::new();
    let (_remote, _a, wt, b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (remote, a, wt, b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (_remote, _a, wt, b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (_remote, _a, wt, b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (_remote, _a, wt, b) = lane_with_history(&env);
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
    use crate::process::{run_and_kill, soak_rounds, Kill, Killed, Rng};
    let mut rng = Rng::new("accept restore kills");
    let mut mid = 0;
    for round in 0..soak_rounds(3) {
        let env = TestEnv::new();
        let (remote, _a, wt, b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
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
    let env = TestEnv::new();
    let (remote, _a, wt, _b) = lane_with_history(&env);
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
        cases: crate::process::soak_rounds(4) as u32,
        ..proptest::test_runner::Config::default()
    })]
    /// Every packet `handoff` publishes is accepted by `accept` on another
    /// clone, its work restored exactly; what it refuses publishes nothing.
    #[test]
    fn every_packet_handoff_publishes_is_accepted_by_accept(
        changes in proptest::collection::vec((lane_name(), 0..5u8), 1..5)
    ) {
        let env = TestEnv::new();
        let (remote, _a, wt, b) = lane_with_history(&env);
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

/// Two clones change dependencies at the same moment, each decided on the
/// same graph (lined up after deciding, released together): A makes wx
/// depend on wy, B wy on wx. Never both: the loser decides again on the
/// winner's graph and is refused as a cycle. `task list` names a cycle
/// that is there anyway.
#[test]
fn racing_dependency_updates_never_leave_a_cycle() {
    use crate::process::{finish, spawn, wait_arrivals};
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "p"]).ok();
    env.swarm(a, &["sync"]).ok();
    for round in 0..4 {
        let (x, y) = (format!("x{round}"), format!("y{round}"));
        for t in [&x, &y] {
            env.swarm(a, &["task", "new", t, "--plan", "p", "--title", "t"])
                .ok();
        }
        env.swarm(b, &["sync"]).ok();
        let gate = env.root().join(format!("deps-gate-{round}"));
        let pause = format!("task:objects={}", gate.display());
        let vars = [("GIT_SWARM_PAUSE", pause.as_str())];
        let one = spawn(
            &env,
            a,
            &vars,
            &["task", "update", &x, "--plan", "p", "--depends-on", &y],
        );
        let two = spawn(
            &env,
            b,
            &vars,
            &["task", "update", &y, "--plan", "p", "--depends-on", &x],
        );
        wait_arrivals(&gate, 2);
        std::fs::write(gate.join("go"), "").unwrap();
        let runs = [finish(one, "ann"), finish(two, "bob")];
        let won: Vec<&crate::harness::Run> = runs.iter().filter(|r| r.code == 0).collect();
        assert_eq!(won.len(), 1, "round {round}: {runs:#?}");
        let lost = runs.iter().find(|r| r.code != 0).unwrap();
        assert!(
            lost.stderr.contains("error[TASK_DEPENDENCY_CYCLE]"),
            "round {round}: {lost:#?}"
        );
        let deps = |t: &str| {
            let yaml = env.git(
                &remote,
                &["show", &format!("refs/swarm/tasks/p/{t}:task.yaml")],
            );
            let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
            v["depends_on"].as_sequence().map(Vec::len).unwrap_or(0)
        };
        assert_eq!(deps(&x) + deps(&y), 1, "round {round}: one edge, no cycle");
    }
    // The plan's journal says what moved it; both clones converge.
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    env.swarm(a, &["plan", "log", "p"])
        .ok()
        .stdout_has("dependencies changed");
    assert_eq!(
        env.git(a, &["rev-parse", "refs/swarm/plans/p"]),
        env.git(b, &["rev-parse", "refs/swarm/plans/p"])
    );
    // A cycle that is there anyway (written by hand): `task list` names it.
    let yaml = env.git(a, &["show", "refs/swarm/tasks/p/x0:task.yaml"]);
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    let has = v["depends_on"].as_sequence().map(Vec::len).unwrap_or(0) > 0;
    let (from, to) = if has { ("y0", "x0") } else { ("x0", "y0") };
    let yaml = env.git(
        a,
        &["show", &format!("refs/swarm/tasks/p/{from}:task.yaml")],
    );
    v = serde_yaml_ng::from_str(&yaml).unwrap();
    v["depends_on"] = serde_yaml_ng::to_value(vec![to]).unwrap();
    let blob = hash_object(&env, a, serde_yaml_ng::to_string(&v).unwrap().as_bytes());
    let tree = mktree(&env, a, &format!("100644 blob {blob}\ttask.yaml"));
    let parent = env.git(a, &["rev-parse", &format!("refs/swarm/tasks/p/{from}")]);
    let forged = env.git(a, &["commit-tree", &tree, "-p", &parent, "-m", "by hand"]);
    env.git(
        a,
        &["update-ref", &format!("refs/swarm/tasks/p/{from}"), &forged],
    );
    env.swarm(a, &["--offline", "task", "list", "--plan", "p"])
        .ok()
        .stderr_has("form a cycle (");
}

/// `wait --for packet` asks the remote only for the packets' refs (and
/// the plan's): the remote never lists the unrelated message refs to it,
/// so a wait's cost does not grow with them (benches/wait.sh measures it).
#[test]
fn wait_asks_the_remote_only_for_the_refs_it_watches() {
    let env = TestEnv::new();
    let (remote, clones) = env.remote_with_clones(&["ann"]);
    let ann = &clones[0];
    env.swarm(ann, &["plan", "new", "p"]).ok();
    env.swarm(ann, &["notify", "bob", "one message"]).ok();
    let head = env.git(&remote, &["rev-parse", "HEAD"]);
    let many: String = (0..200)
        .map(|i| format!("create refs/swarm/messages/_/unrelated-{i} {head}\n"))
        .collect();
    env.git_stdin(&remote, &["update-ref", "--stdin"], many.as_bytes());
    let trace = env.root().join("trace.txt");
    let trace_s = trace.to_str().unwrap().to_string();
    let run = env.swarm_env(
        ann,
        &[
            ("GIT_SWARM_VIRTUAL_WAITS", "1"),
            ("GIT_TRACE_PACKET", &trace_s),
        ],
        &[
            "wait",
            "--for",
            "packet",
            "--plan",
            "p",
            "--timeout",
            "30s",
            "--json",
        ],
    );
    run.err(1, "WAIT_TIMEOUT");
    let traced = std::fs::read_to_string(&trace).unwrap();
    assert!(
        !traced.contains("refs/swarm/messages/"),
        "the remote listed message refs to a wait for packets"
    );
    assert!(
        traced.contains("refs/swarm/packets/p"),
        "asked for the packets"
    );
}
