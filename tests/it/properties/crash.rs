//! Every writing command, killed (SIGKILL) in the middle of its write many
//! times: afterwards `git fsck` is clean, every record still reads (whole or
//! absent — never half-written), and running the command again converges.
//! Each run is held where it has begun writing (`process::WRITING`, or
//! `sync:reconciled` for sync, which writes no commit of its own) and killed
//! there or a random moment later; only a kill of a run still going counts.
//! Rounds: `GIT_SWARM_SOAK_ROUNDS` (default 4 per command); the kill moments
//! come from a seeded generator printed on stderr (`GIT_SWARM_SOAK_SEED`).

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::{
    assert_fsck_clean, run_and_kill, soak_rounds, Kill, Killed, Rng, WRITING,
};

/// Every record the clone holds still parses: status reads all plans,
/// lanes and leaders; `packets` reads every packet; `plan log` every journal.
#[track_caller]
fn records_whole(env: &TestEnv, dir: &Path) {
    assert_fsck_clean(env, dir);
    env.swarm(dir, &["--offline", "status"]).ok();
    env.swarm(dir, &["--offline", "packets"]).ok();
    for plan in env.refs(dir, "refs/swarm/plans").keys() {
        let name = plan.trim_start_matches("refs/swarm/plans/");
        env.swarm(dir, &["--offline", "plan", "log", name]).ok();
    }
}

#[test]
fn every_writing_command_killed_at_random_leaves_whole_records_and_converges() {
    let (env, _, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .leader(0, "alice,bob")
        .plan(0, "ui")
        .lane(0, "shell")
        .sync(0)
        .parts();
    let a = &clones[0];
    let wt = a.join("_swarm-worktrees/shell");
    let text = env.root().join("plan.md");
    let mut rng = Rng::new("crash");
    let rounds = soak_rounds(4);
    let mut kills = 0;
    for round in 0..rounds {
        env.write(&text, &format!("# auth\n\nround {round}\n"));
        // (directory, command) in the order a swarm would run them. Each
        // rerun must succeed: the commands complete what a killed run began.
        let steps: Vec<(&Path, Vec<String>)> = vec![
            (
                a,
                vec![
                    "plan".into(),
                    "save".into(),
                    "auth".into(),
                    "--file".into(),
                    text.display().to_string(),
                ],
            ),
            (&wt, vec!["report".into(), "plan-ready".into()]),
            (
                a,
                vec![
                    "lead".into(),
                    "renew".into(),
                    "--plan".into(),
                    "auth".into(),
                ],
            ),
            (
                a,
                vec!["plan".into(), "new".into(), format!("done-{round}")],
            ),
            // Offline, so that `sync` has something to publish (online,
            // every write publishes at once).
            (
                a,
                vec![
                    "--offline".into(),
                    "plan".into(),
                    "close".into(),
                    format!("done-{round}"),
                ],
            ),
            (a, vec!["sync".into()]),
            (a, vec!["gc".into(), "--older-than".into(), "0s".into()]),
        ];
        for (dir, args) in &steps {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let point = if args[0] == "sync" {
                "sync:reconciled"
            } else {
                WRITING
            };
            let kill = Kill::draw(&mut rng, round, 25);
            kills += count(run_and_kill(&env, dir, point, &args, kill), &args, kill);
            records_whole(&env, a);
            let again = env.swarm(dir, &args);
            // `plan new` completed by the killed run is "already exists".
            let done_before = args.starts_with(&["plan", "new"])
                && again.code == 2
                && again.stderr.contains("PLAN_EXISTS");
            assert!(
                again.code == 0 || done_before,
                "rerun of {args:?} after a kill {kill:?}: {again:#?}"
            );
            records_whole(&env, a);
        }
        // Handoff, then accept by a successor: both killable, both convergent.
        let args = ["handoff", "--reason", "capacity_low", "--next", "go on"];
        let kill = Kill::draw(&mut rng, round, 25);
        kills += count(run_and_kill(&env, &wt, WRITING, &args, kill), &args, kill);
        records_whole(&env, a);
        let id = env
            .swarm(
                &wt,
                &[
                    "handoff",
                    "--reason",
                    "capacity_low",
                    "--next",
                    "go on",
                    "--json",
                ],
            )
            .ok()
            .json()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let args = ["--as", "successor", "accept", &id];
        let kill = Kill::draw(&mut rng, round, 25);
        kills += count(run_and_kill(&env, &wt, WRITING, &args, kill), &args, kill);
        records_whole(&env, a);
        let again = env.swarm(&wt, &["--as", "successor", "accept", &id]);
        assert!(
            again.code == 0
                || (again.code == 3 && again.stderr.contains("PACKET_ALREADY_ACCEPTED")),
            "{again:#?}"
        );
        let shown = env
            .swarm(&wt, &["packet", "show", &id, "--json"])
            .ok()
            .json();
        assert_eq!(shown["acceptance"]["accepted_by"], "successor");
        // Accepted exactly once: one acceptance commit on the packet ref
        // (packet + acceptance), one journal entry, one acceptance note.
        let packet_ref = shown["ref"].as_str().unwrap();
        assert_eq!(env.git(a, &["rev-list", "--count", packet_ref]), "2");
        let entries = env
            .swarm(a, &["--offline", "plan", "log", "ui", "--json"])
            .ok()
            .json();
        let accepted = entries["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["event"] == "handoff-accepted" && e["trailers"]["Swarm-Packet"] == id.as_str()
            })
            .count();
        assert_eq!(accepted, 1, "round {round}: {entries:#}");
        let head = env.git(&wt, &["rev-parse", "HEAD"]);
        let notes = env
            .git_run(a, &["notes", "--ref=swarm", "show", &head])
            .stdout;
        let acceptance_notes = notes
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|n| n["kind"] == "acceptance" && n["packet"] == id.as_str())
            .count();
        assert_eq!(acceptance_notes, 1, "round {round}: {notes}");
    }
    // The final state is the same as a run that was never killed would leave:
    // one sync publishes everything and a second has nothing to do.
    env.swarm(a, &["sync"]).ok();
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
    eprintln!("crash: {kills} processes killed mid-write over {rounds} rounds");
    // Round 0 kills each of the nine commands at its writing point.
    assert!(kills >= 9, "only {kills} kills landed mid-write");
}

/// 1 for a kill that landed mid-write. Every step writes something, so
/// one that never reached its writing point is a broken test.
#[track_caller]
fn count(killed: Killed, args: &[&str], kill: Kill) -> usize {
    assert_ne!(killed, Killed::NeverWrote, "{args:?} wrote nothing");
    if let Kill::AtPoint = kill {
        assert_eq!(killed, Killed::MidWrite, "{args:?}");
    }
    (killed == Killed::MidWrite) as usize
}

/// alice's lane `login` (plan auth) handed off with a packet; bob's clone
/// has the branch checked out: (env, remote, alice's clone, bob's, packet id).
fn lane_handed_off() -> (
    TestEnv,
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .lane(0, "login")
        .pushed(0, "login", &[("login.rs", "fn login() {}\n")], "login");
    let id = s.handoff(0, "login");
    let (env, remote, clones) = s.switched(1, "feat/login").parts();
    (env, remote, clones[0].clone(), clones[1].clone(), id)
}

/// Who accepted packet `id` and who owns lane login, at `dir`'s view.
#[track_caller]
fn accepted_by(env: &TestEnv, dir: &Path, id: &str) -> (String, String) {
    let shown = env
        .swarm(dir, &["packet", "show", id, "--json"])
        .ok()
        .json();
    let lanes = env
        .swarm(dir, &["--offline", "lane", "list", "--json"])
        .ok()
        .json();
    let owner = lanes["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["feature"] == "login")
        .map(|l| l["owner"].as_str().unwrap_or("").to_string())
        .unwrap_or_default();
    (
        shown["acceptance"]["accepted_by"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        owner,
    )
}

/// The failpoints `accept` passes (an acceptance that moves a lane, with a
/// remote): killed at each, `accept --lane F` run again completes the
/// acceptance, as `accept <id>` does, instead of "no open packet".
const ACCEPT_POINTS: &[&str] = &[
    "accept:objects",
    "store:commit",
    "publish:pushed",
    "accept:pushed",
    "accept:ref",
    "accept:journal",
];

#[test]
fn accept_lane_killed_at_every_failpoint_is_completed_by_running_it_again() {
    for point in ACCEPT_POINTS {
        let (env, remote, _a, b, id) = lane_handed_off();
        let crashed = env.swarm_env(
            &b,
            &[("GIT_SWARM_FAILPOINT", point)],
            &["accept", "--lane", "login"],
        );
        crate::support::process::assert_aborted(&crashed, point);
        records_whole(&env, &b);
        let again = env.swarm(&b, &["accept", "--lane", "login"]);
        assert_eq!(again.code, 0, "{point}: {again:#?}");
        assert!(!again.stderr.contains("NOT_FOUND"), "{point}: {again:#?}");
        records_whole(&env, &b);
        assert_eq!(
            accepted_by(&env, &b, &id),
            ("bob".to_string(), "bob".to_string()),
            "{point}"
        );
        // Accepted once at the remote: packet + acceptance.
        let pref = format!("refs/swarm/packets/auth/{id}");
        assert_eq!(env.git(&remote, &["rev-list", "--count", &pref]), "2");
        // A third run is a no-op, exit 0, not a false "no open packet".
        env.swarm(&b, &["accept", "--lane", "login"]).ok();
    }
}

#[test]
fn accept_lane_after_someone_else_accepted_names_who_did() {
    let (env, _remote, a, b, _id) = lane_handed_off();
    env.swarm(&b, &["accept", "--lane", "login"]).ok();
    let wt = a.join("_swarm-worktrees/login");
    env.swarm(&wt, &["--as", "carol", "accept", "--lane", "login"])
        .err(2, "NOT_FOUND")
        .stderr_has("was accepted by bob")
        .stderr_has("`git swarm lane list`");
}

#[test]
fn accept_lane_killed_at_random_moments_reruns_to_completion() {
    let (env, _remote, a, b, _id) = lane_handed_off();
    let wt = a.join("_swarm-worktrees/login");
    let mut rng = Rng::new("accept-lane");
    let rounds = soak_rounds(10);
    let mut kills = 0;
    // The lane goes back and forth: bob accepts, hands off; alice accepts, …
    let mut from: (&Path, &str) = (&b, "bob");
    for round in 0..rounds {
        let (dir, me) = from;
        let kill = Kill::draw(&mut rng, round, 40);
        let args = ["--as", me, "accept", "--lane", "login"];
        kills += (run_and_kill(&env, dir, WRITING, &args, kill) == Killed::MidWrite) as usize;
        records_whole(&env, dir);
        let again = env.swarm(dir, &args);
        assert_eq!(again.code, 0, "round {round} after {kill:?}: {again:#?}");
        let lanes = env
            .swarm(dir, &["--offline", "lane", "list", "--json"])
            .ok()
            .json();
        assert_eq!(lanes["lanes"][0]["owner"], me, "round {round}");
        env.swarm(
            dir,
            &[
                "--as",
                me,
                "handoff",
                "--reason",
                "capacity_low",
                "--next",
                "go on",
            ],
        )
        .ok();
        from = if me == "bob" {
            (&wt, "alice")
        } else {
            (&b, "bob")
        };
    }
    eprintln!("accept --lane: {kills} kills mid-write over {rounds} rounds");
    assert!(kills >= rounds / 2, "only {kills} kills landed mid-write");
}

/// The failpoints `lane new` passes with a remote (plain, and `--task`).
const LANE_NEW_POINTS: &[&str] = &[
    "worktree:add",
    "lane:worktree",
    "store:commit",
    "lane:record",
    "lane:pushed",
];

#[test]
fn lane_new_killed_at_every_failpoint_reruns_to_exit_0() {
    let mut s = Swarm::new(&["alice"]).init(0);
    for i in 0..LANE_NEW_POINTS.len() {
        s = s.plan(0, &format!("p{i}"));
    }
    let s = s.plan(0, "tp").task(0, "t1", "do t1").sync(0);
    let (env, remote, clones) = s.parts();
    let a = &clones[0];
    for (i, point) in LANE_NEW_POINTS.iter().enumerate() {
        for (feature, args) in [
            (format!("f{i}"), vec!["--plan".to_string(), format!("p{i}")]),
            (
                format!("t{i}"),
                vec!["--task".to_string(), "t1".to_string()],
            ),
        ] {
            let mut argv = vec!["lane", "new", feature.as_str()];
            argv.extend(args.iter().map(String::as_str));
            let crashed = env.swarm_env(a, &[("GIT_SWARM_FAILPOINT", point)], &argv);
            crate::support::process::assert_aborted(&crashed, point);
            records_whole(&env, a);
            let again = env.swarm(a, &argv);
            assert_eq!(again.code, 0, "{point} {argv:?}: {again:#?}");
            records_whole(&env, a);
            let wt = a.join("_swarm-worktrees").join(&feature);
            assert_eq!(
                env.git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
                format!("feat/{feature}")
            );
            // Published: the lane record is at the remote.
            env.git(
                &remote,
                &["rev-parse", &format!("refs/swarm/lanes/{feature}")],
            );
            // The `--task` lane is removed again so the next one can take t1.
            if args[0] == "--task" {
                env.swarm(a, &["lane", "rm", &feature]).ok();
                env.swarm(a, &["task", "release", "t1", "--plan", "tp"]);
            }
        }
    }
}

/// Run `git-swarm <args>` in a process group of its own and SIGKILL the
/// whole group (git-swarm and the git processes it runs, as a terminal's
/// Ctrl-\ or a container stop would) `ms` milliseconds after the start.
/// True when it was still running then.
fn kill_group_after(env: &TestEnv, dir: &Path, args: &[&str], ms: u64) -> bool {
    use std::os::unix::process::CommandExt;
    let mut child = env
        .command("git-swarm", dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn git-swarm");
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let running = matches!(child.try_wait(), Ok(None));
    if running {
        let group = format!("-{}", child.id());
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &group])
            .status();
    }
    let _ = child.wait();
    running
}

#[test]
fn lane_new_after_git_was_killed_before_writing_the_worktrees_git_file_reruns_to_exit_0() {
    // Killed between opening the new worktree's `.git` and writing it: the
    // branch, the administrative directory locked "initializing" with only
    // that lock, and the worktree directory holding an empty `.git`.
    let (env, _remote, clones) = Swarm::new(&["alice"]).init(0).plan(0, "auth").parts();
    let a = &clones[0];
    let git_dir = a.join(".git");
    std::fs::create_dir_all(git_dir.join("swarm/lane-start")).unwrap();
    std::fs::write(git_dir.join("swarm/lane-start/k2"), "auth\n").unwrap();
    let admin = git_dir.join("worktrees/k2");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(admin.join("locked"), "initializing").unwrap();
    let wt = a.join("_swarm-worktrees").join("k2");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(wt.join(".git"), "").unwrap();
    let head = env.git(a, &["rev-parse", "HEAD"]);
    env.git(a, &["branch", "feat/k2", &head]);

    let again = env
        .swarm(a, &["--offline", "lane", "new", "k2", "--plan", "auth"])
        .ok();
    assert!(again.stdout.contains("interrupted"), "{again:#?}");
    assert_eq!(
        env.git(&wt, &["symbolic-ref", "--short", "HEAD"]),
        "feat/k2"
    );
    assert!(!git_dir.join("swarm/lane-start/k2").exists(), "marker left");
    assert_fsck_clean(&env, a);
}

#[test]
fn lane_new_after_git_was_killed_writing_the_worktrees_admin_files_reruns_to_exit_0() {
    // What `git worktree add -b` leaves when killed between creating its
    // administrative directory and writing `commondir`: the branch, the
    // directory still locked "initializing", an empty `commondir`. `git
    // worktree list` itself then fails, so the re-run must clear it first.
    let (env, _remote, clones) = Swarm::new(&["alice"]).init(0).plan(0, "auth").parts();
    let a = &clones[0];
    let git_dir = a.join(".git");
    std::fs::create_dir_all(git_dir.join("swarm/lane-start")).unwrap();
    std::fs::write(git_dir.join("swarm/lane-start/k1"), "auth\n").unwrap();
    let admin = git_dir.join("worktrees/k1");
    std::fs::create_dir_all(&admin).unwrap();
    std::fs::write(admin.join("locked"), "initializing").unwrap();
    let wt = a.join("_swarm-worktrees").join("k1");
    let gitdir = format!("{}\n", wt.join(".git").display());
    std::fs::write(admin.join("gitdir"), gitdir).unwrap();
    std::fs::write(admin.join("HEAD"), "ref: refs/heads/feat/k1\n").unwrap();
    std::fs::write(admin.join("commondir"), "").unwrap();
    let head = env.git(a, &["rev-parse", "HEAD"]);
    env.git(a, &["branch", "feat/k1", &head]);
    let listing = env.git_run(a, &["worktree", "list", "--porcelain"]);
    assert_ne!(
        listing.code, 0,
        "git itself cannot list worktrees: {listing:#?}"
    );

    let again = env
        .swarm(a, &["--offline", "lane", "new", "k1", "--plan", "auth"])
        .ok();
    assert!(again.stdout.contains("interrupted"), "{again:#?}");
    assert_eq!(
        env.git(&wt, &["symbolic-ref", "--short", "HEAD"]),
        "feat/k1"
    );
    assert!(!git_dir.join("swarm/lane-start/k1").exists(), "marker left");
    env.git(a, &["worktree", "list"]);
}

/// What a failed re-run found: the start marker, the worktree and git's view.
fn leftovers(env: &TestEnv, a: &Path, wt: &Path, feature: &str) -> String {
    let marker = a.join(".git/swarm/lane-start").join(feature);
    let admin = a.join(".git/worktrees").join(feature);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
    format!(
        "marker: {}\nworktree dir: {} (.git: {:?})\nadmin dir: {:?}\nadmin HEAD: {:?}\nworktree list: {:#?}\nbranch: {:#?}",
        marker.exists(),
        wt.exists(),
        read(&wt.join(".git")),
        std::fs::read_dir(&admin).map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect::<Vec<_>>()).ok(),
        read(&admin.join("HEAD")),
        env.git_run(a, &["worktree", "list", "--porcelain"]),
        env.git_run(a, &["log", "--oneline", "-2", &format!("feat/{feature}")]),
    )
}

#[test]
fn lane_new_killed_at_random_moments_with_its_git_children_reruns_to_exit_0() {
    let (env, _remote, clones) = Swarm::new(&["alice"]).init(0).plan(0, "auth").parts();
    let a = &clones[0];
    let mut rng = Rng::new("lane-new-kill");
    // How long a start takes here, unkilled: kill moments spread over it.
    let t = std::time::Instant::now();
    env.swarm(a, &["--offline", "lane", "new", "warm", "--plan", "auth"])
        .ok();
    let mut span = (t.elapsed().as_millis() as u64).max(20);
    env.swarm(a, &["--offline", "lane", "rm", "warm"]).ok();
    let want = soak_rounds(40);
    let (mut kills, mut round) = (0, 0);
    while kills < want {
        assert!(round < want * 4, "only {kills} of {round} kills landed");
        let feature = format!("k{round}");
        let args = ["--offline", "lane", "new", &feature, "--plan", "auth"];
        if kill_group_after(&env, a, &args, rng.below(span)) {
            kills += 1;
        } else {
            // It finished before the kill: starts are quicker now than the
            // first one was (a loaded machine frees up), so aim earlier.
            span = (span * 3 / 4).max(20);
        }
        // (No fsck here: a `git worktree add` killed half-way leaves its
        // worktree's HEAD pointing at nothing, which the re-run clears.)
        let again = env.swarm(a, &args);
        // A kill after the start had finished leaves it done: the re-run
        // then finds the lane active (the ordinary `LANE_EXISTS`).
        let done_before = again.code == 2 && again.stderr.contains("is already active");
        let wt = a.join("_swarm-worktrees").join(&feature);
        assert!(
            again.code == 0 || done_before,
            "round {round}, feature {feature}: {again:#?}\n{}",
            leftovers(&env, a, &wt, &feature)
        );
        assert_eq!(
            env.git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
            format!("feat/{feature}"),
            "round {round}"
        );
        assert_fsck_clean(&env, a);
        env.swarm(a, &["--offline", "lane", "rm", &feature]).ok();
        round += 1;
    }
    eprintln!("lane new: {kills} group kills over {round} runs");
}

#[test]
fn lane_new_whose_git_is_killed_while_its_child_still_makes_the_branch_keeps_its_marker() {
    // `git worktree add -b` makes the branch in a child `git branch`. Killed
    // by a signal, the parent can be reaped (and git-swarm look at the
    // branch) before that child has finished writing it. Here a `git` on
    // PATH plays that moment exactly: for `worktree add` it leaves the real
    // `git branch` running a little later, then kills itself.
    let (env, _remote, clones) = Swarm::new(&["alice"]).init(0).plan(0, "auth").parts();
    let a = &clones[0];
    let real_git = env
        .command("sh", a)
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let real_git = String::from_utf8_lossy(&real_git.stdout).trim().to_string();
    let real_git = std::fs::canonicalize(&real_git).unwrap();
    let wrapper = env.bin.join("git");
    let _ = std::fs::remove_file(&wrapper);
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nreal='{real}'\n\
             if [ \"$1\" = worktree ] && [ \"$2\" = add ]; then\n\
             \x20 for last; do :; done\n\
             \x20 (sleep 0.5; \"$real\" branch feat/late \"$last\") </dev/null >/dev/null 2>&1 &\n\
             \x20 kill -KILL $$\n\
             fi\n\
             exec \"$real\" \"$@\"\n",
            real = real_git.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let args = ["--offline", "lane", "new", "late", "--plan", "auth"];
    // Run directly: `git swarm` would put git's exec-path first on PATH.
    let first = env.command("git-swarm", a).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(
        first.status.code(),
        Some(4),
        "git's death is a git failure: {stderr}"
    );
    assert!(stderr.contains("killed"), "{stderr}");
    // The child finishes the branch after git-swarm has looked.
    let branch = "refs/heads/feat/late";
    let mut seen = false;
    for _ in 0..100 {
        if env
            .git_run(a, &["rev-parse", "--verify", "--quiet", branch])
            .code
            == 0
        {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(seen, "the child made {branch}");
    assert!(
        a.join(".git/swarm/lane-start/late").exists(),
        "the start marker is kept for the re-run"
    );
    std::fs::remove_file(&wrapper).unwrap();
    let again = env.swarm(a, &args).ok();
    assert!(again.stdout.contains("interrupted"), "{again:#?}");
    let wt = a.join("_swarm-worktrees").join("late");
    assert_eq!(
        env.git(&wt, &["symbolic-ref", "--short", "HEAD"]),
        "feat/late"
    );
    assert!(
        !a.join(".git/swarm/lane-start/late").exists(),
        "marker left"
    );
    assert_fsck_clean(&env, a);
}
