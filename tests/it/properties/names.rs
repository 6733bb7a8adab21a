//! Names and addresses: what is not ref-safe is refused before anything is
//! written, with the sanitised name as a hint.

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

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
    let (env, repo) = Swarm::repo("alice").plan(0, "auth").repo_parts();
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

#[test]
fn a_typo_of_a_known_name_or_address_gets_a_did_you_mean() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .task(0, "login", "log in")
        .lane_with(0, "tokenizer", &["--no-task"])
        .run(1, &["notify", "alice", "hello from bob"])
        .sync(0)
        .parts();
    let a = &clones[0];

    // A known address: no warning. A typo of one: posted, with a warning.
    let run = env.swarm(a, &["notify", "bob", "hi"]).ok();
    assert!(!run.stderr.contains("no record"), "{}", run.stderr);
    let run = env.swarm(a, &["notify", "bobb", "hi", "--json"]).ok();
    assert_eq!(run.json()["message"]["to"], "bobb");
    run.expect_stderr("no record in this clone knows the address 'bobb' (did you mean 'bob'?;");
    // Nothing near: the warning names none.
    let run = env.swarm(a, &["notify", "zed", "hi"]).ok();
    run.expect_stderr("knows the address 'zed' (`git swarm sync`");

    // NOT_FOUND names the likely meant one, as NAME_INVALID does.
    let before = env.all_refs(a);
    env.swarm(a, &["lane", "rm", "tokenzier"])
        .err(2, "NOT_FOUND")
        .stderr_has("hint: did you mean 'tokenizer'?");
    env.swarm(a, &["plan", "show", "atuh"])
        .err(2, "NOT_FOUND")
        .stderr_has("hint: did you mean 'auth'?");
    env.swarm(a, &["task", "show", "lgoin", "--plan", "auth"])
        .err(2, "TASK_NOT_FOUND")
        .stderr_has("hint: did you mean 'login'?");
    env.swarm(a, &["lane", "rm", "other"])
        .err(2, "NOT_FOUND")
        .expect_stderr("list lanes");
    assert_eq!(env.all_refs(a), before);
}
