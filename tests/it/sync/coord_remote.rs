//! A coordination remote of its own: the code on one bare remote
//! (`origin`), the records on another (`swarm`, added by `init
//! --coordination-remote`): setting it up, which remote is the code
//! remote, and what happens when one of the two is missing or refuses.
//! The whole day on two remotes is `day::…_on_two_remotes`, the same day
//! as on one.

use std::path::{Path, PathBuf};

use crate::support::harness::TestEnv;

/// A bare code remote with one commit on main and an empty bare
/// coordination remote.
pub(crate) fn two_remotes(env: &TestEnv) -> (PathBuf, PathBuf) {
    let code = env.root().join("code.git");
    let coord = env.root().join("coord.git");
    env.git(env.root(), &["init", "--quiet", "--bare", "code.git"]);
    env.git(env.root(), &["init", "--quiet", "--bare", "coord.git"]);
    let seed = env.root().join("seed");
    env.git(
        env.root(),
        &["clone", "--quiet", code.to_str().unwrap(), "seed"],
    );
    env.write(&seed.join("README.md"), "hello\n");
    env.git(&seed, &["add", "README.md"]);
    env.git(&seed, &["commit", "--quiet", "-m", "initial"]);
    env.git(&seed, &["push", "--quiet", "origin", "HEAD:main"]);
    (code, coord)
}

/// A clone of the code remote that joined the swarm as the docs say:
/// `git swarm init --coordination-remote URL`.
pub(crate) fn join(env: &TestEnv, code: &Path, coord: &Path, name: &str) -> PathBuf {
    env.git(
        env.root(),
        &["clone", "--quiet", code.to_str().unwrap(), name],
    );
    let dir = env.root().join(name);
    env.git(&dir, &["config", "swarm.as", name]);
    env.swarm(
        &dir,
        &["init", "--coordination-remote", coord.to_str().unwrap()],
    )
    .ok();
    dir
}

/// The refs a bare remote holds (`git ls-remote`), by name.
pub(crate) fn ls_remote(env: &TestEnv, remote: &Path) -> Vec<String> {
    env.git(env.root(), &["ls-remote", remote.to_str().unwrap()])
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, r)| r.to_string()))
        .collect()
}

fn commit(env: &TestEnv, wt: &Path, path: &str, text: &str, msg: &str) {
    env.write(&wt.join(path), text);
    env.git(wt, &["add", path]);
    env.git(wt, &["commit", "--quiet", "-m", msg]);
}

fn lane_path(run: &crate::support::harness::Run) -> PathBuf {
    PathBuf::from(run.json()["path"].as_str().expect("lane path"))
}

#[test]
fn init_coordination_remote_sets_both_remotes_once() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    env.git(
        env.root(),
        &["clone", "--quiet", code.to_str().unwrap(), "a"],
    );
    let a = env.root().join("a");
    let url = coord.to_str().unwrap();
    let first = env
        .swarm(&a, &["init", "--coordination-remote", url, "--json"])
        .ok()
        .json();
    let actions = first["actions"].to_string();
    assert!(actions.contains("added remote swarm"), "{first}");
    assert!(actions.contains("set swarm.remote = swarm"), "{first}");
    // The code stays on origin by default: nothing is pinned.
    assert!(!actions.contains("codeRemote"), "{first}");
    assert_eq!(
        env.git_run(&a, &["config", "swarm.codeRemote"]).code,
        1,
        "swarm.codeRemote set"
    );
    assert_eq!(first["remote"], "swarm");
    assert_eq!(first["code_remote"], "origin");
    // The base is protected on the code remote (its default branch).
    assert_eq!(first["protect"], serde_json::json!(["refs/heads/main"]));
    assert_eq!(env.git(&a, &["config", "remote.swarm.url"]), url);
    // Only the swarm refs are fetched from the coordination remote.
    let fetch = env.git(&a, &["config", "--get-all", "remote.swarm.fetch"]);
    assert!(!fetch.contains("refs/heads"), "{fetch}");
    assert!(fetch.contains("refs/swarm-remotes/swarm/"), "{fetch}");

    let config_before = env.git(&a, &["config", "--list", "--local"]);
    env.swarm(&a, &["init", "--coordination-remote", url])
        .ok()
        .stdout_has("already swarm-ready: nothing to change");
    // A relative path is the same repository: kept absolute, so that git
    // finds it from a lane's worktree too.
    env.swarm(&a, &["init", "--coordination-remote", "../coord.git"])
        .ok()
        .stdout_has("already swarm-ready: nothing to change");
    assert_eq!(env.git(&a, &["config", "--list", "--local"]), config_before);

    // Another URL under the same name: refused, nothing changed.
    env.swarm(&a, &["init", "--coordination-remote", "/elsewhere.git"])
        .err(2, "REMOTE_TAKEN")
        .stderr_has("git remote set-url swarm");
    assert_eq!(env.git(&a, &["config", "--list", "--local"]), config_before);
}

/// `init --coordination-remote` does not pin swarm.codeRemote to origin
/// (the default already is origin): renamed later, origin no longer
/// exists, and a pinned name made every command fail `REMOTE_MISSING`.
/// Unpinned, the records keep going to the coordination remote, and init
/// says the code has no origin any more.
#[test]
fn origin_renamed_after_init_with_a_coordination_remote_stops_nothing() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let a = join(&env, &code, &coord, "a");
    env.git(&a, &["remote", "rename", "origin", "upstream"]);
    env.swarm(&a, &["plan", "new", "rel"]).ok();
    env.swarm(
        &a,
        &["task", "new", "api", "--plan", "rel", "--title", "the API"],
    )
    .ok();
    assert!(
        ls_remote(&env, &coord).contains(&"refs/swarm/tasks/rel/api".to_string()),
        "the task on the coordination remote"
    );
    assert!(ls_remote(&env, &code)
        .iter()
        .all(|r| !r.starts_with("refs/swarm/")));
    env.swarm(&a, &["status"]).ok();
    // init says where the code goes now, and how to keep it on upstream.
    env.swarm(
        &a,
        &["init", "--coordination-remote", coord.to_str().unwrap()],
    )
    .ok()
    .stderr_has("warning: there is no remote 'origin' for the code");
    env.git(&a, &["config", "swarm.codeRemote", "upstream"]);
    let v = env.swarm(&a, &["init", "--json"]).ok().json();
    assert_eq!(v["code_remote"], "upstream");
}

#[test]
fn a_code_remote_that_does_not_exist_is_refused_by_name() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let a = join(&env, &code, &coord, "a");
    env.git(&a, &["config", "swarm.codeRemote", "nowhere"]);
    let before = env.all_refs(&a);
    env.swarm(&a, &["plan", "new", "p"])
        .err(2, "REMOTE_MISSING")
        .stderr_has("remote 'nowhere' (swarm.codeRemote) does not exist")
        .stderr_has("git remote add nowhere");
    assert_eq!(env.all_refs(&a), before);
}

/// The handoff's two pushes: the branch to the code remote, then the
/// packet to the coordination remote. With the coordination remote gone
/// between the two, the branch is published and the packet kept here; the
/// next `sync` publishes the packet, and a successor finds both.
#[test]
fn a_handoff_whose_packet_cannot_be_published_loses_nothing() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let ann = join(&env, &code, &coord, "ann");
    let bob = join(&env, &code, &coord, "bob");
    env.swarm(&ann, &["plan", "new", "rel"]).ok();
    let wt = lane_path(
        &env.swarm(&ann, &["lane", "new", "api", "--plan", "rel", "--json"])
            .ok(),
    );
    commit(&env, &wt, "api.rs", "fn api() {}\n", "api: start");
    let head = env.git(&wt, &["rev-parse", "HEAD"]);

    let gone = env.root().join("coord.gone");
    std::fs::rename(&coord, &gone).unwrap();
    let out = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "go on",
                "--json",
            ],
        )
        .ok()
        .stderr_has("not published: remote 'swarm' could not be reached");
    let packet = out.json();
    assert_eq!(packet["pushed"], true, "{}", out.stdout);
    let id = packet["id"].as_str().unwrap().to_string();
    let on_code = env.git(
        env.root(),
        &["ls-remote", code.to_str().unwrap(), "refs/heads/feat/api"],
    );
    assert!(
        on_code.starts_with(&head),
        "the branch is on the code remote: {on_code}"
    );

    std::fs::rename(&gone, &coord).unwrap();
    env.swarm(&ann, &["sync"]).ok();
    assert!(
        ls_remote(&env, &coord)
            .iter()
            .any(|r| r.starts_with("refs/swarm/packets/rel/") && r.ends_with(&id)),
        "the packet reached the coordination remote"
    );
    let bob_wt = bob.join("api-wt");
    env.swarm(
        &bob,
        &["accept", &id, "--worktree", bob_wt.to_str().unwrap()],
    )
    .ok();
    assert_eq!(env.git(&bob_wt, &["rev-parse", "HEAD"]), head);
}

/// `lead push` when the code remote refuses the refspecs (the base moved
/// there): the leader record is published, main is not, and the command
/// says so with exit 3.
#[test]
fn lead_push_refused_by_the_code_remote_exits_3_and_moves_no_branch() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let lead = join(&env, &code, &coord, "lead");
    let other = join(&env, &code, &coord, "other");
    env.swarm(&lead, &["plan", "new", "rel"]).ok();
    env.swarm(
        &lead,
        &["lead", "claim", "--plan", "rel", "--succession", "lead"],
    )
    .ok();
    // Someone else moved main on the code remote (with the guard bypassed).
    commit(&env, &other, "x.txt", "x\n", "elsewhere");
    env.git(
        &other,
        &["push", "--quiet", "--no-verify", "origin", "HEAD:main"],
    );
    let moved = env.git(
        env.root(),
        &["ls-remote", code.to_str().unwrap(), "refs/heads/main"],
    );
    commit(&env, &lead, "y.txt", "y\n", "the lead's change");
    env.swarm(&lead, &["lead", "push", "--plan", "rel", "main"])
        .err(3, "PUSH_REJECTED")
        .stderr_has("the leader record of plan 'rel' is published, but the code remote 'origin' refused the push");
    assert_eq!(
        env.git(
            env.root(),
            &["ls-remote", code.to_str().unwrap(), "refs/heads/main"]
        ),
        moved
    );
    assert!(!ls_remote(&env, &coord)
        .iter()
        .any(|r| r.starts_with("refs/heads/")));
}

/// A code remote that does not answer does not stop a handoff: the packet
/// goes to the coordination remote saying the branch is not pushed, and
/// the handoff says how to push it.
#[test]
fn a_handoff_goes_out_when_only_the_code_remote_is_unreachable() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let ann = join(&env, &code, &coord, "ann");
    env.swarm(&ann, &["plan", "new", "rel"]).ok();
    let wt = lane_path(
        &env.swarm(&ann, &["lane", "new", "api", "--plan", "rel", "--json"])
            .ok(),
    );
    commit(&env, &wt, "api.rs", "fn api() {}\n", "api: start");
    let code_before = ls_remote(&env, &code);
    std::fs::rename(&code, env.root().join("code.gone")).unwrap();
    let out = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "go on",
                "--json",
            ],
        )
        .ok();
    let packet = out.json();
    assert_eq!(packet["pushed"], false, "{}", out.stdout);
    out.expect_stderr("feat/api is not on origin at this head: push it");
    let id = packet["id"].as_str().unwrap();
    assert!(
        ls_remote(&env, &coord)
            .iter()
            .any(|r| r.starts_with("refs/swarm/packets/rel/") && r.ends_with(id)),
        "the packet reached the coordination remote"
    );
    std::fs::rename(env.root().join("code.gone"), &code).unwrap();
    assert_eq!(ls_remote(&env, &code), code_before);
}

/// Which remote is the code remote: swarm.codeRemote, else origin, else
/// swarm.remote; what `init --json` reports.
#[test]
fn the_code_remote_is_origin_unless_set() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    env.git(
        env.root(),
        &["clone", "--quiet", code.to_str().unwrap(), "a"],
    );
    let a = env.root().join("a");
    let init = |args: &[&str]| {
        let mut all = vec!["init", "--json"];
        all.extend_from_slice(args);
        let v = env.swarm(&a, &all).ok().json();
        (v["remote"].clone(), v["code_remote"].clone())
    };
    // One remote: it is both.
    assert_eq!(init(&[]), ("origin".into(), "origin".into()));
    // swarm.remote names another remote: the code stays on origin.
    env.git(&a, &["remote", "add", "records", coord.to_str().unwrap()]);
    assert_eq!(
        init(&["--remote", "records"]),
        ("records".into(), "origin".into())
    );
    // swarm.codeRemote says otherwise: one remote for everything again.
    env.git(&a, &["config", "swarm.codeRemote", "records"]);
    assert_eq!(init(&[]), ("records".into(), "records".into()));
    // Without origin, the code remote is swarm.remote.
    env.git(&a, &["config", "--unset", "swarm.codeRemote"]);
    env.git(&a, &["remote", "rename", "origin", "code"]);
    assert_eq!(init(&[]), ("records".into(), "records".into()));
}

/// An existing swarm moves over: after `init --coordination-remote`, one
/// `sync` publishes what the clone has to the new remote; origin keeps its
/// old copies, read by nothing.
#[test]
fn an_existing_swarm_moves_its_records_over_with_one_sync() {
    let env = TestEnv::new();
    let (code, coord) = two_remotes(&env);
    let a = env.clone_remote(&code, "a");
    env.swarm(&a, &["plan", "new", "rel"]).ok();
    env.swarm(
        &a,
        &["task", "new", "api", "--plan", "rel", "--title", "the API"],
    )
    .ok();
    let on_origin = env.refs(&code, "refs/swarm/");
    assert!(
        on_origin.contains_key("refs/swarm/tasks/rel/api"),
        "{on_origin:?}"
    );

    env.swarm(
        &a,
        &["init", "--coordination-remote", coord.to_str().unwrap()],
    )
    .ok();
    env.swarm(&a, &["sync"]).ok();
    assert_eq!(env.refs(&coord, "refs/swarm/"), on_origin);
    assert_eq!(env.refs(&code, "refs/swarm/"), on_origin);
    // A second clone joining sees the plan and its task.
    let b = join(&env, &code, &coord, "b");
    env.swarm(&b, &["task", "list", "--plan", "rel"])
        .ok()
        .stdout_has("api");
}

/// Without origin there is no code remote to pin: init says so (a warning,
/// every run, never a change) and the code stays with the records.
#[test]
fn init_coordination_remote_without_origin_warns_each_time_and_changes_nothing_twice() {
    let env = TestEnv::new();
    let (_code, coord) = two_remotes(&env);
    let a = env.repo("a");
    let url = coord.to_str().unwrap();
    env.swarm(&a, &["init", "--coordination-remote", url])
        .ok()
        .stdout_has("added remote swarm")
        .stderr_has("warning: there is no remote 'origin' for the code");
    let before = env.git(&a, &["config", "--list", "--local"]);
    env.swarm(&a, &["init", "--coordination-remote", url])
        .ok()
        .stdout_has("already swarm-ready: nothing to change")
        .stderr_has("warning: there is no remote 'origin' for the code");
    assert_eq!(env.git(&a, &["config", "--list", "--local"]), before);
    assert!(!before.contains("swarm.coderemote"), "{before}");
}

#[test]
fn init_coordination_remote_refuses_a_url_with_a_control_character_and_changes_nothing() {
    let env = TestEnv::new();
    let (code, _coord) = two_remotes(&env);
    env.git(
        env.root(),
        &["clone", "--quiet", code.to_str().unwrap(), "a"],
    );
    let a = env.root().join("a");
    let config_before = env.git(&a, &["config", "--list", "--local"]);
    for url in [
        "/tmp/coord.git\n[core]\n\thooksPath = /tmp",
        "host:team/x\u{1b}[2J.git",
        "x\ty.git",
    ] {
        env.swarm(&a, &["init", "--coordination-remote", url])
            .err(2, "USAGE")
            .stderr_has("control character");
        assert_eq!(
            env.git(&a, &["config", "--list", "--local"]),
            config_before,
            "{url:?}: the config changed"
        );
    }
}
