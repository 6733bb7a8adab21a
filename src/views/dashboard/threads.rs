//! Messages as threads: a message and the replies under it (followed by
//! `reply_to`), per plan. Threads that want someone — an unanswered
//! question, an escalation — come first, then the rest, newest first.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::records::message::{Kind, Message, NO_PLAN};

/// What the page shows of a message, its fields named as the record
/// names them (read with `Records::view_at`): a swarm keeps thousands,
/// and the whole record (options, relays, unknown fields) is several
/// times this to decode and keep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageView {
    pub id: String,
    pub from: String,
    pub to: String,
    pub kind: Kind,
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub reply_to: Option<String>,
    pub at: String,
    pub body: String,
    /// An escalation's class.
    #[serde(default)]
    pub class: Option<String>,
}

impl From<Message> for MessageView {
    fn from(m: Message) -> MessageView {
        MessageView {
            id: m.id,
            from: m.from,
            to: m.to,
            kind: m.kind,
            plan: m.plan,
            reply_to: m.reply_to,
            at: m.at,
            body: m.body,
            class: m.class,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Thread {
    /// The plan, or `_` for messages outside any plan.
    pub plan: String,
    /// The first message, then the replies in time order.
    pub messages: Vec<MessageView>,
    /// An escalation, or a question nobody answered.
    pub open: bool,
    /// The time of its newest message.
    pub last_at: String,
}

/// Group messages into threads, in the order shown. By index, not by
/// cloned ids or moved records: a swarm keeps thousands of messages.
pub fn threads(all: Vec<MessageView>) -> Vec<Thread> {
    // As every listing orders them: by time, then id.
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| {
        (all[a].at.as_str(), all[a].id.as_str()).cmp(&(all[b].at.as_str(), all[b].id.as_str()))
    });
    let mut slots: Vec<Option<MessageView>> = all.into_iter().map(Some).collect();
    let all: Vec<MessageView> = order.iter().filter_map(|&i| slots[i].take()).collect();
    drop(slots);
    let index: BTreeMap<&str, usize> = all
        .iter()
        .enumerate()
        .map(|(i, m)| (m.id.as_str(), i))
        .collect();
    let parent: Vec<Option<usize>> = all
        .iter()
        .map(|m| m.reply_to.as_deref().and_then(|r| index.get(r).copied()))
        .collect();
    let answered: BTreeSet<usize> = parent.iter().flatten().copied().collect();
    let open_here: Vec<bool> = all
        .iter()
        .enumerate()
        .map(|(i, m)| m.kind == Kind::Escalation || (m.kind == Kind::Ask && !answered.contains(&i)))
        .collect();
    // Each message's root, bounded: a forged reply cycle ends the walk.
    let root: Vec<usize> = (0..all.len())
        .map(|i| {
            let mut cur = i;
            for _ in 0..all.len() {
                match parent[cur] {
                    Some(p) if p != i => cur = p,
                    _ => break,
                }
            }
            cur
        })
        .collect();
    drop(index);
    let mut slot: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out: Vec<Thread> = Vec::new();
    for (i, m) in all.into_iter().enumerate() {
        let t = *slot.entry(root[i]).or_insert_with(|| {
            out.push(Thread {
                plan: m.plan.clone().unwrap_or_else(|| NO_PLAN.to_string()),
                messages: Vec::new(),
                open: false,
                last_at: String::new(),
            });
            out.len() - 1
        });
        let thread = &mut out[t];
        thread.open |= open_here[i];
        thread.last_at.clone_from(&m.at);
        thread.messages.push(m);
    }
    out.sort_by(|a, b| {
        a.plan
            .cmp(&b.plan)
            .then(b.open.cmp(&a.open))
            .then(b.last_at.cmp(&a.last_at))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, kind: &str, at: &str, reply_to: Option<&str>) -> MessageView {
        let mut m: Message = serde_json::from_value(serde_json::json!({
            "schema": "swarm-message/v1", "id": id, "from": "a", "to": "b",
            "kind": kind, "plan": "p", "at": at, "body": "x",
        }))
        .unwrap();
        m.reply_to = reply_to.map(str::to_string);
        m.into()
    }

    #[test]
    fn replies_join_their_thread_and_open_threads_come_first() {
        let t = threads(vec![
            msg("n1", "notify", "2026-01-01T00:00:05Z", None),
            msg("q1", "ask", "2026-01-01T00:00:01Z", None),
            msg("r1", "reply", "2026-01-01T00:00:02Z", Some("q1")),
            msg("r2", "reply", "2026-01-01T00:00:03Z", Some("r1")),
            msg("q2", "ask", "2026-01-01T00:00:00Z", None),
            msg("e1", "escalation", "2026-01-01T00:00:04Z", None),
        ]);
        let roots: Vec<&str> = t.iter().map(|t| t.messages[0].id.as_str()).collect();
        assert_eq!(roots, ["e1", "q2", "n1", "q1"]);
        assert_eq!(t[3].messages.len(), 3);
        assert!(!t[3].open);
    }

    #[test]
    fn a_reply_cycle_does_not_hang() {
        let t = threads(vec![
            msg("a", "reply", "2026-01-01T00:00:00Z", Some("b")),
            msg("b", "reply", "2026-01-01T00:00:01Z", Some("a")),
        ]);
        assert_eq!(t.iter().map(|t| t.messages.len()).sum::<usize>(), 2);
    }
}
