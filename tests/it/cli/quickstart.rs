//! The README's quick start, run verbatim: each shell block opens with
//! `# machine: <name>` and runs with `bash -e` in that machine's clone of
//! one bare remote (plain clones made here, nothing else set up). Every
//! block must exit 0, and the day must end as the quick start says: both
//! tasks done and both lanes and child plans closed by the leader's `lead merge`, both branches merged into main, the handoff
//! accepted by ann with bob's claim and reservation moved to her, and
//! `finish` having closed the plan and released the leadership: `status`
//! shows no open plan, lane, claim or reservation, and the completion
//! report names the day's packet and every succession.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::support::harness::TestEnv;

/// The quick start's shell blocks, in order: (machine, script).
fn blocks() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("\n## Quick start")
        .expect("README has a quick start");
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    let section = &rest[..end];
    let mut out = Vec::new();
    let mut parts = section.split("```sh\n").skip(1);
    for part in parts.by_ref() {
        let script = part.split("```").next().unwrap();
        let first = script.lines().next().unwrap_or("");
        let machine = first
            .strip_prefix("# machine: ")
            .unwrap_or_else(|| {
                panic!("a quick-start block must open with `# machine: <name>`: {first}")
            })
            .trim()
            .to_string();
        out.push((machine, script.to_string()));
    }
    out
}

#[test]
fn the_readme_quick_start_runs_verbatim() {
    quick_start(false, "main");
}

/// The same on a repository whose base branch is `master`: the quick start
/// names no branch, so `lead push` publishes master and no stray `main`
/// appears on the remote.
#[test]
fn the_readme_quick_start_runs_on_a_repository_whose_base_is_master() {
    quick_start(false, "master");
}

/// The same day with the records on a coordination remote of their own:
/// each machine joins with `git swarm init --coordination-remote URL` right
/// after cloning (docs/remote.md), then runs the quick start unchanged.
#[test]
fn the_readme_quick_start_runs_with_records_on_a_coordination_remote() {
    quick_start(true, "main");
}

fn quick_start(coordination: bool, base: &str) {
    let env = TestEnv::new();
    let blocks = blocks();
    assert!(blocks.len() >= 5, "{blocks:?}");
    let section_lines: usize = blocks.iter().map(|(_, s)| s.lines().count()).sum();
    assert!(section_lines <= 45, "the quick start's commands stay short");
    // One bare remote with a first commit on main; a plain clone per machine.
    let remote = env.root().join("remote.git");
    env.git(
        env.root(),
        &[
            "init",
            "--quiet",
            "--bare",
            &format!("--initial-branch={base}"),
            "remote.git",
        ],
    );
    let coord = env.root().join("coord.git");
    if coordination {
        env.git(env.root(), &["init", "--quiet", "--bare", "coord.git"]);
    }
    let seed = env.root().join("seed");
    env.git(
        env.root(),
        &["clone", "--quiet", remote.to_str().unwrap(), "seed"],
    );
    env.write(&seed.join("README.md"), "hello\n");
    env.git(&seed, &["add", "README.md"]);
    env.git(&seed, &["commit", "--quiet", "-m", "initial"]);
    env.git(
        &seed,
        &["push", "--quiet", "origin", &format!("HEAD:{base}")],
    );
    let mut machines: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (machine, script) in &blocks {
        let dir = machines.entry(machine.clone()).or_insert_with(|| {
            env.git(
                env.root(),
                &["clone", "--quiet", remote.to_str().unwrap(), machine],
            );
            let dir = env.root().join(machine);
            if coordination {
                env.swarm(
                    &dir,
                    &["init", "--coordination-remote", coord.to_str().unwrap()],
                )
                .ok();
            }
            dir
        });
        let out = env
            .command("bash", dir)
            .args(["-e", "-c", script])
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "the quick-start block on {machine} failed ({:?}):\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The end state: the records at the coordination remote, the code at
    // the code remote (one and the same without a coordination remote).
    let records = if coordination { &coord } else { &remote };
    for id in ["api", "docs"] {
        let task = env.git(
            records,
            &["show", &format!("refs/swarm/tasks/rel/{id}:task.yaml")],
        );
        assert!(task.contains("status: done"), "{task}");
    }
    // `lead merge` ended both lanes: each lane record closed, each child
    // plan closed, at the remote.
    for id in ["api", "docs"] {
        let lane = env.git(
            records,
            &["show", &format!("refs/swarm/lanes/{id}:lane.yaml")],
        );
        assert!(lane.contains("state: removed"), "{lane}");
        let plan = env.git(
            records,
            &["show", &format!("refs/swarm/plans/{id}:plan.yaml")],
        );
        assert!(plan.contains("status: closed"), "{plan}");
    }
    // `finish` closed the plan and released the leadership.
    let rel = env.git(records, &["show", "refs/swarm/plans/rel:plan.yaml"]);
    assert!(rel.contains("status: closed"), "{rel}");
    let lead = env.git(records, &["show", "refs/swarm/lead/rel:lead.yaml"]);
    assert!(lead.contains("released: true"), "{lead}");
    // `status` on every machine: no open plan, lane, claim or reservation.
    for dir in machines.values() {
        let status = env.swarm(dir, &["--json", "status"]).ok().json();
        // (`reservations` is left out of the JSON when there is none.)
        assert_eq!(
            status["reservations"].as_u64().unwrap_or(0),
            0,
            "{status:#}"
        );
        let plans = status["plans"].as_array().unwrap();
        assert!(!plans.is_empty(), "{status:#}");
        let mut stack: Vec<&serde_json::Value> = plans.iter().collect();
        while let Some(p) = stack.pop() {
            assert_eq!(p["status"], "closed", "{p:#}");
            assert_eq!(p["lanes"].as_array().map_or(0, Vec::len), 0, "{p:#}");
            assert_eq!(p["leader"], serde_json::Value::Null, "{p:#}");
            assert_eq!(p["reservations"].as_u64().unwrap_or(0), 0, "{p:#}");
            assert_eq!(p["open_packets"].as_array().unwrap().len(), 0, "{p:#}");
            if let Some(t) = p["tasks"].as_object() {
                assert_eq!(t["in_progress"].as_array().unwrap().len(), 0, "{p:#}");
                assert_eq!(t["ready"].as_array().unwrap().len(), 0, "{p:#}");
            }
            stack.extend(p["children"].as_array().unwrap());
        }
    }
    let live: Vec<_> =
        crate::support::reservations::entries(&env, records, crate::support::reservations::LOCAL)
            .into_iter()
            .filter(|e| e["released_at"].is_null())
            .collect();
    assert!(live.is_empty(), "{live:?}");
    // The completion report names the day's one packet (bob's, accepted
    // by ann) and every succession of the leader record's journal.
    let report = std::fs::read_to_string(machines["lead"].join("report.md")).unwrap();
    let packets: Vec<String> = env
        .refs(records, "refs/swarm/packets")
        .into_keys()
        .filter_map(|r| r.rsplit('/').next().map(str::to_string))
        .collect();
    assert_eq!(packets.len(), 1, "{packets:?}");
    for id in &packets {
        assert!(
            report.contains(&format!("Packet `{id}`")),
            "{id}:\n{report}"
        );
    }
    assert!(report.contains("**Accepted** by ann"), "{report}");
    let journal = env.git(
        records,
        &[
            "log",
            "--format=%(trailers:key=Swarm-Event,valueonly)",
            "refs/swarm/lead/rel",
        ],
    );
    let successions = journal
        .lines()
        .filter(|e| {
            [
                "lead-claimed",
                "lead-handover",
                "lead-takeover",
                "lead-released",
            ]
            .contains(&e.trim())
        })
        .count();
    assert_eq!(successions, 2, "a claim and finish's release: {journal}");
    assert!(report.contains("- Epoch 1: claimed by lead"), "{report}");
    assert!(report.contains("- Epoch 1: released by lead"), "{report}");
    assert_eq!(
        report.matches("\n- Epoch ").count(),
        successions,
        "{report}"
    );
    for t in ["`rel/api`", "`rel/docs`", "`feat/api`", "`feat/docs`"] {
        assert!(report.contains(t), "{t}:\n{report}");
    }
    assert!(report.contains("landed without a gate"), "{report}");
    let docs = env.git(records, &["show", "refs/swarm/tasks/rel/docs:task.yaml"]);
    assert!(docs.contains("previous_owner: bob"), "{docs}");
    for b in ["feat/api", "feat/docs"] {
        env.git_run(&remote, &["merge-base", "--is-ancestor", b, base])
            .ok();
    }
    let guide = env.git(&remote, &["show", &format!("{base}:docs/guide.md")]);
    assert_eq!(guide, "# The API");
    // The base branch moved; no other branch appeared beside the lanes'.
    let heads: Vec<String> = env.refs(&remote, "refs/heads").into_keys().collect();
    assert_eq!(
        heads,
        [
            "refs/heads/feat/api".to_string(),
            "refs/heads/feat/docs".to_string(),
            format!("refs/heads/{base}"),
        ],
        "{heads:?}"
    );
    if coordination {
        let code_refs = env.refs(&remote, "refs");
        assert!(
            code_refs.keys().all(|r| r.starts_with("refs/heads/")),
            "records on the code remote: {code_refs:?}"
        );
        let coord_refs = env.refs(&coord, "refs");
        assert!(
            coord_refs
                .keys()
                .all(|r| r.starts_with("refs/swarm/") || r == "refs/notes/swarm"),
            "code on the coordination remote: {coord_refs:?}"
        );
    }
}
