//! The push budget at the edge (`swarm.pushBudget`; the rule is in
//! `store::remote::budget`): a write nobody races for runs as offline and
//! is queued, then published at once if the queue's window has passed, or
//! said to be queued; any other command first publishes a queue that is
//! due. No daemon: a queue waits for the next command.

use crate::cli::output::Output;
use git_swarm::ctx::Ctx;
use git_swarm::store::remote::budget;
use git_swarm::store::remote::{pending, Flushed};

use super::publish::{keep, published};
use super::Global;

/// The session with the remote, whatever `--offline` the budget set.
fn online(g: &Global) -> Option<Ctx> {
    let cwd = std::env::current_dir().ok()?;
    Ctx::open(&cwd, g.as_.clone(), false, None).ok()
}

/// Whether a write of this command waits in the queue: a budget is set
/// and `--offline` was not asked for.
pub fn queues(g: &Global) -> bool {
    if g.offline {
        return false;
    }
    let Some(ctx) = online(g) else {
        return false;
    };
    ctx.settings.remote.is_some() && matches!(budget::budget(&ctx.store), Ok(Some(_)))
}

/// After a queued write: publish the queue if its window has passed, else
/// say what waits and until when.
pub fn queued_after(g: &Global, mut out: Output) -> Output {
    let Some(ctx) = online(g) else {
        return out;
    };
    let Some(remote) = ctx.settings.remote.clone() else {
        return out;
    };
    let store = &ctx.store;
    if !matches!(pending(store, &remote), Ok(p) if !p.updates.is_empty()) {
        return out;
    }
    budget::mark_queued(store, &remote);
    // The write ran as offline to stay here; it is queued, not offline.
    out.warnings.retain(|w| !w.contains("not published"));
    match budget::flush_if_due(store, &remote) {
        Ok(None) => {}
        Ok(Some(flushed)) => return said(out, &remote, flushed),
        Err(e) => return keep(out, &e.message),
    }
    let Ok(Some(q)) = budget::queue(store, &remote) else {
        return out;
    };
    out.text.push_str(&format!(
        "queued (swarm.pushBudget {}): {} since {}; they go with this clone's next push, or with the first git-swarm command from {}\n",
        q.budget,
        crate::cli::output::count(q.refs.len(), "write", "writes"),
        q.since.as_deref().unwrap_or("now"),
        q.publish_by.as_deref().unwrap_or("now"),
    ));
    if let Some(doc) = out.json.as_object_mut() {
        doc.insert("queued".into(), serde_json::json!(q));
    }
    out
}

/// Before a command that does not publish: publish the queue when it is
/// due. What happened is added to the command's output afterwards.
pub fn flush_first(g: &Global) -> Option<(String, Flushed)> {
    if g.offline {
        return None;
    }
    let ctx = online(g)?;
    let remote = ctx.remote()?.to_string();
    if !budget::due(&ctx.store, &remote) {
        return None;
    }
    match budget::flush_if_due(&ctx.store, &remote) {
        Ok(Some(flushed)) => Some((remote, flushed)),
        // Not reached, or busy: the queue stays for the next command.
        _ => None,
    }
}

/// Say what a flush did.
pub fn said(out: Output, remote: &str, flushed: Flushed) -> Output {
    match flushed {
        Flushed::Nothing => out,
        Flushed::Published(refs) => published(out, remote, refs),
        Flushed::Refused(_) => keep(
            out,
            &format!("remote '{remote}' moved meanwhile and refused the queued push"),
        ),
    }
}
