use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

use super::*;
use crate::store::records::RecordKey;

fn t0() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

fn mins(m: i64) -> SignedDuration {
    SignedDuration::from_mins(m)
}

fn task(id: &str, deps: &[&str]) -> TaskRecord {
    let mut t = TaskRecord::new("p", id, "a task", t0());
    t.depends_on = deps.iter().map(|d| d.to_string()).collect();
    t
}

fn all_done(_: &str) -> Option<Status> {
    Some(Status::Done)
}

fn run(t: &TaskRecord, actor: &str, op: &Op, at: Timestamp) -> Result<TaskRecord> {
    match decide(t, actor, op, at, &all_done)? {
        Decision::Write(rec, ev) => {
            assert!(ev.kind.starts_with("task-"));
            Ok(*rec)
        }
        Decision::Already => Ok(t.clone()),
    }
}

fn code(r: Result<TaskRecord>) -> Code {
    r.expect_err("refused").code
}

#[test]
fn the_status_graph() {
    use Status::*;
    let all = [Open, InProgress, Blocked, Done, Cancelled];
    let allowed = [
        (Open, InProgress),
        (Open, Blocked),
        (Open, Cancelled),
        (InProgress, Open),
        (InProgress, Blocked),
        (InProgress, Done),
        (InProgress, Cancelled),
        (Blocked, Open),
        (Blocked, InProgress),
        (Blocked, Cancelled),
    ];
    for from in all {
        for to in all {
            let want = from == to || allowed.contains(&(from, to));
            assert_eq!(transition_allowed(from, to), want, "{from} -> {to}");
        }
    }
    assert!(Done.terminal() && Cancelled.terminal() && !Blocked.terminal());
    assert_eq!(Status::parse("in-progress").unwrap(), InProgress);
    assert_eq!(Status::parse("nope").unwrap_err().code, Code::Usage);
}

#[test]
fn a_claim_is_exclusive_until_its_lease_ends() {
    let t = task("a", &[]);
    let a = run(&t, "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    assert_eq!(a.status, Status::InProgress);
    assert_eq!(a.epoch, 1);
    assert_eq!(
        a.claim.as_ref().unwrap().lease_until,
        "2026-01-01T00:30:00Z"
    );
    // The holder again: nothing to write.
    assert!(matches!(
        decide(&a, "ann", &Op::Claim { lease: mins(30) }, t0(), &all_done).unwrap(),
        Decision::Already
    ));
    assert_eq!(
        code(run(&a, "bob", &Op::Claim { lease: mins(30) }, t0())),
        Code::LeaseHeld
    );
    for op in [
        Op::Renew { lease: mins(5) },
        Op::Release,
        Op::Block { reason: None },
        Op::Cancel,
    ] {
        assert_eq!(
            code(run(&a, "bob", &op, t0())),
            Code::LeaseNotHolder,
            "{}",
            op.name()
        );
    }
    let done = Op::Done {
        work: Work::Unbound,
        unverified: None,
    };
    assert_eq!(code(run(&a, "bob", &done, t0())), Code::LeaseNotHolder);
    // Expired: never taken silently.
    let later = t0() + mins(31);
    assert_eq!(
        code(run(&a, "bob", &Op::Claim { lease: mins(30) }, later)),
        Code::LeaseExpired
    );
    assert_eq!(
        code(run(&a, "ann", &Op::Renew { lease: mins(30) }, later)),
        Code::LeaseExpired
    );
    // The holder may take back their own expired claim (a new epoch).
    let again = run(&a, "ann", &Op::Claim { lease: mins(30) }, later).unwrap();
    assert_eq!(again.epoch, 2);
}

#[test]
fn renew_release_and_done_by_the_holder() {
    let a = run(&task("a", &[]), "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    let r = run(&a, "ann", &Op::Renew { lease: mins(60) }, t0() + mins(10)).unwrap();
    assert_eq!(
        r.claim.as_ref().unwrap().lease_until,
        "2026-01-01T01:10:00Z"
    );
    assert_eq!(r.epoch, 1, "a renewal is not a new claim");
    let rel = run(&r, "ann", &Op::Release, t0()).unwrap();
    assert_eq!((rel.status, rel.claim.is_none()), (Status::Open, true));
    let done = run(
        &r,
        "ann",
        &Op::Done {
            work: Work::Unbound,
            unverified: None,
        },
        t0(),
    )
    .unwrap();
    assert_eq!((done.status, done.claim.is_none()), (Status::Done, true));
    // Terminal.
    assert_eq!(
        code(run(&done, "ann", &Op::Claim { lease: mins(1) }, t0())),
        Code::TaskInvalidTransition
    );
    assert_eq!(
        code(run(&done, "ann", &Op::Cancel, t0())),
        Code::TaskInvalidTransition
    );
    assert_eq!(
        code(run(&done, "ann", &Op::Block { reason: None }, t0())),
        Code::TaskInvalidTransition
    );
    // Done again: a no-op.
    let again = Op::Done {
        work: Work::Unbound,
        unverified: None,
    };
    assert!(matches!(
        decide(&done, "ann", &again, t0(), &all_done).unwrap(),
        Decision::Already
    ));
}

#[test]
fn done_is_never_trusted() {
    let a = run(&task("a", &[]), "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    let not = Work::NotMerged {
        why: "feat/a is not in main".into(),
    };
    let op = Op::Done {
        work: not.clone(),
        unverified: None,
    };
    assert_eq!(code(run(&a, "ann", &op, t0())), Code::TaskNotMerged);
    let op = Op::Done {
        work: not,
        unverified: Some("merged by hand".into()),
    };
    let d = run(&a, "ann", &op, t0()).unwrap();
    assert!(d.done_unverified);
    assert_eq!(d.status_label(), "done (unverified)");
    let op = Op::Done {
        work: Work::Merged { how: "verdict" },
        unverified: None,
    };
    let d = run(&a, "ann", &op, t0()).unwrap();
    assert!(!d.done_unverified && d.status == Status::Done);
    // Open → done is not a transition.
    let open = task("b", &[]);
    let op = Op::Done {
        work: Work::Unbound,
        unverified: None,
    };
    assert_eq!(
        code(run(&open, "ann", &op, t0())),
        Code::TaskInvalidTransition
    );
}

#[test]
fn dependencies_gate_claim_and_done() {
    let t = task("b", &["a"]);
    let open = |_: &str| Some(Status::Open);
    let err = decide(&t, "ann", &Op::Claim { lease: mins(5) }, t0(), &open).unwrap_err();
    assert_eq!(err.code, Code::TaskDependencyNotReady);
    assert!(err.message.contains("a (open)"), "{}", err.message);
    assert!(t.ready(t0(), |_| true) && !t.ready(t0(), |_| false));
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), vec![]);
    g.insert("b".to_string(), vec!["a".to_string()]);
    check_graph("b", &g).unwrap();
    g.insert("c".to_string(), vec!["zz".to_string()]);
    assert_eq!(
        check_graph("c", &g).unwrap_err().code,
        Code::TaskUnknownDependency
    );
    g.insert("c".to_string(), vec!["b".to_string()]);
    g.insert("a".to_string(), vec!["c".to_string()]);
    let err = check_graph("a", &g).unwrap_err();
    assert_eq!(err.code, Code::TaskDependencyCycle);
    assert!(err.message.contains("a → c → b → a"), "{}", err.message);
    g.insert("a".to_string(), vec!["a".to_string()]);
    assert_eq!(
        check_graph("a", &g).unwrap_err().code,
        Code::TaskDependencyCycle
    );
}

#[test]
fn the_live_holder_hands_its_claim_over_by_recover_and_nobody_else_may() {
    let a = run(&task("a", &[]), "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    let rec = Op::Recover {
        owner: "bob".into(),
        reason: "ann's agent was lost".into(),
        lease: mins(2),
    };
    // Someone else waits for the lease to end.
    assert_eq!(
        code(run(&a, "cy", &rec, t0() + mins(1))),
        Code::LeaseNotExpired
    );
    let r = run(&a, "ann", &rec, t0() + mins(1)).unwrap();
    assert_eq!(r.previous_owner.as_deref(), Some("ann"));
    assert_eq!(r.claim.as_ref().unwrap().holder, "bob");
    assert_eq!(r.epoch, 2);
}

#[test]
fn recover_needs_an_expired_claim_and_records_the_previous_owner() {
    let a = run(&task("a", &[]), "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    let rec = Op::Recover {
        owner: "bob".into(),
        reason: "ann is gone".into(),
        lease: mins(30),
    };
    assert_eq!(
        code(run(&a, "bob", &rec, t0() + mins(29))),
        Code::LeaseNotExpired
    );
    let later = t0() + mins(31);
    let r = run(&a, "bob", &rec, later).unwrap();
    assert_eq!(r.previous_owner.as_deref(), Some("ann"));
    assert_eq!(
        r.previous_lease_until.as_deref(),
        Some("2026-01-01T00:30:00Z")
    );
    assert_eq!(r.recovery_reason.as_deref(), Some("ann is gone"));
    assert_eq!(
        (r.claim.as_ref().unwrap().holder.as_str(), r.epoch),
        ("bob", 2)
    );
    // Re-running the same recovery converges.
    assert!(matches!(
        decide(&r, "bob", &rec, later, &all_done).unwrap(),
        Decision::Already
    ));
    // Nothing to recover on an unclaimed task.
    assert_eq!(
        code(run(&task("b", &[]), "bob", &rec, later)),
        Code::TaskInvalidTransition
    );
}

#[test]
fn block_and_cancel() {
    let t = task("a", &[]);
    let b = run(
        &t,
        "ann",
        &Op::Block {
            reason: Some("waiting".into()),
        },
        t0(),
    )
    .unwrap();
    assert_eq!(
        (b.status, b.blocked_reason.as_deref()),
        (Status::Blocked, Some("waiting"))
    );
    let c = run(&b, "ann", &Op::Claim { lease: mins(5) }, t0()).unwrap();
    assert_eq!(
        (c.status, c.blocked_reason.is_none()),
        (Status::InProgress, true)
    );
    let x = run(&t, "bob", &Op::Cancel, t0()).unwrap();
    assert_eq!(x.status, Status::Cancelled);
    assert_eq!(
        code(run(&x, "bob", &Op::Claim { lease: mins(5) }, t0())),
        Code::TaskInvalidTransition
    );
}

#[test]
fn leases_and_records() {
    assert_eq!(parse_lease("30m", "--lease").unwrap(), mins(30));
    assert_eq!(
        parse_lease("0s", "--lease").unwrap_err().code,
        Code::LeaseInvalidDuration
    );
    assert_eq!(
        parse_lease("soon", "--lease").unwrap_err().code,
        Code::LeaseInvalidDuration
    );
    let key = TaskKey::from_path("p/a").unwrap();
    assert_eq!(key.to_path(), "p/a");
    assert!(TaskKey::from_path("p").is_none() && TaskKey::from_path("p/a/b").is_none());
    let mut t = task("a", &[]);
    t.extra
        .insert("future".into(), serde_yaml_ng::Value::from(7));
    let files = t.to_files().unwrap();
    let back = TaskRecord::from_files(&files, &key, "t").unwrap();
    assert_eq!(back, t, "unknown fields survive a rewrite");
    let other = TaskKey::from_path("q/a").unwrap();
    assert_eq!(
        TaskRecord::from_files(&files, &other, "t")
            .unwrap_err()
            .code,
        Code::RecordInvalid
    );
    let closed = |ns: &str, p: &str| ns == "plans" && p == "p";
    assert!(!t.is_finished(&key, &closed));
    t.status = Status::Done;
    assert!(t.is_finished(&key, &closed));
    assert!(!t.is_finished(&key, &|_: &str, _: &str| false));
}

#[test]
fn a_handover_moves_the_claim_and_raises_its_counter() {
    let t = task("t", &[]);
    let claimed = run(&t, "ann", &Op::Claim { lease: mins(30) }, t0()).unwrap();
    let at = t0() + mins(10);
    let HandOver::Move(rec, ev) = hand_over(&claimed, "ann", "bob", "pk1", mins(30), at).unwrap()
    else {
        panic!("the claim moves")
    };
    assert_eq!(ev.kind, "task-handed-over");
    let c = rec.claim.as_ref().unwrap();
    assert_eq!((c.holder.as_str(), c.epoch, rec.epoch), ("bob", 2, 2));
    assert_eq!(rec.previous_owner.as_deref(), Some("ann"));
    assert!(matches!(
        hand_over(&rec, "ann", "bob", "pk1", mins(30), at).unwrap(),
        HandOver::Already
    ));
    // Recovered by someone else after it expired: it cannot move.
    let late = t0() + mins(40);
    let recovered = run(
        &claimed,
        "cy",
        &Op::Recover {
            owner: "cy".into(),
            reason: "gone".into(),
            lease: mins(30),
        },
        late,
    )
    .unwrap();
    let HandOver::Lost(why) = hand_over(&recovered, "ann", "bob", "pk1", mins(30), late).unwrap()
    else {
        panic!("not movable")
    };
    assert!(why.contains("claimed by cy"), "{why}");
}
