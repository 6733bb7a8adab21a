//! The messages the hooks show an agent by themselves (user-prompt-submit
//! and stop): addressed to it by name, or urgent to `all`, each once.

use crate::error::Result;
use crate::records::message::{Kind, Message};
use crate::session::Ctx;

use super::state::Shown;

/// Whether a hook shows `m` to `reader` by itself: addressed to them by
/// name, or urgent to `all`.
pub fn for_agent(m: &Message, reader: &str) -> bool {
    m.from != reader && (m.to == reader || (m.to == "all" && m.urgent))
}

/// The messages a hook should show `reader` now (not shown before), oldest
/// first, marked shown.
pub fn unshown(ctx: &Ctx, reader: &str) -> Result<Vec<Message>> {
    let mut shown = Shown::load(&ctx.store, reader);
    let fresh: Vec<Message> = crate::ops::message::all(ctx)?
        .into_iter()
        .filter(|m| for_agent(m, reader) && !shown.ids.contains(&m.id))
        .collect();
    shown.add(fresh.iter().map(|m| m.id.as_str()));
    Ok(fresh)
}

/// The lines that show messages to an agent.
pub fn message_lines(messages: &[Message]) -> String {
    let mut text = String::new();
    for m in messages {
        let kind = match (&m.kind, m.reply_to.as_deref()) {
            (Kind::Reply, Some(r)) => format!("reply to {r}"),
            (k, _) if m.urgent => format!("urgent {k}"),
            (k, _) => k.to_string(),
        };
        text.push_str(&format!(
            "- {} from {} ({}): {}\n",
            kind,
            m.from,
            m.id,
            m.body.trim()
        ));
        if m.kind == Kind::Ask {
            text.push_str(&format!(
                "  answer with `git swarm reply {} \"<answer>\"`\n",
                m.id
            ));
        }
    }
    text
}
