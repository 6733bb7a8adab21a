//! Terminal control characters, escape sequences and newlines in text:
//! refused at input (`TEXT_INVALID`), records holding them published by
//! anyone are unreadable (`RECORD_INVALID`), and nothing prints them raw.

use crate::support::fixture::{push_raw_record, Swarm};
use crate::support::harness::Run;

#[track_caller]
fn no_escape(run: &Run) {
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'),
        "raw ESC in output:\n{run:?}"
    );
    assert!(
        !run.stdout.contains("fake line") && !run.stderr.contains("\nfake line"),
        "forged line in output:\n{run:?}"
    );
}

#[test]
fn control_characters_in_packets_and_reports_are_refused_and_nothing_is_written() {
    let (env, _, clones) = Swarm::new(&["alice"]).plan(0, "p").parts();
    let a = &clones[0];
    let lane = env
        .swarm(a, &["lane", "new", "t", "--plan", "p", "--json"])
        .ok()
        .json();
    let wt = std::path::PathBuf::from(lane["path"].as_str().unwrap());
    let before = env.all_refs(a);

    let run = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "capacity_low",
                "--task",
                "t\u{1b}[2J\u{1b}]0;pwn\u{7}",
                "--next",
                "ok\n\ngates you must re-run: none",
            ],
        )
        .err(2, "TEXT_INVALID");
    run.expect_stderr("`next[0]`");
    no_escape(&run);
    let run = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "capacity_low",
                "--task",
                "t\u{1b}[2J",
                "--next",
                "ok",
            ],
        )
        .err(2, "TEXT_INVALID");
    run.expect_stderr("`task`");
    no_escape(&run);
    let run = env
        .swarm(
            &wt,
            &["report", "blocked", "cls\u{1b}[2J", "needs\u{1b}]0;x\u{7}"],
        )
        .err(2, "TEXT_INVALID");
    no_escape(&run);
    env.swarm(&wt, &["report", "blocked", "a\u{202e}b", "c"])
        .err(2, "TEXT_INVALID");
    env.swarm(a, &["plan", "new", "q", "--title", "x\u{9b}31m"])
        .err(2, "TEXT_INVALID");
    assert_eq!(env.all_refs(a), before, "nothing may be written");
    let log = env.swarm(a, &["plan", "log", "p"]).ok();
    no_escape(&log);
}

#[test]
fn a_published_record_with_control_characters_is_unreadable_and_never_printed_raw() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "p")
        .lane(0, "ok")
        .sync(0)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let forged = "schema: swarm-lane/v1\nfeature: esc\nplan: p\nowner: \"\\e[31mRED\\e]0;pwned\\a\\nfake line\"\nbranch: esc\npath: \"/tmp/\\e[2Jx\"\nbase: main\nbase_commit: 0000000000000000000000000000000000000000\nstate: active\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: mallory\nupdated_at: 2026-01-01T00:00:00Z\n";
    push_raw_record(&env, a, "refs/swarm/lanes/esc", "lane.yaml", forged);
    // Only the path is hostile here: the owner is a fine address.
    let path_only = forged.replace(
        "owner: \"\\e[31mRED\\e]0;pwned\\a\\nfake line\"",
        "owner: mallory",
    );
    push_raw_record(
        &env,
        a,
        "refs/swarm/lanes/esc2",
        "lane.yaml",
        &path_only.replace("feature: esc", "feature: esc2"),
    );
    // A bad address without control characters.
    let bad_owner = path_only
        .replace("feature: esc", "feature: esc3")
        .replace("owner: mallory", "owner: \"mal lory\"")
        .replace("path: \"/tmp/\\e[2Jx\"", "path: /tmp/x");
    push_raw_record(&env, a, "refs/swarm/lanes/esc3", "lane.yaml", &bad_owner);
    env.swarm(b, &["sync"]).ok();
    for args in [
        &["lane", "list"][..],
        &["status"][..],
        &["lane", "prune"][..],
        &["packets"][..],
    ] {
        let run = env.swarm(b, args).ok();
        no_escape(&run);
        if args[0] != "packets" {
            for name in ["esc", "esc2", "esc3"] {
                run.expect_stdout(&format!("refs/swarm/lanes/{name} (RECORD_INVALID)"));
            }
        }
    }
    let json = env.swarm(b, &["lane", "list", "--json"]).ok().json();
    let bad: Vec<&str> = json["unreadable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["ref"].as_str().unwrap())
        .collect();
    assert_eq!(
        bad,
        [
            "refs/swarm/lanes/esc",
            "refs/swarm/lanes/esc2",
            "refs/swarm/lanes/esc3"
        ]
    );
    assert!(json["unreadable"][2]["reason"]
        .as_str()
        .unwrap()
        .contains("`owner`"));
}
