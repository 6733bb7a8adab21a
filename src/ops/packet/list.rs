//! `git swarm packets [--plan P] [--open]` and `git swarm packet show <id>`:
//! read-only views of the packets known here (local refs plus the mirror as
//! last fetched, the newer of the two per packet).

use gix::ObjectId;
use serde::Serialize;

use crate::error::Result;
use crate::names;
use crate::records::packet::{
    locate, read_at, PacketVersion, ACCEPTANCE_FILE, PACKET_FILE, PREFIX, WITHDRAWAL_FILE,
};
use crate::session::Ctx;
use crate::store::mirror::fetch_refs_from;
use crate::store::remote;
use crate::store::yaml::Unreadable;

/// One packet in the listing.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub plan: String,
    pub author: String,
    pub reason: String,
    pub created_at: String,
    pub branch: Option<String>,
    pub head: String,
    pub pushed: bool,
    pub accepted_by: Option<String>,
    pub accepted_at: Option<String>,
    pub withdrawn_by: Option<String>,
    pub withdrawn_reason: Option<String>,
    pub r#ref: String,
    pub published: bool,
}

impl Row {
    fn new(v: PacketVersion, refname: String, published: bool) -> Row {
        let (p, acc, withdrawn) = (v.packet, v.acceptance, v.withdrawal);
        Row {
            id: p.id,
            plan: p.plan,
            author: p.author,
            reason: p.reason,
            created_at: p.created_at,
            branch: p.branch,
            head: p.head,
            pushed: p.pushed,
            accepted_by: acc.as_ref().map(|a| a.accepted_by.clone()),
            accepted_at: acc.map(|a| a.accepted_at),
            withdrawn_by: withdrawn.as_ref().map(|w| w.withdrawn_by.clone()),
            withdrawn_reason: withdrawn.map(|w| w.reason),
            r#ref: refname,
            published,
        }
    }
}

/// The listing.
#[derive(Debug, Clone)]
pub struct Listing {
    pub rows: Vec<Row>,
    pub unreadable: Vec<Unreadable>,
    /// Only open packets were asked for.
    pub open: bool,
    pub mirror: Option<remote::MirrorView>,
    pub now: jiff::Timestamp,
}

/// `git swarm packets [--plan P] [--open]`
pub fn list(ctx: &Ctx, plan_filter: Option<&str>, open: bool) -> Result<Listing> {
    let prefix = match plan_filter {
        Some(p) => {
            names::validate_name("plan", p)?;
            format!("{PREFIX}{p}/")
        }
        None => PREFIX.to_string(),
    };
    fetch_refs_from(&ctx.store, ctx.remote(), &[&prefix])?;
    // Read-only: the mirror as last fetched counts, `--offline` or not.
    let remote = ctx.settings.remote.as_deref();
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for (below, tip) in remote::tips_under(&ctx.store, remote, &prefix)? {
        let refname = format!("{prefix}{below}");
        let Some(base) = tip.base else { continue };
        match read_at(&ctx.store, &refname, base) {
            Ok(v) if open && !v.is_open() => {}
            Ok(v) => {
                let published = tip.online && tip.remote == Some(base);
                rows.push(Row::new(v, refname, published));
            }
            Err(e) => {
                let name = refname.trim_start_matches(PREFIX);
                unreadable.push(Unreadable::new("packet", name, &refname, &e));
            }
        }
    }
    rows.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    let mirror = remote
        .map(|r| remote::MirrorView::read(&ctx.store, r, &[prefix.as_str()]))
        .transpose()?;
    Ok(Listing {
        rows,
        unreadable,
        open,
        mirror,
        now: ctx.store.clock.now(),
    })
}

/// One packet version, as `packet show` shows it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub refname: String,
    pub commit: ObjectId,
    pub published: bool,
    pub version: PacketVersion,
    /// The bytes of `packet.yaml`, `acceptance.yaml` and `withdrawal.yaml`
    /// as stored.
    pub packet_yaml: Vec<u8>,
    pub acceptance_yaml: Option<Vec<u8>>,
    pub withdrawal_yaml: Option<Vec<u8>>,
}

/// `git swarm packet show <id>`
pub fn show(ctx: &Ctx, arg: &str) -> Result<Shown> {
    fetch_refs_from(&ctx.store, ctx.remote(), &[PREFIX])?;
    let remote = ctx.settings.remote.as_deref();
    let refname = locate(&ctx.store, remote, arg)?;
    let tip = remote::tip(&ctx.store, remote, &refname)?;
    let base = tip.base.expect("a located packet has a version");
    let version = read_at(&ctx.store, &refname, base)?;
    let mut files = ctx.store.read_commit(base)?.files;
    Ok(Shown {
        published: tip.online && tip.remote == Some(base),
        commit: base,
        version,
        packet_yaml: files.remove(PACKET_FILE).unwrap_or_default(),
        acceptance_yaml: files.remove(ACCEPTANCE_FILE),
        withdrawal_yaml: files.remove(WITHDRAWAL_FILE),
        refname,
    })
}
