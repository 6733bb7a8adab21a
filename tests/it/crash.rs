//! Every writing command, killed (SIGKILL) in the middle of its write many
//! times: afterwards `git fsck` is clean, every record still reads (whole or
//! absent — never half-written), and running the command again converges.
//! Each run is held where it has begun writing (`process::WRITING`, or
//! `sync:reconciled` for sync, which writes no commit of its own) and killed
//! there or a random moment later; only a kill of a run still going counts.
//! Rounds: `GIT_SWARM_SOAK_ROUNDS` (default 4 per command); the kill moments
//! come from a seeded generator printed on stderr (`GIT_SWARM_SOAK_SEED`).

use std::path::Path;

use crate::fixture::Swarm;
use crate::harness::TestEnv;
use crate::process::{assert_fsck_clean, run_and_kill, soak_rounds, Kill, Killed, Rng, WRITING};

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
