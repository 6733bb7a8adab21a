//! The post-tool-use hook: an agent at work keeps its claim and its
//! reservations alive with `git swarm renew --due` (the rule is
//! `ops::renew`'s): once any of them is past half its lease (the
//! configured one: `swarm.taskLease`, `swarm.reservationLease`), all of
//! them are renewed in one push, so at most once per half lease; under
//! `swarm.pushBudget` the claims are renewed in the clone and queued, and
//! only a holding with a quarter of its lease left pushes alone.
//! Otherwise nothing is written and nothing is fetched.

use crate::error::Result;
use crate::session::Ctx;

/// What was renewed: task ids (`plan/id`) and reservation ids.
#[derive(Debug, Default)]
pub struct Renewed {
    pub tasks: Vec<String>,
    pub reservations: Vec<String>,
}

pub fn post_tool_use(ctx: &Ctx) -> Result<Renewed> {
    if ctx.actor_opt()?.is_none() {
        return Ok(Renewed::default());
    }
    let done = crate::ops::renew::renew(ctx, true)?;
    Ok(Renewed {
        tasks: done.tasks,
        reservations: done.reservations,
    })
}
