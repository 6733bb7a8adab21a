//! Handoff packets and their acceptance across clones of one bare remote:
//! exit codes, messages, and the refs, notes and journal entries left
//! behind, locally and on the remote.

pub(crate) mod handoff_carry;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::fixture::Swarm;
use crate::support::harness::{Run, TestEnv};
use crate::support::process::{
    assert_aborted, assert_fsck_clean, ref_of, run_and_kill, soak_rounds, Kill, Killed, Rng,
    WRITING,
};

const PACKETS: &str = "refs/swarm/packets/";
const NEXT: [&str; 2] = ["wire the refresh endpoint", "open the PR"];
const GATES: [&str; 3] = [
    "cargo test",
    "cargo clippy -- -D warnings",
    "manual login check",
];

/// alice leads plan `auth` (published) and works on `feat/auth`: one pushed
/// commit, then a modified README.md and an untracked notes.txt.
fn lane_at_work(env: &TestEnv, a: &Path) -> String {
    env.swarm(a, &["plan", "new", "auth"]).ok();
    env.swarm(a, &["sync"]).ok();
    env.swarm(
        a,
        &["lead", "claim", "--plan", "auth", "--succession", "bob"],
    )
    .ok();
    env.git(a, &["switch", "--quiet", "-c", "feat/auth"]);
    env.write(&a.join("src/token.rs"), "pub fn token() {}\n");
    env.git(a, &["add", "src/token.rs"]);
    env.git(
        a,
        &["commit", "--quiet", "--no-verify", "-m", "token module"],
    );
    env.git(
        a,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "-u",
            "origin",
            "feat/auth",
        ],
    );
    dirty(env, a);
    env.git(a, &["rev-parse", "HEAD"])
}

fn dirty(env: &TestEnv, dir: &Path) {
    env.write(&dir.join("README.md"), "hello\nwork in progress\n");
    env.write(&dir.join("notes.txt"), "half-done refresh logic\n");
}

/// The successor's checkout: the lane's branch at its head, same dirt.
fn successor_ready(env: &TestEnv, dir: &Path) {
    env.git(dir, &["fetch", "--quiet", "origin"]);
    env.git(dir, &["switch", "--quiet", "feat/auth"]);
    dirty(env, dir);
}

fn handoff_args(task: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "handoff",
        "--reason",
        "capacity_critical",
        "--plan",
        "auth",
        "--task",
        task,
        "--step",
        "refresh tokens",
        "--done",
        "token module",
        "--verified",
        "unit tests pass=target/test-log.txt",
        "--request",
        "ops: a staging client id",
        "--decision",
        "HS256, rotate weekly",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for g in GATES {
        args.push("--unverified".into());
        args.push(g.into());
    }
    for n in NEXT {
        args.push("--next".into());
        args.push(n.into());
    }
    args
}

fn handoff(env: &TestEnv, dir: &Path, task: &str, extra: &[&str]) -> Run {
    let mut args = handoff_args(task);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.swarm(dir, &args)
}

fn note_objects(env: &TestEnv, dir: &Path, commit: &str) -> Vec<serde_json::Value> {
    let run = env.git_run(dir, &["notes", "--ref=swarm", "show", commit]);
    if run.code != 0 {
        return Vec::new();
    }
    run.stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("note lines are JSON"))
        .collect()
}

fn journal_count(env: &TestEnv, dir: &Path, event: &str, packet: &str) -> usize {
    let log = env
        .swarm(dir, &["--offline", "plan", "log", "auth", "--json"])
        .ok()
        .json();
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == event && e["trailers"]["Swarm-Packet"] == packet)
        .count()
}

fn yaml(env: &TestEnv, dir: &Path, rev: &str, file: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&env.git(dir, &["show", &format!("{rev}:{file}")])).unwrap()
}

#[test]
fn a_packet_written_on_one_clone_is_accepted_on_another_once() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob", "carol"]).parts();
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);
    let head = lane_at_work(&env, a);

    let out = handoff(&env, a, "token auth", &["--json"]).ok().json();
    let id = out["id"].as_str().unwrap().to_string();
    let re = regex::Regex::new(r"^\d{8}T\d{6}Z-alice$").unwrap();
    assert!(re.is_match(&id), "{id}");
    assert_eq!(out["schema"], "dwp-handoff/v1");
    assert_eq!(out["plan"], "auth");
    assert_eq!(out["contract"], "v1");
    assert_eq!(out["author"], "alice");
    assert_eq!(out["reason"], "capacity_critical");
    assert_eq!(out["repo"], remote.to_str().unwrap());
    assert_eq!(
        out["checkout"],
        std::fs::canonicalize(a).unwrap().to_str().unwrap()
    );
    assert_eq!(out["branch"], "feat/auth");
    assert_eq!(out["head"], head.as_str());
    assert_eq!(out["pushed"], true);
    assert_eq!(
        out["uncommitted"],
        serde_json::json!(["README.md", "notes.txt"])
    );
    assert_eq!(out["leader"], "alice");
    assert_eq!(out["epoch"], 1);
    assert_eq!(
        out["verified"],
        serde_json::json!([{"claim": "unit tests pass", "evidence": "target/test-log.txt"}])
    );
    assert_eq!(out["unverified"], serde_json::json!(GATES));
    assert_eq!(out["next"], serde_json::json!(NEXT));

    // Published at once; plain git reads it; the head carries a note.
    let pref = format!("{PACKETS}auth/{id}");
    let written = ref_of(&env, &remote, &pref).expect("published at once");
    assert_eq!(ref_of(&env, a, &pref).as_deref(), Some(written.as_str()));
    let y = yaml(&env, a, &pref, "packet.yaml");
    assert_eq!(y["id"].as_str(), Some(id.as_str()));
    assert_eq!(y["head"].as_str(), Some(head.as_str()));
    let notes = note_objects(&env, a, &head);
    assert_eq!(
        notes,
        vec![
            serde_json::json!({"kind": "handoff", "packet": id, "plan": "auth", "author": "alice", "reason": "capacity_critical"})
        ]
    );
    assert_eq!(journal_count(&env, a, "handoff-written", &id), 1);

    // bob sees it as open, but must first stand where the work is.
    let open = env.swarm(b, &["packets", "--open", "--json"]).ok().json();
    assert_eq!(open["packets"][0]["id"], id.as_str());
    assert_eq!(open["packets"][0]["accepted_by"], serde_json::Value::Null);
    successor_ready(&env, b);
    let run = env.swarm(b, &["accept", &id]).ok();
    let mut at = 0;
    for (i, n) in NEXT.iter().enumerate() {
        let line = format!("  {}. {n}\n", i + 1);
        let pos = run
            .stdout
            .find(&line)
            .unwrap_or_else(|| panic!("{line:?} in\n{}", run.stdout));
        assert!(pos > at, "next steps in order");
        at = pos;
    }
    for g in GATES {
        assert!(
            run.stdout.contains(&format!("  - {g}\n")),
            "gate {g} in\n{}",
            run.stdout
        );
    }
    run.expect_stdout("gates you must re-run");

    // The acceptance is appended to the packet ref, here and on the remote.
    let accepted = ref_of(&env, &remote, &pref).unwrap();
    assert_ne!(accepted, written);
    assert_eq!(ref_of(&env, b, &pref).as_deref(), Some(accepted.as_str()));
    assert_eq!(env.git(b, &["rev-parse", &format!("{accepted}^")]), written);
    let acc = yaml(&env, b, &accepted, "acceptance.yaml");
    assert_eq!(acc["schema"].as_str(), Some("swarm-acceptance/v1"));
    assert_eq!(acc["packet"].as_str(), Some(id.as_str()));
    assert_eq!(acc["accepted_by"].as_str(), Some("bob"));
    assert_eq!(acc["head"].as_str(), Some(head.as_str()));
    assert_eq!(acc["must_rerun"].as_sequence().unwrap().len(), GATES.len());
    let msg = env.git(&remote, &["log", "-1", "--format=%B", &pref]);
    assert!(msg.contains("Swarm-Event: handoff-accepted"), "{msg}");
    assert!(msg.contains(&format!("Swarm-Packet: {id}")), "{msg}");
    assert_eq!(journal_count(&env, b, "handoff-accepted", &id), 1);
    // On the published notes: the handoff's line, then the acceptance's.
    let notes = note_objects(&env, b, &head);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0]["kind"], "handoff");
    assert_eq!(notes[1]["kind"], "acceptance");
    assert_eq!(notes[1]["by"], "bob");
    assert_eq!(notes[1]["commit"], accepted.as_str());

    // A second accept records nothing: by bob it is a no-op (exit 0), by
    // anyone else it is refused.
    let remote_before = env.all_refs(&remote);
    let bob_before = env.all_refs(b);
    env.swarm(b, &["accept", &id])
        .ok()
        .stdout_has("already accepted by you (bob)");
    successor_ready(&env, c);
    let carol_before = env.all_refs(c);
    let json = env.swarm(c, &["accept", &id, "--json"]).code(3).json();
    assert_eq!(json["error"]["code"], "PACKET_ALREADY_ACCEPTED");
    assert_eq!(json["error"]["detail"]["acceptance"]["accepted_by"], "bob");
    assert_eq!(env.all_refs(&remote), remote_before);
    assert_eq!(env.all_refs(b), bob_before);
    let carol_after = env.all_refs(c);
    for (k, v) in &carol_after {
        if !k.starts_with("refs/swarm-remotes/") {
            assert_eq!(carol_before.get(k), Some(v), "{k} moved on carol");
        }
    }
    let shown = env.swarm(c, &["packet", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["acceptance"]["accepted_by"], "bob");
    env.swarm(c, &["packets", "--open"])
        .ok()
        .stdout_has("no open packets");
}

#[test]
fn accept_refuses_a_packet_that_no_longer_matches_and_records_nothing() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (&clones[0], &clones[1]);
    let head = lane_at_work(&env, a);
    let out = handoff(&env, a, "token auth", &["--json"]).ok().json();
    let id = out["id"].as_str().unwrap().to_string();

    // On main, with nothing uncommitted: branch, head and paths all differ.
    let bob_before = env.all_refs(b);
    let run = env.swarm(b, &["accept", &id]).err(1, "PACKET_MISMATCH");
    let bob_main = env.git(b, &["rev-parse", "HEAD"]);
    for want in [
        "branch: expected feat/auth, found main".to_string(),
        format!("head: expected {head}, found {bob_main}"),
        "    - README.md".to_string(),
        "    - notes.txt".to_string(),
        "nothing was recorded".to_string(),
    ] {
        assert!(run.stderr.contains(&want), "{want:?} in\n{}", run.stderr);
    }

    // The lane moved on after writing the packet: its head no longer matches.
    env.write(&a.join("src/refresh.rs"), "pub fn refresh() {}\n");
    env.git(a, &["add", "src/refresh.rs"]);
    env.git(a, &["commit", "--quiet", "--no-verify", "-m", "refresh"]);
    env.git(
        a,
        &["push", "--quiet", "--no-verify", "origin", "feat/auth"],
    );
    let newer = env.git(a, &["rev-parse", "HEAD"]);
    // ... and the plan's contract changed.
    env.swarm(a, &["plan", "checkout", "auth"]).ok();
    env.swarm(a, &["plan", "save", "auth", "--contract", "v2"])
        .ok();
    env.swarm(a, &["sync"]).ok();
    assert_eq!(
        env.all_refs(b),
        bob_before,
        "the refused accept wrote nothing"
    );
    let remote_before = env.all_refs(&remote);
    successor_ready(&env, b);
    env.write(&b.join("scratch.txt"), "mine\n");
    let json = env.swarm(b, &["accept", &id, "--json"]).code(1).json();
    assert_eq!(json["error"]["code"], "PACKET_MISMATCH");
    let mismatches = json["error"]["detail"]["mismatches"].as_array().unwrap();
    let fields: Vec<&str> = mismatches
        .iter()
        .map(|m| m["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, vec!["contract", "head", "uncommitted"]);
    assert_eq!(mismatches[0]["expected"], "v1");
    assert_eq!(mismatches[0]["actual"], "v2");
    assert_eq!(mismatches[1]["expected"], head.as_str());
    assert_eq!(mismatches[1]["actual"], newer.as_str());
    assert_eq!(
        mismatches[2]["actual"],
        serde_json::json!(["README.md", "notes.txt", "scratch.txt"])
    );
    assert!(
        mismatches[2]["diff"]
            .as_str()
            .unwrap()
            .contains("+ scratch.txt"),
        "{}",
        mismatches[2]
    );
    let text = env.swarm(b, &["accept", &id]).err(1, "PACKET_MISMATCH");
    text.expect_stderr("contract: expected v1, found v2");
    assert!(
        text.stderr
            .contains(&format!("head: expected {head}, found {newer}")),
        "{}",
        text.stderr
    );
    text.expect_stderr("    + scratch.txt");

    // Nothing recorded anywhere: the packet is still open on the remote.
    assert_eq!(env.all_refs(&remote), remote_before);
    let bob_after = env.all_refs(b);
    for (k, v) in &bob_before {
        if k.starts_with("refs/swarm/") || k == "refs/notes/swarm" {
            assert_eq!(bob_after.get(k), Some(v), "{k} moved");
        }
    }
    assert!(!bob_after.contains_key("refs/notes/swarm"));
    let pref = format!("{PACKETS}auth/{id}");
    assert_eq!(ref_of(&env, b, &pref), None);
    env.swarm(b, &["packets", "--open"]).ok().stdout_has(&id);
}

#[test]
fn a_packet_that_looks_like_it_holds_a_credential_is_refused_without_echo() {
    let (env, remote, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    lane_at_work(&env, a);
    let gh = "ghp_R2d2C3poR2d2C3poR2d2C3poR2d2C3po1234";
    let aws = "AKIAZ7QX3VNM5TPLK2DQ";
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----";
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVlLXZhbHVl";
    let claim = format!("login works={jwt}");
    // (arguments, field, value never echoed, kind named)
    let cases: Vec<(Vec<&str>, &str, &str, &str)> = vec![
        (vec!["--next", gh], "next[0]", gh, "github-pat"),
        (vec!["--task", aws], "task", aws, "aws-access-key"),
        (
            vec!["--decision", key],
            "decisions[0]",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
            "private-key",
        ),
        (
            vec!["--verified", &claim],
            "verified[0].evidence",
            jwt,
            "jwt",
        ),
        (
            vec!["--request", "db password=Tr0ub4dor&3"],
            "requests[0]",
            "Tr0ub4dor&3",
            "secret-assignment",
        ),
    ];
    let export = env.root().join("out/packet.yaml");
    let local_before = env.all_refs(a);
    let remote_before = env.all_refs(&remote);
    for (args, field, value, kind) in &cases {
        let mut full = vec![
            "handoff",
            "--reason",
            "usage_limit",
            "--export",
            export.to_str().unwrap(),
        ];
        full.extend(args.iter().copied());
        let run = env.swarm(a, &full).err(2, "PACKET_SECRET");
        assert!(
            run.stderr.contains(&format!("`{field}` ({kind}: ")),
            "{field}: {}",
            run.stderr
        );
        run.expect_stderr("nothing was written");
        full.push("--json");
        let json = env.swarm(a, &full).code(2);
        assert_eq!(json.json()["error"]["code"], "PACKET_SECRET");
        assert_eq!(
            json.json()["error"]["detail"]["findings"],
            serde_json::json!([{"field": field, "kind": kind,
                "description": git_swarm::secret::describe(kind)}])
        );
        for r in [&run, &json] {
            assert!(!r.stdout.contains(value), "{field}: value echoed on stdout");
            assert!(!r.stderr.contains(value), "{field}: value echoed on stderr");
        }
        assert_eq!(env.all_refs(a), local_before, "{field}: a ref was written");
        assert_eq!(
            env.all_refs(&remote),
            remote_before,
            "{field}: a ref was published"
        );
        assert!(!export.exists(), "{field}: the export was written");
    }
    // What the tool derives is scanned too: a path can carry a credential.
    env.write(&a.join("token=Zq8vLm2Xa.txt"), "x\n");
    let run = env
        .swarm(a, &["handoff", "--reason", "usage_limit"])
        .err(2, "PACKET_SECRET")
        .stderr_has("]` (secret-assignment: ")
        .stderr_has("`uncommitted[");
    assert!(!run.stderr.contains("Zq8vLm2Xa"), "{}", run.stderr);
    assert_eq!(env.all_refs(a), local_before);
    assert_eq!(env.all_refs(&remote), remote_before);
}

#[test]
fn commit_ids_and_uuids_are_not_mistaken_for_credentials() {
    let (env, _, clones) = Swarm::new(&["alice"]).parts();
    let a = &clones[0];
    let head = lane_at_work(&env, a);
    let uuid = "123e4567-e89b-12d3-a456-426614174000";
    let task = format!("bisect from {head}");
    let out = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "context_pressure",
                "--task",
                &task,
                "--done",
                &format!("CI run {uuid} green"),
                "--verified",
                &format!("fix is in={head}"),
                "--next",
                "rotate the token: after the release",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(out["task"], task.as_str());
    assert_eq!(out["verified"][0]["evidence"], head.as_str());
}

#[test]
fn ids_collide_to_a_suffix_reruns_resume_and_the_export_is_owner_only() {
    let mut env = TestEnv::new();
    let repo = env.repo("alice");
    env.set_env("GIT_SWARM_NOW", "2026-05-04T03:02:01Z");
    env.swarm(&repo, &["plan", "new", "auth"]).ok();
    env.write(&repo.join("wip.txt"), "wip\n");
    let export = env.root().join("handoff/packet.yaml");
    let first = handoff(
        &env,
        &repo,
        "one",
        &["--export", export.to_str().unwrap(), "--json"],
    )
    .ok()
    .json();
    assert_eq!(first["id"], "20260504T030201Z-alice");
    assert_eq!(
        first["published"], false,
        "no remote: the local CAS arbitrates"
    );
    assert_eq!(first["pushed"], false);
    assert_eq!(first["repo"], serde_json::Value::Null);
    assert_eq!(first["leader"], serde_json::Value::Null);
    let mode = std::fs::metadata(&export).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let shown = env.git(
        &repo,
        &[
            "show",
            "refs/swarm/packets/auth/20260504T030201Z-alice:packet.yaml",
        ],
    );
    assert_eq!(env.read(&export).trim_end(), shown);

    let second = handoff(&env, &repo, "two", &["--json"]).ok().json();
    assert_eq!(second["id"], "20260504T030201Z-alice-2");
    // The same handoff again (same work, same words) is the same packet.
    let again = handoff(
        &env,
        &repo,
        "one",
        &["--export", export.to_str().unwrap(), "--json"],
    )
    .ok()
    .json();
    assert_eq!(again["id"], "20260504T030201Z-alice");
    assert_eq!(again["resumed"], true);
    // An export inside the checkout is not part of the work.
    let third = handoff(
        &env,
        &repo,
        "three",
        &["--export", "exports/p3.yaml", "--json"],
    )
    .ok()
    .json();
    assert_eq!(third["id"], "20260504T030201Z-alice-3");
    assert_eq!(third["export"], "exports/p3.yaml");
    assert_eq!(third["uncommitted"], serde_json::json!(["wip.txt"]));
    assert!(repo.join("exports/p3.yaml").exists());

    let refs = env.refs(&repo, PACKETS);
    assert_eq!(refs.len(), 3, "{refs:?}");
    let again = handoff(
        &env,
        &repo,
        "three",
        &["--export", "exports/p3.yaml", "--json"],
    )
    .ok()
    .json();
    assert_eq!(
        again["id"], "20260504T030201Z-alice-3",
        "the export did not dirty the work"
    );
    assert_eq!(
        journal_count(&env, &repo, "handoff-written", "20260504T030201Z-alice"),
        1
    );

    let list = env
        .swarm(&repo, &["packets", "--plan", "auth", "--json"])
        .ok()
        .json();
    let ids: Vec<&str> = list["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            "20260504T030201Z-alice",
            "20260504T030201Z-alice-2",
            "20260504T030201Z-alice-3"
        ]
    );
    env.swarm(&repo, &["packet", "show", "auth/20260504T030201Z-alice-2"])
        .ok()
        .stdout_has("task: two")
        .stdout_has("# not accepted yet");
    env.swarm(&repo, &["packet", "show", "nope"])
        .err(2, "NOT_FOUND");
    env.swarm(&repo, &["packet", "show", "../x"])
        .err(2, "NAME_INVALID");
    env.swarm(&repo, &["handoff", "--reason", "tired"])
        .err(2, "USAGE");
    env.swarm(
        &repo,
        &[
            "handoff",
            "--reason",
            "usage_limit",
            "--verified",
            "no evidence",
        ],
    )
    .err(2, "USAGE");
    // Offline acceptance in the same checkout: the local CAS takes it once.
    env.swarm(
        &repo,
        &["--as", "bob", "accept", "20260504T030201Z-alice-3"],
    )
    .ok();
    env.swarm(
        &repo,
        &["--as", "carol", "accept", "20260504T030201Z-alice-3"],
    )
    .err(3, "PACKET_ALREADY_ACCEPTED");
    let open = env
        .swarm(&repo, &["packets", "--open", "--json"])
        .ok()
        .json();
    assert_eq!(open["packets"].as_array().unwrap().len(), 2);
}

/// Packet refs in a repository: name -> commit.
fn packet_refs(env: &TestEnv, dir: &Path) -> std::collections::BTreeMap<String, String> {
    env.refs(dir, PACKETS)
}

#[test]
fn a_handoff_stopped_at_any_point_is_completed_by_running_it_again() {
    for point in [
        "handoff:objects",
        "publish:pushed",
        "handoff:pushed",
        "handoff:ref",
        "handoff:journal",
    ] {
        let (env, remote, clones) = Swarm::new(&["alice"]).parts();
        let a = &clones[0];
        let head = lane_at_work(&env, a);
        let mut args = handoff_args("crash");
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let crashed = env.swarm_env(a, &[("GIT_SWARM_FAILPOINT", point)], &args);
        assert_aborted(&crashed, point);
        assert_fsck_clean(&env, a);
        assert_fsck_clean(&env, &remote);
        // Whole or absent: at most one packet, and whatever exists parses.
        let published = packet_refs(&env, &remote);
        assert!(published.len() <= 1, "{point}: {published:?}");
        for name in published.keys() {
            let y = yaml(&env, &remote, name, "packet.yaml");
            assert_eq!(y["schema"].as_str(), Some("dwp-handoff/v1"), "{point}");
        }
        let local = packet_refs(&env, a);
        assert!(local.len() <= 1, "{point}: {local:?}");
        if !local.is_empty() {
            assert_eq!(local, published, "{point}: local only after the remote");
        }
        let again = env.swarm(a, &args).ok().json();
        let id = again["id"].as_str().unwrap();
        let published = packet_refs(&env, &remote);
        assert_eq!(published.len(), 1, "{point}: {published:?}");
        assert_eq!(packet_refs(&env, a), published, "{point}");
        assert!(
            published.contains_key(&format!("{PACKETS}auth/{id}")),
            "{point}"
        );
        assert_eq!(journal_count(&env, a, "handoff-written", id), 1, "{point}");
        let handoff_notes: Vec<_> = note_objects(&env, a, &head)
            .into_iter()
            .filter(|n| n["kind"] == "handoff")
            .collect();
        assert_eq!(handoff_notes.len(), 1, "{point}");
        assert_eq!(handoff_notes[0]["packet"], id, "{point}");
    }
}

/// alice hands off; bob stands ready. Returns (env, remote, alice, bob, id, head).
fn handed_off() -> (TestEnv, PathBuf, PathBuf, PathBuf, String, String) {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"]).parts();
    let (a, b) = (clones[0].clone(), clones[1].clone());
    let head = lane_at_work(&env, &a);
    let out = handoff(&env, &a, "token auth", &["--json"]).ok().json();
    let id = out["id"].as_str().unwrap().to_string();
    successor_ready(&env, &b);
    (env, remote, a, b, id, head)
}

#[track_caller]
fn assert_accepted_once(env: &TestEnv, remote: &Path, b: &Path, id: &str, head: &str) {
    let pref = format!("{PACKETS}auth/{id}");
    let tip = ref_of(env, remote, &pref).unwrap();
    let acc = yaml(env, remote, &tip, "acceptance.yaml");
    assert_eq!(acc["accepted_by"].as_str(), Some("bob"));
    assert_eq!(ref_of(env, b, &pref).as_deref(), Some(tip.as_str()));
    assert_eq!(env.git(remote, &["rev-list", "--count", &pref]), "2");
    assert_eq!(journal_count(env, b, "handoff-accepted", id), 1);
    let acceptance_notes: Vec<_> = note_objects(env, b, head)
        .into_iter()
        .filter(|n| n["kind"] == "acceptance" && n["packet"] == id)
        .collect();
    assert_eq!(acceptance_notes.len(), 1, "{acceptance_notes:?}");
    assert_eq!(acceptance_notes[0]["commit"], tip.as_str());
}

#[test]
fn an_accept_stopped_at_any_point_is_completed_by_running_it_again() {
    for point in [
        "accept:objects",
        "publish:pushed",
        "accept:pushed",
        "accept:ref",
        "accept:journal",
    ] {
        let (env, remote, _a, b, id, head) = handed_off();
        let crashed = env.swarm_env(&b, &[("GIT_SWARM_FAILPOINT", point)], &["accept", &id]);
        assert_aborted(&crashed, point);
        assert_fsck_clean(&env, &b);
        assert_fsck_clean(&env, &remote);
        let pref = format!("{PACKETS}auth/{id}");
        let published = ref_of(&env, &remote, &pref).unwrap();
        let has_acceptance = env
            .git_run(
                &remote,
                &["cat-file", "-e", &format!("{published}:acceptance.yaml")],
            )
            .code
            == 0;
        assert_eq!(has_acceptance, point != "accept:objects", "{point}");
        if let Some(local) = ref_of(&env, &b, &pref) {
            env.git_run(
                &remote,
                &["merge-base", "--is-ancestor", &local, &published],
            )
            .ok();
        }
        let again = env.swarm(&b, &["accept", &id, "--json"]).ok().json();
        assert_eq!(again["resumed"], point != "accept:objects", "{point}");
        assert_eq!(again["must_rerun"], serde_json::json!(GATES), "{point}");
        assert_accepted_once(&env, &remote, &b, &id, &head);
        // A re-run by the same acceptor after the acceptance completed
        // is a no-op (issue 24, issue 30 item 11).
        let noop = env.swarm(&b, &["accept", &id, "--json"]).ok().json();
        assert_eq!(noop["already"], true, "{point}");
        assert_eq!(noop["resumed"], false, "{point}");
        assert_accepted_once(&env, &remote, &b, &id, &head);
    }
}

/// 1 for a kill that landed mid-write; a run killed at its writing point
/// must have been killed there (it wrote, and was still running).
#[track_caller]
fn mid_write(killed: Killed, kill: Kill) -> usize {
    assert_ne!(killed, Killed::NeverWrote, "the run wrote nothing");
    if let Kill::AtPoint = kill {
        assert_eq!(killed, Killed::MidWrite);
    }
    (killed == Killed::MidWrite) as usize
}

#[test]
fn handoff_accept_and_sync_killed_at_random_moments_leave_whole_records() {
    let (env, remote, a, b, _first, head) = handed_off();
    let mut rng = Rng::new("handoff/accept/sync kills");
    let rounds = soak_rounds(10) / 2 + 1;
    let mut killed = 0;
    for round in 0..rounds {
        let task = format!("round {round}");
        // Handoff, killed, then run again.
        let mut args = handoff_args(&task);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let kill = Kill::draw(&mut rng, round, 150);
        killed += mid_write(run_and_kill(&env, &a, WRITING, &argv, kill), kill);
        assert_fsck_clean(&env, &a);
        args.push("--json".into());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env.swarm(&a, &argv).ok().json();
        let id = out["id"].as_str().unwrap().to_string();
        let with_task: Vec<String> = packet_refs(&env, &remote)
            .keys()
            .filter(|r| yaml(&env, &remote, r, "packet.yaml")["task"].as_str() == Some(&task))
            .cloned()
            .collect();
        assert_eq!(
            with_task,
            vec![format!("{PACKETS}auth/{id}")],
            "round {round}"
        );
        assert_eq!(journal_count(&env, &a, "handoff-written", &id), 1);

        // Accept, killed, then run again: completes it, or (if the killed run
        // had finished everything) says it is already accepted.
        let kill = Kill::draw(&mut rng, round, 250);
        killed += mid_write(
            run_and_kill(&env, &b, WRITING, &["accept", &id], kill),
            kill,
        );
        assert_fsck_clean(&env, &b);
        let again = env.swarm(&b, &["accept", &id]);
        if again.code != 0 {
            again.err(3, "PACKET_ALREADY_ACCEPTED");
        }
        assert_accepted_once(&env, &remote, &b, &id, &head);

        // Sync on both sides, killed, then run again: everything converges.
        for dir in [&a, &b] {
            // A side may have nothing to publish (NeverWrote): not a kill.
            let kill = Kill::draw(&mut rng, round, 100);
            let got = run_and_kill(&env, dir, "sync:reconciled", &["sync"], kill);
            killed += (got == Killed::MidWrite) as usize;
            assert_fsck_clean(&env, dir);
            env.swarm(dir, &["sync"]).ok();
        }
        env.swarm(&a, &["sync"]).ok();
        for dir in [&a, &b] {
            let local: Vec<(String, String)> = env
                .refs(dir, "refs/swarm/")
                .into_iter()
                .chain(env.refs(dir, "refs/notes/swarm"))
                .collect();
            let published: Vec<(String, String)> = env
                .refs(&remote, "refs/swarm/")
                .into_iter()
                .chain(env.refs(&remote, "refs/notes/swarm"))
                .collect();
            assert_eq!(local, published, "round {round}: {}", dir.display());
        }
    }
    eprintln!("{killed} of {} runs were killed mid-write", rounds * 4);
    // Round 0 kills the handoff and the accept at their writing point.
    assert!(
        killed >= 2,
        "only {killed} runs were killed mid-write: the test proved little"
    );
    assert_fsck_clean(&env, &remote);
    // Both journals are joined in the published plan, each entry once.
    let log = env
        .swarm(&b, &["plan", "log", "auth", "--json"])
        .ok()
        .json();
    let entries = log["entries"].as_array().unwrap();
    let written = entries
        .iter()
        .filter(|e| e["event"] == "handoff-written")
        .count();
    let accepted = entries
        .iter()
        .filter(|e| e["event"] == "handoff-accepted")
        .count();
    assert_eq!(written, rounds + 1);
    assert_eq!(accepted, rounds);
}

#[test]
fn sync_keeps_the_first_published_acceptance_and_unions_the_notes() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob", "carol"]).parts();
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);
    let head = lane_at_work(&env, a);
    let id = handoff(&env, a, "token auth", &["--json"]).ok().json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let pref = format!("{PACKETS}auth/{id}");
    successor_ready(&env, b);
    successor_ready(&env, c);
    // bob accepts offline (provisionally); carol accepts online and publishes first.
    env.swarm(b, &["sync"]).ok();
    env.swarm(b, &["--offline", "accept", &id]).ok();
    let bobs = ref_of(&env, b, &pref).unwrap();
    env.swarm(c, &["accept", &id]).ok();
    let carols = ref_of(&env, &remote, &pref).unwrap();
    assert_ne!(bobs, carols);

    // bob's acceptance exited 0 (offline): the sync that cannot keep it
    // fails naming it, and keeps it under refs/swarm-lost/.
    let out = env
        .swarm(b, &["sync", "--json"])
        .err(3, "WRITE_LOST")
        .json();
    let out = &out["error"]["detail"];
    assert_eq!(out["lost"][0]["ref"], pref.as_str());
    let kept = out["lost"][0]["kept"].as_str().unwrap().to_string();
    assert_eq!(ref_of(&env, b, &kept).as_deref(), Some(bobs.as_str()));
    assert_eq!(out["superseded"][0]["ref"], pref.as_str());
    assert_eq!(out["superseded"][0]["local"], bobs.as_str());
    assert_eq!(out["superseded"][0]["remote"], carols.as_str());
    assert_eq!(ref_of(&env, b, &pref).as_deref(), Some(carols.as_str()));
    assert_eq!(
        ref_of(&env, &remote, &pref).as_deref(),
        Some(carols.as_str())
    );
    env.swarm(b, &["sync"]).ok().stdout_has("up to date");
    env.swarm(b, &["accept", &id])
        .err(3, "PACKET_ALREADY_ACCEPTED")
        .stderr_has("accepted by carol");

    // Notes from all three machines end up together on the head commit;
    // the acceptance that counts is the one whose commit is on the packet ref.
    for dir in [a, c, b, a, c] {
        env.swarm(dir, &["sync"]).ok();
    }
    let notes = note_objects(&env, &remote, &head);
    let kinds: Vec<(String, String)> = notes
        .iter()
        .map(|n| {
            (
                n["kind"].as_str().unwrap().to_string(),
                n["by"]
                    .as_str()
                    .or(n["author"].as_str())
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    for want in [
        ("handoff", "alice"),
        ("acceptance", "carol"),
        ("acceptance", "bob"),
    ] {
        assert!(
            kinds.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {kinds:?}"
        );
    }
    let counted: Vec<&serde_json::Value> = notes
        .iter()
        .filter(|n| n["kind"] == "acceptance" && n["commit"] == carols.as_str())
        .collect();
    assert_eq!(counted.len(), 1);
    assert_eq!(counted[0]["by"], "carol");
    for dir in [a, b, c] {
        assert_eq!(
            env.refs(dir, "refs/notes/swarm"),
            env.refs(&remote, "refs/notes/swarm")
        );
    }
}

#[test]
fn one_packet_id_written_on_two_machines_offline_is_a_conflict_not_a_loss() {
    let (mut env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .sync(1)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    // The same author, in the same second, on two machines, offline.
    env.set_env("GIT_SWARM_NOW", "2026-05-04T03:02:01Z");
    let id = "20260504T030201Z-sam";
    for (dir, task) in [(a, "from a"), (b, "from b")] {
        let out = env
            .swarm(
                dir,
                &[
                    "--offline",
                    "--as",
                    "sam",
                    "handoff",
                    "--reason",
                    "usage_limit",
                    "--task",
                    task,
                    "--json",
                ],
            )
            .ok()
            .json();
        assert_eq!(out["id"], id);
    }
    let pref = format!("{PACKETS}auth/{id}");
    env.swarm(a, &["sync"]).ok();
    let published = ref_of(&env, &remote, &pref).unwrap();
    let bobs = ref_of(&env, b, &pref).unwrap();
    let json = env.swarm(b, &["sync", "--json"]).code(3).json();
    assert_eq!(json["error"]["code"], "PLAN_CONFLICT");
    assert_eq!(
        json["error"]["detail"]["conflicts"][0]["ref"],
        pref.as_str()
    );
    // bob's packet is untouched, the published one too.
    assert_eq!(ref_of(&env, b, &pref).as_deref(), Some(bobs.as_str()));
    assert_eq!(
        ref_of(&env, &remote, &pref).as_deref(),
        Some(published.as_str())
    );
    assert_eq!(
        yaml(&env, b, &pref, "packet.yaml")["task"].as_str(),
        Some("from b")
    );
}

#[test]
fn accepting_a_lanes_packet_hands_the_lane_to_the_successor() {
    let (env, repo) = Swarm::repo("coord").init(0).plan(0, "api").repo_parts();
    env.swarm(
        &repo,
        &[
            "lane", "new", "orders", "--plan", "api", "--owner", "agent1",
        ],
    )
    .ok();
    // Inside the lane, with no swarm.as, the lane's owner is who acts.
    env.git(&repo, &["config", "--unset", "swarm.as"]);
    let wt = repo.join("_swarm-worktrees/orders");
    env.write(&wt.join("orders.txt"), "orders\n");
    env.git(&wt, &["add", "orders.txt"]);
    env.git(&wt, &["commit", "--quiet", "-m", "orders"]);
    let id = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--next",
                "finish",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.ends_with("-agent1"), "{id}");
    env.swarm(&wt, &["--as", "agent2", "accept", &id]).ok();
    let lanes = env.swarm(&repo, &["lane", "list", "--json"]).ok().json();
    assert_eq!(lanes["lanes"][0]["owner"], "agent2", "{lanes}");
    let msg = env.git(
        &repo,
        &["log", "-1", "--format=%B", "refs/swarm/lanes/orders"],
    );
    assert!(
        msg.contains("handed from agent1 to agent2")
            && msg.contains(&format!("Swarm-Packet: {id}")),
        "{msg}"
    );
    // From now on the successor is the lane's identity.
    env.swarm(&wt, &["report", "done"]).ok();
    let log = env.git(&repo, &["log", "-1", "--format=%B", "refs/swarm/plans/api"]);
    assert!(log.contains("Swarm-Actor: agent2"), "{log}");
}

#[test]
fn a_handoff_publishes_an_unpushed_branch_and_says_how_when_it_cannot() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "api")
        .lane(0, "orders")
        .parts();
    let a = &clones[0];
    let wt = a.join("_swarm-worktrees/orders");
    // The branch is not on origin: it goes out with the packet, at its head.
    let run = env
        .swarm(&wt, &["handoff", "--reason", "capacity_low"])
        .ok();
    run.expect_stdout("(pushed)");
    assert!(!run.stderr.contains("warning:"), "{}", run.stderr);
    let head = env.git(&wt, &["rev-parse", "HEAD"]);
    assert_eq!(
        env.git(&remote, &["rev-parse", "refs/heads/feat/orders"]),
        head
    );
    // Someone else moved the branch on origin to another line of work: the
    // handoff does not overwrite it, and says how to publish this head.
    env.git(a, &["commit", "--quiet", "--allow-empty", "-m", "other"]);
    env.git(a, &["push", "--quiet", "-f", "origin", "HEAD:feat/orders"]);
    env.git(&wt, &["commit", "--quiet", "--allow-empty", "-m", "mine"]);
    let json = env
        .swarm(
            &wt,
            &[
                "handoff",
                "--reason",
                "capacity_low",
                "--next",
                "json",
                "--json",
            ],
        )
        .ok();
    // The warning goes to stderr, never stdout (also under --json).
    json.expect_stderr("warning: feat/orders is not on origin at this head: push it (`git push -u origin feat/orders`)");
    let doc = json.json();
    assert!(doc["warnings"][0]
        .as_str()
        .unwrap()
        .contains("feat/orders is not on origin"));
    assert_ne!(
        env.git(&remote, &["rev-parse", "refs/heads/feat/orders"]),
        env.git(&wt, &["rev-parse", "HEAD"])
    );
}

#[test]
fn accepting_in_another_clone_moves_the_lane_there_and_self_accept_warns() {
    let (env, _, clones) = Swarm::new(&["alice", "carol"])
        .plan(0, "api")
        .lane(0, "login")
        .parts();
    let (a, c) = (&clones[0], &clones[1]);
    let wt = a.join("_swarm-worktrees/login");
    env.write(&wt.join("login.txt"), "login\n");
    env.git(&wt, &["add", "login.txt"]);
    env.git(&wt, &["commit", "--quiet", "-m", "login"]);
    env.git(&wt, &["push", "--quiet", "-u", "origin", "feat/login"]);
    let id = env
        .swarm(&wt, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(a, &["sync"]).ok();
    // carol takes the work over in her own clone.
    env.swarm(c, &["sync"]).ok();
    env.git(c, &["fetch", "--quiet", "origin"]);
    env.git(c, &["switch", "--quiet", "feat/login"]);
    env.swarm(c, &["accept", &id]).ok();
    let lanes = env.swarm(c, &["lane", "list", "--json"]).ok().json();
    let lane = &lanes["lanes"][0];
    assert_eq!(lane["owner"], "carol");
    assert_eq!(
        lane["path"].as_str().unwrap(),
        std::fs::canonicalize(c).unwrap().to_str().unwrap()
    );
    // Her checkout is now the lane: she reports without --lane.
    env.swarm(c, &["report", "pr-open", "https://github.com/o/r/pull/3"])
        .ok();

    // Accepting your own packet works but warns.
    env.git(c, &["config", "--unset", "swarm.as"]);
    let own = env
        .swarm(
            c,
            &[
                "--as",
                "carol",
                "handoff",
                "--reason",
                "capacity_low",
                "--json",
            ],
        )
        .ok()
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    env.swarm(c, &["--as", "carol", "accept", &own])
        .ok()
        .stderr_has("warning: you accepted a packet you wrote yourself");
}

fn packet_ids(env: &TestEnv, dir: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["packets", "--json"];
    all.extend_from_slice(args);
    env.swarm(dir, &all).ok().json()["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_packet_written_to_the_wrong_plan_is_withdrawn_by_its_author_and_refuses_accept() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .plan(0, "billing")
        .sync(0)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    let wrong = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "billing",
                "--json",
            ],
        )
        .ok()
        .json();
    let id = wrong["id"].as_str().unwrap().to_string();
    let refname = format!("refs/swarm/packets/billing/{id}");
    env.swarm(b, &["sync"]).ok();

    // Only the author withdraws it.
    let before = env.refs(&remote, "refs/swarm/packets/");
    env.swarm(b, &["packet", "withdraw", &id, "--reason", "not mine"])
        .err(1, "PACKET_NOT_AUTHOR")
        .stderr_has("written by alice");
    assert_eq!(env.refs(&remote, "refs/swarm/packets/"), before);

    let out = env
        .swarm(
            a,
            &[
                "packet",
                "withdraw",
                &id,
                "--reason",
                "wrong plan",
                "--json",
            ],
        )
        .ok()
        .json();
    assert_eq!(out["changed"], true);
    // Recorded as a commit on the packet chain, published, never deleted.
    let at_remote = env.git(&remote, &["rev-parse", &refname]);
    assert_eq!(at_remote, out["commit"].as_str().unwrap());
    assert_eq!(env.git(&remote, &["rev-list", "--count", &refname]), "2");
    let w = env.git(&remote, &["show", &format!("{refname}:withdrawal.yaml")]);
    assert!(w.contains("schema: swarm-withdrawal/v1"), "{w}");
    assert!(w.contains("reason: wrong plan"), "{w}");
    assert!(env
        .git(&remote, &["show", &format!("{refname}:packet.yaml")])
        .contains(&id));
    let msg = env.git(a, &["log", "-1", "--format=%B", "refs/swarm/plans/billing"]);
    assert!(msg.contains("Swarm-Event: handoff-withdrawn"), "{msg}");

    // A second withdraw is a no-op.
    env.swarm(a, &["packet", "withdraw", &id, "--reason", "wrong plan"])
        .ok()
        .stdout_has("already withdrawn");

    // The successor cannot accept it; nothing is recorded.
    env.swarm(b, &["packets"])
        .ok()
        .stdout_has("withdrawn by alice: wrong plan");
    assert!(packet_ids(&env, b, &["--open"]).is_empty());
    assert_eq!(packet_ids(&env, b, &[]), vec![id.clone()]);
    env.swarm(b, &["accept", &id])
        .err(1, "PACKET_WITHDRAWN")
        .stderr_has("withdrawn by alice");
    assert_eq!(env.git(&remote, &["rev-parse", &refname]), at_remote);
    env.swarm(b, &["packet", "show", &id])
        .ok()
        .stdout_has("# withdrawn by its author");

    // An accepted packet can no longer be withdrawn.
    let right = env
        .swarm(
            a,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                "auth",
                "--json",
            ],
        )
        .ok()
        .json();
    let id2 = right["id"].as_str().unwrap().to_string();
    env.swarm(a, &["accept", &id2]).ok();
    env.swarm(a, &["packet", "withdraw", &id2, "--reason", "late"])
        .err(3, "PACKET_ALREADY_ACCEPTED");
}

#[test]
fn accept_compares_the_content_of_uncommitted_paths_not_only_their_names() {
    let (env, remote, clones) = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .sync(0)
        .parts();
    let (a, b) = (&clones[0], &clones[1]);
    env.git(a, &["switch", "--quiet", "-c", "feat/auth"]);
    env.git(
        a,
        &[
            "push",
            "--quiet",
            "--no-verify",
            "-u",
            "origin",
            "feat/auth",
        ],
    );
    env.write(&a.join("README.md"), "hello\nhalf-done refresh logic\n");
    env.write(&a.join("notes.txt"), "todo\n");
    let out = env
        .swarm(a, &["handoff", "--reason", "usage_limit", "--json"])
        .ok()
        .json();
    let id = out["id"].as_str().unwrap().to_string();
    let readme_blob = env.git(a, &["hash-object", "README.md"]);
    assert_eq!(
        out["uncommitted_content"]["README.md"],
        readme_blob.as_str()
    );
    let packet = format!("refs/swarm/packets/auth/{id}");
    let yaml = env.git(&remote, &["show", &format!("{packet}:packet.yaml")]);
    assert!(
        yaml.contains(&format!("README.md: {readme_blob}")),
        "{yaml}"
    );

    // Same paths, other content: refused, nothing recorded.
    env.git(b, &["fetch", "--quiet", "origin"]);
    env.git(b, &["switch", "--quiet", "feat/auth"]);
    env.write(&b.join("README.md"), "hello\nsomething else\n");
    env.write(&b.join("notes.txt"), "todo\n");
    let before = env.git(&remote, &["rev-parse", &packet]);
    let run = env
        .swarm(b, &["accept", &id])
        .err(1, "PACKET_MISMATCH")
        .stderr_has("uncommitted_content")
        .stderr_has(&format!("- README.md {readme_blob}"))
        .stderr_has("other content");
    assert!(!run.stderr.contains("notes.txt"), "{}", run.stderr);
    assert_eq!(env.git(&remote, &["rev-parse", &packet]), before);

    // The author's exact changes: accepted.
    env.write(&b.join("README.md"), "hello\nhalf-done refresh logic\n");
    env.swarm(b, &["accept", &id]).ok();
}

/// Regression: two handoffs by one author to two plans in the same second got
/// the same id, so `accept <id>` and `packet withdraw <id>` were ambiguous.
/// Ids are unique across plans: the second one takes the next suffix.
#[test]
fn packet_ids_are_unique_across_plans_within_one_second() {
    let (env, remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .plan(0, "billing")
        .parts();
    let a = &clones[0];
    let now = [("GIT_SWARM_NOW", "2026-02-01T09:00:00Z")];
    let handoff = |plan: &str| {
        env.swarm_env(
            a,
            &now,
            &[
                "handoff",
                "--reason",
                "usage_limit",
                "--plan",
                plan,
                "--json",
            ],
        )
        .ok()
        .json()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = handoff("billing");
    let second = handoff("auth");
    assert_eq!(first, "20260201T090000Z-alice");
    assert_eq!(second, "20260201T090000Z-alice-2");
    // Each id names exactly one packet, by id alone.
    env.swarm(a, &["packet", "show", &second])
        .ok()
        .stdout_has("auth");
    env.swarm(a, &["packet", "withdraw", &first, "--reason", "wrong plan"])
        .ok();
    assert_eq!(
        env.refs(&remote, "refs/swarm/packets/").len(),
        2,
        "both packets published"
    );
}
