//! Concurrency soak: three clones (three machines) run mixed operations at
//! the same time, round after round, through one bare remote: takeovers,
//! handoffs, racing accepts, plan saves and syncs. Afterwards no acceptance
//! is lost or doubled, the leader record's history is one line with epochs
//! rising by one per won takeover, and every clone converges on the same
//! refs. Every third round is a contested takeover and every third a
//! contested accept: the racers are lined up at a pause point after their
//! decision and released together, so the remote's compare-and-swap really
//! has to pick one; the rounds between mix operations at random.
//! Rounds: `GIT_SWARM_SOAK_ROUNDS` (default 6); seed printed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{
    assert_fsck_clean, finish, new_gate, soak_rounds, spawn, wait_arrivals, Rng,
};

enum Op {
    Takeover,
    Handoff,
    Accept(String),
    Save(u64),
    Sync,
}

fn run_op(env: &TestEnv, dir: &Path, name: &str, op: &Op) -> Run {
    match op {
        Op::Takeover => env.swarm(
            dir,
            &[
                "lead", "takeover", "--plan", "p", "--reason", "soak", "--force", "--json",
            ],
        ),
        Op::Handoff => env.swarm(
            dir,
            &[
                "handoff",
                "--plan",
                "p",
                "--reason",
                "capacity_low",
                "--next",
                "go",
                "--json",
            ],
        ),
        Op::Accept(id) => env.swarm(
            dir,
            &["--as", &format!("{name}-successor"), "accept", id, "--json"],
        ),
        Op::Save(n) => {
            let file = dir.join(format!("plan-{n}.md"));
            env.write(&file, &format!("# p\n\nedit {n} by {name}\n"));
            let run = env.swarm(
                dir,
                &["plan", "save", "p", "--file", file.to_str().unwrap()],
            );
            let _ = std::fs::remove_file(&file);
            run
        }
        Op::Sync => env.swarm(dir, &["sync", "--json"]),
    }
}

/// Start every racer with a pause at `point` (after its decision, before
/// it publishes), wait until all are there, release them together.
fn lined_up(env: &TestEnv, racers: &[(&Path, Vec<String>)], point: &str) -> Vec<Run> {
    let gate = new_gate(env, point);
    let pause = format!("{point}={}", gate.display());
    let children: Vec<_> = racers
        .iter()
        .map(|(dir, args)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            spawn(env, dir, &[("GIT_SWARM_PAUSE", &pause)], &args)
        })
        .collect();
    wait_arrivals(&gate, racers.len());
    std::fs::write(gate.join("go"), "").expect("open the gate");
    children
        .into_iter()
        .zip(racers)
        .map(|(c, (dir, args))| finish(c, &format!("(in {}) {}", dir.display(), args.join(" "))))
        .collect()
}

/// A sync that could not keep this clone's plan save, because another clone
/// published a save of the same lines first: exit 3, WRITE_LOST naming the
/// plan, and the lost version kept under refs/swarm-lost where it says.
fn lost_plan_kept(env: &TestEnv, dir: &Path, run: &Run) -> bool {
    if run.code != 3 || !run.stderr.contains("error[WRITE_LOST]") {
        return false;
    }
    assert!(
        run.stdout
            .contains("refs/swarm/plans/p:PLAN.md: both sides edited the same lines"),
        "{run:#?}"
    );
    let mut kept = env.refs(dir, "refs/swarm-lost/plans");
    kept.retain(|k, _| k.starts_with("refs/swarm-lost/plans/p@"));
    assert!(!kept.is_empty(), "{run:#?}");
    assert!(
        kept.keys().any(|k| run.stderr.contains(k.as_str())),
        "{kept:?} {run:#?}"
    );
    true
}

#[test]
fn mixed_operations_from_three_clones_lose_and_double_nothing() {
    let names = ["alice", "bob", "carol"];
    let (env, remote, clones) = Swarm::new(&names)
        .plan(0, "p")
        .leader(0, "alice,bob,carol")
        .sync(0)
        .parts();
    for c in &clones[1..] {
        env.swarm(c, &["sync"]).ok();
    }
    let mut rng = Rng::new("soak");
    let rounds = soak_rounds(6);
    let mut open: Vec<String> = Vec::new();
    let mut takeovers_won = 0u64;
    let mut last_winner: Option<usize> = None;
    // packet id -> who got exit 0 from accept
    let mut accepted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut contested_takeovers, mut contested_accepts) = (0, 0);
    for round in 0..rounds {
        if round % 3 == 0 {
            // All three take over at once, lined up after their decision.
            let args: Vec<String> = [
                "lead", "takeover", "--plan", "p", "--reason", "soak", "--force",
            ]
            .map(String::from)
            .to_vec();
            // The leader by an earlier round's takeover, its lease live,
            // finds its takeover done (exit 0, nothing written): it is not
            // a racer.
            if let Some(l) = last_winner {
                let mut own = args.clone();
                own.push("--json".into());
                let own: Vec<&str> = own.iter().map(String::as_str).collect();
                let run = env.swarm(&clones[l], &own).ok().json();
                assert_eq!(run["already"], true, "round {round}: {run}");
            }
            let racing: Vec<usize> = (0..clones.len())
                .filter(|&i| Some(i) != last_winner)
                .collect();
            let racers: Vec<(&Path, Vec<String>)> = racing
                .iter()
                .map(|&i| (clones[i].as_path(), args.clone()))
                .collect();
            let runs = lined_up(&env, &racers, "lead:objects");
            let winners: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].code == 0).collect();
            assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
            let won = racing[winners[0]];
            for (i, run) in runs.iter().enumerate() {
                if i != winners[0] {
                    assert_eq!(run.code, 3, "round {round}: {run:#?}");
                    run.expect_stderr("error[LEAD_RACE_LOST]");
                }
            }
            takeovers_won += 1;
            contested_takeovers += 1;
            last_winner = Some(won);
            continue;
        }
        if round % 3 == 1 {
            // One clone hands off; the other two, having synced it, accept
            // it at once, lined up after their checks.
            let author = round % names.len();
            let id = run_op(&env, &clones[author], names[author], &Op::Handoff)
                .ok()
                .json()["id"]
                .as_str()
                .unwrap()
                .to_string();
            let others: Vec<usize> = (0..names.len()).filter(|&i| i != author).collect();
            for &i in &others {
                let run = env.swarm(&clones[i], &["sync"]);
                assert!(
                    run.code == 0
                        || (run.code == 3 && run.stderr.contains("PUSH_REJECTED"))
                        || lost_plan_kept(&env, &clones[i], &run),
                    "{run:#?}"
                );
                env.swarm(&clones[i], &["packet", "show", &id]).ok();
            }
            let racers: Vec<(&Path, Vec<String>)> = others
                .iter()
                .map(|&i| {
                    let who = format!("{}-successor", names[i]);
                    (
                        clones[i].as_path(),
                        vec!["--as".into(), who, "accept".into(), id.clone()],
                    )
                })
                .collect();
            let runs = lined_up(&env, &racers, "accept:objects");
            let winners: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].code == 0).collect();
            assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
            let loser = &runs[1 - winners[0]];
            // The loser passed its own check and lost at the remote.
            assert_eq!(loser.code, 3, "round {round}: {loser:#?}");
            loser.expect_stderr("error[PACKET_ALREADY_ACCEPTED]");
            loser.expect_stderr("while you were accepting it");
            accepted
                .entry(id.clone())
                .or_default()
                .push(format!("{}-successor", names[others[winners[0]]]));
            contested_accepts += 1;
            continue;
        }
        // Each clone picks an operation; two clones may race for one packet.
        let contested = open.first().cloned();
        let ops: Vec<Op> = (0..names.len())
            .map(|i| match (rng.below(5), &contested) {
                (0, _) => Op::Takeover,
                (1, _) => Op::Handoff,
                (2 | 3, Some(id)) => Op::Accept(id.clone()),
                (2, None) => Op::Save((round * 10 + i) as u64),
                _ => Op::Sync,
            })
            .collect();
        let runs: Vec<Run> = std::thread::scope(|s| {
            let handles: Vec<_> = ops
                .iter()
                .enumerate()
                .map(|(i, op)| {
                    let (env, dir, name) = (&env, &clones[i], names[i]);
                    s.spawn(move || run_op(env, dir, name, op))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((i, op), run) in ops.iter().enumerate().zip(&runs) {
            match op {
                Op::Takeover => match run.code {
                    // (The leader's own takeover finds itself done.)
                    0 if run.json()["already"] == true => {}
                    0 => {
                        takeovers_won += 1;
                        last_winner = Some(i);
                    }
                    3 => assert!(
                        run.stdout.contains("LEAD_RACE_LOST") || run.stdout.contains("CAS_FAILED"),
                        "{run:#?}"
                    ),
                    _ => panic!("takeover: {run:#?}"),
                },
                Op::Handoff => open.push(
                    run.json()["id"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{run:#?}"))
                        .to_string(),
                ),
                Op::Accept(id) => match run.code {
                    0 => accepted
                        .entry(id.clone())
                        .or_default()
                        .push(format!("{}-successor", names[i])),
                    3 => assert!(run.stdout.contains("PACKET_ALREADY_ACCEPTED"), "{run:#?}"),
                    // Not fetched yet on this machine: a later round tries again.
                    2 if run.stdout.contains("NOT_FOUND") => {}
                    _ => panic!("accept: {run:#?}"),
                },
                Op::Save(_) => assert_eq!(run.code, 0, "{run:#?}"),
                Op::Sync => assert!(
                    run.code == 0
                        || (run.code == 3 && run.stdout.contains("PUSH_REJECTED"))
                        || lost_plan_kept(&env, &clones[i], run),
                    "{run:#?}"
                ),
            }
        }
        open.retain(|id| !accepted.contains_key(id));
    }
    // Everyone settles: two syncs each, in turn. In the first, a clone
    // whose plan save was published over by another's on the same lines is
    // told so (exit 3) and keeps its text; the second has nothing left to
    // report.
    for pass in 0..2 {
        for c in &clones {
            let run = env.swarm(c, &["sync"]);
            if pass == 1 || !lost_plan_kept(&env, c, &run) {
                run.ok();
            }
        }
    }
    // Every clone holds exactly what the remote holds.
    let published = env.refs(&remote, "refs/swarm");
    for c in &clones {
        let mine: BTreeMap<String, String> = env.refs(c, "refs/swarm");
        assert_eq!(mine, published, "{} did not converge", c.display());
        assert_fsck_clean(&env, c);
    }
    // No acceptance lost or doubled: one winner per packet, recorded as such,
    // and a packet ref has at most one acceptance in its history.
    for (id, winners) in &accepted {
        assert_eq!(winners.len(), 1, "packet {id} accepted by {winners:?}");
        let shown = env
            .swarm(&clones[0], &["packet", "show", id, "--json"])
            .ok()
            .json();
        assert_eq!(
            shown["acceptance"]["accepted_by"],
            winners[0].as_str(),
            "{shown}"
        );
        let refname = shown["ref"].as_str().unwrap();
        assert_eq!(
            env.git(&remote, &["rev-list", "--count", refname]),
            "2",
            "{refname}: packet + one acceptance"
        );
    }
    // The leader record: one line of history, epochs never skip or fork.
    let lead = "refs/swarm/lead/p";
    let all = env.git(&remote, &["rev-list", "--count", lead]);
    let first_parent = env.git(&remote, &["rev-list", "--count", "--first-parent", lead]);
    assert_eq!(all, first_parent, "the leader history forked");
    let epochs: Vec<u64> = env
        .git(
            &remote,
            &[
                "log",
                "--reverse",
                "--format=%(trailers:key=Swarm-Epoch,valueonly)",
                lead,
            ],
        )
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse().unwrap())
        .collect();
    for pair in epochs.windows(2) {
        assert!(
            pair[1] == pair[0] || pair[1] == pair[0] + 1,
            "epochs {epochs:?}"
        );
    }
    assert_eq!(
        *epochs.last().unwrap(),
        1 + takeovers_won,
        "epochs {epochs:?}, {takeovers_won} takeovers won"
    );
    eprintln!(
        "soak: {rounds} rounds, {takeovers_won} takeovers won, {} packets accepted, {} open",
        accepted.len(),
        open.len()
    );
    // The contested rounds happened (each had exactly one winner, above).
    assert_eq!(contested_takeovers, rounds.div_ceil(3));
    assert_eq!(contested_accepts, (rounds + 1) / 3);
    assert!(contested_takeovers > 0 && contested_accepts > 0);
}
