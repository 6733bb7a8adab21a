//! Is a message's addressee someone this clone's records know? Addresses
//! are free-form (a new agent may be written to before it ever acts), so an
//! unknown one is posted all the same, with a warning naming the known
//! address it is a likely typo of (`bobb` → `bob`): a message to nobody
//! would otherwise wait unread without a word.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::records::lane::LaneRecord;
use crate::records::lead::LeadRecord;
use crate::records::reservation::stored;
use crate::session::Ctx;
use crate::store::records::Records;
use crate::store::remote;

/// Every address the records of this clone name (local and last fetched):
/// who sent or was sent messages, lane owners, leaders and their
/// succession, task claim holders, reservation holders, and the actor.
fn known_addresses(ctx: &Ctx, actor: &str) -> Result<BTreeSet<String>> {
    let store = &ctx.store;
    let remote_name = ctx.settings.remote.as_deref();
    let mut out = BTreeSet::from([actor.to_string()]);
    for m in super::all(ctx)? {
        out.insert(m.from);
        out.insert(m.to);
        out.extend(m.relayed_from);
    }
    let lanes = Records::<LaneRecord>::new(store);
    for (feature, tip) in remote::tips_under(store, remote_name, crate::records::lane::PREFIX)? {
        if let Some(Ok(v)) = tip.base.map(|b| lanes.at(&feature, b)) {
            out.insert(v.value.owner);
        }
    }
    let leads = Records::<LeadRecord>::new(store);
    for (plan, tip) in remote::tips_under(store, remote_name, crate::records::lead::PREFIX)? {
        if let Some(Ok(v)) = tip.base.map(|b| leads.at(&plan, b)) {
            out.extend(v.value.leader);
            out.extend(v.value.succession);
        }
    }
    let (tasks, _) = crate::records::task::known(store, remote_name, None)?;
    out.extend(
        tasks
            .into_iter()
            .filter_map(|k| k.record.claim.map(|c| c.holder)),
    );
    // Unreadable reservations know no address (`reservations --repair`).
    if let Ok(ledger) = stored::known(store, remote_name) {
        out.extend(ledger.entries.into_iter().map(|e| e.holder));
    }
    out.remove("all");
    Ok(out)
}

/// The warning for a message to `to`, when no record here knows it.
pub fn unknown(ctx: &Ctx, actor: &str, to: &str) -> Result<Option<String>> {
    let known = known_addresses(ctx, actor)?;
    if known.contains(to) {
        return Ok(None);
    }
    let mean = crate::names::closest(to, known.iter().map(String::as_str))
        .map(|k| format!("{}; ", crate::names::mean(k)))
        .unwrap_or_default();
    Ok(Some(format!(
        "no record in this clone knows the address '{to}' ({mean}`git swarm sync` fetches the shared records): the message was posted all the same"
    )))
}
