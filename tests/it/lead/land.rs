//! `lead merge`: the leader's merge queue on a real bare remote with one
//! clone per machine. Lanes push their branches and report; the leader's
//! one command merges each ready lane onto the base in a temporary
//! worktree, runs the gate there, lands it by the fenced push, marks the
//! task done and closes the lane and its child plan; a lane that conflicts
//! gets a resolution brief and the queue goes on.

use std::path::Path;

use crate::support::fixture::Swarm;
use crate::support::harness::TestEnv;
use crate::support::process::ref_of;

pub(crate) fn yaml(env: &TestEnv, dir: &Path, rev: &str, file: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:{file}")])).expect("YAML")
}

/// The remote's version of a record's YAML.
pub(crate) fn record(
    env: &TestEnv,
    remote: &Path,
    refname: &str,
    file: &str,
) -> serde_yaml_ng::Value {
    let tip = ref_of(env, remote, refname).unwrap_or_else(|| panic!("{refname} on the remote"));
    yaml(env, remote, &tip, file)
}

/// lead (0) leads plan rel with tasks `ids`; clone i+1 starts lane ids[i]
/// on task ids[i] and pushes `files[i]`, then reports done.
pub(crate) fn day(
    names: &[&str],
    ids: &[&str],
    files: &[&[(&str, &str)]],
) -> (TestEnv, std::path::PathBuf, Vec<std::path::PathBuf>) {
    let mut s = Swarm::new(names).plan(0, "rel");
    for id in ids {
        s = s.task(0, id, &format!("do {id}"));
    }
    s = s.sync(0).leader(0, "lead");
    for (i, id) in ids.iter().enumerate() {
        s = s.run(i + 1, &["lane", "new", id, "--task", id]).pushed(
            i + 1,
            id,
            files[i],
            &format!("{id}: the work"),
        );
    }
    let (env, remote, clones) = s.parts();
    for (i, id) in ids.iter().enumerate() {
        let wt = crate::support::fixture::worktree(&clones[i + 1], id);
        env.swarm(&wt, &["report", "done"]).ok();
    }
    (env, remote, clones)
}

/// A gate that logs the merged tree it ran in and says it ran one test.
pub(crate) fn gate(env: &TestEnv) -> (String, std::path::PathBuf) {
    let log = env.root().join("gate.log");
    (
        format!(
            "ls | tr '\\n' ' ' >> '{}' && echo >> '{}' && echo 'running 1 test' && echo 'test result: ok. 1 passed'",
            log.display(),
            log.display()
        ),
        log,
    )
}

#[test]
fn one_merge_lands_the_two_that_can_land_and_briefs_the_third_then_lands_its_resolution() {
    let (env, remote, clones) = day(
        &["lead", "ann", "bob", "cat"],
        &["a", "b", "c"],
        &[
            &[("a.txt", "a\n")],
            &[("shared.txt", "bob's line\n")],
            &[("shared.txt", "cat's line\n")],
        ],
    );
    let lead = &clones[0];
    let (gate, log) = gate(&env);
    let main_before = ref_of(&env, &remote, "refs/heads/main").unwrap();
    // The dry run shows the queue: a conflicts with nothing, so it goes first.
    let dry = env
        .swarm(
            lead,
            &[
                "lead",
                "merge",
                "--plan",
                "rel",
                "--dry-run",
                "--gate",
                &gate,
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(dry["order"], serde_json::json!(["a", "b", "c"]), "{dry}");
    assert_eq!(
        ref_of(&env, &remote, "refs/heads/main").unwrap(),
        main_before
    );
    // One merge: a and b land, c conflicts with b (now on main): exit 1.
    let run = env
        .swarm(
            lead,
            &["lead", "merge", "--plan", "rel", "--gate", &gate, "--json"],
        )
        .code(1);
    let q = run.json();
    let landed: Vec<&str> = q["landed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["lane"].as_str().unwrap())
        .collect();
    assert_eq!(landed, ["a", "b"], "{q}");
    let refused = &q["refused"][0];
    assert_eq!(refused["lane"], "c", "{q}");
    assert_eq!(refused["code"], "MERGE_CONFLICT");
    assert_eq!(refused["paths"], serde_json::json!(["shared.txt"]));
    let brief = refused["brief"].as_str().unwrap();
    assert!(
        brief.contains("Forecast pairs: b × c (shared.txt)"),
        "{brief}"
    );
    assert!(brief.contains("main now holds: lane a"), "{brief}");
    assert!(
        brief.contains("bob's line") && brief.contains("cat's line"),
        "{brief}"
    );
    // The gate ran twice, each time in a tree with the lane's work merged.
    let gated = env.read(&log);
    let runs: Vec<&str> = gated.lines().collect();
    assert_eq!(runs.len(), 2, "{gated}");
    assert!(
        runs[0].contains("a.txt") && !runs[0].contains("shared.txt"),
        "{gated}"
    );
    assert!(
        runs[1].contains("a.txt") && runs[1].contains("shared.txt"),
        "{gated}"
    );
    // main at the remote holds a and b, each landed by a merge commit.
    let main = ref_of(&env, &remote, "refs/heads/main").unwrap();
    assert_eq!(env.git(&remote, &["show", "main:shared.txt"]), "bob's line");
    env.git(&remote, &["show", "main:a.txt"]);
    let subjects = env.git(&remote, &["log", "--first-parent", "--format=%s", "main"]);
    assert!(
        subjects.starts_with(
            "Merge lane b (task rel/b) into main\nMerge lane a (task rel/a) into main\n"
        ),
        "{subjects}"
    );
    // The landings moved the lead ref too (fenced pushes), at epoch 1.
    let lead_log = env.git(
        &remote,
        &[
            "log",
            "--format=%(trailers:key=Swarm-Push,valueonly)",
            "refs/swarm/lead/rel",
        ],
    );
    assert!(lead_log.contains(main.as_str()), "{lead_log}");
    // a and b: task done, lane removed, child plan closed, at the remote.
    for id in ["a", "b"] {
        let t = record(
            &env,
            &remote,
            &format!("refs/swarm/tasks/rel/{id}"),
            "task.yaml",
        );
        assert_eq!(t["status"].as_str(), Some("done"), "{id}: {t:?}");
        let l = record(
            &env,
            &remote,
            &format!("refs/swarm/lanes/{id}"),
            "lane.yaml",
        );
        assert_eq!(l["state"].as_str(), Some("removed"), "{id}: {l:?}");
        let p = record(
            &env,
            &remote,
            &format!("refs/swarm/plans/{id}"),
            "plan.yaml",
        );
        assert_eq!(p["status"].as_str(), Some("closed"), "{id}: {p:?}");
    }
    let t = record(&env, &remote, "refs/swarm/tasks/rel/c", "task.yaml");
    assert_ne!(t["status"].as_str(), Some("done"));
    let l = record(&env, &remote, "refs/swarm/lanes/c", "lane.yaml");
    assert_eq!(l["state"].as_str(), Some("active"));
    // cat has the brief in its inbox; ann is told her lane landed.
    let cat = &clones[3];
    let inbox = env.swarm(cat, &["inbox", "--peek"]).ok();
    inbox.expect_stdout("did not land lane c");
    let ann = env.swarm(&clones[1], &["inbox", "--peek"]).ok();
    ann.expect_stdout("landed lane a on main");
    // cat resolves in the lane: merge main, keep both lines, push.
    let wt = crate::support::fixture::worktree(cat, "c");
    env.git(&wt, &["fetch", "--quiet", "origin"]);
    assert_ne!(
        env.git_run(&wt, &["merge", "--quiet", "origin/main"]).code,
        0
    );
    env.write(&wt.join("shared.txt"), "bob's line\ncat's line\n");
    env.git(&wt, &["add", "shared.txt"]);
    env.git(
        &wt,
        &[
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            "c: merge main, keep both lines",
        ],
    );
    env.git(&wt, &["push", "--quiet", "--no-verify", "origin", "feat/c"]);
    // The second merge lands c.
    let q = env
        .swarm(
            lead,
            &["lead", "merge", "--plan", "rel", "--gate", &gate, "--json"],
        )
        .ok()
        .json();
    assert_eq!(q["landed"][0]["lane"], "c", "{q}");
    assert_eq!(q["refused"], serde_json::json!([]));
    assert_eq!(
        env.git(&remote, &["show", "main:shared.txt"]),
        "bob's line\ncat's line"
    );
    for id in ["a", "b", "c"] {
        let t = record(
            &env,
            &remote,
            &format!("refs/swarm/tasks/rel/{id}"),
            "task.yaml",
        );
        assert_eq!(t["status"].as_str(), Some("done"), "{id}");
        let l = record(
            &env,
            &remote,
            &format!("refs/swarm/lanes/{id}"),
            "lane.yaml",
        );
        assert_eq!(l["state"].as_str(), Some("removed"), "{id}");
        let p = record(
            &env,
            &remote,
            &format!("refs/swarm/plans/{id}"),
            "plan.yaml",
        );
        assert_eq!(p["status"].as_str(), Some("closed"), "{id}");
    }
    // A third run finds nothing to land and lands nothing twice.
    let main = ref_of(&env, &remote, "refs/heads/main").unwrap();
    env.swarm(lead, &["lead", "merge", "--plan", "rel", "--gate", &gate])
        .ok()
        .stdout_has("no lane to land");
    assert_eq!(ref_of(&env, &remote, "refs/heads/main").unwrap(), main);
}

#[test]
fn a_stale_leader_lands_nothing() {
    let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
    let lead = &clones[0];
    env.swarm(
        lead,
        &["lead", "handover", "ann", "--plan", "rel", "--force"],
    )
    .ok();
    let before = env.all_refs(&remote);
    env.swarm(lead, &["lead", "merge", "--plan", "rel", "--gate", "true"])
        .err(3, "LEAD_FENCED")
        .stderr_has("ann");
    assert_eq!(env.all_refs(&remote), before, "nothing moved at the remote");
    // Somebody who never led is NOT_LEADER.
    env.swarm(&clones[1], &["lead", "release", "--plan", "rel"])
        .ok();
    let never = env.clone_remote(&remote, "eve");
    env.swarm(
        &never,
        &["lead", "merge", "--plan", "rel", "--gate", "true"],
    )
    .err(3, "NOT_LEADER");
}

#[test]
fn an_empty_gate_pass_or_a_missing_gate_binary_lands_nothing() {
    let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
    let lead = &clones[0];
    let main = ref_of(&env, &remote, "refs/heads/main").unwrap();
    for (gate, says) in [
        (
            "echo 'running 0 tests'; echo 'test result: ok. 0 passed'",
            "without testing anything",
        ),
        ("no-such-gate-binary --all", "could not run (exit 127"),
        ("echo broken; exit 3", "failed (exit 3)"),
    ] {
        let q = env
            .swarm(
                lead,
                &["lead", "merge", "--plan", "rel", "--gate", gate, "--json"],
            )
            .code(1)
            .json();
        assert_eq!(q["refused"][0]["code"], "GATE_FAILED", "{gate}: {q}");
        let brief = q["refused"][0]["brief"].as_str().unwrap();
        assert!(brief.contains(says), "{gate}: {brief}");
        assert_eq!(
            ref_of(&env, &remote, "refs/heads/main").unwrap(),
            main,
            "{gate}"
        );
    }
    // No gate set and none given: refused before anything is fetched or merged.
    env.swarm(lead, &["lead", "merge", "--plan", "rel"])
        .err(2, "USAGE")
        .stderr_has("swarm.gate");
    let t = record(&env, &remote, "refs/swarm/tasks/rel/a", "task.yaml");
    assert_ne!(t["status"].as_str(), Some("done"));
}

#[test]
fn killed_after_landing_a_rerun_finishes_the_lane_and_lands_it_once() {
    for (style, point) in [
        ("merge", "lead-merge:landed"),
        ("squash", "lead-merge:landed"),
        ("merge", "lead-merge:task-done"),
    ] {
        let (env, remote, clones) = day(&["lead", "ann"], &["a"], &[&[("a.txt", "a\n")]]);
        let lead = &clones[0];
        env.git(lead, &["config", "swarm.mergeStyle", style]);
        env.git(
            lead,
            &[
                "config",
                "swarm.gate",
                "test -f a.txt && echo 'running 1 test'",
            ],
        );
        let killed = env.swarm_env(
            lead,
            &[("GIT_SWARM_FAILPOINT", point)],
            &["lead", "merge", "--plan", "rel"],
        );
        assert_ne!(killed.code, 0, "{style} {point}");
        let main = ref_of(&env, &remote, "refs/heads/main").unwrap();
        assert!(
            env.git(&remote, &["show", "main:a.txt"]) == "a",
            "landed before the kill"
        );
        let q = env
            .swarm(lead, &["lead", "merge", "--plan", "rel", "--json"])
            .ok()
            .json();
        assert_eq!(q["landed"][0]["lane"], "a", "{style} {point}: {q}");
        assert_eq!(q["landed"][0]["resumed"], true, "{style} {point}: {q}");
        assert_eq!(
            ref_of(&env, &remote, "refs/heads/main").unwrap(),
            main,
            "{style}: landed twice"
        );
        let t = record(&env, &remote, "refs/swarm/tasks/rel/a", "task.yaml");
        assert_eq!(t["status"].as_str(), Some("done"));
        let l = record(&env, &remote, "refs/swarm/lanes/a", "lane.yaml");
        assert_eq!(l["state"].as_str(), Some("removed"));
    }
}

/// A fixture of fixtures/github with its placeholders replaced.
fn gh_fixture(name: &str, subst: &[(&str, &str)]) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/github")
        .join(name);
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (from, to) in subst {
        text = text.replace(from, to);
    }
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_lane_with_a_github_pr_lands_through_the_merge_api_and_a_moved_head_is_refused() {
    use crate::support::github_server::{GitHubServer, Reply};
    let gh = GitHubServer::start();
    let mut env = TestEnv::new();
    env.set_env("GITHUB_API_URL", &gh.url);
    env.set_env("GITHUB_TOKEN", "ghp_LandTestTokenZq81xWq9Lm2Pp0DISTINCT");
    env.set_env("GIT_SWARM_VIRTUAL_WAITS", "1");
    env.set_env("GIT_SWARM_HTTP_TIMEOUT_MS", "60000");
    let (env, remote, clones) = Swarm::in_env(env, &["lead", "ann"])
        .plan(0, "rel")
        .task(0, "a", "do a")
        .sync(0)
        .leader(0, "lead")
        .run(1, &["lane", "new", "a", "--task", "a"])
        .pushed(1, "a", &[("a.txt", "a\n")], "a: the work")
        .parts();
    let (lead, ann) = (&clones[0], &clones[1]);
    let wt = crate::support::fixture::worktree(ann, "a");
    env.swarm(
        &wt,
        &[
            "report",
            "pr-open",
            "https://github.com/acme/widgets/pull/7",
        ],
    )
    .ok();
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    let base = env.git(&remote, &["rev-parse", "main"]);
    let pr = gh_fixture("pull.json", &[("HEAD_SHA", &head), ("BASE_SHA", &base)]);
    gh.stub("/repos/acme/widgets/pulls/7", Reply::json(&pr));
    gh.stub(
        &format!("/repos/acme/widgets/commits/{head}/status"),
        Reply::json(&gh_fixture("status.json", &[("HEAD_SHA", &head)])),
    );
    let run = gh_fixture("check-runs.json", &[("HEAD_SHA", &head)]);
    gh.stub(
        &format!("/repos/acme/widgets/commits/{head}/check-runs?per_page=100"),
        Reply::json(&run),
    );
    gh.stub(
        "/repos/acme/widgets/pulls/7/reviews?per_page=100",
        Reply::json(&gh_fixture("reviews.json", &[("HEAD_SHA", &head)])),
    );
    gh.stub(
        "/repos/acme/widgets/issues/7/comments?per_page=100",
        Reply::json(&gh_fixture("comments.json", &[])),
    );
    gh.stub_optional(
        "/repos/acme/widgets/branches/main/protection/required_status_checks",
        Reply::status(404, r#"{"message":"Branch not protected","status":"404"}"#),
    );
    gh.stub_optional(
        "/repos/acme/widgets/rules/branches/main?per_page=100",
        Reply::json(&serde_json::json!([])),
    );
    // The branch moved on GitHub after the verdict: the merge API refuses.
    gh.stub_seq(
        "PUT /repos/acme/widgets/pulls/7/merge",
        vec![
            Reply::status(409, r#"{"message":"Head branch was modified. Review and try the merge again."}"#),
            Reply::json(&serde_json::json!({"sha": "1234567890123456789012345678901234567890", "merged": true, "message": "Pull Request successfully merged"})),
        ],
    );
    let q = env
        .swarm(
            lead,
            &["lead", "merge", "--plan", "rel", "--no-gate", "--json"],
        )
        .code(1)
        .json();
    assert_eq!(q["refused"][0]["code"], "HEAD_MOVED", "{q}");
    assert!(
        q["refused"][0]["brief"]
            .as_str()
            .unwrap()
            .contains("HTTP 409"),
        "{q}"
    );
    let put: Vec<_> = gh
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/merge"))
        .collect();
    assert_eq!(put.len(), 1);
    let body: serde_json::Value = serde_json::from_str(&put[0].body).unwrap();
    assert_eq!(
        body["sha"].as_str(),
        Some(head.as_str()),
        "the expected head is sent"
    );
    assert_eq!(body["merge_method"], "merge");
    let t = record(&env, &remote, "refs/swarm/tasks/rel/a", "task.yaml");
    assert_ne!(
        t["status"].as_str(),
        Some("done"),
        "a refused merge marks nothing done"
    );
    let l = record(&env, &remote, "refs/swarm/lanes/a", "lane.yaml");
    assert_eq!(l["state"].as_str(), Some("active"));
    // The next run: GitHub merges at the expected head; the lane ends.
    let q = env
        .swarm(
            lead,
            &["lead", "merge", "--plan", "rel", "--no-gate", "--json"],
        )
        .ok()
        .json();
    assert_eq!(
        q["landed"][0]["commit"], "1234567890123456789012345678901234567890",
        "{q}"
    );
    let t = record(&env, &remote, "refs/swarm/tasks/rel/a", "task.yaml");
    assert_eq!(t["status"].as_str(), Some("done"));
    let l = record(&env, &remote, "refs/swarm/lanes/a", "lane.yaml");
    assert_eq!(l["state"].as_str(), Some("removed"));
}
