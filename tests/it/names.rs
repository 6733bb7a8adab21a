//! Names and addresses: what is not ref-safe is refused before anything is
//! written, with the sanitised name as a hint.

use crate::harness::TestEnv;

#[test]
fn name_invalid_suggests_the_sanitised_name() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let before = env.all_refs(&repo);
    env.swarm(&repo, &["plan", "new", "Token Auth"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'token-auth'?");
    let json = env
        .swarm(&repo, &["plan", "new", "Auth", "--json"])
        .code(2)
        .json();
    assert_eq!(json["error"]["hints"][0], "did you mean 'auth'?");
    // Addresses keep their case; only what is not allowed is replaced.
    env.swarm(&repo, &["--as", "Claude work1", "plan", "new", "x"])
        .err(2, "NAME_INVALID")
        .stderr_has("hint: did you mean 'Claude-work1'?");
    // Nothing usable to suggest: no suggestion, only the rule.
    let run = env
        .swarm(&repo, &["plan", "new", "!!!"])
        .err(2, "NAME_INVALID");
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    assert_eq!(before, env.all_refs(&repo));
}

#[test]
fn addresses_that_are_not_ref_safe_are_refused_up_front() {
    let env = TestEnv::new();
    let repo = env.repo("alice");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    let before = env.all_refs(&repo);
    for addr in ["x.lock", "a..b", "a."] {
        env.swarm(
            &repo,
            &[
                "--as",
                addr,
                "handoff",
                "--reason",
                "capacity_low",
                "--plan",
                "auth",
            ],
        )
        .err(2, "NAME_INVALID")
        .stderr_has("hint:");
        env.swarm_env(&repo, &[("GIT_SWARM_AS", addr)], &["plan", "new", "y"])
            .err(2, "NAME_INVALID");
    }
    assert_eq!(env.all_refs(&repo), before);
}
