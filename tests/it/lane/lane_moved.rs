//! A stale owner cannot write into a lane it handed over (docs/lanes.md):
//! in the old worktree `report`, `lane snapshot`, `handoff` and the task
//! commands fetch the lane record first and refuse with `LANE_MOVED`
//! naming the new owner, leaving the remote as it was; and a report the old
//! owner kept offline is not merged by `sync` into the new owner's lane:
//! sync fails naming it, the published lane record stands, and the local
//! version stays reachable under `refs/swarm-lost/`. Two real clones.

use std::path::PathBuf;

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::TestEnv;

const LANE: &str = "refs/swarm/lanes/lib-docs";

fn field(env: &TestEnv, dir: &std::path::Path, rev: &str, key: &str) -> String {
    let yaml = env.git(dir, &["show", &format!("{rev}:lane.yaml")]);
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    match &v[key] {
        serde_yaml_ng::Value::String(s) => s.clone(),
        serde_yaml_ng::Value::Null => String::new(),
        other => serde_yaml_ng::to_string(other).unwrap(),
    }
}

/// bob starts lane lib-docs, pushes its branch and hands off; cat accepts
/// in her checkout of the branch. bob's clone has not fetched since.
/// Returns (env, remote, bob's clone, cat's clone).
fn handed_over() -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let s = Swarm::new(&["bob", "cat"])
        .plan(0, "docs")
        .sync(0)
        .lane(0, "lib-docs")
        .pushed(0, "lib-docs", &[("notes.md", "one\n")], "notes");
    let id = s.handoff(0, "lib-docs");
    let (env, remote, clones) = s.switched(1, "feat/lib-docs").parts();
    let (bob, cat) = (clones[0].clone(), clones[1].clone());
    env.swarm(&cat, &["accept", &id]).ok();
    assert_eq!(field(&env, &remote, LANE, "owner"), "cat");
    (env, remote, bob, cat)
}

#[test]
fn the_old_owners_writes_in_its_old_worktree_are_refused_with_lane_moved() {
    let (env, remote, bob, cat) = handed_over();
    let old = worktree(&bob, "lib-docs");
    let cat_path = std::fs::canonicalize(&cat).unwrap().display().to_string();
    let before = env.all_refs(&remote);
    let local_lane = env.git(&bob, &["rev-parse", LANE]);
    assert_eq!(
        field(&env, &bob, LANE, "owner"),
        "bob",
        "bob's clone has not seen the acceptance"
    );

    env.swarm(&old, &["report", "done"])
        .err(1, "LANE_MOVED")
        .stderr_has(&format!("cat owns it now, at {cat_path}"))
        .stderr_has("git swarm lane prune");
    env.swarm(&old, &["lane", "snapshot"])
        .err(1, "LANE_MOVED")
        .stderr_has("cat owns it now");
    env.swarm(&old, &["handoff", "--reason", "usage_limit"])
        .err(1, "LANE_MOVED")
        .stderr_has("cat owns it now");
    env.swarm(
        &old,
        &["task", "new", "t9", "--plan", "docs", "--title", "more"],
    )
    .err(1, "LANE_MOVED")
    .stderr_has("cat owns it now");
    // Nothing moved at the remote; bob's lane ref is only caught up by a sync.
    assert_eq!(env.all_refs(&remote), before);
    assert_eq!(env.git(&bob, &["rev-parse", LANE]), local_lane);
    assert!(env.refs(&bob, "refs/swarm/tasks/").is_empty());
    // cat, in the lane's checkout now, reports.
    env.swarm(&cat, &["report", "done"]).ok();
    assert_eq!(field(&env, &remote, LANE, "owner"), "cat");
}

#[test]
fn a_report_the_old_owner_kept_offline_is_not_merged_into_the_new_owners_lane() {
    let (env, remote, bob, _cat) = handed_over();
    let old = worktree(&bob, "lib-docs");
    // Offline bob's clone knows no better: the report is kept here.
    env.swarm(&old, &["--offline", "report", "done"])
        .ok()
        .stderr_has("not published");
    let kept = env.git(&bob, &["rev-parse", LANE]);
    let published = env.git(&remote, &["rev-parse", LANE]);

    let sync = env.swarm(&bob, &["sync"]).err(1, "LANE_MOVED");
    sync.expect_stderr("the report 'done' by bob");
    sync.expect_stderr("handed to cat");
    sync.expect_stderr(&format!("refs/swarm-lost/lanes/lib-docs@{}", &kept[..12]));
    sync.expect_stdout("lost     refs/swarm/lanes/lib-docs");
    // The remote's lane record is cat's, untouched; bob's clone takes it,
    // and keeps its own version reachable.
    assert_eq!(env.git(&remote, &["rev-parse", LANE]), published);
    assert_eq!(field(&env, &remote, LANE, "owner"), "cat");
    let report = field(&env, &remote, LANE, "last_report");
    assert!(!report.contains("kind: done"), "{report}");
    assert_eq!(env.git(&bob, &["rev-parse", LANE]), published);
    assert_eq!(
        env.git(
            &bob,
            &[
                "rev-parse",
                &format!("refs/swarm-lost/lanes/lib-docs@{}", &kept[..12])
            ]
        ),
        kept
    );
    // Said once: the next sync has nothing left to refuse.
    env.swarm(&bob, &["sync"]).ok();
    assert_eq!(env.git(&remote, &["rev-parse", LANE]), published);
}
