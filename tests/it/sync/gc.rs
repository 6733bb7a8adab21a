//! gc folds finished records into archive refs: live refs go down, history
//! stays whole and readable, and the deletion travels through sync instead
//! of another clone pushing the records back.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;

/// Every commit reachable from the swarm refs (live and archived).
fn swarm_history(env: &TestEnv, dir: &Path) -> BTreeSet<String> {
    let tips: Vec<String> = env.refs(dir, "refs/swarm").into_values().collect();
    let mut args = vec!["rev-list"];
    args.extend(tips.iter().map(String::as_str));
    env.git(dir, &args).lines().map(str::to_string).collect()
}

fn live(env: &TestEnv, dir: &Path) -> Vec<String> {
    env.refs(dir, "refs/swarm")
        .into_keys()
        .filter(|r| !r.starts_with("refs/swarm/archive/"))
        .collect()
}

#[test]
fn gc_archives_finished_records_keeps_history_and_the_deletion_syncs() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        // A finished plan: led, handed off, accepted, released, closed.
        .plan(0, "auth")
        .leader(0, "alice,bob")
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let packet = env
        .swarm(
            a,
            &[
                "handoff",
                "--plan",
                "auth",
                "--reason",
                "capacity_low",
                "--unverified",
                "cargo test",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(a, &["--as", "carol", "accept", &packet]).ok();
    env.swarm(a, &["lead", "release", "--plan", "auth"]).ok();
    env.swarm(a, &["plan", "close", "auth"]).ok();
    // A removed lane, and a plan still in progress that must stay live.
    env.swarm(a, &["plan", "new", "ui"]).ok();
    env.swarm(a, &["lane", "new", "ui-shell", "--plan", "ui"])
        .ok();
    env.swarm(a, &["lane", "rm", "ui-shell", "--force"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    assert_eq!(live(&env, b), live(&env, a));

    let history_before = swarm_history(&env, a);
    let live_before = live(&env, a);
    // A young record is not touched.
    let young = env
        .swarm(a, &["gc", "--older-than", "1d", "--json"])
        .ok()
        .json();
    assert_eq!(young["archived"], serde_json::json!({}));
    assert_eq!(live(&env, a), live_before);
    // Dry run says what would go and changes nothing.
    let dry = env
        .swarm(a, &["gc", "--older-than", "0s", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(live(&env, a), live_before);

    let out = env
        .swarm(a, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(out["archived"], dry["archived"]);
    let packet_ref = format!("refs/swarm/packets/auth/{packet}");
    assert_eq!(out["archived"]["packets"], serde_json::json!([packet_ref]));
    assert_eq!(
        out["archived"]["lanes"],
        serde_json::json!(["refs/swarm/lanes/ui-shell"])
    );
    assert_eq!(
        out["archived"]["plans"],
        serde_json::json!(["refs/swarm/plans/auth"])
    );
    assert_eq!(
        out["archived"]["lead"],
        serde_json::json!(["refs/swarm/lead/auth"])
    );
    assert_eq!(live(&env, a), vec!["refs/swarm/plans/ui".to_string()]);
    assert_eq!(out["live_after"], 1);
    // Nothing is lost: every commit is still reachable from the swarm refs.
    let history_after = swarm_history(&env, a);
    assert!(
        history_before.is_subset(&history_after),
        "lost: {:?}",
        history_before.difference(&history_after)
    );
    assert_eq!(env.git(a, &["fsck", "--no-dangling"]), "");
    // Archived records stay readable.
    env.swarm(a, &["packet", "show", &packet])
        .ok()
        .stdout_has("# acceptance");
    // `packets` lists live packets (gc published the deletion at once).
    let listed = env
        .swarm(a, &["packets", "--plan", "auth", "--json"])
        .ok()
        .json();
    assert_eq!(listed["packets"], serde_json::json!([]), "{listed}");
    let log = env.swarm(a, &["plan", "log", "auth", "--json"]).ok().json();
    let events: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert!(
        events.contains(&"plan-created") && events.contains(&"plan-closed"),
        "{events:?}"
    );
    // A second gc has nothing to do.
    let again = env
        .swarm(a, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(again["archived"], serde_json::json!({}));

    // The deletion travels: gc published the archives and the deletions at
    // once (nothing is left for sync); bob's sync drops his copies instead
    // of publishing them again.
    let pushed = env.swarm(a, &["sync", "--json"]).ok().json();
    assert_eq!(pushed["pushed"], serde_json::json!([]), "{pushed}");
    let remote_live: Vec<String> = env
        .refs(&remote, "refs/swarm")
        .into_keys()
        .filter(|r| !r.starts_with("refs/swarm/archive/"))
        .collect();
    assert_eq!(remote_live, vec!["refs/swarm/plans/ui".to_string()]);
    let bob = env.swarm(b, &["sync", "--json"]).ok().json();
    // With the announcement of alice's claim (tests/it/message/announce.rs).
    assert_eq!(bob["archived"].as_array().unwrap().len(), 5, "{bob}");
    assert_eq!(bob["pushes"], 0);
    assert_eq!(live(&env, b), vec!["refs/swarm/plans/ui".to_string()]);
    assert_eq!(env.refs(&remote, "refs/swarm"), env.refs(a, "refs/swarm"));
    // `packets` lists live packets; an archived one is still found by id.
    let listed = env.swarm(b, &["packets", "--json"]).ok().json();
    assert_eq!(listed["packets"], serde_json::json!([]));
    let shown = env
        .swarm(b, &["packet", "show", &packet, "--json"])
        .ok()
        .json();
    assert_eq!(shown["acceptance"]["accepted_by"], "carol");

    // History continues from the archive: a new claim on the plan takes the
    // next epoch after the archived release, not epoch 1 again.
    let claim = env
        .swarm(
            b,
            &[
                "lead",
                "claim",
                "--plan",
                "auth",
                "--succession",
                "bob",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(claim["epoch"], 2, "{claim}");
}

#[test]
fn sync_runs_gc_past_the_threshold() {
    let (env, _, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    for p in ["p1", "p2", "p3"] {
        env.swarm(a, &["plan", "new", p]).ok();
        env.swarm(a, &["plan", "close", p]).ok();
    }
    env.swarm(a, &["plan", "new", "open"]).ok();
    env.git(a, &["config", "swarm.gcAge", "0s"]);
    // At the threshold (4 live refs, threshold 4), not past it: no gc.
    env.git(a, &["config", "swarm.gcThreshold", "4"]);
    let out = env.swarm(a, &["sync", "--json"]).ok().json();
    assert!(out.get("gc").is_none(), "{out}");
    assert_eq!(live(&env, a).len(), 4);
    assert!(env.refs(a, "refs/swarm/archive").is_empty());
    // One past it: gc runs first and folds the three closed plans.
    env.git(a, &["config", "swarm.gcThreshold", "3"]);
    let out = env.swarm(a, &["sync", "--json"]).ok().json();
    assert_eq!(
        out["gc"]["archived"]["plans"].as_array().unwrap().len(),
        3,
        "{out}"
    );
    assert_eq!(live(&env, a), vec!["refs/swarm/plans/open".to_string()]);
    env.git(a, &["config", "swarm.gcThreshold", "0"]);
    env.git(a, &["config", "swarm.gcAge", "soon"]);
    env.swarm(a, &["sync"])
        .err(2, "USAGE")
        .stderr_has("swarm.gcAge");
}

/// The message refs under `refs/swarm/messages/<plan>/`.
fn messages_of(env: &TestEnv, dir: &Path, plan: &str) -> Vec<String> {
    env.refs(dir, &format!("refs/swarm/messages/{plan}/"))
        .into_keys()
        .collect()
}

#[test]
fn gc_archives_the_messages_of_a_closed_plan_even_ones_posted_after_it() {
    let (env, _, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "old")
        .plan(0, "live")
        .run(0, &["notify", "bob", "--plan", "old", "schema landed"])
        .run(0, &["notify", "bob", "--plan", "live", "still going"])
        .run(0, &["notify", "bob", "no plan at all"])
        .run(0, &["plan", "close", "old"])
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let old_message = messages_of(&env, a, "old");
    assert_eq!(old_message.len(), 1);

    let out = env
        .swarm(a, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(out["archived"]["messages"], serde_json::json!(old_message));
    assert_eq!(
        out["archived"]["plans"],
        serde_json::json!(["refs/swarm/plans/old"])
    );
    assert!(messages_of(&env, a, "old").is_empty());
    assert_eq!(messages_of(&env, a, "live").len(), 1, "an open plan's stay");
    assert_eq!(
        messages_of(&env, a, "_").len(),
        1,
        "a message of no plan stays"
    );
    // History keeps it: the archive has it as a parent.
    let tip = env.refs(b, "refs/swarm/messages/old/")[&old_message[0]].clone();
    env.git(
        a,
        &[
            "merge-base",
            "--is-ancestor",
            &tip,
            "refs/swarm/archive/messages",
        ],
    );

    // Posted to the plan after gc archived it: finished with its plan, so
    // the next gc archives it too (the plan is no longer live to ask).
    env.swarm(a, &["notify", "bob", "--plan", "old", "one more thing"])
        .ok();
    let late = messages_of(&env, a, "old");
    assert_eq!(late.len(), 1);
    let out = env
        .swarm(a, &["gc", "--older-than", "0s", "--json"])
        .ok()
        .json();
    assert_eq!(out["archived"]["messages"], serde_json::json!(late));
    assert!(messages_of(&env, a, "old").is_empty());

    // bob's inbox keeps what is live; the deletion travels through sync.
    env.swarm(a, &["sync"]).ok();
    env.swarm(b, &["sync"]).ok();
    assert!(messages_of(&env, b, "old").is_empty());
    let inbox = env
        .swarm(b, &["--as", "bob", "inbox", "--all", "--json"])
        .ok()
        .json();
    let bodies: Vec<&str> = inbox["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2, "{inbox}");
    assert!(bodies.contains(&"still going") && bodies.contains(&"no plan at all"));
}
