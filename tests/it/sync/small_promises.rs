//! The small promises of issue 35: listings that cannot reach the remote
//! say so (`state`, `lane list` too); a message asked inside a lane belongs
//! to the lane's plan whoever it is for; a child plan's packet names the
//! leader it answers to; an offline `lead renew` against a newer leader
//! says it is stale; writes say where they went; the mirror notice is said
//! once per fetch.

use crate::support::fixture::{worktree, Swarm};

#[test]
fn state_and_lane_list_that_cannot_reach_the_remote_say_so() {
    let (env, _remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").sync(0).parts();
    let a = &clones[0];
    env.git(
        a,
        &["remote", "set-url", "origin", "/nonexistent/remote.git"],
    );
    for args in [&["state"][..], &["lane", "list"]] {
        env.swarm(a, args)
            .ok()
            .stderr_has("warning: remote 'origin' could not be reached")
            .stderr_has("showing what this clone knows");
    }
}

#[test]
fn ask_inside_a_lane_goes_to_the_lanes_plan_for_a_name_as_for_lead() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .leader(0, "alice")
        .lane(0, "login")
        .parts();
    let wt = worktree(&clones[0], "login");
    env.swarm(&wt, &["ask", "bob", "which schema?"])
        .ok()
        .stdout_has("refs/swarm/messages/auth/");
    env.swarm(&wt, &["ask", "lead", "which schema?"])
        .ok()
        .stdout_has("refs/swarm/messages/auth/");
    assert!(env.refs(&remote, "refs/swarm/messages/_/").is_empty());
    // The two asks, and the announcement of alice's claim.
    let posted = env.refs(&remote, "refs/swarm/messages/auth/");
    assert_eq!(posted.len(), 3, "{posted:?}");
    assert_eq!(posted.keys().filter(|k| k.contains("lead-e1-")).count(), 1);
}

#[test]
fn a_child_plans_packet_names_its_parents_leader() {
    let (env, remote, clones) = Swarm::new(&["lead", "bob"])
        .plan(0, "p")
        .leader(0, "lead")
        .sync(0)
        .task(0, "t1", "do t1")
        .parts();
    let b = &clones[1];
    env.swarm(b, &["lane", "new", "f1", "--task", "t1"]).ok();
    let wt = worktree(b, "f1");
    let id = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let packet = env.git(
        &remote,
        &["show", &format!("refs/swarm/packets/f1/{id}:packet.yaml")],
    );
    assert!(packet.contains("\nleader: lead\n"), "{packet}");
    assert!(packet.contains("\nepoch: 1\n"), "{packet}");
}

#[test]
fn an_offline_lead_renew_behind_a_newer_leader_says_it_is_stale() {
    let (env, _remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .leader(0, "bob")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(
        b,
        &[
            "lead", "takeover", "--plan", "auth", "--force", "--reason", "quiet",
        ],
    )
    .ok();
    // alice's clone has fetched bob's takeover (a listing fetches).
    env.swarm(a, &["lead", "status", "--plan", "auth"]).ok();
    env.swarm(a, &["--offline", "lead", "renew", "--plan", "auth"])
        .ok()
        .stderr_has("stale: the mirror of 'origin' (as last fetched) shows bob leading plan auth at epoch 2");
    // Nothing newer known: no such warning.
    env.swarm(b, &["--offline", "lead", "renew", "--plan", "auth"])
        .ok();
    let quiet = env.swarm(b, &["--offline", "lead", "renew", "--plan", "auth"]);
    assert!(!quiet.stderr.contains("stale"), "{quiet:#?}");
}

#[test]
fn task_writes_say_where_they_went_as_plan_new_does() {
    let (env, _remote, clones) = Swarm::new(&["alice"]).plan(0, "auth").sync(0).parts();
    let a = &clones[0];
    env.swarm(
        a,
        &["task", "new", "t1", "--plan", "auth", "--title", "one"],
    )
    .ok()
    .stdout_has("created task auth/t1: one, published to origin");
    env.swarm(a, &["task", "claim", "t1", "--plan", "auth"])
        .ok()
        .stdout_has(", published to origin");
    env.swarm(a, &["reserve", "src/a.rs"])
        .ok()
        .stdout_has("published to origin");
    let kept = env
        .swarm(
            a,
            &[
                "--offline",
                "task",
                "new",
                "t2",
                "--plan",
                "auth",
                "--title",
                "two",
            ],
        )
        .ok()
        .stderr_has("not published");
    assert!(!kept.stdout.contains("published to"), "{kept:#?}");
}

#[test]
fn the_mirror_notice_is_said_once_per_fetch() {
    let (env, _remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.swarm(b, &["reserve", "docs/"]).ok();
    let notice = "your local refs lack";
    env.swarm(a, &["reservations"]).ok().stdout_has(notice);
    for args in [&["reservations"][..], &["status"], &["reservations"]] {
        let again = env.swarm(a, args).ok();
        assert!(!again.stdout.contains(notice), "said again: {again:#?}");
    }
    // Something new in the mirror: said again, once.
    env.swarm(b, &["reserve", "src/"]).ok();
    env.swarm(a, &["reservations"]).ok().stdout_has(notice);
    let again = env.swarm(a, &["reservations"]).ok();
    assert!(!again.stdout.contains(notice), "{again:#?}");
    // The JSON still lists what the mirror has.
    let json = env.swarm(a, &["reservations", "--json"]).ok().json();
    assert!(
        json.to_string().contains("refs/swarm/reservations/shard-"),
        "{json}"
    );
}
