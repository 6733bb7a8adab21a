//! A lane record is fetched from the shared remote, so anyone who can push
//! there can write one. A forged record (another owner, another path) must
//! neither lend its owner to whoever works in the named path nor make
//! `lane prune` delete the worktree it moved away from.

use std::path::Path;

use crate::support::fixture::{worktree, Swarm};
use crate::support::harness::TestEnv;

/// Fast-forward `refs/swarm/lanes/<feature>` in the bare `remote` with a
/// new version of its record whose `fields` are replaced: git plumbing only,
/// as an attacker with push access would.
fn forge(env: &TestEnv, remote: &Path, feature: &str, fields: &[(&str, &str)]) {
    let refname = format!("refs/swarm/lanes/{feature}");
    let parent = env.git(remote, &["rev-parse", &refname]);
    let yaml = env.git(remote, &["show", &format!("{refname}:lane.yaml")]);
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&yaml).unwrap();
    for (k, val) in fields {
        v[*k] = serde_yaml_ng::Value::String(val.to_string());
    }
    let file = env.root().join(format!("forged-{feature}.yaml"));
    std::fs::write(&file, serde_yaml_ng::to_string(&v).unwrap()).unwrap();
    let blob = env.git(remote, &["hash-object", "-w", file.to_str().unwrap()]);
    let entry = format!("100644 blob {blob}\tlane.yaml\n");
    let tree = env.git_stdin(remote, &["mktree"], entry.as_bytes());
    let commit = env.git(
        remote,
        &[
            "commit-tree",
            &tree,
            "-p",
            &parent,
            "-m",
            "lane-updated\n\nSwarm-Event: lane-updated\nSwarm-Actor: mallory",
        ],
    );
    env.git(remote, &["update-ref", &refname, &commit, &parent]);
}

fn canon(p: &Path) -> String {
    std::fs::canonicalize(p).unwrap().display().to_string()
}

#[test]
fn a_forged_lane_record_naming_the_main_checkout_does_not_take_over_identity() {
    let (env, remote, clones) = Swarm::new(&["alice", "mallory"])
        .plan(1, "bait")
        .lane(1, "hij")
        .sync(1)
        .parts();
    let a = clones[0].clone();
    forge(&env, &remote, "hij", &[("path", &canon(&a))]);

    env.swarm(&a, &["sync"]).ok();
    env.swarm(&a, &["plan", "new", "hijtest"]).ok();
    let log = env.git(
        &a,
        &["log", "-1", "--format=%B", "refs/swarm/plans/hijtest"],
    );
    assert!(log.contains("Swarm-Actor: alice"), "{log}");
    assert!(!log.contains("mallory"), "{log}");
    // The main checkout is no lane's worktree: not dirty, not removable.
    env.write(&a.join("scratch.txt"), "mine\n");
    let list = env.swarm(&a, &["lane", "list", "--json"]).ok();
    let text = list.stdout.clone();
    assert!(!text.contains("scratch.txt"), "{text}");
    assert!(text.contains("\"elsewhere\""), "{text}");
}

#[test]
fn a_forged_owner_and_path_on_a_lane_do_not_make_prune_delete_its_worktree() {
    let (env, remote, clones) = Swarm::new(&["bob"]).plan(0, "auth").lane(0, "vic").parts();
    let b = clones[0].clone();
    let wt = worktree(&b, "vic");
    env.write(&wt.join("vic.rs"), "fn vic() {}\n");
    env.write(&wt.join(".gitignore"), ".env\n");
    env.git(&wt, &["add", "vic.rs", ".gitignore"]);
    env.git(&wt, &["commit", "--quiet", "-m", "vic"]);
    env.write(&wt.join(".env"), "SECRET=1\n");
    env.swarm(&b, &["sync"]).ok();
    let elsewhere = env.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    forge(
        &env,
        &remote,
        "vic",
        &[("owner", "mallory"), ("path", &canon(&elsewhere))],
    );

    env.swarm(&b, &["sync"])
        .ok()
        .stderr_has("lane vic now names mallory")
        .stderr_has("without an accepted handoff");
    env.swarm(&b, &["lane", "prune"])
        .ok()
        .stderr_has("no accepted handoff")
        .stderr_has("git worktree remove");
    assert!(wt.join(".env").exists());
    assert!(wt.join("vic.rs").exists());
}

#[test]
fn prune_keeps_an_accepted_lanes_old_worktree_while_it_holds_ignored_files() {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .lane(0, "login")
        .pushed(
            0,
            "login",
            &[("login.rs", "fn login() {}\n"), (".gitignore", ".env\n")],
            "login",
        );
    let id = s.handoff(0, "login");
    let (env, _, clones) = s
        .switched(1, "feat/login")
        .run(1, &["accept", &id])
        .sync(0)
        .parts();
    let a = clones[0].clone();
    let wt = worktree(&a, "login");
    env.write(&wt.join(".env"), "SECRET=1\n");
    env.swarm(&a, &["lane", "prune"])
        .ok()
        .stdout_has("stays: it has uncommitted work (.env)")
        .stderr_has("git worktree remove");
    assert!(wt.join(".env").exists());
    std::fs::remove_file(wt.join(".env")).unwrap();
    env.swarm(&a, &["lane", "prune"]).ok().stdout_has("removed");
    assert!(!wt.exists());
}

#[test]
fn a_lane_record_with_an_invalid_owner_is_record_invalid() {
    let (env, remote, clones) = Swarm::new(&["bob"])
        .plan(0, "auth")
        .lane(0, "vic")
        .sync(0)
        .parts();
    let b = clones[0].clone();
    forge(&env, &remote, "vic", &[("owner", "mal lory; rm -rf")]);
    env.swarm(&b, &["sync"]).ok();
    env.swarm(&b, &["lane", "list"])
        .ok()
        .stderr_has("RECORD_INVALID");
}

#[test]
fn a_forged_lane_naming_another_lanes_branch_takes_nothing_over() {
    let (env, remote, clones) = Swarm::new(&["bob"])
        .plan(0, "auth")
        .plan(0, "ops")
        .run(0, &["lane", "new", "signup", "--plan", "auth"])
        .lane(0, "h4")
        .sync(0)
        .parts();
    let b = clones[0].clone();
    // mallory rewrites lane h4 to claim bob's branch, and another to name
    // an option as its base.
    forge(
        &env,
        &remote,
        "h4",
        &[("branch", "feat/signup"), ("owner", "mallory")],
    );
    env.swarm(&b, &["sync"]).ok();
    let listed = env.swarm(&b, &["lane", "list", "--json"]).ok();
    listed.expect_stderr("RECORD_INVALID");
    listed.expect_stderr("lane h4's branch is feat/h4");
    // bob's genuine handoff in the signup worktree names signup, not h4.
    let wt = worktree(&b, "signup");
    let packet = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json();
    assert_eq!(packet["lane"], "signup", "{packet}");
    // And the forecast does not see a lane h4 on feat/signup.
    let out = env.swarm(&b, &["forecast", "--json"]).ok().json();
    let lanes: Vec<&str> = out["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["feature"].as_str().unwrap())
        .collect();
    assert!(!lanes.contains(&"h4"), "{out}");
    let _ = canon(&wt);
}
