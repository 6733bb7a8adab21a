//! The small conveniences a team asked for: `whoami` (who you act as and
//! why, lane, plan, leader, signing key, remote) and `reply --last [--from
//! X]` (answer the newest ask addressed to you).

use crate::support::fixture::{worktree, Swarm};

#[test]
fn whoami_names_the_address_where_it_came_from_the_lane_its_leader_and_the_key() {
    let (env, _remote, clones) = Swarm::new(&["ann", "bob"])
        .plan(0, "auth")
        .leader(0, "bob")
        .lane_with(0, "api", &["--owner", "cat"])
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);

    let me = env.swarm(a, &["whoami", "--json"]).ok().json();
    assert_eq!(me["address"], "ann", "{me}");
    assert_eq!(me["source"], "swarm.as");
    assert_eq!(me["lane"], serde_json::Value::Null);
    assert_eq!(me["plan"], serde_json::Value::Null);
    assert_eq!(me["remote"], "origin");
    assert_eq!(me["signing_key"], serde_json::Value::Null);
    assert_eq!(me["trust"], "off");

    // The lane's worktree: its owner, its plan, the plan's leader (not cat).
    let wt = worktree(a, "api");
    let lane = env.swarm(&wt, &["whoami", "--json"]).ok().json();
    assert_eq!(lane["address"], "cat", "{lane}");
    assert_eq!(lane["source"], "lane owner");
    assert_eq!(lane["lane"], "api");
    assert_eq!(lane["plan"], "auth");
    assert_eq!(lane["leader"], "ann");
    assert_eq!(lane["epoch"], 1);
    assert_eq!(lane["is_leader"], false);

    // GIT_SWARM_AS and --as come first, in that order.
    let env_as = env
        .swarm_env(&wt, &[("GIT_SWARM_AS", "ann")], &["whoami", "--json"])
        .ok()
        .json();
    assert_eq!(env_as["address"], "ann");
    assert_eq!(env_as["source"], "GIT_SWARM_AS");
    assert_eq!(env_as["is_leader"], true, "{env_as}");
    let flag = env
        .swarm_env(
            &wt,
            &[("GIT_SWARM_AS", "ann")],
            &["whoami", "--as", "bob", "--json"],
        )
        .ok()
        .json();
    assert_eq!(flag["source"], "--as");
    assert_eq!(flag["address"], "bob");

    // bob's clone, with --plan, and a signing key of his own.
    env.git(b, &["config", "swarm.bob.signingKey", "/keys/bob"]);
    let text = env.swarm(b, &["whoami", "--plan", "auth"]).ok();
    for line in [
        "address: bob (from swarm.as)",
        "lane:    - (not in a lane's worktree)",
        "plan:    auth",
        "leader:  ann, epoch 1 (not you)",
        "signing: ssh /keys/bob (swarm.trust off)",
        "remote:  origin",
    ] {
        assert!(text.stdout.contains(line), "{line}: {}", text.stdout);
    }

    // Nobody known: shown, not an error.
    env.git(b, &["config", "--unset", "swarm.as"]);
    let nobody = env.swarm(b, &["whoami", "--json"]).ok().json();
    assert_eq!(nobody["address"], serde_json::Value::Null, "{nobody}");
    env.swarm(b, &["whoami", "--plan", "no/such"])
        .err(2, "NAME_INVALID");
}

#[test]
fn reply_last_answers_the_newest_ask_addressed_to_you() {
    let (env, _remote, clones) = Swarm::new(&["ann", "bob", "cat"]).plan(0, "auth").parts();
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);

    // Nothing to answer yet: a stable code, nothing posted.
    env.swarm(a, &["reply", "--last", "yes"])
        .err(2, "ASK_NOT_FOUND");
    assert!(env.refs(a, "refs/swarm/messages/").is_empty());

    let first = env
        .swarm(
            b,
            &["ask", "ann", "--plan", "auth", "first question?", "--json"],
        )
        .ok()
        .json();
    let second = env
        .swarm(
            c,
            &["ask", "ann", "--plan", "auth", "second question?", "--json"],
        )
        .ok()
        .json();
    // An ask to someone else and a note to ann are not answered.
    env.swarm(c, &["ask", "bob", "--plan", "auth", "not for ann?"])
        .ok();
    env.swarm(c, &["notify", "ann", "--plan", "auth", "just a note"])
        .ok();

    let r = env
        .swarm(a, &["reply", "--last", "the", "second", "--json"])
        .ok()
        .json();
    assert_eq!(r["message"]["reply_to"], second["message"]["id"], "{r}");
    assert_eq!(r["message"]["to"], "cat");
    assert_eq!(r["message"]["body"], "the second");

    let r = env
        .swarm(
            a,
            &["reply", "--last", "--from", "bob", "the first", "--json"],
        )
        .ok()
        .json();
    assert_eq!(r["message"]["reply_to"], first["message"]["id"], "{r}");
    assert_eq!(r["message"]["to"], "bob");

    env.swarm(a, &["reply", "--last", "--from", "dan", "hm"])
        .err(2, "ASK_NOT_FOUND")
        .stderr_has("no ask from dan addressed to ann");
    // --from needs --last; an id or --last is needed.
    env.swarm(a, &["reply", "--from", "bob", "x"]).code(2);
    env.swarm(a, &["reply"]).code(2);
    // bob sees the answer addressed to him.
    env.swarm(b, &["inbox"]).ok().stdout_has("the first");
}
