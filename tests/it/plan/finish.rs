//! `finish --plan P` and the end of a lane, on a real bare remote with one
//! clone per machine (the three-lane day of `land.rs`): a task done on
//! merged work ends its lane and child plan; `finish` refuses while
//! anything is open (naming each, writing nothing), is fenced for a stale
//! leader, closes what is left, releases the leadership and writes the
//! completion report; killed at each of its failpoints, a re-run finishes.

use std::collections::BTreeMap;
use std::path::Path;

use crate::lead::land::{day, record};
use crate::support::harness::TestEnv;
use crate::support::process::ref_of;

/// Every ref of a repository (name → commit) but git's remote-tracking
/// branches (`finish` fetches the lanes' branches to judge them merged).
fn all_refs(env: &TestEnv, dir: &Path) -> BTreeMap<String, String> {
    let mut refs = env.refs(dir, "refs");
    refs.retain(|r, _| !r.starts_with("refs/remotes/"));
    refs
}

/// The leader merges lane `f`'s pushed branch into main by hand and
/// publishes it with the fenced `lead push` (the way before `lead merge`).
fn merge_by_hand(env: &TestEnv, lead: &Path, f: &str) {
    env.git(lead, &["fetch", "--quiet", "origin"]);
    env.git(lead, &["switch", "--quiet", "main"]);
    env.git(lead, &["merge", "--quiet", "--ff-only", "origin/main"]);
    env.git(
        lead,
        &[
            "merge",
            "--quiet",
            "--no-ff",
            "-m",
            &format!("merge {f}"),
            &format!("origin/feat/{f}"),
        ],
    );
    env.swarm(lead, &["lead", "push", "--plan", "rel", "HEAD:main"])
        .ok();
}

/// `status --json` shows nothing open: every plan closed and unled, no
/// lane, no claimed or ready task, no reservation, no open packet.
#[track_caller]
fn nothing_open(env: &TestEnv, dir: &Path) {
    let status = env.swarm(dir, &["--json", "status"]).ok().json();
    assert_eq!(
        status["reservations"].as_u64().unwrap_or(0),
        0,
        "{status:#}"
    );
    let mut stack: Vec<&serde_json::Value> = status["plans"].as_array().unwrap().iter().collect();
    assert!(!stack.is_empty(), "{status:#}");
    while let Some(p) = stack.pop() {
        assert_eq!(p["status"], "closed", "{p:#}");
        assert_eq!(p["leader"], serde_json::Value::Null, "{p:#}");
        assert_eq!(p["lanes"].as_array().unwrap().len(), 0, "{p:#}");
        assert_eq!(p["open_packets"].as_array().unwrap().len(), 0, "{p:#}");
        if let Some(t) = p["tasks"].as_object() {
            assert_eq!(t["in_progress"].as_array().unwrap().len(), 0, "{p:#}");
            assert_eq!(t["ready"].as_array().unwrap().len(), 0, "{p:#}");
        }
        stack.extend(p["children"].as_array().unwrap());
    }
}

#[test]
fn a_task_done_by_its_holder_on_merged_work_closes_its_lane_and_child_plan() {
    let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
    let (lead, ann) = (&clones[0], &clones[1]);
    let wt = crate::support::fixture::worktree(ann, "a");
    // Not merged yet: refused, and the lane stays.
    env.swarm(&wt, &["task", "done"])
        .code(1)
        .stderr_has("TASK_NOT_MERGED");
    let l = record(&env, &remote, "refs/swarm/lanes/a", "lane.yaml");
    assert_eq!(l["state"].as_str(), Some("active"));
    merge_by_hand(&env, lead, "a");
    // Done by its holder, in the lane's worktree: the lane and its child
    // plan are closed in the same command; the worktree (the current
    // directory) is left for the clone to remove later.
    let done = env.swarm(&wt, &["task", "done", "--json"]).ok();
    let j = done.json();
    assert_eq!(j["ended"], serde_json::json!(["lane a", "plan a"]), "{j}");
    let t = record(&env, &remote, "refs/swarm/tasks/rel/a", "task.yaml");
    assert_eq!(t["status"].as_str(), Some("done"));
    let l = record(&env, &remote, "refs/swarm/lanes/a", "lane.yaml");
    assert_eq!(l["state"].as_str(), Some("removed"), "{l:?}");
    let p = record(&env, &remote, "refs/swarm/plans/a", "plan.yaml");
    assert_eq!(p["status"].as_str(), Some("closed"), "{p:?}");
    assert!(wt.join("a.txt").is_file(), "the worktree is left");
    // The text says so; a re-run has nothing left to close.
    let again = env.swarm(&wt, &["task", "done"]).ok();
    again.expect_stdout("already so");
    assert!(!again.stdout.contains("its lane ended"), "{}", again.stdout);
}

#[test]
fn finish_refuses_naming_each_open_task_lane_and_packet_and_writes_nothing() {
    let (env, remote, clones) = day(
        &["lead", "ann", "bob"],
        &["a", "b"],
        &[&[("a.txt", "a\n")], &[("b.txt", "b\n")]],
    );
    let lead = &clones[0];
    // bob hands his lane off; nobody accepts the packet.
    let wt = crate::support::fixture::worktree(&clones[2], "b");
    let packet = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "capacity_low",
                "--next",
                "go on",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(lead, &["sync"]).ok();
    let (remote_before, local_before) = (all_refs(&env, &remote), all_refs(&env, lead));
    let run = env
        .swarm(lead, &["finish", "--plan", "rel", "--json"])
        .code(1);
    let err = run.json();
    assert_eq!(err["error"]["code"], "PLAN_NOT_FINISHED", "{err:#}");
    let open: Vec<String> = err["error"]["detail"]["open"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        open,
        [
            "task rel/a".to_string(),
            "task rel/b".to_string(),
            "lane a".to_string(),
            "lane b".to_string(),
            format!("packet {packet}"),
        ],
        "{err:#}"
    );
    // The text names each one too, with what to do.
    let text = env.swarm(lead, &["finish", "--plan", "rel"]).code(1);
    text.expect_stderr("error[PLAN_NOT_FINISHED]: plan 'rel' is not finished, 5 still open");
    text.expect_stderr("task rel/a: in_progress, claimed by ann, lane a");
    text.expect_stderr("lane b: active, its branch feat/b is not merged into");
    text.expect_stderr(&format!("packet {packet}: written by bob (capacity_low)"));
    text.expect_stderr("git swarm lead merge --plan rel");
    // Nothing written, here or at the remote; the leader still leads.
    assert_eq!(all_refs(&env, &remote), remote_before);
    assert_eq!(all_refs(&env, lead), local_before);
    let l = record(&env, &remote, "refs/swarm/lead/rel", "lead.yaml");
    assert_eq!(l["leader"].as_str(), Some("lead"), "{l:?}");
    assert_eq!(l["released"].as_bool(), Some(false), "{l:?}");
}

#[test]
fn finish_after_the_three_lane_day_closes_everything_and_reports_it() {
    let (env, remote, clones) = day(
        &["lead", "ann", "bob", "cat"],
        &["a", "b", "c"],
        &[
            &[("a.txt", "a\n")],
            &[("b.txt", "b\n")],
            &[("c.txt", "c\n")],
        ],
    );
    let lead = &clones[0];
    // bob reserves his file; `lead merge` does not release it (the merge
    // marks the task done on the leader's word), so finish must.
    let bob_wt = crate::support::fixture::worktree(&clones[2], "b");
    env.swarm(&bob_wt, &["reserve", "b.txt"]).ok();
    // cat asks the leader something; the leader answers.
    let cat_wt = crate::support::fixture::worktree(&clones[3], "c");
    let ask = env
        .swarm(
            &cat_wt,
            &["ask", "lead", "may c.txt be plain text?", "--json"],
        )
        .ok()
        .json();
    let ask_id = ask["message"]["id"].as_str().unwrap().to_string();
    env.swarm(lead, &["sync"]).ok();
    env.swarm(lead, &["reply", &ask_id, "yes, plain text"]).ok();
    // a and b land through the queue; c the old way, its task done by cat.
    env.swarm(
        lead,
        &["lead", "merge", "--plan", "rel", "a", "b", "--no-gate"],
    )
    .ok();
    merge_by_hand(&env, lead, "c");
    env.swarm(&cat_wt, &["task", "done"]).ok();
    let out = lead.join("report.md");
    let fin = env
        .swarm(
            lead,
            &[
                "finish",
                "--plan",
                "rel",
                "--out",
                out.to_str().unwrap(),
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(fin["released"], true, "{fin:#}");
    assert_eq!(fin["resumed"], false, "{fin:#}");
    assert_eq!(fin["epoch"], 1, "{fin:#}");
    let closed: Vec<&str> = fin["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(closed.contains(&"plan rel"), "{fin:#}");
    assert!(
        closed.iter().any(|c| c.starts_with("reservation r")),
        "bob's reservation: {fin:#}"
    );
    // At the remote: the plan closed, the leadership released, no live
    // reservation left.
    let p = record(&env, &remote, "refs/swarm/plans/rel", "plan.yaml");
    assert_eq!(p["status"].as_str(), Some("closed"));
    let l = record(&env, &remote, "refs/swarm/lead/rel", "lead.yaml");
    assert_eq!(l["released"].as_bool(), Some(true), "{l:?}");
    let live = live_reservations(&env, &remote);
    assert!(live.is_empty(), "{live:?}");
    for dir in &clones {
        nothing_open(&env, dir);
    }
    // The report: the file and the JSON hold the same markdown.
    let report = env.read(&out);
    assert_eq!(fin["report"].as_str(), Some(report.as_str()));
    assert!(report.starts_with("# Plan rel finished: "), "{report}");
    for (id, owner) in [("a", "ann"), ("b", "bob"), ("c", "cat")] {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| `rel/{id}` |")))
            .unwrap_or_else(|| panic!("no row for rel/{id}:\n{report}"));
        assert!(
            row.contains(&format!("| `{id}` | {owner} | `feat/{id}` |")),
            "{row}"
        );
        assert!(row.contains("| done"), "{row}");
    }
    // The commits: a and b where the queue landed them on main, c's head.
    let landed = env.git(
        &remote,
        &["log", "--first-parent", "--format=%H %s", "main"],
    );
    for id in ["a", "b"] {
        let commit = landed
            .lines()
            .find(|l| l.contains(&format!("Merge lane {id} ")))
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(
            report.contains(&format!("`{}` (landed", &commit[..12])),
            "{id}: {report}"
        );
    }
    let c_head = ref_of(&env, &remote, "refs/heads/feat/c").unwrap();
    assert!(
        report.contains(&format!("head `{}`", &c_head[..12])),
        "{report}"
    );
    assert!(report.contains("- Epoch 1: claimed by lead"), "{report}");
    assert!(report.contains("- Epoch 1: released by lead"), "{report}");
    assert!(
        report.contains(&format!("Question `{ask_id}` from cat")),
        "{report}"
    );
    assert!(report.contains("answered by lead"), "{report}");
    assert!(report.contains("yes, plain text"), "{report}");
    assert!(report.contains("No handoff"), "{report}");
    assert!(
        report.contains("lane `a` was landed without a gate"),
        "{report}"
    );
    assert!(!report.contains("lane `c` was landed"), "{report}");
    // Run again: nothing left to close; the same report again.
    let again = env
        .swarm(lead, &["finish", "--plan", "rel", "--json"])
        .ok()
        .json();
    assert_eq!(again["resumed"], true, "{again:#}");
    assert_eq!(again["closed"], serde_json::json!([]), "{again:#}");
    assert!(again["report"].as_str().unwrap().contains("| `rel/c` |"));
}

#[test]
fn a_stale_leader_is_fenced_and_the_successor_finishes_naming_the_takeover() {
    let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
    let (lead, ann) = (&clones[0], &clones[1]);
    env.swarm(lead, &["lead", "succession", "--plan", "rel", "lead,ann"])
        .ok();
    env.swarm(lead, &["lead", "merge", "--plan", "rel", "a", "--no-gate"])
        .ok();
    env.swarm(
        ann,
        &[
            "lead",
            "takeover",
            "--plan",
            "rel",
            "--reason",
            "lead went offline",
            "--force",
        ],
    )
    .ok();
    let before = all_refs(&env, &remote);
    let stale = env.swarm(lead, &["finish", "--plan", "rel"]).code(3);
    stale.expect_stderr("LEAD_FENCED");
    assert_eq!(
        all_refs(&env, &remote),
        before,
        "a stale leader writes nothing"
    );
    let p = record(&env, &remote, "refs/swarm/plans/rel", "plan.yaml");
    assert_eq!(p["status"].as_str(), Some("active"));
    // The current leader finishes; the report names both successions.
    let fin = env.swarm(ann, &["finish", "--plan", "rel"]).ok();
    let report = fin.stdout;
    assert!(report.starts_with("# Plan rel finished"), "{report}");
    assert!(report.contains("- Epoch 1: claimed by lead"), "{report}");
    assert!(report.contains("- Epoch 2: taken over by ann"), "{report}");
    assert!(report.contains("lead went offline"), "{report}");
    assert!(report.contains("- Epoch 2: released by ann"), "{report}");
    let l = record(&env, &remote, "refs/swarm/lead/rel", "lead.yaml");
    assert_eq!(l["released"].as_bool(), Some(true), "{l:?}");
    assert_eq!(l["epoch"].as_u64(), Some(2), "{l:?}");
}

#[test]
fn finish_killed_at_each_failpoint_finishes_when_run_again() {
    for point in ["finish:lanes-closed", "finish:closed", "finish:released"] {
        let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
        let lead = &clones[0];
        let wt = crate::support::fixture::worktree(&clones[1], "a");
        env.swarm(&wt, &["reserve", "a.txt"]).ok();
        env.swarm(lead, &["lead", "merge", "--plan", "rel", "a", "--no-gate"])
            .ok();
        let out = lead.join("report.md");
        let args = ["finish", "--plan", "rel", "--out", out.to_str().unwrap()];
        let killed = env.swarm_env(lead, &[("GIT_SWARM_FAILPOINT", point)], &args);
        assert_ne!(killed.code, 0, "{point}: {killed:#?}");
        assert!(!out.exists(), "{point}: no report before the end");
        // Stopped where the point is: before the plan's close, between
        // it and the release, or after the release.
        let p = record(&env, &remote, "refs/swarm/plans/rel", "plan.yaml");
        let l = record(&env, &remote, "refs/swarm/lead/rel", "lead.yaml");
        let (closed, released) = match point {
            "finish:lanes-closed" => (false, false),
            "finish:closed" => (true, false),
            _ => (true, true),
        };
        assert_eq!(
            p["status"].as_str() == Some("closed"),
            closed,
            "{point}: {p:?}"
        );
        assert_eq!(l["released"].as_bool(), Some(released), "{point}: {l:?}");
        let again = env.swarm(lead, &args).ok();
        again.expect_stdout("completion report written to");
        let report = env.read(&out);
        assert!(report.contains("| `rel/a` |"), "{point}: {report}");
        assert!(
            report.contains("- Epoch 1: released by lead"),
            "{point}: {report}"
        );
        assert_eq!(
            report.matches("released by lead").count(),
            1,
            "{point}: released once: {report}"
        );
        let p = record(&env, &remote, "refs/swarm/plans/rel", "plan.yaml");
        assert_eq!(p["status"].as_str(), Some("closed"), "{point}");
        let l = record(&env, &remote, "refs/swarm/lead/rel", "lead.yaml");
        assert_eq!(l["released"].as_bool(), Some(true), "{point}: {l:?}");
        let live = live_reservations(&env, &remote);
        assert!(live.is_empty(), "{point}: {live:?}");
        nothing_open(&env, lead);
        // A third run is a no-op that writes the report once more.
        let third = env
            .swarm(lead, &["finish", "--plan", "rel", "--json"])
            .ok()
            .json();
        assert_eq!(third["resumed"], true, "{point}: {third:#}");
    }
}

/// The entries not released in every shard of the reservations at `dir`.
fn live_reservations(env: &TestEnv, dir: &std::path::Path) -> Vec<serde_yaml_ng::Value> {
    use crate::support::reservations::{entries, LOCAL};
    entries(env, dir, LOCAL)
        .into_iter()
        .filter(|e| e["released_at"].is_null())
        .collect()
}
