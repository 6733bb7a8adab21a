//! The packet's pure rules, without a repository.

use crate::error::Code;
use std::collections::BTreeMap;

use super::*;
use crate::store::records::{Record, RecordKey};

fn token() -> String {
    // Assembled at run time, so no scanner flags this file.
    format!("{}{}", "ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
}

fn input() -> HandoffInput {
    HandoffInput {
        reason: "usage_limit".into(),
        task: Some("login".into()),
        next: vec!["finish the form".into()],
        unverified: vec!["cargo test".into()],
        verified: vec!["lint passes=target/lint.log".into()],
        ..HandoffInput::default()
    }
}

fn derived() -> Derived {
    Derived {
        plan: "auth".into(),
        contract: "ship login".into(),
        author: "alice".into(),
        repo: Some("https://example.com/o/r.git".into()),
        checkout: "/work/a".into(),
        branch: Some("feat/login".into()),
        head: "0123456789abcdef0123456789abcdef01234567".into(),
        pushed: true,
        uncommitted: vec!["b.txt".into(), "a.txt".into()],
        uncommitted_content: BTreeMap::from([
            ("a.txt".into(), "1111".into()),
            ("b.txt".into(), "deleted".into()),
        ]),
        lane: Some("login".into()),
        ..Derived::default()
    }
}

fn packet() -> Packet {
    let i = input();
    let verified = scan_said(&i).unwrap();
    let mut p = Packet::build(&i, verified, derived()).unwrap();
    p.id = "20261129T091131Z-alice".into();
    p.created_at = "2026-11-29T09:11:31Z".into();
    p
}

fn version() -> PacketVersion {
    PacketVersion {
        packet: packet(),
        acceptance: None,
        withdrawal: None,
    }
}

fn acceptance(by: &str) -> Acceptance {
    Acceptance::new(&packet(), by, "t".into(), "/work/b".into(), None, None)
}

#[test]
fn the_builder_takes_the_callers_words_and_the_derived_facts() {
    let p = packet();
    assert_eq!(p.schema, SCHEMA);
    assert_eq!(p.reason, "usage_limit");
    assert_eq!(p.author, "alice");
    assert_eq!(
        p.verified,
        vec![Verified {
            claim: "lint passes".into(),
            evidence: "target/lint.log".into()
        }]
    );
    assert_eq!(p.lane.as_deref(), Some("login"));
}

#[test]
fn a_secret_in_what_the_caller_says_is_refused_without_echo() {
    let mut i = input();
    i.next.push(format!("use {} to push", token()));
    let err = scan_said(&i).unwrap_err();
    assert_eq!(err.code, Code::PacketSecret);
    assert!(err.message.contains("next[1]"), "{}", err.message);
    assert!(!err.message.contains(&token()));
    // A `--verified` claim is judged whole, not only split at its `=`.
    let mut i = input();
    i.verified = vec![format!("{}={}", "password", "hunter2")];
    let err = scan_said(&i).unwrap_err();
    assert_eq!(err.code, Code::PacketSecret);
    assert!(err.message.contains("verified[0]"), "{}", err.message);
}

#[test]
fn a_secret_in_what_the_tool_derived_is_refused() {
    let mut d = derived();
    d.checkout = format!("/work/{}", token());
    let err = Packet::build(&input(), Vec::new(), d).unwrap_err();
    assert_eq!(err.code, Code::PacketSecret);
}

#[test]
fn reasons_and_verified_claims_are_checked() {
    assert!(check_reason("usage_limit").is_ok());
    let err = check_reason("bored").unwrap_err();
    assert_eq!(err.code, Code::Usage);
    assert!(err.message.contains("capacity_critical"));
    let mut i = input();
    i.reason = "bored".into();
    assert_eq!(scan_said(&i).unwrap_err().code, Code::Usage);
    assert!(parse_verified(&["no equals sign".into()]).is_err());
    assert!(parse_verified(&["=evidence".into()]).is_err());
    assert!(parse_verified(&["claim= ".into()]).is_err());
    let v = parse_verified(&[" a = b ".into()]).unwrap();
    assert_eq!((v[0].claim.as_str(), v[0].evidence.as_str()), ("a", "b"));
}

#[test]
fn same_content_ignores_id_and_time_only() {
    let a = packet();
    let mut b = a.clone();
    b.id = "other".into();
    b.created_at = "later".into();
    assert!(same_content(&a, &b));
    b.next.push("more".into());
    assert!(!same_content(&a, &b));
}

fn matching_facts(p: &Packet) -> Facts {
    Facts {
        contract: Some(p.contract.clone()),
        branch: p.branch.clone(),
        head: Some(p.head.clone()),
        dirty: vec!["a.txt".into(), "b.txt".into()],
    }
}

#[test]
fn matching_facts_pass_in_any_order_and_without_the_export_file() {
    let mut p = packet();
    p.export = Some("handoff.yaml".into());
    let mut facts = matching_facts(&p);
    facts.dirty = vec!["handoff.yaml".into(), "b.txt".into(), "a.txt".into()];
    assert!(mismatches(&p, &facts).is_empty());
}

#[test]
fn every_fact_that_differs_is_a_mismatch_in_order() {
    let p = packet();
    let facts = Facts {
        contract: Some("another contract".into()),
        branch: Some("main".into()),
        head: None,
        dirty: vec!["a.txt".into()],
    };
    let found = mismatches(&p, &facts);
    let fields: Vec<&str> = found.iter().map(|m| m.field.as_str()).collect();
    assert_eq!(fields, ["contract", "branch", "head", "uncommitted"]);
    assert_eq!(found[3].diff.as_deref(), Some("  a.txt\n- b.txt\n"));
    let missing = Facts {
        contract: None,
        ..matching_facts(&p)
    };
    assert_eq!(mismatches(&p, &missing)[0].field, "plan");
}

#[test]
fn content_that_differs_is_named_by_path_and_blob() {
    let p = packet();
    let same = p.uncommitted_content.clone();
    assert!(content_mismatch(&p.uncommitted_content, &same).is_none());
    let mut other = same.clone();
    other.insert("a.txt".into(), "2222".into());
    let m = content_mismatch(&p.uncommitted_content, &other).unwrap();
    assert_eq!(m.field, "uncommitted_content");
    assert_eq!(m.diff.as_deref(), Some("- a.txt 1111\n+ a.txt 2222\n"));
    assert!(content_mismatch(&BTreeMap::new(), &other).is_none());
}

#[test]
fn the_mismatch_error_explains_and_hints() {
    let mut p = packet();
    p.pushed = false;
    let found = mismatches(
        &p,
        &Facts {
            head: Some("ffff".into()),
            ..matching_facts(&p)
        },
    );
    let err = mismatch_error(&p, &found);
    assert_eq!(err.code, Code::PacketMismatch);
    assert!(err
        .message
        .starts_with("packet 20261129T091131Z-alice does not match this checkout (1 mismatch); nothing was recorded"));
    assert!(err
        .message
        .contains(&format!("head: expected {}, found ffff", p.head)));
    assert!(err.hints[0].contains("git switch feat/login (at 0123456789ab)"));
    assert!(err.hints[1].contains("alice must push it"));
    let detail = err.detail.unwrap();
    assert_eq!(detail["mismatches"][0]["field"], "head");
}

#[test]
fn only_the_author_withdraws_and_only_before_acceptance() {
    let v = version();
    assert!(v.may_withdraw("alice").unwrap().is_none());
    assert_eq!(
        v.may_withdraw("bob").unwrap_err().code,
        Code::PacketNotAuthor
    );
    let accepted = PacketVersion {
        acceptance: Some(acceptance("bob")),
        ..version()
    };
    assert_eq!(
        accepted.may_withdraw("alice").unwrap_err().code,
        Code::PacketAlreadyAccepted
    );
    let w = Withdrawal::new(&v.packet, "alice", "t".into(), "wrong plan");
    let withdrawn = PacketVersion {
        withdrawal: Some(w.clone()),
        ..version()
    };
    assert_eq!(withdrawn.may_withdraw("alice").unwrap(), Some(&w));
    assert!(!withdrawn.is_open());
}

#[test]
fn a_packet_is_accepted_once_and_never_once_withdrawn() {
    let v = version();
    assert!(v.is_open());
    assert!(v.may_accept("bob").unwrap().is_none());
    let accepted = PacketVersion {
        acceptance: Some(acceptance("bob")),
        ..version()
    };
    // Its acceptor re-runs to complete; anyone else is refused.
    assert!(accepted.may_accept("bob").unwrap().is_some());
    assert_eq!(
        accepted.may_accept("carol").unwrap_err().code,
        Code::PacketAlreadyAccepted
    );
    let withdrawn = PacketVersion {
        withdrawal: Some(Withdrawal::new(&v.packet, "alice", "t".into(), "oops")),
        ..version()
    };
    assert_eq!(
        withdrawn.may_accept("bob").unwrap_err().code,
        Code::PacketWithdrawn
    );
}

#[test]
fn the_acceptance_carries_the_gates_to_rerun() {
    let a = acceptance("bob");
    assert_eq!(a.schema, ACCEPTANCE_SCHEMA);
    assert_eq!(a.must_rerun, vec!["cargo test".to_string()]);
    assert_eq!(a.next, vec!["finish the form".to_string()]);
    assert_eq!(a.head, packet().head);
}

#[test]
fn a_version_round_trips_through_its_files() {
    let v = PacketVersion {
        acceptance: Some(acceptance("bob")),
        ..version()
    };
    let files = v.to_files().unwrap();
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        [ACCEPTANCE_FILE, PACKET_FILE]
    );
    let key = PacketVersion::key_of(&packet_ref("auth", &v.packet.id)).unwrap();
    assert_eq!(key.to_path(), format!("auth/{}", v.packet.id));
    let back = PacketVersion::from_files(&files, &key, "").unwrap();
    assert_eq!(back.packet, v.packet);
    assert_eq!(back.acceptance, v.acceptance);
    assert!(back.is_finished(&key, &|_, _| false));
    let mut no_packet = files.clone();
    no_packet.remove(PACKET_FILE);
    let err = PacketVersion::parse(&no_packet, "refs/swarm/packets/auth/x").unwrap_err();
    assert_eq!(err.message, "refs/swarm/packets/auth/x has no packet.yaml");
}

#[test]
fn packet_keys_are_plan_and_id() {
    assert!(PacketVersion::key_of("refs/swarm/packets/auth").is_none());
    assert!(PacketVersion::key_of("refs/swarm/packets/auth/a/b").is_none());
    assert!(PacketVersion::key_of("refs/swarm/lanes/auth/a").is_none());
}

/// Paths from every corner a handoff can meet: plain names, directories,
/// and one character from the sets readers care about (controls, bidi
/// controls, separators, `.git` look-alikes, non-ASCII letters).
fn any_path() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let odd = prop_oneof![
        Just('\n'),
        Just('\r'),
        Just('\t'),
        Just('\\'),
        Just('\u{1b}'),
        Just('\u{7f}'),
        Just('\u{85}'),
        Just('\u{202e}'),
        Just('\u{2066}'),
        Just('\u{2028}'),
        Just('\u{200c}'),
        Just('\u{fffd}'),
        Just(':'),
        Just(' '),
        Just('é'),
        Just('/'),
        Just('.'),
    ];
    (
        "[a-zA-Z0-9._ -]{0,6}",
        proptest::option::of(odd),
        "[a-zA-Z0-9._-]{0,6}",
        proptest::option::of(prop_oneof![
            Just(".git/"),
            Just("../"),
            Just("d/"),
            Just("/")
        ]),
    )
        .prop_map(|(a, c, b, pre)| {
            let mut p = pre.unwrap_or("").to_string();
            p.push_str(&a);
            p.extend(c);
            p.push_str(&b);
            p
        })
}

proptest::proptest! {
    /// The one rule: a path `handoff` lets through (`path_refusal` None)
    /// is read back by every reader of the packet — the record reader
    /// (`PacketVersion::parse`) and the snapshot restore (`unsafe_entries`,
    /// `unsafe_entry`) — whatever its characters.
    #[test]
    fn every_path_handoff_lets_through_is_read_by_accept(paths in proptest::collection::vec(any_path(), 1..4)) {
        use snapshot::{path_refusal, unsafe_entries, unsafe_entry, SnapshotPath};
        let mut paths = paths;
        paths.sort();
        paths.dedup_by_key(|p| p.to_lowercase());
        let passed: Vec<String> = paths.iter().filter(|p| path_refusal(p).is_none()).cloned().collect();
        // Keep a set git itself could hold: no path under another.
        let passed: Vec<String> = passed
            .iter()
            .filter(|p| !passed.iter().any(|q| p.to_lowercase().starts_with(&format!("{}/", q.to_lowercase()))))
            .cloned()
            .collect();
        let mut p = packet();
        p.uncommitted = passed.clone();
        p.uncommitted_content = passed.iter().map(|x| (x.clone(), "1111".to_string())).collect();
        p.snapshot = Some(snapshot::Snapshot {
            commit: "2222".into(),
            size: 1,
            paths: passed
                .iter()
                .map(|x| {
                    (x.clone(), SnapshotPath {
                        state: snapshot::PathState::Untracked,
                        content: "1111".into(),
                        mode: Some("100644".into()),
                        size: 1,
                        from: None,
                    })
                })
                .collect(),
        });
        let v = PacketVersion { packet: p.clone(), acceptance: None, withdrawal: None };
        let files = v.to_files().unwrap();
        let read = PacketVersion::parse(&files, "refs/swarm/packets/auth/x");
        proptest::prop_assert!(read.is_ok(), "{passed:?}: {:?}", read.err());
        proptest::prop_assert_eq!(read.unwrap().packet, p);
        let entries: Vec<(&str, &str)> = passed.iter().map(|x| (x.as_str(), "100644")).collect();
        proptest::prop_assert!(unsafe_entries(&entries).is_empty(), "{passed:?}");
        for x in &passed {
            proptest::prop_assert_eq!(unsafe_entry(x, "120000"), None);
        }
    }
}
