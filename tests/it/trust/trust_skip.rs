//! Under `swarm.trust=require` an untrusted record version is skipped, not
//! a wall: reads use the newest version whose commit is trusted (an
//! untrusted commit on top of trusted history is passed over), a trusted
//! write builds on that version and replaces the untrusted tip at the
//! remote (its lease is the untrusted tip), and the listings name the tip
//! `UNTRUSTED` until then. Real ssh keys, four real clones: alice and bob
//! listed, mallory with push rights and a key for "bob" the list does not
//! hold, carol a teammate with no key and trust off.

use std::path::{Path, PathBuf};

use crate::support::harness::TestEnv;
use crate::trust::{keygen, publish_trust_list};

const T1: &str = "refs/swarm/tasks/rel/t1";
const T2: &str = "refs/swarm/tasks/rel/t2";

struct Team {
    remote: PathBuf,
    alice: PathBuf,
    bob: PathBuf,
    mallory: PathBuf,
    carol: PathBuf,
}

/// alice leads plan `rel` (succession alice, bob) with tasks t1 and t2,
/// published; alice and bob require trust.
fn team(env: &TestEnv) -> Team {
    let (remote, clones) = env.remote_with_clones(&["alice", "bob", "mallory", "carol"]);
    let [alice, bob, mallory, carol] = <[PathBuf; 4]>::try_from(clones).unwrap();
    let lines = [keygen(env, &alice, "alice"), keygen(env, &bob, "bob")];
    // mallory holds a key he calls bob's: the trust list does not hold it.
    keygen(env, &mallory, "bob");
    publish_trust_list(env, &lines, &[&alice, &bob, &mallory, &carol]);
    for c in [&alice, &bob] {
        env.git(c, &["config", "swarm.trust", "require"]);
    }
    env.swarm(&alice, &["plan", "new", "rel"]).ok();
    env.swarm(
        &alice,
        &[
            "lead",
            "claim",
            "--plan",
            "rel",
            "--succession",
            "alice,bob",
        ],
    )
    .ok();
    for (id, title) in [("t1", "one"), ("t2", "two")] {
        env.swarm(
            &alice,
            &["task", "new", id, "--plan", "rel", "--title", title],
        )
        .ok();
    }
    env.swarm(&alice, &["sync"]).ok();
    env.swarm(&bob, &["sync"]).ok();
    Team {
        remote,
        alice,
        bob,
        mallory,
        carol,
    }
}

/// The `Swarm-Actor` of the commit `rev` at the remote.
fn actor(env: &TestEnv, remote: &Path, rev: &str) -> String {
    let body = env.git(remote, &["log", "-1", "--format=%B", rev]);
    body.lines()
        .find_map(|l| l.strip_prefix("Swarm-Actor: "))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_forged_claim_and_a_forged_takeover_decide_nothing_and_block_nothing() {
    let env = TestEnv::new();
    let t = team(&env);
    let trusted_t1 = env.git(&t.remote, &["rev-parse", T1]);
    let lead_before = env.git(&t.remote, &["rev-parse", "refs/swarm/lead/rel"]);
    env.swarm(&t.mallory, &["sync"]).ok();
    env.swarm(
        &t.mallory,
        &["--as", "bob", "task", "claim", "t1", "--plan", "rel"],
    )
    .ok();
    // A takeover once alice's lease ran out, as mallory's clock has it.
    env.swarm_env(
        &t.mallory,
        &[("GIT_SWARM_NOW", "2099-01-01T00:00:00Z")],
        &[
            "--as", "bob", "lead", "takeover", "--plan", "rel", "--reason", "silent",
        ],
    )
    .ok();
    let forged_t1 = env.git(&t.remote, &["rev-parse", T1]);
    assert_ne!(forged_t1, trusted_t1);
    assert_ne!(
        env.git(&t.remote, &["rev-parse", "refs/swarm/lead/rel"]),
        lead_before
    );

    // alice sees the forgeries named, and still leads.
    env.swarm(&t.alice, &["sync"]).ok();
    let status = env
        .swarm(&t.alice, &["lead", "status", "--plan", "rel", "--json"])
        .ok();
    assert_eq!(status.json()["leader"], "alice", "{}", status.stdout);
    env.swarm(&t.alice, &["task", "list", "--plan", "rel"])
        .ok()
        .stdout_has(&format!("UNTRUSTED {T1}"));

    // bob's own claim of t1 succeeds, built on the trusted version; it
    // replaces the forged tip at the remote.
    env.swarm(&t.bob, &["task", "claim", "t1", "--plan", "rel"])
        .ok();
    let tip = env.git(&t.remote, &["rev-parse", T1]);
    assert_eq!(actor(&env, &t.remote, &tip), "bob");
    assert_eq!(
        env.git(&t.remote, &["rev-parse", &format!("{tip}^")]),
        trusted_t1,
        "bob's claim builds on alice's version, not on the forgery"
    );
    env.git_run(
        &t.remote,
        &["merge-base", "--is-ancestor", &forged_t1, &tip],
    )
    .code(1);
    let shown = env
        .swarm(&t.alice, &["task", "show", "t1", "--plan", "rel", "--json"])
        .ok();
    assert!(shown.stdout.contains("\"bob\""), "{}", shown.stdout);
    let list = env.swarm(&t.alice, &["task", "list", "--plan", "rel"]).ok();
    assert!(
        !list.stdout.contains(&format!("UNTRUSTED {T1}")),
        "{}",
        list.stdout
    );
}

#[test]
fn an_unsigned_claim_from_a_clone_with_trust_off_is_passed_over_and_replaced_by_the_next_trusted_write(
) {
    let env = TestEnv::new();
    let t = team(&env);
    let trusted_t2 = env.git(&t.remote, &["rev-parse", T2]);
    // carol has no key and trust off: her claim is an unsigned commit on top.
    env.swarm(&t.carol, &["sync"]).ok();
    env.swarm(&t.carol, &["task", "claim", "t2", "--plan", "rel"])
        .ok();
    let unsigned = env.git(&t.remote, &["rev-parse", T2]);
    assert_eq!(
        env.git(&t.remote, &["rev-parse", &format!("{unsigned}^")]),
        trusted_t2
    );

    // Everyone who requires trust can still use t2: alice's listing shows
    // the trusted version and names the unsigned tip.
    env.swarm(&t.alice, &["sync"]).ok();
    env.swarm(&t.alice, &["task", "list", "--plan", "rel"])
        .ok()
        .stdout_has(&format!("UNTRUSTED {T2}"))
        .stdout_has("unsigned");
    let shown = env
        .swarm(&t.alice, &["task", "show", "t2", "--plan", "rel", "--json"])
        .ok();
    assert!(!shown.stdout.contains("\"carol\""), "{}", shown.stdout);

    // A clone that never had t2 takes its trusted version at sync.
    let dan = env.clone_remote(&t.remote, "dan");
    env.git(&dan, &["config", "swarm.trust", "require"]);
    env.swarm(&dan, &["sync"])
        .ok()
        .stderr_has(&format!("{T2}: the published version"))
        .stderr_has("took its newest trusted version");
    assert_eq!(env.git(&dan, &["rev-parse", T2]), trusted_t2);

    // The next trusted write (bob's claim) replaces the unsigned tip.
    env.swarm(&t.bob, &["task", "claim", "t2", "--plan", "rel"])
        .ok();
    let tip = env.git(&t.remote, &["rev-parse", T2]);
    assert_eq!(actor(&env, &t.remote, &tip), "bob");
    assert_eq!(
        env.git(&t.remote, &["rev-parse", &format!("{tip}^")]),
        trusted_t2
    );
    env.git_run(&t.remote, &["merge-base", "--is-ancestor", &unsigned, &tip])
        .code(1);
    env.swarm(&t.alice, &["sync"]).ok();
    let list = env.swarm(&t.alice, &["task", "list", "--plan", "rel"]).ok();
    assert!(!list.stdout.contains("UNTRUSTED"), "{}", list.stdout);
}
