//! Leadership rules: claim and renew.

use super::*;

// ---- claim ----------------------------------------------------------------

#[test]
fn a_fresh_claim_starts_epoch_1_with_a_lease_from_now() {
    let next = written(decide(None, "alice", &claim(&["alice", "bob"])));
    let rec = &next.record;
    assert_eq!(rec.leader.as_deref(), Some("alice"));
    assert_eq!(rec.epoch, 1);
    assert_eq!(rec.succession, strings(&["alice", "bob"]));
    assert_eq!(rec.lanes, strings(&["api", "web"]));
    assert_eq!(rec.lease_until.as_deref(), Some("2026-01-01T12:30:00Z"));
    assert_eq!(rec.updated_at, T0);
    assert!(!rec.released);
    assert_eq!(rec.schema, SCHEMA);
    assert_eq!(next.change, Change::Claimed);
    assert_eq!(next.event.kind, "lead-claimed");
    assert_eq!(next.event.actor, "alice");
    assert_eq!(next.event.epoch, Some(1));
    assert_eq!(next.event.summary, "lead p: alice claimed epoch 1");
}

#[test]
fn a_claim_after_a_release_takes_the_next_epoch_and_keeps_unknown_fields() {
    let mut rec = released(3);
    rec.extra
        .insert("future".into(), serde_yaml_ng::Value::from("kept"));
    let next = written(decide(Some(&rec), "bob", &claim(&["bob"])));
    assert_eq!(next.record.epoch, 4);
    assert_eq!(next.record.leader.as_deref(), Some("bob"));
    assert!(!next.record.released);
    assert_eq!(next.record.succession, strings(&["bob"]));
    assert_eq!(next.record.extra.get("future"), rec.extra.get("future"));
}

#[test]
fn a_claim_while_someone_else_holds_a_live_lease_is_lead_held() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "bob", &claim(&["bob"])));
    assert_eq!(e.code, Code::LeadHeld);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        format!("plan 'p' is held: alice leads at epoch 2 (lease until {LIVE})")
    );
    assert_eq!(
        e.hints,
        ["ask the leader to hand over, or wait for a release"]
    );
    let detail = e.detail.expect("the record as detail");
    assert_eq!(detail["leader"], "alice");
    assert_eq!(detail["commit"], serde_json::Value::Null);
}

#[test]
fn a_claim_after_the_lease_expired_is_still_held_and_points_to_takeover() {
    let rec = led("alice", 2, &["alice", "bob"], EXPIRED);
    let e = refused(decide(Some(&rec), "bob", &claim(&["bob"])));
    assert_eq!(e.code, Code::LeadHeld);
    assert_eq!(
        e.hints,
        ["the lease has expired: a succession member (alice, bob) can `git swarm lead takeover --plan p --reason …`"]
    );
}

#[test]
fn a_claim_by_the_leader_is_held_and_points_to_renew() {
    let rec = led("alice", 2, &["alice"], LIVE);
    let e = refused(decide(Some(&rec), "alice", &claim(&["alice"])));
    assert_eq!(e.code, Code::LeadHeld);
    assert_eq!(
        e.hints,
        ["you already lead it: extend the lease with `git swarm lead renew --plan p`"]
    );
}

#[test]
fn a_rerun_claim_whose_push_landed_is_already_done() {
    let rec = led("alice", 1, &["alice"], LIVE);
    let mut f = facts();
    f.unseen = Some(("lead-claimed", "alice"));
    assert!(is_already(decide_with(
        Some(&rec),
        "alice",
        &claim(&["alice"]),
        &f
    )));
    // Someone else's unseen claim is no excuse.
    f.unseen = Some(("lead-claimed", "bob"));
    let e = refused(decide_with(Some(&rec), "alice", &claim(&["alice"]), &f));
    assert_eq!(e.code, Code::LeadHeld);
}

// ---- renew ----------------------------------------------------------------

#[test]
fn the_leader_renews_from_now_at_the_same_epoch() {
    let rec = led("alice", 2, &["alice", "bob"], EXPIRED);
    let next = written(decide(Some(&rec), "alice", &renew(None)));
    assert_eq!(next.record.epoch, 2);
    assert_eq!(next.record.lease_until.as_deref(), Some(LIVE));
    assert_eq!(next.record.lanes, strings(&["api"]));
    assert_eq!(next.change, Change::Renewed);
    assert_eq!(next.event.kind, "lead-renewed");
    assert_eq!(next.event.epoch, Some(2));
    assert_eq!(
        next.event.summary,
        format!("lead p: alice renewed until {LIVE}")
    );
    let next = written(decide(Some(&rec), "alice", &renew(Some(&["web"]))));
    assert_eq!(next.record.lanes, strings(&["web"]));
}

#[test]
fn a_renew_by_a_successor_is_not_leader_with_the_takeover_hint() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "bob", &renew(None)));
    assert_eq!(e.code, Code::NotLeader);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        "you do not lead plan 'p': alice leads at epoch 2"
    );
    assert_eq!(
        e.hints,
        ["as a successor you may `git swarm lead takeover --plan p --reason …` once the lease expires"]
    );
}

#[test]
fn a_renew_by_an_outsider_is_not_leader() {
    let rec = led("alice", 2, &["alice", "bob"], LIVE);
    let e = refused(decide(Some(&rec), "carol", &renew(None)));
    assert_eq!(e.code, Code::NotLeader);
    assert_eq!(
        e.hints,
        ["ask the leader to hand over, or to add you to the succession"]
    );
}

#[test]
fn a_renew_of_a_released_or_unclaimed_plan_is_not_leader() {
    let e = refused(decide(Some(&released(3)), "alice", &renew(None)));
    assert_eq!(e.code, Code::NotLeader);
    assert_eq!(
        e.message,
        "you do not lead plan 'p': nobody leads (released at epoch 3)"
    );
    assert_eq!(
        e.hints,
        ["claim it with `git swarm lead claim --plan p --succession <A,B>`"]
    );
    let e = refused(decide(None, "alice", &renew(None)));
    assert_eq!(e.code, Code::NotLeader);
    assert_eq!(
        e.message,
        "nobody has claimed plan 'p' yet, so you do not lead it"
    );
    assert!(e.detail.is_none());
}
