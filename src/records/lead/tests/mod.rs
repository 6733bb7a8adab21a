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

mod claim_renew;
mod fencing;
mod handover_takeover;
mod records;
mod release_leases;
