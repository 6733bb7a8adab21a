//! The read-only leader commands: `lead status`, `lead log`, `lead check`.

use std::collections::BTreeMap;

use gix::ObjectId;
use jiff::Timestamp;
use serde::Serialize;

use super::require_plan;
use crate::error::{Error, Result};
use crate::names;
use crate::records::lead::{lead_ref, read_at, LeadRecord};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::remote;
use crate::store::remote::MirrorView;

/// `lead status`: the record (the remote's, when there is one) with its
/// fields at the top level.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    #[serde(flatten)]
    pub record: LeadRecord,
    pub commit: Option<String>,
    /// Whether anyone ever claimed the plan (else `record` is epoch 0).
    pub exists: bool,
    pub lease_live: bool,
    /// Whether the remote holds this version (absent when nobody claimed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<bool>,
    /// The remote's mirror as last fetched (null without a remote).
    pub mirror: Option<MirrorView>,
    /// A remote arbitrates (so an unpublished version is worth a hint).
    #[serde(skip)]
    pub plan: String,
    #[serde(skip)]
    pub online: bool,
    #[serde(skip)]
    pub now: Timestamp,
}

/// `lead status`.
pub fn status(ctx: &Ctx, plan: &str) -> Result<Status> {
    names::validate_name("plan", plan)?;
    let refname = lead_ref(plan);
    fetch_refs_from(&ctx.store, ctx.remote(), &[&refname])?;
    // Read-only: the mirror as last fetched counts, `--offline` or not.
    let configured = ctx.settings.remote.as_deref();
    let tip = remote::tip(&ctx.store, configured, &refname)?;
    let now = ctx.store.clock.now();
    let mirror = || {
        configured
            .map(|r| MirrorView::read(&ctx.store, r, &[&refname]))
            .transpose()
    };
    let Some(base) = tip.base else {
        fetch_refs_from(
            &ctx.store,
            ctx.remote(),
            &[&crate::records::plan::plan_ref(plan)],
        )?;
        require_plan(ctx, plan)?;
        return Ok(Status {
            record: LeadRecord::new(plan),
            commit: None,
            exists: false,
            lease_live: false,
            published: None,
            mirror: mirror()?,
            plan: plan.to_string(),
            online: tip.online,
            now,
        });
    };
    let record = read_at(&ctx.store, plan, base)?;
    Ok(Status {
        lease_live: record.lease_live(now),
        record,
        commit: Some(base.to_string()),
        exists: true,
        published: Some(tip.online && tip.remote == Some(base)),
        mirror: mirror()?,
        plan: plan.to_string(),
        online: tip.online,
        now,
    })
}

/// `lead log`: the leader record's journal, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct Log {
    pub plan: String,
    pub exists: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<bool>,
    pub entries: Vec<LogEntry>,
}

/// One journal entry, with who led after it.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub commit: String,
    pub time: String,
    pub event: String,
    pub actor: String,
    /// The entry's `Swarm-Epoch`, else the record's epoch.
    pub epoch: u64,
    pub summary: String,
    pub trailers: BTreeMap<String, String>,
    pub parents: usize,
    pub leader: Option<String>,
    pub succession: Vec<String>,
}

/// `lead log`: who did what at which epoch, and who led after each entry.
/// Read from the newer of the local and the published record (fetched
/// first unless `--offline`), or from the gc archive.
pub fn log(ctx: &Ctx, plan: &str) -> Result<Log> {
    names::validate_name("plan", plan)?;
    let refname = lead_ref(plan);
    fetch_refs_from(&ctx.store, ctx.remote(), &[&refname])?;
    let tip = remote::tip(&ctx.store, ctx.remote(), &refname)?;
    let Some(base) = tip.base else {
        fetch_refs_from(
            &ctx.store,
            ctx.remote(),
            &[&crate::records::plan::plan_ref(plan)],
        )?;
        require_plan(ctx, plan)?;
        return Ok(Log {
            plan: plan.to_string(),
            exists: false,
            commit: None,
            published: None,
            entries: Vec::new(),
        });
    };
    let mut entries = Vec::new();
    for e in ctx.store.journal(base, None)? {
        let id = ObjectId::from_hex(e.commit.as_bytes())
            .map_err(|err| Error::gix("bad commit id in the lead journal", err))?;
        let rec = read_at(&ctx.store, plan, id)?;
        entries.push(LogEntry {
            epoch: e.epoch.unwrap_or(rec.epoch),
            leader: rec.current_leader().map(str::to_string),
            succession: rec.succession,
            commit: e.commit,
            time: e.time,
            event: e.event,
            actor: e.actor,
            summary: e.summary,
            trailers: e.trailers,
            parents: e.parents,
        });
    }
    Ok(Log {
        plan: plan.to_string(),
        exists: true,
        commit: Some(base.to_string()),
        published: Some(tip.online && tip.remote == Some(base)),
        entries,
    })
}

/// `lead check`: whether the actor leads the plan at the arbiter.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub plan: String,
    pub actor: String,
    pub leader: Option<String>,
    pub epoch: u64,
    pub is_leader: bool,
    /// `remote` or `local`: where the record was read.
    pub at: &'static str,
    /// A record exists (released, if nobody leads).
    #[serde(skip)]
    pub exists: bool,
}

/// `lead check`: exit 0 iff the actor leads the plan at the arbiter.
pub fn check(ctx: &Ctx, plan: &str) -> Result<Check> {
    names::validate_name("plan", plan)?;
    let actor = ctx.actor()?;
    let refname = lead_ref(plan);
    fetch_refs_from(&ctx.store, ctx.remote(), &[&refname])?;
    let tip = remote::tip(&ctx.store, ctx.remote(), &refname)?;
    // At the remote when there is one: an unpublished local record does not count.
    let at = if tip.online { tip.remote } else { tip.local };
    let rec = at.map(|c| read_at(&ctx.store, plan, c)).transpose()?;
    let leader = rec
        .as_ref()
        .and_then(|r| r.current_leader())
        .map(str::to_string);
    Ok(Check {
        plan: plan.to_string(),
        is_leader: leader.as_deref() == Some(actor.as_str()),
        actor,
        leader,
        epoch: rec.as_ref().map_or(0, |r| r.epoch),
        at: if tip.online { "remote" } else { "local" },
        exists: rec.is_some(),
    })
}
