//! A published record that cannot be read (too deep, malformed) is listed
//! as unreadable by every listing, and only the commands that need it fail.

use crate::support::fixture::{push_raw_record, Swarm};

#[test]
fn one_deep_or_malformed_published_record_is_refused_and_listings_go_on() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "good")
        .lane(0, "ok")
        .sync(0)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let deep = format!(
        "schema: swarm-plan/v1\nplan: x\nx: {}1{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    push_raw_record(&env, a, "refs/swarm/plans/x", "plan.yaml", &deep);
    push_raw_record(
        &env,
        a,
        "refs/swarm/lanes/broken",
        "lane.yaml",
        "schema: swarm-lane/v1\nfeature: [unclosed\n",
    );
    push_raw_record(
        &env,
        a,
        "refs/swarm/packets/good/20260101T000000Z-mallory",
        "packet.yaml",
        "schema: dwp-handoff/v1\n: : :\n",
    );
    // Every clone gets them with sync, which still syncs everything else.
    env.swarm(b, &["sync"]).ok();
    assert!(env
        .refs(b, "refs/swarm/plans")
        .contains_key("refs/swarm/plans/x"));
    assert!(env
        .refs(b, "refs/swarm/plans")
        .contains_key("refs/swarm/plans/good"));

    let status = env.swarm(b, &["status"]).ok();
    status.expect_stdout("good [active]");
    status.expect_stderr("refs/swarm/plans/x");
    status.expect_stderr("RECORD_INVALID");
    status.expect_stderr("refs/swarm/lanes/broken");
    status.expect_stderr("20260101T000000Z-mallory");
    let json = env.swarm(b, &["status", "--json"]).ok().json();
    let bad: Vec<&str> = json["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["ref"].as_str().unwrap())
        .collect();
    // status lists open packets too, so it reads (and names) the bad packet.
    assert_eq!(
        bad,
        [
            "refs/swarm/plans/x",
            "refs/swarm/lanes/broken",
            "refs/swarm/packets/good/20260101T000000Z-mallory"
        ]
    );
    assert_eq!(json["unreadable"][0]["code"], "RECORD_INVALID");
    assert_eq!(json["unreadable"][0]["name"], "x");

    let list = env.swarm(b, &["plan", "list", "--json"]).ok();
    list.expect_stderr("'x'");
    let json = list.json();
    assert_eq!(json["plans"][0]["plan"], "good");
    assert_eq!(json["unreadable"][0]["ref"], "refs/swarm/plans/x");
    env.swarm(b, &["plan", "list"])
        .ok()
        .stdout_has("UNREADABLE refs/swarm/plans/x (RECORD_INVALID)");
    let lanes = env.swarm(b, &["lane", "list", "--json"]).ok();
    lanes.expect_stderr("refs/swarm/lanes/broken");
    assert_eq!(lanes.json()["lanes"][0]["feature"], "ok");
    let packets = env.swarm(b, &["packets", "--json"]).ok();
    packets.expect_stderr("20260101T000000Z-mallory");
    assert_eq!(packets.json()["unreadable"][0]["kind"], "packet");

    // Commands that need the bad record fail with its code.
    env.swarm(b, &["plan", "show", "x"])
        .err(2, "RECORD_INVALID");
    env.swarm(b, &["plan", "save", "x", "--file", "README.md"])
        .err(2, "RECORD_INVALID");
    env.swarm(b, &["lane", "new", "broken", "--plan", "good"])
        .err(2, "YAML_INVALID");
}
