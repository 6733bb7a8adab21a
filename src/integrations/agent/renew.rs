//! The post-tool-use hook: an agent at work keeps its claim and its
//! reservations alive. Once any of them is due (past half its lease, the
//! configured one: `swarm.taskLease`, `swarm.reservationLease`; past three
//! quarters under `swarm.pushBudget`, [`Ctx::renewal_due`]), all of them
//! are renewed in one push (`git swarm renew`), so at most once per half
//! lease; otherwise nothing is written and nothing is fetched.

use crate::error::Result;
use crate::records::task::Status;
use crate::session::Ctx;

use super::context::claimed;

/// What was renewed: task ids (`plan/id`) and reservation ids.
#[derive(Debug, Default)]
pub struct Renewed {
    pub tasks: Vec<String>,
    pub reservations: Vec<String>,
}

pub fn post_tool_use(ctx: &Ctx) -> Result<Renewed> {
    let Some(me) = ctx.actor_opt()? else {
        return Ok(Renewed::default());
    };
    let now = ctx.store.clock.now();
    let task_lease = ctx.lease(None, &crate::records::task::LEASE)?;
    let due = |until: &str, lease| ctx.renewal_due(until, now, lease);
    let task_due = claimed(ctx, &me, None)?.iter().any(|t| {
        t.status == Status::InProgress
            && t.claim
                .as_ref()
                .is_some_and(|c| due(&c.lease_until, task_lease))
    });
    let res_lease = ctx.lease(None, &crate::records::reservation::LEASE)?;
    let res_due = super::live_reservations(ctx)?
        .iter()
        .any(|e| e.holder == me && due(&e.lease_until, res_lease));
    if !task_due && !res_due {
        return Ok(Renewed::default());
    }
    let done = crate::ops::renew::renew(ctx, false)?;
    Ok(Renewed {
        tasks: done.tasks,
        reservations: done.reservations,
    })
}
