//! `git swarm whoami`: who this clone acts as here and why, the lane and
//! plan of this worktree, the plan's leader as this clone knows it (local
//! records and the last fetched mirror: no network), the key that signs
//! the records, and the remotes.

use serde::Serialize;

use crate::error::Result;
use crate::session::Ctx;

/// What `whoami` shows.
#[derive(Debug, Clone, Serialize)]
pub struct WhoAmI {
    /// The address commands act as (None: none is known).
    pub address: Option<String>,
    /// Where it came from: `--as`, `GIT_SWARM_AS`, `lane owner`, `swarm.as`.
    pub source: Option<String>,
    /// The lane whose worktree this is.
    pub lane: Option<String>,
    /// The lane's plan, else `--plan`.
    pub plan: Option<String>,
    /// The plan's leader (its nearest parent's for a child plan without one).
    pub leader: Option<String>,
    pub epoch: Option<u64>,
    pub is_leader: bool,
    /// The key that signs the address's records (`ssh`, `openpgp`, `x509`
    /// and the key as configured); None: unsigned.
    pub signing_format: Option<String>,
    pub signing_key: Option<String>,
    /// `swarm.trust`: off, warn or require.
    pub trust: String,
    pub remote: Option<String>,
    pub code_remote: Option<String>,
    /// `--offline` was given.
    pub offline: bool,
}

pub fn whoami(ctx: &Ctx, plan: Option<&str>) -> Result<WhoAmI> {
    if let Some(p) = plan {
        crate::names::validate_name("plan", p)?;
    }
    let found = ctx.actor_source()?;
    let lane = ctx.lane_here();
    let plan = lane
        .as_ref()
        .map(|l| l.record.plan.clone())
        .or_else(|| plan.map(str::to_string));
    let lead = match &plan {
        Some(p) => crate::ops::lead::nearest(&ctx.store, ctx.settings.remote.as_deref(), p)?,
        None => None,
    };
    let leader = lead.as_ref().and_then(|r| r.leader.clone());
    let address = found.as_ref().map(|(a, _)| a.clone());
    let key = match &address {
        Some(a) => ctx.store.signing_key_shown(a)?,
        None => None,
    };
    let trust = match ctx.store.trust.policy() {
        crate::store::trust::Policy::Off => "off",
        crate::store::trust::Policy::Warn => "warn",
        crate::store::trust::Policy::Require => "require",
    };
    Ok(WhoAmI {
        is_leader: leader.is_some() && leader == address,
        address,
        source: found.map(|(_, s)| s.to_string()),
        lane: lane.map(|l| l.feature),
        plan,
        epoch: lead.as_ref().filter(|_| leader.is_some()).map(|r| r.epoch),
        leader,
        signing_format: key.as_ref().map(|(f, _)| f.to_string()),
        signing_key: key.map(|(_, k)| k),
        trust: trust.to_string(),
        remote: ctx.settings.remote.clone(),
        code_remote: ctx.settings.code_remote.clone(),
        offline: ctx.offline(),
    })
}
