//! A stale `blocked` report is cleared: by the lane's next report, by a
//! handoff written after it, or by its task being done or cancelled;
//! `status`, `lane list` and the dashboard no longer count it as blocked.

use crate::support::harness::TestEnv;

/// The lanes `status --json` shows blocked, in the whole plan tree (a lane
/// with a task runs in a child plan of its own).
fn blocked_lanes(env: &TestEnv, repo: &std::path::Path) -> Vec<serde_json::Value> {
    fn walk(nodes: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
        for n in nodes.as_array().into_iter().flatten() {
            for l in n["lanes"].as_array().into_iter().flatten() {
                if !l["blocked"].is_null() {
                    out.push(l.clone());
                }
            }
            walk(&n["children"], out);
        }
    }
    let json = env.swarm(repo, &["status", "--json"]).ok().json();
    let mut out = Vec::new();
    walk(&json["plans"], &mut out);
    out
}

#[test]
fn a_blocked_report_no_longer_counts_once_its_task_is_cancelled_or_the_lane_hands_off() {
    let env = TestEnv::new();
    let repo = env.repo("a");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    env.swarm(
        &repo,
        &["task", "new", "t1", "--plan", "auth", "--title", "login"],
    )
    .ok();
    env.swarm(
        &repo,
        &["task", "new", "t2", "--plan", "auth", "--title", "logout"],
    )
    .ok();
    env.swarm(
        &repo,
        &["lane", "new", "login", "--plan", "auth", "--task", "t1"],
    )
    .ok();
    env.swarm(
        &repo,
        &["lane", "new", "logout", "--plan", "auth", "--task", "t2"],
    )
    .ok();
    let login = repo.join("_swarm-worktrees/login");
    let logout = repo.join("_swarm-worktrees/logout");
    for wt in [&login, &logout] {
        env.swarm(wt, &["report", "blocked", "creds", "needs a deploy key"])
            .ok();
    }
    assert_eq!(blocked_lanes(&env, &repo).len(), 2);
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has("needs attention: 0 open packets, 2 blocked lanes");

    // The task of one is cancelled: that one no longer counts.
    env.swarm(&repo, &["task", "cancel", "t1", "--plan", "auth"])
        .ok();
    let still = blocked_lanes(&env, &repo);
    assert_eq!(still.len(), 1, "{still:?}");
    assert_eq!(still[0]["feature"], "logout");
    env.swarm(&repo, &["status"])
        .ok()
        .stdout_has("needs attention: 0 open packets, 1 blocked lane");
    let list = env.swarm(&repo, &["lane", "list", "--json"]).ok().json();
    let lanes = list["lanes"].as_array().unwrap();
    let of = |f: &str| lanes.iter().find(|l| l["feature"] == f).unwrap().clone();
    assert_eq!(
        of("login")["last_report"]["cleared"],
        "task auth/t1 is cancelled",
        "{list}"
    );
    assert!(of("logout")["last_report"]["cleared"].is_null(), "{list}");
    env.swarm(&repo, &["lane", "list"])
        .ok()
        .stdout_has("[no longer blocking: task auth/t1 is cancelled]");

    // The other hands off after its report: no longer blocked either.
    env.swarm(&logout, &["handoff", "--reason", "capacity_low"])
        .ok();
    assert_eq!(blocked_lanes(&env, &repo), Vec::<serde_json::Value>::new());
    let run = env.swarm(&repo, &["status"]).ok();
    assert!(
        run.stdout
            .contains("needs attention: 1 open packet, 0 blocked lanes\n"),
        "{}",
        run.stdout
    );
    // The stored report is unchanged: the clearing is read, not written.
    let stored = env.git(&repo, &["show", "refs/swarm/lanes/logout:lane.yaml"]);
    assert!(
        stored.contains("kind: blocked") && !stored.contains("cleared"),
        "{stored}"
    );
}
