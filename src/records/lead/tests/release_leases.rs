//! Leadership rules: release, succession, push; leases.

use super::*;

// ---- release, succession, push -----------------------------------------------

#[test]
fn a_release_clears_the_leader_and_keeps_the_epoch() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let next = written(decide(Some(&rec), "alice", &Op::Release));
    assert_eq!(next.record.leader, None);
    assert!(next.record.released);
    assert_eq!(next.record.lease_until, None);
    assert_eq!(next.record.epoch, 2);
    assert_eq!(next.change, Change::Released);
    assert_eq!(next.event.summary, "lead p: alice released epoch 2");
    assert_eq!(next.event.kind, "lead-released");
    let e = refused(decide(Some(&rec), "bob", &Op::Release));
    assert_eq!(e.code, Code::NotLeader);
    // A rerun after the published release completes.
    let mut f = facts();
    f.unseen = Some(("lead-released", "alice"));
    assert!(is_already(decide_with(
        Some(&released(2)),
        "alice",
        &Op::Release,
        &f
    )));
}

#[test]
fn a_succession_edit_keeps_the_epoch_and_records_the_previous_list() {
    let rec = LeadRecord {
        succession: Vec::new(),
        ..led("alice", 2, &[], LIVE)
    };
    let op = Op::Succession {
        succession: strings(&["bob", "carol"]),
    };
    let next = written(decide(Some(&rec), "alice", &op));
    assert_eq!(next.record.succession, strings(&["bob", "carol"]));
    assert_eq!(next.record.epoch, 2);
    assert_eq!(trailer(&next, "Swarm-Previous-Succession"), ["-"]);
    assert_eq!(
        next.event.summary,
        "lead p: alice set the succession to bob,carol"
    );
    // The same list again changes nothing.
    assert!(is_already(decide(Some(&next.record), "alice", &op)));
}

#[test]
fn a_fenced_push_records_what_each_refspec_published() {
    let rec = led("alice", 2, &["alice"], LIVE);
    let op = Op::Push {
        refspecs: strings(&["HEAD:main", ":refs/tags/old"]),
    };
    let sources = strings(&["abc123", "(delete)"]);
    let f = Facts {
        sources: &sources,
        ..facts()
    };
    let next = written(decide_with(Some(&rec), "alice", &op, &f));
    assert_eq!(next.record.epoch, 2);
    assert_eq!(next.event.kind, "lead-act");
    assert_eq!(
        trailer(&next, "Swarm-Push"),
        ["HEAD:main abc123", ":refs/tags/old (delete)"]
    );
    assert_eq!(
        next.event.summary,
        "lead p: alice published HEAD:main :refs/tags/old at epoch 2"
    );
}

// ---- leases ---------------------------------------------------------------

#[test]
fn a_lease_is_live_strictly_before_its_end_and_only_with_a_leader() {
    let rec = led("alice", 1, &[], T0);
    assert!(rec.lease_live(at("2026-01-01T11:59:59Z")));
    assert!(!rec.lease_live(now()));
    let unparseable = led("alice", 1, &[], "soon");
    assert!(!unparseable.lease_live(now()));
    assert!(!released(1).lease_live(now()));
    assert!(rec.lease_live(now() - mins(1)));
}

#[test]
fn lease_arithmetic_and_parsing() {
    assert_eq!(until(now(), mins(90)).unwrap(), "2026-01-01T13:30:00Z");
    let e = until(Timestamp::MAX, mins(1)).unwrap_err();
    assert_eq!(e.code, Code::Usage);
    assert!(e.message.starts_with("lease too long: "));
    assert_eq!(parse_duration("1h30m").unwrap(), mins(90));
    assert_eq!(parse_duration(DEFAULT_LEASE).unwrap(), mins(30));
    let e = parse_duration("0s").unwrap_err();
    assert_eq!(e.message, "a lease must be longer than zero");
    assert_eq!(parse_duration("soon").unwrap_err().code, Code::Usage);
    // A takeover's lease is counted from now, not from the old lease's end.
    let rec = led("alice", 2, &["bob"], EXPIRED);
    let next = written(transition(
        Some(&rec),
        "bob",
        &takeover(false),
        now(),
        mins(5),
        &facts(),
    ));
    assert_eq!(
        next.record.lease_until.as_deref(),
        Some("2026-01-01T12:05:00Z")
    );
}
