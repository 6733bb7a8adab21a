//! Agents in their hosts (Claude Code, Codex, Gemini CLI): the guide they
//! read, the hooks the hosts call, and installing both. The hosts'
//! contracts are in [`crate::records::agent`].
//!
//! - `guide`: the protocol text, the skill, the `AGENTS.md` block;
//! - `hook`: one event in, one answer out (pre-tool-use, user-prompt-submit);
//!   `inbox`: the messages the hooks show by themselves;
//! - `capacity`: the capacity check at a task boundary, spend from the
//!   transcript, the budget note;
//! - `context`: session-start; `stop`: unfinished work and idle mode;
//!   `renew`: post-tool-use (`git swarm renew` once anything is due);
//! - `install`: the hosts' settings files, merged; `backup`: restored;
//! - `state`: what the hooks remember between calls; `json`: settings
//!   files read and written in their own key order.

pub mod backup;
pub mod capacity;
pub mod context;
pub mod guide;
pub mod hook;
pub mod inbox;
pub mod install;
pub mod json;
pub mod keygen;
pub mod renew;
pub mod state;
pub mod stop;

use crate::error::Result;
use crate::guards::reserved::Held;
use crate::session::Ctx;

/// The live entries of the reservation ledger this clone knows (local or
/// last fetched: the one read of the listings); empty when the guard is off.
pub fn live_reservations(ctx: &Ctx) -> Result<Vec<Held>> {
    let Some(l) = crate::guards::reserved::load(ctx)? else {
        return Ok(Vec::new());
    };
    let now = ctx.store.clock.now();
    Ok(l.ledger
        .entries
        .into_iter()
        .filter(|e| !e.released && crate::records::reservation::lease_running(&e.lease_until, now))
        .collect())
}
