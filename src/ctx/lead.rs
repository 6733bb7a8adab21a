//! The session's view of leader records: reading one version, the leader
//! this repository knows of, and the configured lease.

use gix::ObjectId;
use jiff::SignedDuration;

use super::Ctx;
use crate::error::Result;
use crate::model::lead::{lead_ref, parse_duration, LeadRecord, DEFAULT_LEASE};
use crate::store::kind::Records;
use crate::store::remote;
use crate::store::{short, Store};

/// The leader record at commit `id` (a version of `refs/swarm/lead/<plan>`).
pub fn read_at(store: &Store, plan: &str, id: ObjectId) -> Result<LeadRecord> {
    let what = format!("{} at {}", lead_ref(plan), short(id));
    Records::<LeadRecord>::new(store)
        .at_named(&plan.to_string(), id, &what)
        .map(|v| v.value)
}

/// The current leader and epoch of a plan as this repository knows it (the
/// newer of the local ref and the remote's mirror), for packets and status.
pub fn known(store: &Store, remote: Option<&str>, plan: &str) -> Result<Option<LeadRecord>> {
    let tip = remote::tip(store, remote, &lead_ref(plan))?;
    tip.base.map(|b| read_at(store, plan, b)).transpose()
}

/// The lease a leader command asks for: its `--lease` flag, else `git
/// config swarm.lease`, else 30 minutes.
pub fn lease_for(ctx: &Ctx, flag: Option<&str>) -> Result<SignedDuration> {
    ctx.lease(flag, "swarm.lease", DEFAULT_LEASE, |text, _| {
        parse_duration(text)
    })
}
