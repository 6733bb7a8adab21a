//! The post-tool-use hook: an agent at work keeps its claim and its
//! reservations alive. Each is renewed (for the configured lease:
//! `swarm.taskLease`, `swarm.reservationLease`) once less than half of that
//! lease is left, so at most once per half lease; otherwise nothing is
//! written and nothing is fetched.

use jiff::{SignedDuration, Timestamp};

use crate::ctx::Ctx;
use crate::error::Result;
use crate::model::task::Status;

use super::context::claimed;
use super::Swarm;

/// What was renewed: task ids and reservation ids.
#[derive(Debug, Default)]
pub struct Renewed {
    pub tasks: Vec<String>,
    pub reservations: Vec<String>,
}

fn due(until: &str, now: Timestamp, lease: SignedDuration) -> bool {
    match until.parse::<Timestamp>() {
        Ok(u) => u.duration_since(now) < lease / 2 && u > now,
        Err(_) => false,
    }
}

pub fn post_tool_use(ctx: &Ctx, ops: &dyn Swarm) -> Result<Renewed> {
    let mut done = Renewed::default();
    let Some(me) = ctx.actor_opt()? else {
        return Ok(done);
    };
    let now = ctx.store.clock.now();
    let task_lease = crate::ctx::task::lease_for(ctx, None)?;
    for t in claimed(ctx, &me, None)? {
        if t.status != Status::InProgress {
            continue;
        }
        let Some(c) = &t.claim else { continue };
        if due(&c.lease_until, now, task_lease) {
            ops.renew_task(ctx, &t.plan, &t.id)?;
            done.tasks.push(t.id.clone());
        }
    }
    let res_lease = ctx.lease(
        None,
        "swarm.reservationLease",
        crate::model::reservation::DEFAULT_LEASE,
        |text, _| crate::clock::parse_duration(text),
    )?;
    for e in super::live_reservations(ctx)?
        .iter()
        .filter(|e| e.holder == me)
    {
        if due(&e.lease_until, now, res_lease) {
            ops.renew_reservation(ctx, e)?;
            done.reservations.push(e.id.clone());
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_is_due_past_half_the_lease() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let lease = SignedDuration::from_mins(30);
        assert!(!due("2026-01-01T00:20:00Z", now, lease));
        assert!(due("2026-01-01T00:14:00Z", now, lease));
        assert!(
            !due("2025-12-31T23:59:00Z", now, lease),
            "expired: not ours to renew"
        );
        assert!(!due("garbage", now, lease));
    }
}
