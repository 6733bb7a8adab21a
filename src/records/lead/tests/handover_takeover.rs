//! Leadership rules: handover and takeover.

use super::*;

// ---- handover -------------------------------------------------------------

#[test]
fn a_handover_to_a_successor_moves_the_epoch_and_the_lease() {
    let rec = led("alice", 2, &["alice", "bob"], EXPIRED);
    let next = written(decide(Some(&rec), "alice", &handover("bob", false)));
    assert_eq!(next.record.leader.as_deref(), Some("bob"));
    assert_eq!(next.record.epoch, 3);
    assert_eq!(next.record.succession, strings(&["alice", "bob"]));
    assert_eq!(next.record.lease_until.as_deref(), Some(LIVE));
    assert_eq!(next.change, Change::HandedOver { to: "bob".into() });
    assert_eq!(next.event.kind, "lead-handover");
    assert_eq!(next.event.actor, "alice");
    assert_eq!(next.event.epoch, Some(3));
    assert_eq!(trailer(&next, "Swarm-Leader"), ["bob"]);
    assert_eq!(
        next.event.summary,
        "lead p: alice handed over to bob at epoch 3"
    );
}

#[test]
fn a_handover_outside_the_succession_needs_force_and_then_adds_the_address() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "alice", &handover("carol", false)));
    assert_eq!(e.code, Code::SuccessorUnknown);
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.message,
        "'carol' is not in the succession of plan 'p' (alice, bob); a mistyped address would take the leadership away"
    );
    assert_eq!(
        e.hints,
        ["hand over to someone listed, or add 'carol' on purpose with --force"]
    );
    let next = written(decide(Some(&rec), "alice", &handover("carol", true)));
    assert_eq!(next.record.leader.as_deref(), Some("carol"));
    assert_eq!(next.record.succession, strings(&["alice", "bob", "carol"]));
}

#[test]
fn a_handover_to_oneself_or_by_a_non_leader_is_refused() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "alice", &handover("alice", false)));
    assert_eq!(e.code, Code::Usage);
    assert_eq!(e.message, "you already lead plan 'p': nothing to hand over");
    let e = refused(decide(Some(&rec), "bob", &handover("bob", false)));
    assert_eq!(e.code, Code::NotLeader);
}

#[test]
fn a_rerun_handover_whose_push_landed_is_already_done() {
    let rec = led("bob", 3, &["alice", "bob"], LIVE);
    let mut f = facts();
    f.unseen = Some(("lead-handover", "alice"));
    let op = handover("bob", false);
    assert!(is_already(decide_with(Some(&rec), "alice", &op, &f)));
    // Without the unseen entry, alice is simply no longer the leader.
    let e = refused(decide(Some(&rec), "alice", &op));
    assert_eq!(e.code, Code::NotLeader);
}

// ---- takeover -------------------------------------------------------------

#[test]
fn a_takeover_after_the_lease_expired_moves_the_epoch() {
    let rec = led("alice", 2, &["alice", "bob"], EXPIRED);
    let next = written(decide(Some(&rec), "bob", &takeover(false)));
    assert_eq!(next.record.leader.as_deref(), Some("bob"));
    assert_eq!(next.record.epoch, 3);
    assert_eq!(next.record.lease_until.as_deref(), Some(LIVE));
    assert_eq!(
        next.change,
        Change::TookOver {
            previous: "alice".into(),
            forced: false
        }
    );
    assert_eq!(next.event.kind, "lead-takeover");
    assert_eq!(
        next.event.summary,
        "lead p: bob took over from alice at epoch 3 (lease expired: alice is gone)"
    );
    assert_eq!(trailer(&next, "Swarm-Previous-Leader"), ["alice"]);
    assert_eq!(trailer(&next, "Swarm-Reason"), ["alice is gone"]);
    assert!(trailer(&next, "Swarm-Forced").is_empty());
}

#[test]
fn a_takeover_with_a_live_lease_is_refused_unless_forced() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "bob", &takeover(false)));
    assert_eq!(e.code, Code::LeaseLive);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        format!("plan 'p': alice leads at epoch 2 and the lease runs until {LIVE}")
    );
    assert_eq!(
        e.hints,
        ["wait for the lease to expire, or, if the leader is really gone, pass --force with a --reason"]
    );
    assert!(e.detail.is_some());
    let next = written(decide(Some(&rec), "bob", &takeover(true)));
    assert_eq!(next.record.epoch, 3);
    assert_eq!(
        next.change,
        Change::TookOver {
            previous: "alice".into(),
            forced: true
        }
    );
    assert_eq!(trailer(&next, "Swarm-Forced"), ["true"]);
    assert!(next.event.summary.contains("(forced: alice is gone)"));
}

#[test]
fn a_takeover_of_ones_own_live_lease_points_to_renew() {
    let rec = led("bob", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "bob", &takeover(false)));
    assert_eq!(e.code, Code::LeaseLive);
    assert_eq!(
        e.message,
        format!("you already lead plan 'p' at epoch 2, with a lease until {LIVE}")
    );
    assert_eq!(
        e.hints,
        ["extend it with `git swarm lead renew --plan p`; a takeover is for a leader who is gone"]
    );
}

#[test]
fn only_a_succession_member_takes_over_even_with_force() {
    let rec = led("alice", 2, &["alice", "bob"], EXPIRED);
    let e = refused(decide(Some(&rec), "carol", &takeover(true)));
    assert_eq!(e.code, Code::NotInSuccession);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        "you are not in the succession of plan 'p' (alice, bob): alice leads at epoch 2"
    );
    let mut empty = rec.clone();
    empty.succession.clear();
    let e = refused(decide(Some(&empty), "alice", &takeover(true)));
    assert_eq!(
        e.message,
        "you are not in the succession of plan 'p' (empty): alice leads at epoch 2"
    );
}

#[test]
fn a_takeover_of_a_released_plan_takes_over_from_nobody() {
    let next = written(decide(Some(&released(3)), "bob", &takeover(false)));
    assert_eq!(next.record.epoch, 4);
    assert!(!next.record.released);
    assert_eq!(
        next.change,
        Change::TookOver {
            previous: "nobody".into(),
            forced: false
        }
    );
}

#[test]
fn a_takeover_without_a_record_is_not_found() {
    let e = refused(decide(None, "bob", &takeover(true)));
    assert_eq!(e.code, Code::NotFound);
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn a_rerun_takeover_whose_push_landed_is_already_done() {
    let rec = led("bob", 3, &["alice", "bob"], LIVE);
    let mut f = facts();
    f.unseen = Some(("lead-takeover", "bob"));
    assert!(is_already(decide_with(
        Some(&rec),
        "bob",
        &takeover(false),
        &f
    )));
}
