//! The push budget at the edge (`swarm.pushBudget`; the rule is in
//! `store::remote::budget`): a write nobody races for runs as offline and
//! is queued, then published at once if the queue's window has passed, or
//! said to be queued; any other command first publishes a queue that is
//! due. No daemon: a queue waits for the next command.
//!
//! One [`Session`] per command: the session with the remote is opened once
//! (not once per step), and whether the queue is due is decided once.

use jiff::SignedDuration;

use crate::cli::output::Output;
use git_swarm::session::{Ctx, Network};
use git_swarm::store::remote::budget;
use git_swarm::store::remote::{pending, Flushed};

use super::publish::{keep, published};
use super::Global;

/// A command's view of the push budget: its session with the remote,
/// whatever `--offline` the budget sets for the command itself.
pub struct Session {
    ctx: Ctx,
    remote: String,
    window: SignedDuration,
}

impl Session {
    /// Open it when a budget applies: a budget is set, there is a remote,
    /// and `--offline` was not asked for. None otherwise (or when the
    /// session cannot be opened: the command itself says why). A budget
    /// that is not a rate is CONFIG_INVALID, as `status` says.
    pub fn open(g: &Global) -> git_swarm::error::Result<Option<Session>> {
        if g.offline {
            return Ok(None);
        }
        let Some(mut ctx) = std::env::current_dir()
            .ok()
            .and_then(|cwd| Ctx::open(&cwd, g.as_.clone(), Network::Online, None, &g.run).ok())
        else {
            return Ok(None);
        };
        if g.no_cache {
            ctx.store.cache.bypass();
            ctx.store.trust.bypass_cache();
        }
        let Some(remote) = ctx.settings.remote.clone() else {
            return Ok(None);
        };
        let Some((_, window)) = budget::budget(&ctx.store)? else {
            return Ok(None);
        };
        Ok(Some(Session {
            ctx,
            remote,
            window,
        }))
    }

    /// Whether the queue's window has passed (decided once per command).
    fn due(&self) -> bool {
        budget::queued_since(&self.ctx.store, &self.remote)
            .and_then(|s| s.checked_add(self.window).ok())
            .is_some_and(|by| self.ctx.store.clock.now() >= by)
    }

    /// Publish the queue, holding the clone's flush lock; None while
    /// another process of this clone holds it.
    fn flush(&self) -> git_swarm::error::Result<Option<Flushed>> {
        budget::flush(&self.ctx.store, &self.remote, Some("budget:flush"))
    }

    /// After a queued write: publish the queue if its window has passed,
    /// else say what waits and until when.
    pub fn queued_after(&self, mut out: Output) -> Output {
        let (store, remote) = (&self.ctx.store, self.remote.as_str());
        if !matches!(pending(store, remote), Ok(p) if !p.updates.is_empty()) {
            return out;
        }
        budget::mark_queued(store, remote);
        // The write ran as offline to stay here; it is queued, not offline.
        out.warnings.retain(|w| !w.contains("not published"));
        if self.due() {
            match self.flush() {
                Ok(None) => {}
                Ok(Some(flushed)) => return said(out, remote, flushed),
                Err(e) => return keep(out, &e.message),
            }
        }
        let Ok(Some(q)) = budget::queue(store, remote) else {
            return out;
        };
        out.text.push_str(&format!(
            "queued (swarm.pushBudget {}): {} since {}; {} with this clone's next push, or with the first git-swarm command from {}\n",
            q.budget,
            crate::cli::output::count(q.refs.len(), "write", "writes"),
            q.since.as_deref().unwrap_or("now"),
            if q.refs.len() == 1 { "it goes" } else { "they go" },
            q.publish_by.as_deref().unwrap_or("now"),
        ));
        if let Some(doc) = out.json.as_object_mut() {
            doc.insert("queued".into(), serde_json::json!(q));
        }
        out.leaves_queue = true;
        out
    }

    /// Before a command that does not publish: publish the queue when it
    /// is due. What happened is added to the command's output afterwards.
    pub fn flush_first(&self) -> Option<(String, Flushed)> {
        if !self.due() {
            return None;
        }
        match self.flush() {
            Ok(Some(flushed)) => Some((self.remote.clone(), flushed)),
            // Not reached, or busy: the queue stays for the next command.
            _ => None,
        }
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
