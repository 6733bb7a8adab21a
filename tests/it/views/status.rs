//! `git swarm status`: the plan tree, open packets, blocked lanes and what
//! needs attention.

use crate::support::harness::TestEnv;

#[test]
fn status_lists_open_packets_and_blocked_lanes_and_cuts_long_titles() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    let title =
        "Token auth with refresh rotation, audit logging and a migration path for old sessions";
    env.swarm(&repo, &["plan", "new", "auth", "--title", title])
        .ok();
    env.swarm(&repo, &["lane", "new", "login", "--plan", "auth"])
        .ok();
    let wt = repo.join("_swarm-worktrees/login");
    let quiet = env.swarm(&repo, &["status"]).ok();
    assert!(
        !quiet.stdout.contains("needs attention"),
        "{}",
        quiet.stdout
    );

    env.swarm(
        &wt,
        &[
            "report",
            "blocked",
            "creds",
            "needs a deploy key for staging",
        ],
    )
    .ok();
    let run = env.swarm(&repo, &["status"]).ok();
    run.expect_stdout("blocked creds needs a deploy key for staging (reported by a at ");
    run.expect_stdout("needs attention: 0 open packets, 1 blocked lane\n");
    let json = env.swarm(&repo, &["status", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["lanes"][0]["blocked"]["kind"], "blocked");
    // A handoff written after the report answers it (tests/it/task/blocked.rs).
    let id = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = env.swarm(&repo, &["status"]).ok();
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("auth [active] — Token auth with refresh rotation, audit logging… — "),
        "{first}"
    );
    run.expect_stdout(&format!(
        "  packet {id} open: capacity_low by a on feat/login — `git swarm accept {id}`"
    ));
    run.expect_stdout("needs attention: 1 open packet, 0 blocked lanes\n");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let json = env.swarm(&repo, &["status", "--json"]).ok().json();
    let plan = &json["plans"][0];
    assert_eq!(plan["title"], title, "JSON keeps the whole title");
    assert_eq!(plan["open_packets"][0]["id"], id.as_str());
    assert_eq!(plan["lanes"][0]["blocked"], serde_json::Value::Null);

    // Accepted: no longer open; a new report clears the block.
    env.swarm(&wt, &["--as", "bob", "accept", &id]).ok();
    env.swarm(&wt, &["report", "plan-ready"]).ok();
    let run = env.swarm(&repo, &["status"]).ok();
    assert!(!run.stdout.contains("packet "), "{}", run.stdout);
    assert!(!run.stdout.contains("needs attention"), "{}", run.stdout);
    let json = env.swarm(&repo, &["status", "--json"]).ok().json();
    assert_eq!(json["plans"][0]["open_packets"], serde_json::json!([]));
    // A withdrawn packet is not open either.
    let id2 = env
        .swarm(
            &wt,
            &[
                "--as",
                "bob",
                "handoff",
                "--reason",
                "capacity_low",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has(&format!("packet {id2} open"));
    env.swarm(
        &wt,
        &[
            "--as",
            "bob",
            "packet",
            "withdraw",
            &id2,
            "--reason",
            "wrong plan",
        ],
    )
    .ok();
    let run = env.swarm(&repo, &["status"]).ok();
    assert!(!run.stdout.contains(&id2), "{}", run.stdout);
    assert_eq!(
        json["plans"][0]["lanes"][0]["blocked"],
        serde_json::Value::Null
    );
}
