//! The leadership rule without a repository: every case of SPEC §3 "lead"
//! and §6 (fenced publish) that [`transition`] decides.

use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::error::{Code, Error};

const T0: &str = "2026-01-01T12:00:00Z";

fn at(s: &str) -> Timestamp {
    s.parse().expect("a timestamp")
}

fn now() -> Timestamp {
    at(T0)
}

fn mins(m: i64) -> SignedDuration {
    SignedDuration::from_mins(m)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A record led by `leader` at `epoch` with a lease until `until`.
fn led(leader: &str, epoch: u64, succession: &[&str], until: &str) -> LeadRecord {
    LeadRecord {
        leader: Some(leader.into()),
        epoch,
        succession: strings(succession),
        lanes: strings(&["api"]),
        lease_until: Some(until.into()),
        updated_at: "2026-01-01T11:00:00Z".into(),
        ..LeadRecord::new("p")
    }
}

/// A live lease (ends after T0) and an expired one (ends before).
const LIVE: &str = "2026-01-01T12:30:00Z";
const EXPIRED: &str = "2026-01-01T11:59:59Z";

fn released(epoch: u64) -> LeadRecord {
    LeadRecord {
        leader: None,
        released: true,
        lease_until: None,
        ..led("alice", epoch, &["alice", "bob"], LIVE)
    }
}

fn facts() -> Facts<'static> {
    Facts {
        plan: "p",
        ..Facts::default()
    }
}

fn claim(succession: &[&str]) -> Op {
    Op::Claim {
        succession: strings(succession),
        lanes: strings(&["api", "web"]),
        lease: None,
    }
}

fn renew(lanes: Option<&[&str]>) -> Op {
    Op::Renew {
        lease: None,
        lanes: lanes.map(strings),
    }
}

fn handover(to: &str, force: bool) -> Op {
    Op::Handover {
        to: to.into(),
        lease: None,
        force,
    }
}

fn takeover(force: bool) -> Op {
    Op::Takeover {
        reason: "alice is\n  gone".into(),
        force,
        lease: None,
    }
}

/// Decide with the default facts and a 30-minute lease.
fn decide(record: Option<&LeadRecord>, actor: &str, op: &Op) -> Result<Transition> {
    decide_with(record, actor, op, &facts())
}

fn decide_with(
    record: Option<&LeadRecord>,
    actor: &str,
    op: &Op,
    facts: &Facts,
) -> Result<Transition> {
    transition(record, actor, op, now(), mins(30), facts)
}

fn written(t: Result<Transition>) -> Next {
    match t {
        Ok(Transition::Write(next)) => *next,
        Ok(Transition::Already) => panic!("expected a write, got Already"),
        Err(e) => panic!("expected a write, got {e}"),
    }
}

fn refused(t: Result<Transition>) -> Error {
    match t {
        Err(e) => e,
        Ok(_) => panic!("expected a refusal"),
    }
}

fn is_already(t: Result<Transition>) -> bool {
    matches!(t, Ok(Transition::Already))
}

fn trailer<'a>(next: &'a Next, key: &str) -> Vec<&'a str> {
    next.event
        .trailers
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

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

// ---- fencing: stale epochs and ties ------------------------------------------

#[test]
fn a_leader_whose_epoch_moved_on_is_fenced_from_every_leader_only_command() {
    let rec = led("bob", 3, &["alice", "bob"], LIVE);
    let mut f = facts();
    f.last_led = Some(2);
    let ops = [
        renew(None),
        handover("bob", false),
        Op::Release,
        Op::Push {
            refspecs: strings(&["HEAD:main"]),
        },
        Op::Succession {
            succession: strings(&["alice"]),
        },
    ];
    for op in &ops {
        assert!(op.needs_history(Some(&rec), "alice"));
        let e = refused(decide_with(Some(&rec), "alice", op, &f));
        assert_eq!(e.code, Code::LeadFenced, "{op:?}");
        assert_eq!(e.exit_code(), 3);
        assert_eq!(
            e.message,
            "you led plan 'p' at epoch 2, which is no longer current: bob leads at epoch 3"
        );
        assert_eq!(
            e.hints,
            [
                "stand down: merges, tags and publishes belong to the current leader",
                "see the record with `git swarm lead status --plan p`"
            ]
        );
    }
}

#[test]
fn a_fenced_leader_stays_fenced_after_the_plan_is_released() {
    let mut f = facts();
    f.last_led = Some(2);
    let e = refused(decide_with(Some(&released(3)), "alice", &renew(None), &f));
    assert_eq!(e.code, Code::LeadFenced);
    assert!(e.message.ends_with("nobody leads (released at epoch 3)"));
}

#[test]
fn an_epoch_tie_is_not_fencing() {
    // The record names someone else at the very epoch the actor last led
    // (only a release keeps the epoch): not fenced, just not the leader.
    let mut f = facts();
    f.last_led = Some(3);
    let e = refused(decide_with(Some(&released(3)), "alice", &renew(None), &f));
    assert_eq!(e.code, Code::NotLeader);
}

#[test]
fn the_current_leader_needs_no_history() {
    let rec = led("alice", 2, &["alice"], LIVE);
    assert!(!renew(None).needs_history(Some(&rec), "alice"));
    assert!(!renew(None).needs_history(None, "alice"));
    assert!(!claim(&["bob"]).needs_history(Some(&rec), "bob"));
    assert!(!takeover(false).needs_history(Some(&rec), "bob"));
}

#[test]
fn the_last_epoch_led_walks_back_to_the_actor_and_stops_there() {
    let history = vec![
        led("carol", 4, &[], LIVE),
        led("bob", 3, &[], LIVE),
        led("alice", 2, &[], LIVE),
    ];
    // Older versions are never read once the answer is known.
    let stream = history
        .into_iter()
        .map(Ok)
        .chain(std::iter::once_with(|| panic!("read too far")));
    assert_eq!(last_epoch_led(stream, "alice").unwrap(), Some(2));
    let history = vec![Ok(led("bob", 3, &[], LIVE)), Ok(led("bob", 2, &[], LIVE))];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), None);
}

#[test]
fn a_leader_who_released_is_not_fenced_by_later_epochs() {
    let mut own_release = released(2);
    own_release.leader = None;
    let history = vec![
        Ok(led("bob", 3, &[], LIVE)),
        Ok(own_release),
        Ok(led("alice", 2, &[], LIVE)),
    ];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), None);
    // A release at another epoch than the actor's is not theirs.
    let history = vec![Ok(released(5)), Ok(led("alice", 4, &[], LIVE))];
    assert_eq!(last_epoch_led(history, "alice").unwrap(), Some(4));
}

#[test]
fn an_unreadable_version_in_the_history_is_an_error() {
    let history = vec![
        Ok(led("bob", 3, &[], LIVE)),
        Err(Error::new(Code::YamlInvalid, "broken")),
    ];
    let e = last_epoch_led(history, "alice").unwrap_err();
    assert_eq!(e.code, Code::YamlInvalid);
}

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

// ---- arguments, errors, record -------------------------------------------------

#[test]
fn arguments_are_checked_before_anything_is_read() {
    let e = validate(&Op::Succession { succession: vec![] }).unwrap_err();
    assert_eq!(e.message, "a succession names at least one address");
    let e = validate(&Op::Succession {
        succession: strings(&["bob", "bob"]),
    })
    .unwrap_err();
    assert_eq!(e.message, "'bob' appears twice in the succession");
    let e = validate(&Op::Takeover {
        reason: "  ".into(),
        force: false,
        lease: None,
    })
    .unwrap_err();
    assert_eq!(e.message, "a takeover needs a --reason");
    assert_eq!(
        validate(&claim(&["no spaces"])).unwrap_err().code,
        Code::NameInvalid
    );
    assert_eq!(
        validate(&handover("x/y", false)).unwrap_err().code,
        Code::NameInvalid
    );
    validate(&claim(&["alice", "bob"])).unwrap();
    validate(&Op::Release).unwrap();
}

#[test]
fn lead_push_publishes_code_refs_only() {
    for bad in ["", "HEAD:refs/swarm/plans/p", "refs/swarm/lead/p"] {
        let e = check_push_target("p", bad).unwrap_err();
        assert_eq!(e.code, Code::Usage, "{bad}");
    }
    check_push_target("p", "HEAD:main").unwrap();
    assert_eq!(refspec_source("+HEAD:main"), "HEAD");
    assert_eq!(refspec_source(":refs/tags/v1"), "");
    assert_eq!(refspec_source("main"), "main");
}

#[test]
fn the_lost_race_names_the_winner() {
    let w = led("bob", 3, &[], LIVE);
    let id = gix::ObjectId::empty_tree(gix::hash::Kind::Sha1);
    let e = race_lost("p", Verb::Takeover, Some((&w, id)), true);
    assert_eq!(e.code, Code::LeadRaceLost);
    assert_eq!(e.exit_code(), 3);
    assert_eq!(
        e.message,
        "lost the race to takeover plan 'p': bob leads at epoch 3 (the remote accepted their update first)"
    );
    assert_eq!(e.detail.unwrap()["commit"], id.to_string());
    let e = race_lost("p", Verb::Claim, None, false);
    assert_eq!(
        e.message,
        "lost the race to claim plan 'p': the record changed"
    );
    let e = push_rejected("p", &strings(&["! refs/heads/main rejected"]));
    assert_eq!(
        e.message,
        "the remote refused the push for plan 'p'; nothing moved:\n  ! refs/heads/main rejected"
    );
}

#[test]
fn a_succession_without_the_leader_is_worth_a_warning() {
    let list = strings(&["bob"]);
    assert!(succession_omits(Verb::Claim, &list, "alice"));
    assert!(succession_omits(Verb::Succession, &list, "alice"));
    assert!(!succession_omits(Verb::Claim, &list, "bob"));
    assert!(!succession_omits(Verb::Handover, &list, "alice"));
}

#[test]
fn the_record_round_trips_byte_for_byte() {
    let mut rec = led("alice", 2, &["alice", "bob"], LIVE);
    rec.extra
        .insert("future".into(), serde_yaml_ng::Value::from(7));
    let files = rec.to_files().unwrap();
    let yaml = String::from_utf8(files[RECORD_FILE].clone()).unwrap();
    assert_eq!(
        yaml,
        "schema: swarm-lead/v1\nplan: p\nleader: alice\nepoch: 2\nsuccession:\n- alice\n- bob\nlanes:\n- api\nlease_until: 2026-01-01T12:30:00Z\nupdated_at: 2026-01-01T11:00:00Z\nreleased: false\nfuture: 7\n"
    );
    let back = LeadRecord::from_files(&files, &"p".to_string(), "x").unwrap();
    assert_eq!(back, rec);
    let e =
        LeadRecord::from_files(&Files::new(), &"p".to_string(), "refs/swarm/lead/p").unwrap_err();
    assert_eq!(e.message, "refs/swarm/lead/p has no lead.yaml");
    assert!(rec.is_finished(&"p".to_string(), &|_, _| true) == rec.released);
}
