pub(crate) mod coord_remote;
pub(crate) mod gc;
pub(crate) mod offline;
pub(crate) mod publish;
pub(crate) mod small_promises;
pub(crate) mod sync_replay;
pub(crate) mod unreadable_records;
use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::Paused;

#[test]
fn a_plan_saved_in_clone_a_is_checked_out_untracked_in_clone_b() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .run(0, &["plan", "new", "auth", "--title", "Token auth"])
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "checkout", "auth"]).ok();
    let text = format!("{}- [x] design agreed\n", env.read(&a.join("PLAN.md")));
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(
        a,
        &["--offline", "plan", "save", "auth", "-m", "design agreed"],
    )
    .ok();
    let out = env.swarm(a, &["sync", "--json"]).ok().json();
    assert_eq!(out["pushed"], serde_json::json!(["refs/swarm/plans/auth"]));
    assert_eq!(out["pushes"], 1);
    // The remote holds exactly our ref, and the mirror agrees.
    let local = env.refs(a, "refs/swarm/plans/auth")["refs/swarm/plans/auth"].clone();
    assert_eq!(
        env.refs(&remote, "refs/swarm")["refs/swarm/plans/auth"],
        local
    );
    assert_eq!(
        env.refs(a, "refs/swarm-remotes/origin/plans/auth")["refs/swarm-remotes/origin/plans/auth"],
        local
    );

    env.swarm(b, &["sync"])
        .ok()
        .stdout_has("pulled   refs/swarm/plans/auth");
    env.swarm(b, &["plan", "checkout", "auth"]).ok();
    assert_eq!(env.read(&b.join("PLAN.md")), text);
    assert_eq!(env.git(b, &["status", "--porcelain"]), "");
    assert_eq!(env.git(b, &["ls-files", "PLAN.md"]), "");
    // Nothing left to do on either side.
    env.swarm(b, &["sync"]).ok().stdout_has("up to date");
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
}

#[test]
fn two_clones_racing_to_publish_the_same_new_plan_one_wins_one_gets_exit_3() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    // Both created offline (online, the second `plan new` is refused).
    env.swarm(
        a,
        &["--offline", "plan", "new", "auth", "--title", "alice's"],
    )
    .ok();
    env.swarm(b, &["--offline", "plan", "new", "auth", "--title", "bob's"])
        .ok();
    // bob also has an unrelated plan that must still be published.
    env.swarm(b, &["--offline", "plan", "new", "billing"]).ok();
    let b_before = env.refs(b, "refs/swarm/plans");

    // Both fetch and decide to publish their auth (the remote has none),
    // and wait right before the push; alice's goes first.
    let pa = Paused::at(&env, a, "sync:reconciled", &[], &["sync", "--json"]);
    let pb = Paused::at(&env, b, "sync:reconciled", &[], &["sync", "--json"]);
    let ra = pa.release();
    let rb = pb.release();
    let (winner, loser, loser_dir, loser_before) = (&ra, &rb, b, &b_before);
    let won = winner.json();
    assert_eq!(winner.code, 0, "{winner:#?}");
    assert_eq!(won["attempts"], 1, "{won:#}");
    assert!(won["pushed"].to_string().contains("refs/swarm/plans/auth"));
    // bob's push expected no auth on the remote: rejected as a lost race,
    // retried from a fresh fetch, which found alice's unrelated record.
    assert_eq!(loser.code, 3, "{loser:#?}");
    let err = loser.json();
    assert_eq!(err["error"]["code"], "PLAN_CONFLICT");
    assert_eq!(err["error"]["detail"]["attempts"], 2, "{err:#}");
    assert_eq!(err["error"]["detail"]["pushes"], 2, "{err:#}");
    loser.expect_stderr("refs/swarm/plans/auth");
    // The loser's own auth record is untouched.
    assert_eq!(
        env.refs(loser_dir, "refs/swarm/plans/auth"),
        loser_before
            .iter()
            .filter(|(k, _)| k.ends_with("/auth"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    );
    // The remote's auth is the winner's, and every other ref still synced.
    let remote_refs = env.refs(&remote, "refs/swarm/plans");
    let winner_dir = a;
    assert_eq!(
        remote_refs["refs/swarm/plans/auth"],
        env.refs(winner_dir, "refs/swarm/plans/auth")["refs/swarm/plans/auth"]
    );
    assert_eq!(
        remote_refs["refs/swarm/plans/billing"],
        b_before["refs/swarm/plans/billing"]
    );
}

#[test]
fn both_sides_saving_one_plan_are_joined_by_a_merge_commit() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    // alice edits the text; bob sets the contract: different parts of the record.
    env.swarm(a, &["plan", "checkout", "auth"]).ok();
    env.write(&a.join("PLAN.md"), "alice's text\n");
    env.swarm(a, &["plan", "save", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["plan", "checkout", "auth"]).ok();
    env.swarm(b, &["plan", "save", "auth", "--contract", "v2"])
        .ok();
    let out = env.swarm(b, &["sync", "--json"]).ok().json();
    assert_eq!(out["merged"], serde_json::json!(["refs/swarm/plans/auth"]));
    let tip = env.refs(&remote, "refs/swarm/plans/auth")["refs/swarm/plans/auth"].clone();
    assert_eq!(
        env.git(b, &["rev-list", "--parents", "-1", &tip])
            .split(' ')
            .count(),
        3,
        "a merge has two parents"
    );
    assert_eq!(
        env.git(b, &["show", &format!("{tip}:PLAN.md")]),
        "alice's text"
    );
    assert!(env
        .git(b, &["show", &format!("{tip}:plan.yaml")])
        .contains("contract: v2"));
    // The journal holds both saves.
    let log = env.swarm(b, &["plan", "log", "auth", "--json"]).ok().json();
    assert_eq!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == "plan-saved")
            .count(),
        2
    );
    env.swarm(a, &["sync"]).ok();
    assert_eq!(
        env.refs(a, "refs/swarm/plans/auth")["refs/swarm/plans/auth"],
        tip
    );
}

#[test]
fn sync_without_a_remote_is_a_clear_usage_error() {
    let env = TestEnv::new();
    let repo = env.repo("solo");
    env.swarm(&repo, &["sync"]).err(2, "REMOTE_MISSING");
    env.git(&repo, &["config", "swarm.remote", "nope"]);
    env.swarm(&repo, &["sync"]).err(2, "REMOTE_MISSING");
    // Reading commands still work, warning about the setting.
    env.swarm(&repo, &["plan", "list"])
        .ok()
        .stderr_has("warning: remote 'nope' does not exist");
}

#[test]
fn an_unreachable_remote_fails_with_exit_4_and_moves_nothing() {
    let (env, remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").parts();
    let a = &clones[0];
    let before = env.all_refs(a);
    std::fs::rename(&remote, env.root().join("moved.git")).unwrap();
    env.swarm(a, &["sync"]).err(4, "REMOTE_UNREACHABLE");
    assert_eq!(before, env.all_refs(a));
}

#[test]
fn both_sides_editing_the_plan_text_keeps_the_published_one_and_warns_on_stderr() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(
        a,
        &[
            "plan",
            "save",
            "auth",
            "--file",
            env.root().join("a.md").to_str().unwrap(),
        ],
    )
    .err(2, "NOT_FOUND");
    env.write(&env.root().join("a.md"), "alice's text\n");
    env.write(&env.root().join("b.md"), "bob's text\n");
    env.swarm(
        a,
        &[
            "plan",
            "save",
            "auth",
            "--file",
            env.root().join("a.md").to_str().unwrap(),
        ],
    )
    .ok();
    env.swarm(a, &["sync"]).ok();
    let bob_save = env
        .swarm(
            b,
            &[
                "plan",
                "save",
                "auth",
                "--file",
                env.root().join("b.md").to_str().unwrap(),
                "--json",
            ],
        )
        .ok()
        .json();
    // bob's `plan save` exited 0: the sync that cannot keep it says so
    // (exit 3) and names it.
    let run = env.swarm(b, &["sync"]).err(3, "WRITE_LOST");
    run.expect_stdout("merged   refs/swarm/plans/auth");
    assert!(!run.stdout.contains("warning"), "{}", run.stdout);
    let bob_commit = bob_save["commit"].as_str().unwrap();
    run.expect_stdout(&format!("lost     refs/swarm/plans/auth: [WRITE_LOST] refs/swarm/plans/auth:PLAN.md: both sides edited the same lines; kept the published version, yours is at {}:PLAN.md", &bob_commit[..12]));
    run.expect_stderr("refs/swarm-lost/plans/auth@");
    let tip = env.refs(&remote, "refs/swarm/plans/auth")["refs/swarm/plans/auth"].clone();
    assert_eq!(
        env.git(b, &["show", &format!("{tip}:PLAN.md")]),
        "alice's text"
    );
    // bob's text is not lost: it is in the journal, where the warning says.
    assert_eq!(
        env.git(b, &["show", &format!("{}:PLAN.md", &bob_commit[..12])]),
        "bob's text"
    );
}

#[test]
fn a_remote_refusing_on_policy_is_not_a_race_and_is_not_retried() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    env.swarm(a, &["--offline", "plan", "new", "auth"]).ok();
    let hook = remote.join("hooks/pre-receive");
    env.write(
        &hook,
        "#!/bin/sh\necho 'swarm refs are read-only here' >&2\nexit 1\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = env.all_refs(a);
    let run = env.swarm(a, &["sync", "--json"]).code(4);
    let err = run.json();
    assert_eq!(err["error"]["code"], "PUSH_DENIED");
    let hints = err["error"]["hints"].to_string();
    assert!(hints.contains("swarm refs are read-only here"), "{hints}");
    assert!(env.refs(&remote, "refs/swarm").is_empty());
    // Our local record is untouched (only the mirror of the remote was fetched).
    let after: std::collections::BTreeMap<_, _> = env
        .all_refs(a)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("refs/swarm-remotes/"))
        .collect();
    let before: std::collections::BTreeMap<_, _> = before
        .into_iter()
        .filter(|(k, _)| !k.starts_with("refs/swarm-remotes/"))
        .collect();
    assert_eq!(before, after);
}

#[test]
fn lead_push_runs_the_pre_push_guards_on_what_it_publishes() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    env.git(a, &["config", "swarm.protect", "refs/heads/main"]);
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(
        a,
        &["lead", "claim", "--plan", "auth", "--succession", "alice"],
    )
    .ok();
    let main_before = env.refs(&remote, "refs/heads/main");
    // A commit that sneaks the plan file in, past the pre-commit hook.
    env.write(&a.join("PLAN.md"), "# plan\n");
    env.git(a, &["add", "--force", "PLAN.md"]);
    env.git(
        a,
        &["commit", "--quiet", "--no-verify", "-m", "oops, the plan"],
    );
    let lead_before = env.refs(&remote, "refs/swarm/lead");
    env.swarm(
        a,
        &["lead", "push", "--plan", "auth", "HEAD:refs/heads/main"],
    )
    .err(1, "GUARD_FAILED")
    .stderr_has("plan-untracked");
    assert_eq!(env.refs(&remote, "refs/heads/main"), main_before);
    assert_eq!(
        env.refs(&remote, "refs/swarm/lead"),
        lead_before,
        "the lead ref moved with a refused push"
    );
    // Fixed, the fenced publish goes through (the fenced-publish guard lets it pass).
    env.git(a, &["reset", "--quiet", "--hard", "HEAD~1"]);
    env.write(&a.join("src.txt"), "code\n");
    env.git(a, &["add", "src.txt"]);
    env.git(a, &["commit", "--quiet", "-m", "code"]);
    env.swarm(
        a,
        &["lead", "push", "--plan", "auth", "HEAD:refs/heads/main"],
    )
    .ok();
    assert_eq!(
        env.refs(&remote, "refs/heads/main")["refs/heads/main"],
        env.git(a, &["rev-parse", "HEAD"])
    );
}

#[test]
fn init_remote_and_sync_remote_choose_the_shared_remote() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    // A second bare remote, named explicitly.
    let other = env.root().join("other.git");
    env.git(
        env.root(),
        &[
            "clone",
            "--quiet",
            "--bare",
            remote.to_str().unwrap(),
            "other.git",
        ],
    );
    env.git(a, &["remote", "add", "upstream", other.to_str().unwrap()]);
    let out = env
        .swarm(a, &["init", "--remote", "upstream", "--json"])
        .ok()
        .json();
    assert_eq!(out["remote"], "upstream");
    assert_eq!(env.git(a, &["config", "swarm.remote"]), "upstream");
    assert!(env
        .git(a, &["config", "--get-all", "remote.upstream.fetch"])
        .contains("+refs/swarm/*:refs/swarm-remotes/upstream/*"));
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    assert!(env
        .refs(&other, "refs/swarm")
        .contains_key("refs/swarm/plans/auth"));
    assert!(
        env.refs(&remote, "refs/swarm").is_empty(),
        "origin is not the shared remote any more"
    );
    // `sync --remote` syncs with another remote for this one run.
    env.swarm(a, &["sync", "--remote", "origin"]).ok();
    assert!(env
        .refs(&remote, "refs/swarm")
        .contains_key("refs/swarm/plans/auth"));
    env.swarm(a, &["sync", "--remote", "nowhere"])
        .err(2, "REMOTE_MISSING");
}

#[test]
fn plan_edits_on_different_lines_from_two_clones_are_both_kept() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    let start = env.root().join("start.md");
    env.write(&start, "# auth\n\n- step one\n- step two\n- step three\n");
    env.swarm(
        a,
        &["plan", "new", "auth", "--from", start.to_str().unwrap()],
    )
    .ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    // alice ticks the first step, bob adds a last one.
    let (fa, fb) = (env.root().join("a.md"), env.root().join("b.md"));
    env.write(&fa, "# auth\n\n- [x] step one\n- step two\n- step three\n");
    env.write(
        &fb,
        "# auth\n\n- step one\n- step two\n- step three\n- step four (bob)\n",
    );
    env.swarm(a, &["plan", "save", "auth", "--file", fa.to_str().unwrap()])
        .ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["plan", "save", "auth", "--file", fb.to_str().unwrap()])
        .ok();
    let run = env.swarm(b, &["sync", "--json"]).ok();
    assert_eq!(
        run.json()["warnings"],
        serde_json::json!([]),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let tip = env.refs(&remote, "refs/swarm/plans/auth")["refs/swarm/plans/auth"].clone();
    assert_eq!(
        env.git(b, &["show", &format!("{tip}:PLAN.md")]),
        "# auth\n\n- [x] step one\n- step two\n- step three\n- step four (bob)"
    );
    env.swarm(a, &["sync"]).ok();
    env.swarm(a, &["plan", "checkout", "auth"]).ok();
    assert!(env.read(&a.join("PLAN.md")).contains("step four (bob)"));
}

#[test]
fn a_mirror_lock_left_by_a_killed_process_does_not_block_sync() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .parts();
    let b = &clones[1];
    // bob was killed while updating his mirror of refs/swarm/plans/auth.
    let lock = b.join(".git/refs/swarm-remotes/origin/plans/auth.lock");
    env.write(&lock, "");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    env.swarm(b, &["sync"])
        .ok()
        .stdout_has("pulled   refs/swarm/plans/auth");
    assert!(!lock.exists());
    assert!(env
        .refs(b, "refs/swarm/plans")
        .contains_key("refs/swarm/plans/auth"));
}

#[test]
fn sync_shows_its_steps_on_a_terminal_only() {
    let (env, _, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .plan(0, "billing")
        .parts();
    let a = &clones[0];
    // Piped (as in scripts and CI): results only, no progress lines.
    env.swarm(a, &["plan", "close", "billing"]).ok();
    let piped = env.swarm(a, &["sync"]).ok();
    assert!(!piped.stderr.contains("sync:"), "{}", piped.stderr);
    // On a terminal (a pseudo-terminal from `script`), each step is shown.
    env.swarm(a, &["--offline", "plan", "new", "ui"]).ok();
    let out = env
        .command("script", a)
        .args(["-qec", "git swarm sync", "/dev/null"])
        .output()
        .expect("script (util-linux) runs the command on a pseudo-terminal");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{seen}");
    assert!(
        seen.contains("sync: fetching swarm refs from origin"),
        "{seen}"
    );
    assert!(
        seen.contains("sync: publishing 1 ref to origin in one atomic push"),
        "{seen}"
    );
    assert!(seen.contains("pushed   refs/swarm/plans/ui"), "{seen}");
}

/// Regression (seen in the crash test): a `git fetch` killed while pruning
/// the mirror leaves `packed-refs.lock`, and every later sync failed with
/// "Unable to create '…/packed-refs.lock'". A stale one is removed.
#[test]
fn a_packed_refs_lock_left_by_a_killed_fetch_does_not_block_sync() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .plan(0, "old")
        .sync(0)
        .sync(1)
        .parts();
    let b = &clones[1];
    // bob's mirror of `old` is packed; the remote then drops `old`, so
    // bob's next fetch must prune a packed ref, which takes packed-refs.lock.
    env.git(b, &["pack-refs", "--all"]);
    env.git(&remote, &["update-ref", "-d", "refs/swarm/plans/old"]);
    let lock = b.join(".git/packed-refs.lock");
    env.write(&lock, "");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    env.swarm(b, &["sync"]).ok();
    assert!(!lock.exists());
    // bob still holds `old`, so sync publishes it again: both converge.
    assert_eq!(
        env.refs(b, "refs/swarm/plans/"),
        env.refs(&remote, "refs/swarm/plans/")
    );
}

#[test]
fn a_ref_that_holds_no_commit_is_reported_and_every_other_ref_still_syncs() {
    let (env, remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    // Someone pushes a blob where a record lives, and one where none does.
    let blob = env.git_stdin(b, &["hash-object", "-w", "--stdin"], b"x\n");
    env.git(
        b,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "--force",
            "origin",
            &format!("{blob}:refs/swarm/plans/auth"),
            &format!("{blob}:refs/swarm/wip/ghost"),
        ],
    );
    env.swarm(a, &["plan", "new", "ui"]).ok();
    let out = env.swarm(a, &["sync", "--json"]).ok();
    out.expect_stderr("refs/swarm/plans/auth: the published value");
    out.expect_stderr("is not a commit");
    assert!(env
        .refs(&remote, "refs/swarm/plans/")
        .contains_key("refs/swarm/plans/ui"));
    // The local record is untouched; nothing was pulled from the blob.
    assert_ne!(
        env.refs(a, "refs/swarm/plans/")["refs/swarm/plans/auth"],
        blob
    );
    assert!(!env
        .refs(a, "refs/swarm/")
        .contains_key("refs/swarm/wip/ghost"));
}
