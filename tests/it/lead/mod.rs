//! Leadership across machines: a bare remote and clones driven as separate
//! processes. Each test asserts the exit code, the message and the refs
//! left behind, locally and on the remote.

pub(crate) mod land;
pub(crate) mod protect;

use std::path::Path;
use std::process::Child;

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{
    assert_aborted, assert_fsck_clean, finish, ref_of, run_and_kill, soak_rounds, spawn,
    wait_arrivals, Kill, Killed, Paused, Rng, WRITING,
};

const LEAD: &str = "refs/swarm/lead/auth";

/// The lead record at a commit, as YAML.
fn yaml_at(env: &TestEnv, dir: &Path, rev: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:lead.yaml")]))
        .expect("lead.yaml is YAML")
}

fn commit_file(env: &TestEnv, dir: &Path, name: &str, text: &str) -> String {
    env.write(&dir.join(name), text);
    env.git(dir, &["add", name]);
    // The guard hooks are another capability; these commits are not about them.
    env.git(dir, &["commit", "--quiet", "--no-verify", "-m", name]);
    env.git(dir, &["rev-parse", "HEAD"])
}

fn main_of(env: &TestEnv, remote: &Path) -> String {
    ref_of(env, remote, "refs/heads/main").expect("the remote has main")
}

/// alice creates plan auth and claims it with the given succession.
fn claimed(env: &TestEnv, a: &Path, succession: &str) -> serde_json::Value {
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(
        a,
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            succession,
            "--json",
        ],
    )
    .ok()
    .json()
}

// ---- tests ---------------------------------------------------------------

#[test]
fn a_takeover_on_one_clone_fences_the_old_leader_on_another() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);

    let claim = claimed(&env, a, "bob");
    assert_eq!(claim["leader"], "alice");
    assert_eq!(claim["epoch"], 1);
    assert_eq!(claim["succession"], serde_json::json!(["bob"]));
    let epoch1 = ref_of(&env, &remote, LEAD).expect("the claim is published at once");
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(epoch1.as_str()));
    assert_eq!(claim["commit"], epoch1.as_str());

    // bob cannot take over while alice's lease is live; nothing moves.
    let refused = env
        .swarm(
            b,
            &[
                "lead",
                "takeover",
                "--plan",
                "auth",
                "--reason",
                "alice is quiet",
            ],
        )
        .err(3, "LEASE_LIVE")
        .stderr_has("alice leads at epoch 1");
    refused.expect_stderr("--force");
    assert_eq!(
        ref_of(&env, &remote, LEAD).as_deref(),
        Some(epoch1.as_str())
    );
    assert_eq!(ref_of(&env, b, LEAD), None);

    // With --force and a reason he can; the reason is in the journal.
    let took = env
        .swarm(
            b,
            &[
                "lead",
                "takeover",
                "--plan",
                "auth",
                "--force",
                "--reason",
                "alice unreachable for 2h",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(took["leader"], "bob");
    assert_eq!(took["epoch"], 2);
    let epoch2 = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(epoch2, epoch1);
    assert_eq!(ref_of(&env, b, LEAD).as_deref(), Some(epoch2.as_str()));
    let msg = env.git(&remote, &["log", "-1", "--format=%B", LEAD]);
    for line in [
        "Swarm-Event: lead-takeover",
        "Swarm-Actor: bob",
        "Swarm-Epoch: 2",
        "Swarm-Previous-Leader: alice",
        "Swarm-Reason: alice unreachable for 2h",
        "Swarm-Forced: true",
    ] {
        assert!(msg.contains(line), "{line} missing from\n{msg}");
    }
    assert_eq!(
        env.git(&remote, &["rev-parse", &format!("{epoch2}^")]),
        epoch1
    );

    // alice still believes she leads (her local ref says so) but every
    // leader-only command is fenced by what the remote holds.
    let main_before = main_of(&env, &remote);
    commit_file(&env, a, "alice.txt", "stale work\n");
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(epoch1.as_str()));
    for args in [
        vec!["lead", "renew", "--plan", "auth"],
        vec!["lead", "handover", "carol", "--plan", "auth"],
        vec!["lead", "release", "--plan", "auth"],
        vec!["lead", "push", "--plan", "auth", "HEAD:main"],
    ] {
        env.swarm(a, &args)
            .err(3, "LEAD_FENCED")
            .stderr_has("you led plan 'auth' at epoch 1")
            .stderr_has("bob leads at epoch 2");
        assert_eq!(
            ref_of(&env, &remote, LEAD).as_deref(),
            Some(epoch2.as_str())
        );
        assert_eq!(main_of(&env, &remote), main_before, "after {args:?}");
    }
    let json = env
        .swarm(a, &["lead", "renew", "--plan", "auth", "--json"])
        .code(3)
        .json();
    assert_eq!(json["error"]["code"], "LEAD_FENCED");
    assert_eq!(json["error"]["detail"]["leader"], "bob");
    assert_eq!(json["error"]["detail"]["epoch"], 2);
    env.swarm(a, &["lead", "check", "--plan", "auth"])
        .code(1)
        .stdout_has("bob leads plan auth at epoch 2, not you");
    env.swarm(b, &["lead", "check", "--plan", "auth"])
        .ok()
        .stdout_has("you (bob) lead plan auth at epoch 2");

    // bob's fenced publish moves main and the lead ref in one push.
    env.git(b, &["pull", "--quiet", "--no-rebase", "origin", "main"]);
    let bob_head = commit_file(&env, b, "bob.txt", "current work\n");
    let pushed = env
        .swarm(
            b,
            &["lead", "push", "--plan", "auth", "HEAD:main", "--json"],
        )
        .ok()
        .json();
    assert_eq!(pushed["epoch"], 2);
    assert_eq!(pushed["event"], "lead-act");
    assert_eq!(main_of(&env, &remote), bob_head);
    let act = ref_of(&env, &remote, LEAD).unwrap();
    assert_eq!(env.git(&remote, &["rev-parse", &format!("{act}^")]), epoch2);
    assert_eq!(ref_of(&env, b, LEAD).as_deref(), Some(act.as_str()));
    let msg = env.git(&remote, &["log", "-1", "--format=%B", LEAD]);
    assert!(msg.contains("Swarm-Event: lead-act"), "{msg}");
    assert!(
        msg.contains(&format!("Swarm-Push: HEAD:main {bob_head}")),
        "{msg}"
    );

    // alice's attempt is still refused after bob's push.
    env.swarm(a, &["lead", "push", "--plan", "auth", "HEAD:main"])
        .err(3, "LEAD_FENCED");
    assert_eq!(main_of(&env, &remote), bob_head);
}

#[test]
fn a_stale_leader_that_passed_its_own_check_is_refused_by_the_remote_itself() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .leader(0, "bob")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let main_before = main_of(&env, &remote);
    commit_file(&env, a, "alice.txt", "work\n");

    // alice's lead push checks the record (she leads), writes its commit and
    // stops right before pushing; bob takes over in that window.
    let paused = Paused::at(
        &env,
        a,
        "lead:objects",
        &[],
        &["lead", "push", "--plan", "auth", "HEAD:main"],
    );
    env.swarm(
        b,
        &[
            "lead", "takeover", "--plan", "auth", "--force", "--reason", "race",
        ],
    )
    .ok();
    let bob_epoch = ref_of(&env, &remote, LEAD).unwrap();
    let run = paused.release();
    run.err(3, "LEAD_FENCED").stderr_has("bob leads at epoch 2");
    // The remote refused the whole atomic push: main and the lead ref are untouched.
    assert_eq!(main_of(&env, &remote), main_before);
    assert_eq!(
        ref_of(&env, &remote, LEAD).as_deref(),
        Some(bob_epoch.as_str())
    );
}

/// The times of the epoch-rule tests: the claim, the renew, and a time past
/// the claim's and the renew's leases.
const CLAIMED_AT: &str = "2026-03-01T10:00:00Z";
const LATE: [(&str, &str); 1] = [("GIT_SWARM_NOW", "2026-03-01T11:06:00Z")];

/// One repository of alice's, the clock at [`CLAIMED_AT`], plan auth, and
/// alice's claim of it (succession bob,carol, lanes api,ui, lease 10m).
fn auth_claimed_by_alice() -> (TestEnv, std::path::PathBuf, Run) {
    let mut env = TestEnv::new();
    let repo = env.repo("alice");
    env.set_env("GIT_SWARM_NOW", CLAIMED_AT);
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let claim = env
        .swarm(
            &repo,
            &[
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "bob,carol",
                "--lanes",
                "api,ui",
                "--lease",
                "10m",
            ],
        )
        .ok();
    (env, repo, claim)
}

/// bob takes the lead over at [`LATE`], alice's lease having run out.
fn bob_takes_over(env: &TestEnv, repo: &Path) -> serde_json::Value {
    env.swarm_env(
        repo,
        &LATE,
        &[
            "--as",
            "bob",
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "lease ran out",
            "--json",
        ],
    )
    .ok()
    .json()
}

/// bob hands the lead over to carol at [`LATE`], under `swarm.lease` 2h.
fn bob_hands_over_to_carol(env: &TestEnv, repo: &Path) -> serde_json::Value {
    env.git(repo, &["config", "swarm.lease", "2h"]);
    env.swarm_env(
        repo,
        &LATE,
        &[
            "--as", "bob", "lead", "handover", "carol", "--plan", "auth", "--json",
        ],
    )
    .ok()
    .json()
}

/// The lead journal of plan auth, newest first: each event with its epoch.
fn lead_events(env: &TestEnv, repo: &Path) -> Vec<String> {
    let log = env.git(
        repo,
        &[
            "log",
            "--format=%(trailers:key=Swarm-Event,valueonly,separator=) %(trailers:key=Swarm-Epoch,valueonly,separator=)",
            LEAD,
        ],
    );
    log.lines().map(str::to_string).collect()
}

#[test]
fn a_claim_leads_at_epoch_1_and_a_held_lead_refuses_another_claim() {
    let (env, repo, claim) = auth_claimed_by_alice();
    claim.stdout_has("you lead plan auth at epoch 1");
    env.swarm(
        &repo,
        &["lead", "claim", "--plan", "nope", "--succession", "bob"],
    )
    .err(2, "NOT_FOUND");
    let status = env
        .swarm(&repo, &["lead", "status", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(status["plan"], "auth");
    assert_eq!(status["leader"], "alice");
    assert_eq!(status["epoch"], 1);
    assert_eq!(status["succession"], serde_json::json!(["bob", "carol"]));
    assert_eq!(status["lanes"], serde_json::json!(["api", "ui"]));
    assert_eq!(status["lease_until"], "2026-03-01T10:10:00Z");
    assert_eq!(status["released"], false);
    assert_eq!(status["lease_live"], true);
    // Plain git reads the record.
    let y = yaml_at(&env, &repo, LEAD);
    assert_eq!(y["schema"].as_str(), Some("swarm-lead/v1"));
    assert_eq!(y["leader"].as_str(), Some("alice"));

    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm(
        &repo,
        &[
            "--as",
            "bob",
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "bob",
        ],
    )
    .err(3, "LEAD_HELD")
    .stderr_has("alice leads at epoch 1");
    assert_eq!(
        env.refs(&repo, "refs/swarm/lead"),
        before,
        "refusals write nothing"
    );
    assert_eq!(lead_events(&env, &repo), vec!["lead-claimed 1"]);
    env.swarm(&repo, &["lead", "push", "--plan", "auth", "HEAD:main"])
        .err(2, "REMOTE_MISSING");
}

#[test]
fn a_renew_by_the_leader_keeps_the_epoch_and_extends_the_lease_from_now() {
    let (env, repo, _) = auth_claimed_by_alice();
    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm(&repo, &["--as", "bob", "lead", "renew", "--plan", "auth"])
        .err(3, "NOT_LEADER");
    env.swarm(
        &repo,
        &["lead", "renew", "--plan", "auth", "--lease", "soon"],
    )
    .err(2, "USAGE");
    assert_eq!(
        env.refs(&repo, "refs/swarm/lead"),
        before,
        "refusals write nothing"
    );

    // Renew: epoch unchanged, lease extended from "now".
    let renewed = env
        .swarm_env(
            &repo,
            &[("GIT_SWARM_NOW", "2026-03-01T10:05:00Z")],
            &[
                "lead", "renew", "--plan", "auth", "--lease", "1h", "--lanes", "api", "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(renewed["epoch"], 1);
    assert_eq!(renewed["lease_until"], "2026-03-01T11:05:00Z");
    assert_eq!(renewed["lanes"], serde_json::json!(["api"]));
    assert_eq!(
        lead_events(&env, &repo),
        vec!["lead-renewed 1", "lead-claimed 1"]
    );
}

#[test]
fn a_takeover_needs_the_succession_and_an_expired_lease_and_fences_the_old_leader() {
    let (env, repo, _) = auth_claimed_by_alice();
    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm(
        &repo,
        &[
            "--as", "dave", "lead", "takeover", "--plan", "auth", "--force", "--reason", "x",
        ],
    )
    .err(3, "NOT_IN_SUCCESSION")
    .stderr_has("`git swarm lead succession --plan auth bob,carol,dave`");
    env.swarm(
        &repo,
        &[
            "--as", "bob", "lead", "takeover", "--plan", "auth", "--reason", "quiet",
        ],
    )
    .err(3, "LEASE_LIVE");
    assert_eq!(
        env.refs(&repo, "refs/swarm/lead"),
        before,
        "refusals write nothing"
    );

    // Once the lease has expired, a successor takes over without --force.
    let took = bob_takes_over(&env, &repo);
    assert_eq!(took["epoch"], 2);
    assert_eq!(took["leader"], "bob");
    assert_eq!(
        took["lease_until"], "2026-03-01T11:36:00Z",
        "default lease 30m"
    );
    let msg = env.git(&repo, &["log", "-1", "--format=%B", LEAD]);
    assert!(msg.contains("lease expired: lease ran out"), "{msg}");
    assert!(!msg.contains("Swarm-Forced"), "{msg}");

    // alice is fenced now.
    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm_env(&repo, &LATE, &["lead", "renew", "--plan", "auth"])
        .err(3, "LEAD_FENCED")
        .stderr_has("bob leads at epoch 2");
    assert_eq!(env.refs(&repo, "refs/swarm/lead"), before);
    assert_eq!(
        lead_events(&env, &repo),
        vec!["lead-takeover 2", "lead-claimed 1"]
    );
}

#[test]
fn a_handover_gives_the_lead_to_the_named_successor_at_the_next_epoch() {
    let (env, repo, _) = auth_claimed_by_alice();
    bob_takes_over(&env, &repo);
    // bob hands over to carol (epoch 3).
    let handed = bob_hands_over_to_carol(&env, &repo);
    assert_eq!(handed["epoch"], 3);
    assert_eq!(handed["leader"], "carol");
    assert_eq!(handed["lease_until"], "2026-03-01T13:06:00Z", "swarm.lease");
    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm_env(
        &repo,
        &LATE,
        &["--as", "carol", "lead", "check", "--plan", "auth"],
    )
    .ok();
    env.swarm_env(
        &repo,
        &LATE,
        &["--as", "bob", "lead", "check", "--plan", "auth"],
    )
    .code(1);
    env.swarm_env(
        &repo,
        &LATE,
        &["--as", "bob", "lead", "renew", "--plan", "auth"],
    )
    .err(3, "LEAD_FENCED")
    .stderr_has("carol leads at epoch 3");
    assert_eq!(env.refs(&repo, "refs/swarm/lead"), before);
    assert_eq!(
        lead_events(&env, &repo),
        vec!["lead-handover 3", "lead-takeover 2", "lead-claimed 1"]
    );
}

#[test]
fn a_release_leaves_nobody_leading_at_the_same_epoch_and_the_next_claim_is_one_more() {
    let (env, repo, _) = auth_claimed_by_alice();
    bob_takes_over(&env, &repo);
    bob_hands_over_to_carol(&env, &repo);
    // Release: nobody leads, epoch unchanged; a new claim is epoch+1.
    let released = env
        .swarm_env(
            &repo,
            &LATE,
            &[
                "--as", "carol", "lead", "release", "--plan", "auth", "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(released["epoch"], 3);
    assert_eq!(released["leader"], serde_json::Value::Null);
    assert_eq!(released["released"], true);
    let before = env.refs(&repo, "refs/swarm/lead");
    env.swarm_env(
        &repo,
        &LATE,
        &["--as", "carol", "lead", "check", "--plan", "auth"],
    )
    .code(1)
    .stdout_has("nobody leads plan auth (released at epoch 3)");
    env.swarm_env(
        &repo,
        &LATE,
        &["--as", "carol", "lead", "renew", "--plan", "auth"],
    )
    .err(3, "NOT_LEADER");
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has("auth [active] — auth — no leader (epoch 3)");
    assert_eq!(env.refs(&repo, "refs/swarm/lead"), before);
    let again = env
        .swarm_env(
            &repo,
            &LATE,
            &[
                "--as",
                "dave",
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "alice",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(again["epoch"], 4);
    assert_eq!(again["leader"], "dave");

    // The journal has every event with its epoch, in order.
    assert_eq!(
        lead_events(&env, &repo),
        vec![
            "lead-claimed 4",
            "lead-released 3",
            "lead-handover 3",
            "lead-takeover 2",
            "lead-claimed 1",
        ]
    );
}

#[test]
fn racing_takeovers_have_exactly_one_winner_per_round_and_a_gapless_history() {
    let names = ["s0", "s1", "s2", "s3"];
    let (env, remote, clones) = Swarm::new(&names)
        .plan(0, "auth")
        .leader(0, "s0,s1,s2,s3")
        .parts();
    let rounds = soak_rounds(10);
    let t0 = jiff::Timestamp::from_second(1_800_000_000).unwrap();
    for round in 0..rounds {
        let expected_epoch = round as u64 + 2;
        // Even rounds: all four are lined up after their decision, then
        // released together, so they really race at the remote's CAS.
        // Odd rounds: the lease has expired and they start at once, no force.
        let lined_up = round % 2 == 0;
        let now = (t0 + jiff::SignedDuration::from_hours(round as i64)).to_string();
        let gate = env.root().join(format!("gate-{round}"));
        let pause = format!("lead:objects={}", gate.display());
        let mut vars: Vec<(&str, &str)> = vec![("GIT_SWARM_NOW", &now)];
        if lined_up {
            vars.push(("GIT_SWARM_PAUSE", &pause));
        }
        let mut args = vec!["lead", "takeover", "--plan", "auth", "--reason", "soak"];
        if lined_up {
            args.push("--force");
        }
        let children: Vec<Child> = clones
            .iter()
            .map(|dir| spawn(&env, dir, &vars, &args))
            .collect();
        if lined_up {
            wait_arrivals(&gate, names.len());
            std::fs::write(gate.join("go"), "").unwrap();
        }
        let runs: Vec<Run> = children
            .into_iter()
            .zip(names)
            .map(|(c, n)| finish(c, &format!("round {round}: {n} takeover")))
            .collect();
        let winners: Vec<usize> = (0..runs.len()).filter(|&i| runs[i].code == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {runs:#?}");
        let winner = names[winners[0]];
        let tip = ref_of(&env, &remote, LEAD).unwrap();
        let rec = yaml_at(&env, &remote, &tip);
        assert_eq!(rec["epoch"].as_u64(), Some(expected_epoch), "round {round}");
        assert_eq!(rec["leader"].as_str(), Some(winner), "round {round}");
        for (i, run) in runs.iter().enumerate() {
            if i == winners[0] {
                continue;
            }
            assert_eq!(run.code, 3, "round {round}: {run:#?}");
            let lost = run.stderr.contains("error[LEAD_RACE_LOST]");
            let live = run.stderr.contains("error[LEASE_LIVE]");
            if lined_up {
                assert!(lost, "round {round}: {run:#?}");
            } else {
                assert!(lost || live, "round {round}: {run:#?}");
            }
            assert!(
                run.stderr
                    .contains(&format!("{winner} leads at epoch {expected_epoch}")),
                "round {round}: the loser is told who won\n{run:#?}"
            );
        }
        // Every clone's local ref is the published record or behind it.
        for dir in &clones {
            if let Some(local) = ref_of(&env, dir, LEAD) {
                env.git_run(&remote, &["merge-base", "--is-ancestor", &local, &tip])
                    .ok();
            }
        }
    }
    // The remote's history: one line, epochs 1..=n without a gap, no fork.
    let first_parent = env.git(&remote, &["rev-list", "--first-parent", LEAD]);
    let all = env.git(&remote, &["rev-list", LEAD]);
    assert_eq!(first_parent, all, "the record history forked");
    let merges = env.git(&remote, &["rev-list", "--merges", LEAD]);
    assert_eq!(merges, "");
    let epochs: Vec<u64> = first_parent
        .lines()
        .map(|c| yaml_at(&env, &remote, c)["epoch"].as_u64().unwrap())
        .collect();
    let want: Vec<u64> = (1..=rounds as u64 + 1).rev().collect();
    assert_eq!(epochs, want);
    assert_fsck_clean(&env, &remote);
}

#[test]
fn a_takeover_stopped_at_any_point_is_completed_by_running_it_again() {
    for point in ["lead:objects", "publish:pushed", "lead:pushed"] {
        let (env, remote, clones) = Swarm::new(&["alice", "bob"])
            .plan(0, "auth")
            .leader(0, "bob")
            .parts();
        let b = &clones[1];
        let epoch1 = ref_of(&env, &remote, LEAD).unwrap();
        let args = [
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--force",
            "--reason",
            "crash test",
        ];
        let crashed = env.swarm_env(b, &[("GIT_SWARM_FAILPOINT", point)], &args);
        assert_aborted(&crashed, point);
        assert_fsck_clean(&env, b);
        assert_fsck_clean(&env, &remote);
        let published = ref_of(&env, &remote, LEAD).unwrap();
        if point == "lead:objects" {
            assert_eq!(published, epoch1, "{point}: nothing was published");
        } else {
            let rec = yaml_at(&env, &remote, &published);
            assert_eq!(rec["epoch"].as_u64(), Some(2), "{point}: published in full");
            assert_eq!(rec["leader"].as_str(), Some("bob"));
        }
        assert_eq!(
            ref_of(&env, b, LEAD),
            None,
            "{point}: the local ref moves last"
        );
        // Running it again completes it: epoch 2, not 3.
        let again = env.swarm(b, &args).ok().json_or_text();
        let tip = ref_of(&env, &remote, LEAD).unwrap();
        let rec = yaml_at(&env, &remote, &tip);
        assert_eq!(rec["epoch"].as_u64(), Some(2), "{point}: {again}");
        assert_eq!(rec["leader"].as_str(), Some("bob"));
        assert_eq!(
            ref_of(&env, b, LEAD).as_deref(),
            Some(tip.as_str()),
            "{point}"
        );
        assert_eq!(
            env.git(&remote, &["rev-list", "--count", LEAD]),
            "2",
            "{point}: one claim, one takeover"
        );
        env.swarm(b, &["lead", "check", "--plan", "auth"]).ok();
    }
}

#[test]
fn takeovers_killed_at_random_moments_leave_whole_records_and_complete_on_rerun() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .leader(0, "alice,bob")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let mut rng = Rng::new("takeover kills");
    let rounds = soak_rounds(10) * 2;
    let args = [
        "lead", "takeover", "--plan", "auth", "--force", "--reason", "kill",
    ];
    let mut killed = 0;
    for round in 0..rounds {
        let dir = if round % 2 == 0 { a } else { b };
        let before = ref_of(&env, &remote, LEAD).unwrap();
        let before_epoch = yaml_at(&env, &remote, &before)["epoch"].as_u64().unwrap();
        let kill = Kill::draw(&mut rng, round, 120);
        let got = run_and_kill(&env, dir, WRITING, &args, kill);
        assert_ne!(
            got,
            Killed::NeverWrote,
            "round {round}: the takeover wrote nothing"
        );
        if let Kill::AtPoint = kill {
            assert_eq!(got, Killed::MidWrite, "round {round}");
        }
        killed += (got == Killed::MidWrite) as usize;
        assert_fsck_clean(&env, dir);
        // The remote holds a whole record: the old one or exactly one more.
        let after = ref_of(&env, &remote, LEAD).unwrap();
        let rec = yaml_at(&env, &remote, &after);
        let epoch = rec["epoch"].as_u64().unwrap();
        assert!(
            epoch == before_epoch || epoch == before_epoch + 1,
            "round {round}"
        );
        // The local ref is the published record, or behind it, or absent.
        if let Some(local) = ref_of(&env, dir, LEAD) {
            env.git_run(&remote, &["merge-base", "--is-ancestor", &local, &after])
                .ok();
        }
        // Running it again completes it.
        env.swarm(dir, &args).ok();
        let done = ref_of(&env, &remote, LEAD).unwrap();
        assert_eq!(ref_of(&env, dir, LEAD).as_deref(), Some(done.as_str()));
        let rec = yaml_at(&env, &remote, &done);
        assert_eq!(
            rec["leader"].as_str(),
            Some(if round % 2 == 0 { "alice" } else { "bob" })
        );
    }
    eprintln!("{killed} of {rounds} takeovers were killed mid-write");
    assert!(killed > 0, "round 0 kills a takeover at its writing point");
    let first_parent = env.git(&remote, &["rev-list", "--first-parent", LEAD]);
    assert_eq!(first_parent, env.git(&remote, &["rev-list", LEAD]));
    assert_fsck_clean(&env, &remote);
}

#[test]
fn a_lock_left_by_a_killed_process_does_not_block_the_record_forever() {
    let (env, repo) = Swarm::repo("alice")
        .plan(0, "auth")
        .leader(0, "bob")
        .repo_parts();
    let lock = repo.join(".git/refs/swarm/lead/auth.lock");
    std::fs::write(&lock, "").unwrap();
    // A lock that has stood for a minute was left by a dead process.
    let old = std::process::Command::new("touch")
        .args(["-d", "1 minute ago"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(old.success());
    env.swarm(&repo, &["lead", "renew", "--plan", "auth"]).ok();
    assert!(!lock.exists());
}

#[test]
fn sync_lets_the_published_leader_record_win_and_reports_the_local_one_fenced() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .leader(0, "bob")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    // An offline renew on top of the published record is a fast-forward.
    env.swarm(a, &["--offline", "lead", "renew", "--plan", "auth"])
        .ok();
    let renewed = ref_of(&env, a, LEAD).unwrap();
    assert_ne!(
        ref_of(&env, &remote, LEAD).as_deref(),
        Some(renewed.as_str())
    );
    env.swarm(a, &["lead", "status", "--plan", "auth"])
        .ok()
        .stdout_has("not published: `git swarm sync` publishes it");
    // The plan was published by `plan new` already: only the renew is left.
    let out = env.swarm(a, &["sync", "--json"]).ok().json();
    assert_eq!(out["pushed"], serde_json::json!([LEAD]));
    assert_eq!(
        ref_of(&env, &remote, LEAD).as_deref(),
        Some(renewed.as_str())
    );

    // bob takes over at the remote; alice renews offline on her old epoch.
    env.swarm(
        b,
        &[
            "lead", "takeover", "--plan", "auth", "--force", "--reason", "gone",
        ],
    )
    .ok();
    let bobs = ref_of(&env, &remote, LEAD).unwrap();
    env.swarm(a, &["--offline", "lead", "renew", "--plan", "auth"])
        .ok();
    let stale = ref_of(&env, a, LEAD).unwrap();
    // alice's renew exited 0 (offline): the fenced write is named, exit 3.
    let out = env
        .swarm(a, &["sync", "--json"])
        .err(3, "WRITE_LOST")
        .json();
    let out = &out["error"]["detail"];
    assert_eq!(out["lost"][0]["ref"], LEAD);
    assert_eq!(out["lost"][0]["local"], stale.as_str());
    assert_eq!(out["fenced"][0]["ref"], LEAD);
    assert_eq!(out["fenced"][0]["local"], stale.as_str());
    assert_eq!(out["fenced"][0]["remote"], bobs.as_str());
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(bobs.as_str()));
    assert_eq!(ref_of(&env, &remote, LEAD).as_deref(), Some(bobs.as_str()));
    env.swarm(a, &["sync"]).ok().stdout_has("up to date");
    env.swarm(a, &["lead", "renew", "--plan", "auth"])
        .err(3, "LEAD_FENCED");
}

/// Lets a test show either JSON or text when it wants to print the run.
trait JsonOrText {
    fn json_or_text(self) -> String;
}

impl JsonOrText for Run {
    fn json_or_text(self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

#[test]
fn a_handover_to_an_address_outside_the_succession_needs_force() {
    let (env, repo) = Swarm::repo("alice")
        .plan(0, "auth")
        .leader(0, "alice,bob")
        .repo_parts();
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["lead", "handover", "zed", "--plan", "auth"])
        .err(2, "SUCCESSOR_UNKNOWN")
        .stderr_has("--force");
    assert_eq!(
        before,
        env.all_refs(&repo),
        "a refused handover wrote something"
    );
    let status = env
        .swarm(&repo, &["lead", "status", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(
        (status["leader"].as_str(), status["epoch"].as_u64()),
        (Some("alice"), Some(1))
    );
    env.swarm(
        &repo,
        &["lead", "handover", "zed", "--plan", "auth", "--force"],
    )
    .ok();
    let status = env
        .swarm(&repo, &["lead", "status", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(
        (status["leader"].as_str(), status["epoch"].as_u64()),
        (Some("zed"), Some(2))
    );
    assert_eq!(
        status["succession"],
        serde_json::json!(["alice", "bob", "zed"])
    );
    // A plan that does not exist is not "unclaimed".
    env.swarm(&repo, &["lead", "status", "--plan", "nosuch"])
        .err(2, "NOT_FOUND");
    // The leader itself is pointed to renew, not told that someone leads.
    let before = env.all_refs(&repo);
    env.swarm(
        &repo,
        &[
            "--as", "zed", "lead", "takeover", "--plan", "auth", "--reason", "again",
        ],
    )
    .err(3, "LEASE_LIVE")
    .stderr_has("you already lead plan 'auth' at epoch 2")
    .stderr_has("git swarm lead renew --plan auth");
    assert_eq!(before, env.all_refs(&repo));
}

#[test]
fn after_your_own_release_you_are_not_the_leader_and_a_moved_epoch_still_fences() {
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
    let claim = |who: &str, succession: &str| {
        env.swarm(
            &repo,
            &[
                "--as",
                who,
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                succession,
            ],
        )
        .ok();
    };
    let as_ = |who: &str, args: &[&str]| {
        let mut all = vec!["--as", who, "lead"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--plan", "auth"]);
        env.swarm(&repo, &all)
    };

    // alice releases; bob claims epoch 2. alice's leadership ended by her
    // own hand: she is not the leader, not a fenced one.
    claim("alice", "bob");
    as_("alice", &["release"]).ok();
    claim("bob", "alice");
    as_("alice", &["renew"])
        .err(3, "NOT_LEADER")
        .stderr_has("bob leads at epoch 2");
    as_("alice", &["release"]).err(3, "NOT_LEADER");
    // Still so once bob has released too (epoch 2, nobody leads).
    as_("bob", &["release"]).ok();
    as_("alice", &["renew"])
        .err(3, "NOT_LEADER")
        .stderr_has("nobody leads (released at epoch 2)");
    as_("bob", &["renew"]).err(3, "NOT_LEADER");

    // alice claims again (epoch 3) and bob takes over (epoch 4): her epoch
    // moved on without her release, so she is fenced, also after bob's
    // own release.
    claim("alice", "bob");
    as_("bob", &["takeover", "--force", "--reason", "alice is gone"]).ok();
    as_("alice", &["renew"])
        .err(3, "LEAD_FENCED")
        .stderr_has("you led plan 'auth' at epoch 3")
        .stderr_has("bob leads at epoch 4");
    as_("bob", &["release"]).ok();
    as_("alice", &["handover", "bob"]).err(3, "LEAD_FENCED");
    as_("bob", &["renew"]).err(3, "NOT_LEADER");
}

#[test]
fn an_offline_write_during_a_publish_is_kept_and_reported_not_dropped() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .leader(0, "bob")
        .parts();
    let a = &clones[0];
    let before = ref_of(&env, a, LEAD).unwrap();

    // alice renews at the remote and stops between the push and moving her
    // local ref; meanwhile an offline renew in the same clone moves it.
    let paused = Paused::at(
        &env,
        a,
        "lead:pushed",
        &[],
        &["lead", "renew", "--plan", "auth"],
    );
    let published = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(published, before);
    env.swarm(
        a,
        &[
            "--offline",
            "lead",
            "renew",
            "--plan",
            "auth",
            "--lease",
            "2h",
        ],
    )
    .ok();
    let offline = ref_of(&env, a, LEAD).unwrap();
    assert_ne!(offline, before);
    assert_ne!(offline, published);
    let run = paused.release();
    run.err(3, "CAS_FAILED")
        .stderr_has(&published[..12])
        .stderr_has(&offline[..12])
        .stderr_has("git swarm sync");
    // The offline write is still there for sync to reconcile.
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(offline.as_str()));
    assert_eq!(
        ref_of(&env, &remote, LEAD).as_deref(),
        Some(published.as_str())
    );
    let out = env
        .swarm(a, &["sync", "--json"])
        .err(3, "WRITE_LOST")
        .json();
    let out = &out["error"]["detail"];
    assert_eq!(out["fenced"][0]["local"], offline.as_str());
    assert_eq!(out["lost"][0]["local"], offline.as_str());
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(published.as_str()));
    env.swarm(a, &["lead", "renew", "--plan", "auth"]).ok();
}

#[test]
fn a_claim_whose_succession_omits_the_claimant_warns_on_stderr() {
    let (env, remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").parts();
    let a = &clones[0];
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "bob,carol",
                "--json",
            ],
        )
        .ok();
    run.expect_stderr(
        "warning: the succession of plan 'auth' (bob, carol) does not name you (alice)",
    );
    assert_eq!(run.json()["leader"], "alice", "the claim still happened");
    assert!(ref_of(&env, &remote, LEAD).is_some());
    // Naming yourself: no warning.
    env.swarm(a, &["plan", "new", "other"]).ok();
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "claim",
                "--plan",
                "other",
                "--succession",
                "alice,bob",
            ],
        )
        .ok();
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn lead_succession_is_leader_only_fenced_and_published_at_once() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .leader(0, "alice,bob")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let claimed = ref_of(&env, &remote, LEAD).unwrap();

    // The leader edits it: published at once, epoch unchanged, no re-claim.
    let run = env
        .swarm(
            a,
            &[
                "lead",
                "succession",
                "--plan",
                "auth",
                "alice,bob,carol",
                "--json",
            ],
        )
        .ok();
    let json = run.json();
    assert_eq!(
        json["succession"],
        serde_json::json!(["alice", "bob", "carol"])
    );
    assert_eq!(json["epoch"], 1);
    assert_eq!(json["leader"], "alice");
    assert_eq!(json["event"], "lead-succession");
    let published = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(published, claimed);
    assert_eq!(ref_of(&env, a, LEAD).as_deref(), Some(published.as_str()));
    let rec = yaml_at(&env, a, LEAD);
    assert_eq!(rec["succession"][2], "carol");
    let msg = env.git(a, &["log", "-1", "--format=%B", LEAD]);
    assert!(msg.contains("Swarm-Event: lead-succession"), "{msg}");
    assert!(
        msg.contains("Swarm-Previous-Succession: alice,bob"),
        "{msg}"
    );
    assert_eq!(
        env.git(a, &["rev-parse", &format!("{LEAD}^")]),
        claimed,
        "one new version on top of the claim"
    );

    // Not the leader: refused, nothing moves anywhere.
    let before = env.all_refs(&remote);
    env.swarm(b, &["lead", "succession", "--plan", "auth", "bob"])
        .err(3, "NOT_LEADER");
    assert_eq!(before, env.all_refs(&remote));

    // Bad input: an invalid address, a duplicate, the same list.
    env.swarm(
        a,
        &["lead", "succession", "--plan", "auth", "bob,Not Valid"],
    )
    .err(2, "NAME_INVALID");
    env.swarm(a, &["lead", "succession", "--plan", "auth", "bob,bob"])
        .err(2, "USAGE");
    assert_eq!(before, env.all_refs(&remote));
    // The same list again: nothing to change, nothing written, exit 0 (and
    // so a re-run after an interrupted publish completes).
    let again = env
        .swarm(
            a,
            &[
                "lead",
                "succession",
                "--plan",
                "auth",
                "alice,bob,carol",
                "--json",
            ],
        )
        .ok();
    assert_eq!(again.json()["already"], true);
    assert_eq!(before, env.all_refs(&remote));

    // Killed after its push, before the local ref moved: the re-run completes.
    let killed = env.swarm_env(
        a,
        &[("GIT_SWARM_FAILPOINT", "lead:pushed")],
        &["lead", "succession", "--plan", "auth", "alice,bob,dave"],
    );
    assert_ne!(killed.code, 0);
    let published = ref_of(&env, &remote, LEAD).unwrap();
    assert_ne!(ref_of(&env, a, LEAD).as_deref(), Some(published.as_str()));
    env.swarm(
        a,
        &["lead", "succession", "--plan", "auth", "alice,bob,dave"],
    )
    .ok()
    .stdout_has("already alice, bob, dave");
    assert_eq!(ref_of(&env, a, LEAD), Some(published.clone()));
    assert_eq!(ref_of(&env, &remote, LEAD), Some(published));

    // Leaving yourself out is allowed, with a warning on stderr.
    let run = env
        .swarm(a, &["lead", "succession", "--plan", "auth", "bob,carol"])
        .ok();
    run.expect_stderr("warning: the succession of plan 'auth' (bob, carol) does not name you");
    run.expect_stdout("succession of plan auth is now bob, carol (epoch 1 unchanged)");
    assert!(!run.stdout.contains("warning"));

    // A fenced leader: alice hands over to bob (epoch 2), then tries again.
    env.swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok();
    let before = env.all_refs(&remote);
    env.swarm(a, &["lead", "succession", "--plan", "auth", "alice"])
        .err(3, "LEAD_FENCED")
        .stderr_has("bob leads at epoch 2");
    assert_eq!(before, env.all_refs(&remote));
    // The new leader may.
    env.swarm(b, &["lead", "succession", "--plan", "auth", "bob,alice"])
        .ok();
    assert_eq!(yaml_at(&env, &remote, LEAD)["succession"][1], "alice");
}

#[test]
fn lead_log_prints_the_leader_journal_newest_first() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"]).plan(0, "auth").parts();
    let (a, b) = (&clones[0], &clones[1]);
    // Published at once: bob's clone finds the plan without a sync.
    env.swarm(b, &["lead", "log", "--plan", "auth"])
        .ok()
        .stdout_has("nobody has claimed it");
    env.swarm(a, &["lead", "log", "--plan", "auth"])
        .ok()
        .stdout_has("nobody has claimed it");
    env.swarm(
        a,
        &[
            "lead",
            "claim",
            "--plan",
            "auth",
            "--succession",
            "alice,bob",
        ],
    )
    .ok();
    env.swarm(a, &["lead", "renew", "--plan", "auth"]).ok();
    env.swarm(a, &["lead", "handover", "bob", "--plan", "auth"])
        .ok();
    env.swarm(b, &["lead", "release", "--plan", "auth"]).ok();

    // bob's clone reads the published journal (fetched first).
    let json = env
        .swarm(b, &["lead", "log", "--plan", "auth", "--json"])
        .ok()
        .json();
    let entries = json["entries"].as_array().unwrap();
    let seen: Vec<(&str, u64, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["epoch"].as_u64().unwrap(),
                e["actor"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("lead-released", 2, "bob"),
            ("lead-handover", 2, "alice"),
            ("lead-renewed", 1, "alice"),
            ("lead-claimed", 1, "alice"),
        ]
    );
    assert_eq!(entries[1]["leader"], "bob");
    assert_eq!(entries[0]["leader"], serde_json::Value::Null);
    assert_eq!(json["published"], true);

    let text = env.swarm(a, &["lead", "log", "--plan", "auth"]).ok().stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains("lead-released") && lines[0].contains("epoch 2"),
        "{text}"
    );
    assert!(
        lines[3].contains("lead-claimed") && lines[3].contains("alice"),
        "{text}"
    );
    env.swarm(a, &["lead", "log", "--plan", "Auth"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'auth'?");
}
