//! Offline, every arbitration, `sync`, `lead push` and every listing that
//! reaches the remote say the same thing: `REMOTE_UNREACHABLE` (exit 4)
//! or one warning, both worded `remote 'origin' could not be reached (last
//! reached …)`, never git's command line or a refspec; the arbitrations'
//! hint names `--offline`, the others' does not.

use crate::support::fixture::Swarm;

const WORDING: &str = "remote 'origin' could not be reached (last reached ";

#[test]
fn every_arbitration_sync_and_listing_says_one_code_and_one_wording_offline() {
    let s = Swarm::new(&["alice", "bob"])
        .plan(0, "auth")
        .lane(0, "login");
    let id = s.handoff(0, "login");
    let (env, remote, clones) = s.task(0, "t9", "t9").sync(1).parts();
    let b = &clones[1];
    env.swarm(b, &["status"]).ok();
    std::fs::rename(&remote, env.root().join("remote.gone")).unwrap();
    let before = env.refs(b, "refs/swarm/");
    let arbitrations: &[&[&str]] = &[
        &["accept", id.as_str()],
        &["lead", "claim", "--plan", "auth", "--succession", "bob"],
        &[
            "lead",
            "takeover",
            "--plan",
            "auth",
            "--reason",
            "alice is away",
        ],
        &["task", "claim", "t9", "--plan", "auth"],
        &["reserve", "src/login.rs"],
    ];
    let remote_bound: &[&[&str]] = &[&["sync"], &["lead", "push", "--plan", "auth", "HEAD:main"]];
    for (args, arbitration) in arbitrations
        .iter()
        .map(|a| (a, true))
        .chain(remote_bound.iter().map(|a| (a, false)))
    {
        let run = env.swarm(b, args).err(4, "REMOTE_UNREACHABLE");
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("error[REMOTE_UNREACHABLE]: {WORDING}")),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("refs/"),
            "{args:?}: no refspec\n{}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("git fetch"),
            "{args:?}: no command line\n{}",
            run.stderr
        );
        assert_eq!(
            run.stderr.contains("--offline"),
            arbitration,
            "{args:?}: the hint names --offline only where it decides\n{}",
            run.stderr
        );
        let json = env.swarm(b, &[&["--json"][..], args].concat()).json();
        assert_eq!(
            json["error"]["code"], "REMOTE_UNREACHABLE",
            "{args:?}: {json}"
        );
        assert_eq!(
            json["error"]["detail"]["remote"], "origin",
            "{args:?}: {json}"
        );
        assert!(
            json["error"]["detail"]["last_reached"].is_string(),
            "{args:?}: {json}"
        );
        assert_eq!(env.refs(b, "refs/swarm/"), before, "{args:?} wrote nothing");
    }
    for args in [
        &["status"][..],
        &["task", "list"],
        &["packets"],
        &["inbox"],
        &["lead", "status", "--plan", "auth"],
        &["reservations"],
    ] {
        let run = env.swarm(b, args).ok();
        let warnings: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect();
        assert_eq!(warnings.len(), 1, "{args:?}\n{}", run.stderr);
        assert!(
            warnings[0].starts_with(&format!("warning: {WORDING}")),
            "{args:?}: {}",
            warnings[0]
        );
    }
}

/// A closed port on 127.0.0.1 (nothing listens) is the same refusal as a
/// path with no repository.
#[test]
fn a_remote_on_a_closed_port_is_unreachable_too() {
    let (env, _remote, clones) = Swarm::new(&["alice"])
        .plan(0, "auth")
        .task(0, "t1", "t1")
        .parts();
    let a = &clones[0];
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    env.git(
        a,
        &[
            "remote",
            "set-url",
            "origin",
            &format!("git://127.0.0.1:{port}/r.git"),
        ],
    );
    let run = env
        .swarm(a, &["task", "claim", "t1", "--plan", "auth"])
        .err(4, "REMOTE_UNREACHABLE");
    run.expect_stderr(WORDING);
    run.expect_stderr("the connection was refused");
    run.expect_stderr("--offline");
}
