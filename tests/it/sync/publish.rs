//! The one publish rule: every command that writes a record publishes it
//! at once when the remote answers; offline it is kept, said in one
//! wording, counted by `status`, and published by the next command that
//! reaches the remote. Listings work from what the clone knows when the
//! remote cannot be reached, with one warning line. Under the push budget
//! (`swarm.pushBudget`) writes nobody races for are queued in the clone and
//! published with its next push, or by the first command once the budget's
//! window has passed; on a pinned clock (`GIT_SWARM_NOW`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::{Run, TestEnv};

const KEPT: &str = "; `git swarm sync` publishes it";

fn remote_has(env: &TestEnv, remote: &Path, refname: &str) -> Option<String> {
    env.refs(remote, refname).get(refname).cloned()
}

#[test]
fn plan_new_publishes_at_once_and_a_second_clones_plan_new_is_refused_at_once() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(a, &["plan", "new", "auth"])
        .ok()
        .stdout_has("published to origin");
    let published = remote_has(&env, &remote, "refs/swarm/plans/auth");
    assert_eq!(
        published,
        env.refs(a, "refs/swarm/plans/auth")
            .get("refs/swarm/plans/auth")
            .cloned()
    );
    // Bob's status fetches: the plan shows without `sync`.
    env.swarm(b, &["status"]).ok().stdout_has("auth [active]");
    // Bob's own `plan new auth` fetches first and refuses: never a later
    // PLAN_CONFLICT at sync.
    env.swarm(b, &["plan", "new", "auth"])
        .err(2, "PLAN_EXISTS")
        .stderr_has("published by alice");
    // Nothing of bob's was written: his clone only caught up with alice's plan.
    assert_eq!(
        env.refs(b, "refs/swarm/plans/")
            .get("refs/swarm/plans/auth"),
        published.as_ref()
    );
    assert_eq!(
        remote_has(&env, &remote, "refs/swarm/plans/auth"),
        published
    );
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
}

#[test]
fn plan_save_report_lane_rm_prune_and_gc_publish_at_once() {
    let (env, remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").parts();
    let a = &clones[0];
    // plan save
    env.swarm(a, &["plan", "checkout", "auth"]).ok();
    let text = format!("{}- [x] design agreed\n", env.read(&a.join("PLAN.md")));
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(a, &["plan", "save", "auth", "-m", "design agreed"])
        .ok()
        .stdout_has("published to origin: refs/swarm/plans/auth");
    assert_eq!(
        remote_has(&env, &remote, "refs/swarm/plans/auth"),
        env.refs(a, "refs/swarm/plans/auth")
            .get("refs/swarm/plans/auth")
            .cloned()
    );
    // report (a lane's record)
    env.swarm(a, &["lane", "new", "login", "--plan", "auth", "--no-task"])
        .ok();
    let wt = worktree(a, "login");
    let lane_ref = "refs/swarm/lanes/login";
    env.swarm(&wt, &["report", "blocked", "approval", "need", "access"])
        .ok();
    let local = env.refs(a, lane_ref).get(lane_ref).cloned();
    assert_eq!(remote_has(&env, &remote, lane_ref), local);
    // lane rm
    env.swarm(a, &["lane", "rm", "login", "--force"]).ok();
    let local = env.refs(a, lane_ref).get(lane_ref).cloned();
    assert_eq!(remote_has(&env, &remote, lane_ref), local);
    let removed = env.git(&remote, &["show", &format!("{lane_ref}:lane.yaml")]);
    assert!(removed.contains("removed"), "{removed}");
    // lane prune: a merged lane
    env.swarm(a, &["lane", "new", "merged", "--plan", "auth"])
        .ok();
    let wt = worktree(a, "merged");
    env.write(&wt.join("m.rs"), "fn m() {}\n");
    env.git(&wt, &["add", "m.rs"]);
    env.git(&wt, &["commit", "--quiet", "-m", "m"]);
    env.git(
        &wt,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "origin",
            "feat/merged:main",
        ],
    );
    env.git(a, &["fetch", "--quiet", "origin"]);
    env.swarm(a, &["lane", "prune"])
        .ok()
        .stdout_has("removed")
        .stdout_has("merged");
    let merged_ref = "refs/swarm/lanes/merged";
    let local = env.refs(a, merged_ref).get(merged_ref).cloned();
    assert!(local.is_some());
    assert_eq!(remote_has(&env, &remote, merged_ref), local);
    // gc: the removed lanes are archived and their live refs deleted, there too.
    env.swarm(a, &["gc", "--older-than", "0s"]).ok();
    assert_eq!(remote_has(&env, &remote, lane_ref), None);
    assert_eq!(remote_has(&env, &remote, merged_ref), None);
    assert_eq!(
        remote_has(&env, &remote, "refs/swarm/archive/lanes"),
        env.refs(a, "refs/swarm/archive/lanes")
            .get("refs/swarm/archive/lanes")
            .cloned()
    );
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
    assert_eq!(
        env.swarm(a, &["status", "--json"]).ok().json()["unpublished"],
        0
    );
}

#[test]
fn an_offline_write_is_said_in_one_wording_counted_by_status_and_published_by_the_next_command() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    env.swarm(a, &["--offline", "plan", "new", "auth"])
        .ok()
        .stderr_has(&format!(
            "warning: not published: offline (--offline, or no remote){KEPT}"
        ));
    // The remote cannot be reached: the same words.
    let gone = env.root().join("remote.gone");
    std::fs::rename(&remote, &gone).unwrap();
    env.swarm(a, &["plan", "new", "ops"])
        .ok()
        .stderr_has(&format!(
            "warning: not published: remote 'origin' could not be reached{KEPT}"
        ));
    env.swarm(a, &["--offline", "plan", "checkout", "auth"])
        .ok();
    let text = format!("{}- [x] offline edit\n", env.read(&a.join("PLAN.md")));
    env.write(&a.join("PLAN.md"), &text);
    env.swarm(a, &["plan", "save", "auth", "-m", "offline edit"])
        .ok()
        .stderr_has(&format!(
            "warning: not published: remote 'origin' could not be reached{KEPT}"
        ));
    let status = env.swarm(a, &["status"]).ok();
    status.expect_stdout("2 local changes not published: `git swarm sync` publishes them");
    let json = env.swarm(a, &["status", "--json"]).ok().json();
    assert_eq!(json["unpublished"], 2);
    std::fs::rename(&gone, &remote).unwrap();
    assert_eq!(remote_has(&env, &remote, "refs/swarm/plans/auth"), None);
    // The next command that reaches the remote publishes them.
    env.swarm(a, &["plan", "new", "ui"])
        .ok()
        .stdout_has("published to origin: refs/swarm/plans/auth, refs/swarm/plans/ops");
    for plan in ["auth", "ops", "ui"] {
        let r = format!("refs/swarm/plans/{plan}");
        assert_eq!(
            remote_has(&env, &remote, &r),
            env.refs(a, &r).get(&r).cloned(),
            "{plan}"
        );
    }
    assert_eq!(
        env.swarm(a, &["status", "--json"]).ok().json()["unpublished"],
        0
    );
}

#[test]
fn every_listing_works_offline_with_one_warning_naming_the_remote_and_when_it_was_reached() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .task(0, "t1", "first")
        .parts();
    let a = &clones[0];
    env.swarm(a, &["status"]).ok();
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let listings: &[&[&str]] = &[
        &["status"],
        &["task", "list"],
        &["task", "ready"],
        &["task", "show", "t1"],
        &["packets"],
        &["inbox"],
        &["lead", "status", "--plan", "auth"],
        &["reservations"],
        &["forecast"],
    ];
    for args in listings {
        let run = env.swarm(a, args).ok();
        let warnings: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect();
        assert_eq!(
            warnings.len(),
            1,
            "{args:?}: one warning line\n{}",
            run.stderr
        );
        assert!(
            warnings[0].starts_with("warning: remote 'origin' could not be reached (last reached "),
            "{args:?}: {}",
            warnings[0]
        );
        assert!(!run.stderr.contains("fatal:"), "{args:?}: {}", run.stderr);
    }
    // Those that do not reach the remote still read what the clone knows.
    for args in [
        &["reservations"][..],
        &["state"],
        &["lane", "list"],
        &["plan", "list"],
    ] {
        let run = env.swarm(a, args).ok();
        assert!(!run.stderr.contains("fatal:"), "{args:?}: {}", run.stderr);
    }
}

/// Alice's lane `login` (clone 0) gets login.rs committed and its branch
/// pushed, and is handed over: bob (clone 1) switches to the branch and
/// accepts. Returns the swarm and the packet id.
fn handed_over(s: Swarm) -> (Swarm, String) {
    let s = s.pushed(0, "login", &[("login.rs", "fn login() {}\n")], "login");
    let id = s.handoff(0, "login");
    (s.switched(1, "feat/login").run(1, &["accept", &id]), id)
}

#[test]
fn an_interrupted_lane_new_finished_by_a_rerun_publishes_its_lane() {
    let (mut env, remote, clones) = Swarm::new(&["alice", "bob"]).plan(0, "fp2").parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.set_env("GIT_SWARM_FAILPOINT", "lane:record");
    let killed = env.swarm(a, &["lane", "new", "fp2", "--plan", "fp2"]);
    assert_ne!(killed.code, 0, "the failpoint stops it");
    env.set_env("GIT_SWARM_FAILPOINT", "");
    env.swarm(a, &["lane", "new", "fp2", "--plan", "fp2"])
        .ok()
        .stdout_has("published to origin");
    let lane = "refs/swarm/lanes/fp2";
    let published = remote_has(&env, &remote, lane);
    assert!(published.is_some(), "the remote has the lane record");
    assert_eq!(published, env.refs(a, lane).get(lane).cloned());
    // Another clone cannot start a second lane on the plan.
    let run = env.swarm(b, &["lane", "new", "other", "--plan", "fp2"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(remote_has(&env, &remote, "refs/swarm/lanes/other"), None);
}

#[test]
fn sync_after_gc_archived_an_accepted_packet_does_not_call_the_handoff_unbacked() {
    let (s, id) = handed_over(
        Swarm::new(&["alice", "bob", "carol"])
            .plan(0, "auth")
            .lane(0, "login")
            // Carol knows the lane as alice's.
            .sync(2),
    );
    let (env, _, clones) = s.parts();
    let (b, c) = (&clones[1], &clones[2]);
    let gc = env
        .swarm(b, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    let packet = format!("refs/swarm/packets/auth/{id}");
    assert_eq!(gc["archived"]["packets"], serde_json::json!([packet]));
    env.swarm(b, &["sync"]).ok();
    let run = env.swarm(c, &["sync"]).ok();
    assert!(
        !run.stderr.contains("without an accepted handoff"),
        "{}",
        run.stderr
    );
    let lane = env.swarm(c, &["lane", "list", "--json"]).ok().json();
    assert_eq!(lane["lanes"][0]["owner"], "bob");
}

#[test]
fn lane_list_status_and_prune_see_the_same_owner_of_a_lane() {
    let (s, _) = handed_over(
        Swarm::new(&["alice", "bob"])
            .plan(0, "auth")
            .lane(0, "login"),
    );
    let (env, _, clones) = s.parts();
    let a = &clones[0];
    // Alice's status fetches the mirror: bob holds the lane now; her
    // local lane ref still names her.
    let status = env.swarm(a, &["status", "--json"]).ok().json();
    assert_eq!(status["plans"][0]["lanes"][0]["owner"], "bob");
    let local = env.git(a, &["show", "refs/swarm/lanes/login:lane.yaml"]);
    assert!(local.contains("owner: alice"), "{local}");
    let list = env.swarm(a, &["lane", "list", "--json"]).ok().json();
    assert_eq!(list["lanes"][0]["owner"], "bob");
    // prune acts on the same version: the lane is bob's, elsewhere; only
    // alice's old worktree is for her to remove.
    let dry = env
        .swarm(a, &["lane", "prune", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(dry["removed"], serde_json::json!([]), "{dry}");
    assert_eq!(dry["old_worktrees"][0]["feature"], "login", "{dry}");
    assert!(worktree(a, "login").exists());
}

#[test]
fn wait_says_when_the_remote_does_not_answer_and_keeps_waiting() {
    let (env, remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").parts();
    let a = &clones[0];
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let run = env
        .swarm(
            a,
            &[
                "wait",
                "--plan",
                "auth",
                "--timeout",
                "1s",
                "--interval",
                "200ms",
            ],
        )
        .err(1, "WAIT_TIMEOUT");
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("could not be reached"))
        .collect();
    assert_eq!(said.len(), 1, "said once per streak\n{}", run.stderr);
    assert!(
        said[0].starts_with("warning: remote 'origin' could not be reached (last reached ")
            && said[0].ends_with("; still waiting"),
        "{}",
        said[0]
    );
    run.expect_stderr("questions to the remote failed");
}

#[test]
fn lane_new_on_another_clone_finds_a_plan_published_there_without_sync() {
    let (env, remote, clones) = Swarm::new(&["alice", "carol"]).plan(0, "docs").parts();
    let c = &clones[1];
    env.swarm(c, &["lane", "new", "readme", "--plan", "docs"])
        .ok()
        .stdout_has("published");
    let lane = "refs/swarm/lanes/readme";
    assert_eq!(
        remote_has(&env, &remote, lane),
        env.refs(c, lane).get(lane).cloned()
    );
}

/// The commands on the publish loop that nobody races for (task new and
/// block, lead renew, handoff, lane snapshot, messages) behave with the remote renamed away as with
/// `--offline`: the write is kept, said in the one wording, exit 0, the
/// refs local only; the next command that reaches the remote publishes it.
#[test]
fn publish_loop_commands_keep_their_write_when_the_remote_cannot_be_reached() {
    let (env, remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").parts();
    let a = &clones[0];
    for t in ["t1", "t2"] {
        env.swarm(a, &["task", "new", t, "--plan", "auth", "--title", t])
            .ok();
    }
    env.swarm(
        a,
        &["lead", "claim", "--plan", "auth", "--succession", "alice"],
    )
    .ok();
    env.swarm(a, &["lane", "new", "login", "--plan", "auth", "--no-task"])
        .ok();
    let wt = worktree(a, "login");
    let gone = env.root().join("remote.gone");
    std::fs::rename(&remote, &gone).unwrap();
    let why = format!("not published: remote 'origin' could not be reached{KEPT}");
    let runs: &[(&Path, &[&str], &str)] = &[
        (
            a,
            &["task", "new", "t3", "--plan", "auth", "--title", "t3"],
            "refs/swarm/tasks/auth/t3",
        ),
        (
            a,
            &["lead", "renew", "--plan", "auth"],
            "refs/swarm/lead/auth",
        ),
        (
            a,
            &["notify", "alice", "hello", "--plan", "auth"],
            "refs/swarm/messages/auth/",
        ),
        (&wt, &["lane", "snapshot"], "refs/swarm/wip/login"),
        (
            &wt,
            &["handoff", "--reason", "usage_limit"],
            "refs/swarm/packets/auth/",
        ),
    ];
    let mut kept = Vec::new();
    for (dir, args, refname) in runs {
        let before = env.refs(a, refname);
        let run = env.swarm(dir, args).ok();
        run.expect_stderr(&why);
        assert!(!run.stderr.contains("fatal:"), "{args:?}: {}", run.stderr);
        assert!(
            !run.stdout.contains("published to"),
            "{args:?}: {}",
            run.stdout
        );
        let after = env.refs(a, refname);
        assert_ne!(before, after, "{args:?}: the write is kept locally");
        // What this command wrote (a prefix may hold refs published before,
        // e.g. the leadership claim's announcement among the messages).
        let wrote: BTreeMap<String, String> = after
            .into_iter()
            .filter(|(r, v)| before.get(r) != Some(v))
            .collect();
        kept.push(wrote);
    }
    // JSON: published false and the reason.
    let json = env
        .swarm(
            a,
            &[
                "--json", "task", "new", "t4", "--plan", "auth", "--title", "t4",
            ],
        )
        .ok()
        .json();
    assert_eq!(json["published"], false, "{json}");
    assert_eq!(
        json["not_published"], "remote 'origin' could not be reached",
        "{json}"
    );
    // Refs local only: the remote (renamed back) has none of them.
    std::fs::rename(&gone, &remote).unwrap();
    for refs in &kept {
        for (r, v) in refs {
            assert_ne!(
                remote_has(&env, &remote, r).as_ref(),
                Some(v),
                "{r} is local only"
            );
        }
    }
    // The next command that reaches the remote publishes them.
    env.swarm(a, &["task", "new", "t5", "--plan", "auth", "--title", "t5"])
        .ok()
        .stdout_has("published to origin:");
    for refs in &kept {
        for r in refs.keys() {
            let local = env.refs(a, r).get(r).cloned();
            assert_eq!(remote_has(&env, &remote, r), local, "{r} published");
        }
    }
}

/// The arbitrations whose point is the remote's verdict do not decide
/// offline unasked: with the remote renamed away, `accept`, `lead claim`,
/// `lead takeover`, `task claim` and `reserve` keep exit 4 (naming `--offline`) and write nothing,
/// so two machines are never both told they won; `--offline` still lets
/// the local compare-and-swap decide.
#[test]
fn accept_and_lead_claim_or_takeover_do_not_decide_offline_when_the_remote_cannot_be_reached() {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .lane(0, "login");
    let id = s.handoff(0, "login");
    let (env, remote, clones) = s.task(0, "t9", "t9").sync(1).parts();
    let b = &clones[1];
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let before = env.refs(b, "refs/swarm/");
    for args in [
        &["accept", id.as_str()][..],
        &["lead", "claim", "--plan", "auth", "--succession", "bob"],
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "alice is away",
        ],
        &["task", "claim", "t9", "--plan", "auth"],
        &["reserve", "src/login.rs"],
    ] {
        let run = env.swarm(b, args).err(4, "REMOTE_UNREACHABLE");
        run.expect_stderr("--offline");
        assert!(
            !run.stderr.contains("not published"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(env.refs(b, "refs/swarm/"), before, "{args:?} wrote nothing");
    }
    env.swarm(
        b,
        &[
            "--offline",
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "bob",
        ],
    )
    .ok()
    .stderr_has("not published: offline (--offline, or no remote)");
}

#[test]
fn a_mistyped_swarm_remote_leaves_reading_commands_working_with_a_warning() {
    let (env, _, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .lane(0, "login")
        .sync(0)
        .parts();
    let a = &clones[0];
    env.git(a, &["config", "swarm.remote", "orgin"]);
    let before = env.all_refs(a);
    for args in [
        vec!["status"],
        vec!["plan", "list"],
        vec!["plan", "show", "auth"],
        vec!["plan", "log", "auth"],
        vec!["packets"],
        vec!["lane", "list"],
        vec!["lead", "status", "--plan", "auth"],
    ] {
        let run = env.swarm(a, &args).ok();
        run.expect_stderr(
            "warning: remote 'orgin' does not exist; showing this repository's records only",
        );
        run.expect_stderr("hint: add it with `git remote add orgin <url>`");
        assert!(!run.stdout.contains("warning"), "{args:?}: {}", run.stdout);
    }
    env.swarm(a, &["status"]).ok().stdout_has("auth [active]");
    env.swarm(a, &["lane", "list"]).ok().stdout_has("login");
    let json = env.swarm(a, &["plan", "list", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["plan"], "auth");
    // Writing commands and those that must ask the remote still refuse.
    env.swarm(a, &["plan", "new", "other"])
        .err(2, "REMOTE_MISSING");
    env.swarm(a, &["lead", "check", "--plan", "auth"])
        .err(2, "REMOTE_MISSING");
    env.swarm(a, &["sync"]).err(2, "REMOTE_MISSING");
    assert_eq!(before, env.all_refs(a));
}

#[test]
fn read_only_views_show_local_plus_the_fetched_mirror_say_how_old_and_point_to_sync() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    let t0 = "2026-01-01T10:00:00Z";
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm_env(
        a,
        &[("GIT_SWARM_NOW", t0)],
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "alice,bob",
            "--lease",
            "1h",
        ],
    )
    .ok();
    let packet = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "auth",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A fresh clone that only fetched: every view shows the plan, its
    // leader and the packet, says where from, and points to sync (status
    // fetches the mirror itself).
    let c = env.clone_remote(&remote, "carol");
    env.git(&c, &["fetch", "--quiet", "origin"]);
    assert!(env.refs(&c, "refs/swarm/plans/").is_empty());
    env.swarm(&c, &["status"])
        .ok()
        .stdout_has("auth [active] — auth — lead alice (epoch 1)")
        .stdout_has("the mirror of origin (fetched ")
        .stdout_has("the mirror has 2 records your local refs lack")
        .stdout_has("`git swarm sync` brings them in");
    env.swarm(&c, &["packets", "--offline"])
        .ok()
        .stdout_has(&packet)
        .stdout_has("the mirror has 1 record your local refs lack");
    let lead = env
        .swarm(
            &c,
            &["lead", "status", "--plan", "auth", "--offline", "--json"],
        )
        .ok()
        .json();
    assert_eq!(lead["leader"], "alice");
    assert_eq!(lead["mirror"]["ahead"][0], "refs/swarm/lead/auth");
    env.swarm(&c, &["sync"]).ok();
    let out = env.swarm(&c, &["status"]).ok();
    assert!(out.stdout.contains("fetched "), "{}", out.stdout);
    assert!(!out.stdout.contains("the mirror has"), "{}", out.stdout);

    // A takeover on another clone: after a fetch, status and lead status
    // --offline agree on who leads.
    env.swarm(b, &["sync"]).ok();
    env.swarm_env(
        b,
        &[("GIT_SWARM_NOW", "2026-01-01T12:00:00Z")],
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "alice silent",
        ],
    )
    .ok();
    env.git(a, &["fetch", "--quiet", "origin"]);
    let status = env.swarm(a, &["status", "--offline", "--json"]).ok().json();
    assert_eq!(status["plans"][0]["leader"], "bob");
    assert_eq!(status["plans"][0]["epoch"], 2);
    let lead = env
        .swarm(
            a,
            &["lead", "status", "--plan", "auth", "--offline", "--json"],
        )
        .ok()
        .json();
    assert_eq!(lead["leader"], "bob");
    assert_eq!(lead["epoch"], 2);
}

/// A remote that stops answering between a handoff's reads and its push:
/// the packet is kept here under the id it was written with (the
/// handoff's own `<time>-<author>`, not the next suffix), exit 0, said in
/// the one wording; the next command that reaches the remote publishes it.
#[test]
fn a_handoff_whose_push_finds_the_remote_gone_keeps_its_packet_under_its_own_id() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .lane(0, "login")
        .parts();
    let wt = worktree(&clones[0], "login");
    let gone = env.root().join("remote.gone");
    let paused = crate::support::process::Paused::at(
        &env,
        &wt,
        "handoff:objects",
        &[],
        &["handoff", "--reason", "usage_limit", "--json"],
    );
    std::fs::rename(&remote, &gone).unwrap();
    let run = paused.release().ok();
    run.expect_stderr("not published: remote 'origin' could not be reached");
    let json = run.json();
    let id = json["id"].as_str().expect("the packet's id").to_string();
    assert!(id.ends_with("-alice"), "{id}: the first id, not a suffix");
    let packets = env.refs(&clones[0], "refs/swarm/packets/auth/");
    assert_eq!(
        packets.keys().collect::<Vec<_>>(),
        [&format!("refs/swarm/packets/auth/{id}")],
        "one packet, under its own id"
    );
    std::fs::rename(&gone, &remote).unwrap();
    env.swarm(&clones[0], &["sync"]).ok();
    let refname = format!("refs/swarm/packets/auth/{id}");
    assert_eq!(
        remote_has(&env, &remote, &refname),
        packets.get(&refname).cloned()
    );
}

const MESSAGES: &str = "refs/swarm/messages/";

/// ann and bob on one remote, plan p with task t1, ann under `6/min`.
fn setup(env: &TestEnv) -> (PathBuf, PathBuf) {
    let (remote, clones) = env.remote_with_clones(&["ann", "bob"]);
    let ann = clones[0].clone();
    env.swarm(&ann, &["plan", "new", "p"]).ok();
    env.swarm(&ann, &["task", "new", "t1", "--plan", "p", "--title", "x"])
        .ok();
    env.git(&ann, &["config", "swarm.pushBudget", "6/min"]);
    (remote, ann)
}

fn at(env: &TestEnv, dir: &Path, time: &str, args: &[&str]) -> Run {
    env.swarm_env(dir, &[("GIT_SWARM_NOW", time)], args)
}

fn pushes(run: &Run) -> u64 {
    run.json()["remote_ops"]["pushes"].as_u64().unwrap()
}

#[test]
fn a_queued_write_goes_with_the_next_claim_or_after_the_window() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    // Queued: not on the remote, no push.
    let first = at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one", "--json"],
    )
    .ok();
    assert_eq!(pushes(&first), 0);
    assert_eq!(first.json()["published"], false);
    assert_eq!(first.json()["queued"]["since"], "2026-01-01T10:00:00Z");
    assert_eq!(first.json()["queued"]["publish_by"], "2026-01-01T10:00:10Z");
    assert!(!first.stderr.contains("not published"), "{}", first.stderr);
    assert!(env.refs(&remote, MESSAGES).is_empty());
    let second = at(
        &env,
        &ann,
        "2026-01-01T10:00:05Z",
        &["notify", "bob", "--plan", "p", "two"],
    )
    .ok()
    .stdout_has("queued (swarm.pushBudget 6/min): 2 writes since 2026-01-01T10:00:00Z; they go with this clone's next push, or with the first git-swarm command from 2026-01-01T10:00:10Z");
    assert!(
        !second.stderr.contains("not published"),
        "{}",
        second.stderr
    );
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // status says what waits, since when, and until when.
    let status = at(&env, &ann, "2026-01-01T10:00:06Z", &["status", "--json"]).ok();
    let q = &status.json()["queued"];
    assert_eq!(q["budget"], "6/min");
    assert_eq!(q["since"], "2026-01-01T10:00:00Z");
    assert_eq!(q["publish_by"], "2026-01-01T10:00:10Z");
    assert_eq!(q["refs"].as_array().unwrap().len(), 2, "{q}");
    assert_eq!(pushes(&status), 0);
    at(&env, &ann, "2026-01-01T10:00:06Z", &["status"])
        .ok()
        .stdout_has("queued (swarm.pushBudget 6/min): 2 writes since 2026-01-01T10:00:00Z");
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // An arbitrated write goes at once and carries the queue: one push.
    let claim = at(
        &env,
        &ann,
        "2026-01-01T10:00:07Z",
        &["task", "claim", "t1", "--plan", "p", "--json"],
    )
    .ok();
    let ops = &claim.json()["remote_ops"];
    assert_eq!(
        (ops["pushes"].clone(), ops["refs_pushed"].clone()),
        (1.into(), 3.into()),
        "{ops}"
    );
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    assert_eq!(env.refs(&remote, MESSAGES).len(), 2);
    let status = at(&env, &ann, "2026-01-01T10:00:08Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
    assert_eq!(status.json()["queued"]["since"], serde_json::Value::Null);

    // Nothing arbitrated comes: the first command after the window
    // publishes the queue (a read, here), not one before it.
    let third = at(
        &env,
        &ann,
        "2026-01-01T10:01:00Z",
        &["notify", "bob", "--plan", "p", "three", "--json"],
    )
    .ok();
    assert_eq!(pushes(&third), 0);
    let early = at(
        &env,
        &ann,
        "2026-01-01T10:01:09Z",
        &["task", "list", "--json"],
    )
    .ok();
    assert_eq!(pushes(&early), 0);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 2);
    let after = at(
        &env,
        &ann,
        "2026-01-01T10:01:10Z",
        &["task", "list", "--json"],
    )
    .ok();
    assert_eq!(pushes(&after), 1);
    assert_eq!(
        after.json()["published_pending"].as_array().unwrap().len(),
        1
    );
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    assert_eq!(env.refs(&remote, MESSAGES).len(), 3);
    // A queued write itself publishes the queue when its window has passed
    // (the oldest waited long enough), in one push with it.
    at(
        &env,
        &ann,
        "2026-01-01T10:02:00Z",
        &["notify", "bob", "--plan", "p", "four"],
    )
    .ok();
    let fifth = at(
        &env,
        &ann,
        "2026-01-01T10:02:30Z",
        &["notify", "bob", "--plan", "p", "five", "--json"],
    )
    .ok();
    assert_eq!(pushes(&fifth), 1);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 5);
    assert_eq!(env.refs(&remote, MESSAGES), env.refs(&ann, MESSAGES));
    // Without a budget, as before: at once.
    env.git(&ann, &["config", "--unset", "swarm.pushBudget"]);
    let now = at(
        &env,
        &ann,
        "2026-01-01T10:02:31Z",
        &["notify", "bob", "--plan", "p", "six", "--json"],
    )
    .ok();
    assert_eq!(now.json()["published"], true);
    assert_eq!(env.refs(&remote, MESSAGES).len(), 6);
}

/// `renew --due`, at `time`, in ann's clone.
fn renew_due(env: &TestEnv, ann: &Path, time: &str) -> Run {
    at(env, ann, time, &["renew", "--due", "--json"]).ok()
}

#[test]
fn under_a_budget_a_claims_renewal_rides_the_next_push_and_a_last_quarter_goes_alone() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    let t1 = "refs/swarm/tasks/p/t1";
    let lease_at = |dir: &Path| env.git(dir, &["show", &format!("{t1}:task.yaml")]);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["task", "claim", "t1", "--plan", "p"],
    )
    .ok();
    at(&env, &ann, "2026-01-01T10:00:00Z", &["reserve", "src/a.rs"]).ok();
    let claimed = env.refs(&remote, "refs/swarm/");
    // Minute 10: nothing due; the claim's half comes first (10:15).
    let idle = renew_due(&env, &ann, "2026-01-01T10:10:00Z");
    assert_eq!(pushes(&idle), 0);
    assert_eq!(
        idle.json()["remote_ops"]["fetches"],
        0,
        "decided from what the clone knows"
    );
    assert_eq!(idle.json()["nothing"], true);
    assert_eq!(idle.json()["due_from"], "2026-01-01T10:15:00Z");
    at(&env, &ann, "2026-01-01T10:10:00Z", &["renew", "--due"])
        .ok()
        .stdout_has(
            "nothing due yet: the first of your holdings comes due at 2026-01-01T10:15:00Z",
        );
    // Minute 16: the claim is renewed in this clone and queued; the
    // reservation (a quarter not reached, a shared shard) is left alone.
    let queued = renew_due(&env, &ann, "2026-01-01T10:16:00Z");
    assert_eq!(pushes(&queued), 0);
    assert_eq!(queued.json()["queued"]["refs"], serde_json::json!([t1]));
    assert_eq!(queued.json()["tasks"], serde_json::json!(["p/t1"]));
    assert_eq!(queued.json()["reservations"], serde_json::json!([]));
    assert_eq!(queued.json()["published"], false);
    assert!(
        !queued.stderr.contains("not published"),
        "{}",
        queued.stderr
    );
    assert_eq!(env.refs(&remote, "refs/swarm/"), claimed, "nothing pushed");
    assert!(lease_at(&ann).contains("2026-01-01T10:46:00Z"));
    // Five seconds later (inside the budget's 10 s window): already
    // queued, nothing to do; the published lease's last quarter is next.
    let again = renew_due(&env, &ann, "2026-01-01T10:16:05Z");
    assert_eq!(
        (pushes(&again), again.json()["nothing"].clone()),
        (0, serde_json::json!(true))
    );
    assert_eq!(again.json()["due_from"], "2026-01-01T10:22:30Z");
    // Minute 20: a queued message's window has passed since 10:16; the
    // notify's flush carries the renewal with it, in one push.
    let ride = at(
        &env,
        &ann,
        "2026-01-01T10:20:00Z",
        &["notify", "bob", "--plan", "p", "hi", "--json"],
    )
    .ok();
    assert_eq!(pushes(&ride), 1);
    assert!(
        lease_at(&remote).contains("2026-01-01T10:46:00Z"),
        "{}",
        lease_at(&remote)
    );
    // Minute 39: the published lease (10:46) has less than a quarter
    // left and nothing was queued meanwhile: everything held (the claim
    // and the 2-hour reservation) goes at once, in one push.
    let alone = renew_due(&env, &ann, "2026-01-01T10:39:00Z");
    assert_eq!(pushes(&alone), 1);
    assert_eq!(alone.json()["published"], true);
    assert_eq!(alone.json()["tasks"], serde_json::json!(["p/t1"]));
    assert_eq!(
        alone.json()["reservation_lease_until"],
        "2026-01-01T12:39:00Z"
    );
    assert!(lease_at(&remote).contains("2026-01-01T11:09:00Z"));
    // Without the budget a claim past its half goes at once.
    env.git(&ann, &["config", "--unset", "swarm.pushBudget"]);
    let half = renew_due(&env, &ann, "2026-01-01T10:55:00Z");
    assert_eq!(pushes(&half), 1);
    assert!(lease_at(&remote).contains("2026-01-01T11:25:00Z"));
}

#[test]
fn a_queued_write_survives_a_kill_at_any_point_of_its_publication() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "kept"],
    )
    .ok();
    let local = env.refs(&ann, MESSAGES);
    assert_eq!(local.len(), 1);
    // Killed as it starts to publish the due queue: nothing published, and
    // the write is still queued here.
    let killed = env.swarm_env(
        &ann,
        &[
            ("GIT_SWARM_NOW", "2026-01-01T10:00:20Z"),
            ("GIT_SWARM_FAILPOINT", "budget:flush"),
        ],
        &["task", "list"],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    assert!(env.refs(&remote, MESSAGES).is_empty());
    assert_eq!(env.refs(&ann, MESSAGES), local);
    let status = at(
        &env,
        &ann,
        "2026-01-01T10:00:15Z",
        &["--offline", "status", "--json"],
    )
    .ok();
    assert_eq!(status.json()["queued"]["refs"].as_array().unwrap().len(), 1);
    // Killed after the push landed, before this clone noted it: published.
    let killed = env.swarm_env(
        &ann,
        &[
            ("GIT_SWARM_NOW", "2026-01-01T10:00:21Z"),
            ("GIT_SWARM_FAILPOINT", "publish:pushed"),
        ],
        &["task", "list"],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    assert_eq!(env.refs(&remote, MESSAGES), local);
    // The next command finds it in step: nothing queued, nothing pushed
    // twice, the message once on the remote.
    let status = at(&env, &ann, "2026-01-01T10:00:22Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
    let sync = at(&env, &ann, "2026-01-01T10:00:23Z", &["sync", "--json"]).ok();
    assert!(
        sync.json()["pushed"].as_array().unwrap().is_empty(),
        "{}",
        sync.stdout
    );
    assert_eq!(env.refs(&remote, MESSAGES), local);
}

#[test]
fn a_push_budget_that_is_not_a_rate_is_refused_with_a_hint() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    env.git(&ann, &["config", "swarm.pushBudget", "six a minute"]);
    let before = env.all_refs(&remote);
    let run = at(&env, &ann, "2026-01-01T10:00:00Z", &["status"]).err(2, "CONFIG_INVALID");
    assert!(run.stderr.contains("6/min"), "{}", run.stderr);
    assert_eq!(env.all_refs(&remote), before);
}

/// One queued write is said in the singular.
#[test]
fn one_queued_write_is_said_in_the_singular() {
    let env = TestEnv::new();
    let (_remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one"],
    )
    .ok()
    .stdout_has("queued (swarm.pushBudget 6/min): 1 write since 2026-01-01T10:00:00Z; it goes with this clone's next push, or with the first git-swarm command from 2026-01-01T10:00:10Z");
}

/// A budgeted write under an invalid budget is refused like status, not
/// published as if no budget were set: nothing written here or there.
#[test]
fn a_budgeted_write_under_an_invalid_push_budget_is_refused() {
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    env.git(&ann, &["config", "swarm.pushBudget", "6"]);
    let (here, there) = (env.all_refs(&ann), env.all_refs(&remote));
    let run = at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "one", "--json"],
    )
    .err(2, "CONFIG_INVALID");
    assert!(run.stderr.contains("6/min"), "{}", run.stderr);
    assert_eq!(env.all_refs(&ann), here);
    assert_eq!(env.all_refs(&remote), there);
    assert!(env.refs(&ann, MESSAGES).is_empty());
}

/// The clone's flush lock (one process publishes the queue, the others
/// leave it to it) is a kernel lock: a live holder keeps it however long
/// it holds it, a SIGKILLed one frees it, and of two processes that race
/// for it exactly one takes it. Processes, not timings: each one either
/// stops inside the lock (the `budget:flush` point) or finishes without it.
#[test]
fn the_flush_lock_has_one_holder_and_a_killed_holder_frees_it() {
    use crate::support::process::{race_to, Paused};
    let env = TestEnv::new();
    let (remote, ann) = setup(&env);
    at(
        &env,
        &ann,
        "2026-01-01T10:00:00Z",
        &["notify", "bob", "--plan", "p", "kept"],
    )
    .ok();
    let local = env.refs(&ann, MESSAGES);
    let list = ["task", "list"];
    let due = [("GIT_SWARM_NOW", "2026-01-01T10:00:20Z")];
    // A holder stops inside the lock, as a slow push would.
    let holder = Paused::at(&env, &ann, "budget:flush", &due, &list);
    // Held for as long as it lives (a lock older than a minute was once
    // taken over from a live holder): another command finds it busy,
    // leaves the queue to the holder and finishes.
    let file = ann.join(".git/swarm/flushing-origin");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    let (took, finished) = race_to(&env, "budget:flush", &[(&ann, &due, &list)]);
    let overtaken = took.len();
    for p in took {
        p.release();
    }
    assert_eq!(overtaken, 0, "a live holder's lock was taken over");
    assert_eq!(finished[0].code, 0, "{:#?}", finished[0]);
    assert!(env.refs(&remote, MESSAGES).is_empty());
    // SIGKILLed inside the lock: the kernel frees it. Then two commands at
    // once: exactly one takes it and publishes, the other finishes.
    holder.kill();
    let (took, finished) = race_to(
        &env,
        "budget:flush",
        &[(&ann, &due, &list), (&ann, &due, &list)],
    );
    let takers = took.len();
    let runs: Vec<_> = took.into_iter().map(Paused::release).collect();
    assert_eq!(takers, 1, "{runs:#?}\n{finished:#?}");
    assert_eq!(runs[0].code, 0, "{:#?}", runs[0]);
    assert_eq!(finished[0].code, 0, "{:#?}", finished[0]);
    assert_eq!(env.refs(&remote, MESSAGES), local);
    let status = at(&env, &ann, "2026-01-01T10:00:30Z", &["status", "--json"]).ok();
    assert_eq!(status.json()["queued"]["refs"], serde_json::json!([]));
}
