//! Messages (`swarm-message/v1`): notes, questions, answers, decisions and
//! escalations between the coordinator and its lanes.
//!
//! Storage is one record per message, `refs/swarm/messages/<plan>/<id>`
//! (`_` for a message outside any plan), written once and never changed.
//! Two clones posting at the same moment create two different refs, so
//! `sync` only pulls and pushes new refs: nothing to merge, nothing to lose,
//! and the poster never loses a race (no compare-and-swap on a shared ref).
//!
//! The id is `<UTC time>-<author>-<hash>`: the time and author make it
//! readable and sort it, the hash (of the content, the exact time and the
//! process) makes two posts by one author in one second distinct. An
//! escalation's id is instead derived from what it asks only (`esc-<hash>`),
//! so the same escalation cannot be recorded twice. Every listing orders
//! messages by (`at`, `id`): the same refs give the same order everywhere.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Code, Error, Result};
use crate::secret;
use crate::store::records::{Diverged, Files, Record, ScopedKey};
use crate::store::yaml::{self, Extra};

pub const SCHEMA: &str = "swarm-message/v1";
pub const FILE: &str = "message.yaml";
pub const PREFIX: &str = "refs/swarm/messages/";
/// The plan segment of a message outside any plan.
pub const NO_PLAN: &str = "_";
/// The largest body accepted, in bytes: messages are small records.
pub const MAX_BODY: usize = 16 * 1024;

open_enum! {
    /// What a message is; a kind a newer version sends is kept as written.
    pub enum Kind {
        Notify = "notify",
        Ask = "ask",
        Reply = "reply",
        Decision = "decision",
        Escalation = "escalation",
    }
}

/// One message (`message.yaml`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Message {
    pub schema: String,
    pub id: String,
    pub from: String,
    /// An address, `lead` resolved to the leader's address when posted
    /// (`lead_of` keeps that it was sent to the lead), or `all`.
    pub to: String,
    pub kind: Kind,
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub reply_to: Option<String>,
    pub at: String,
    pub body: String,
    /// Sent to the plan's leader (`to` is who led when it was posted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lead_of: bool,
    /// An approval or answer an agent relays from someone else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_from: Option<String>,
    /// With `swarm.trust` on, for a relayed message: whether the person it
    /// relays signed it (they never do through a relay: the relayer
    /// signs). Set when read, never stored in the record.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub relay_signed: Option<bool>,
    /// A decision's options, reason and how to undo it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
    /// An escalation's class and the task it blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `notify --urgent`: agent hooks show it at once, even sent to `all`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub urgent: bool,
    /// A leadership announcement (`lead claim`, `handover`, `takeover`):
    /// who leads the plan now, from which epoch, and who led before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_leader: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Message {
    /// A message with the common fields set; `id` is filled by [`Message::stamp`].
    pub fn new(
        kind: Kind,
        from: &str,
        to: &str,
        plan: Option<&str>,
        at: String,
        body: &str,
    ) -> Message {
        Message {
            schema: SCHEMA.into(),
            id: String::new(),
            from: from.into(),
            to: to.into(),
            kind,
            plan: plan.map(str::to_string),
            reply_to: None,
            at,
            body: body.into(),
            lead_of: false,
            relayed_from: None,
            relay_signed: None,
            options: Vec::new(),
            reason: None,
            undo: None,
            class: None,
            task: None,
            urgent: false,
            leader: None,
            epoch: None,
            previous_leader: None,
            extra: Extra::new(),
        }
    }

    /// Give the message its id: `<time>-<from>-<hash>`, or for an
    /// escalation `esc-<hash>` of what it asks (so it is recorded once).
    /// `nonce` separates two identical posts (the caller passes the
    /// process id and the clock's nanoseconds).
    pub fn stamp(mut self, compact_time: &str, nonce: &str) -> Message {
        let mut h = Sha256::new();
        if self.kind == Kind::Escalation {
            for part in [
                self.plan.as_deref().unwrap_or(NO_PLAN),
                self.class.as_deref().unwrap_or(""),
                self.task.as_deref().unwrap_or(""),
                &self.body,
            ] {
                h.update(part.as_bytes());
                h.update([0]);
            }
            self.id = format!("esc-{}", &hex(&h.finalize())[..16]);
        } else {
            let reply = self.reply_to.clone().unwrap_or_default();
            let kind = self.kind.as_str();
            for part in [
                &self.at[..],
                &self.from,
                &self.to,
                kind,
                &reply,
                &self.body,
                nonce,
            ] {
                h.update(part.as_bytes());
                h.update([0]);
            }
            self.id = format!("{compact_time}-{}-{}", self.from, &hex(&h.finalize())[..8]);
        }
        self
    }

    /// The key of its ref.
    pub fn key(&self) -> MessageKey {
        MessageKey {
            plan: self.plan.clone().unwrap_or_else(|| NO_PLAN.into()),
            id: self.id.clone(),
        }
    }

    /// Whether `reader` is an addressee: to them, to `all`, or (a message
    /// to the lead) `reader` led when it was posted. Nobody reads their own.
    pub fn is_for(&self, reader: &str) -> bool {
        self.from != reader && (self.to == reader || self.to == "all")
    }

    /// ` (relayed from X)` for a relayed message, saying whether X signed
    /// it when `swarm.trust` is on; empty otherwise.
    pub fn relayed(&self) -> String {
        self.relayed_from
            .as_deref()
            .map(|r| match self.relay_signed {
                None => format!(" (relayed from {r})"),
                Some(true) => format!(" (relayed from {r}, signed by {r})"),
                Some(false) => format!(" (relayed from {r}; {r} did not sign it)"),
            })
            .unwrap_or_default()
    }

    /// The one-line summary listings show.
    pub fn line(&self) -> String {
        let relayed = self.relayed();
        let plan = self
            .plan
            .as_deref()
            .map(|p| format!(" [{p}]"))
            .unwrap_or_default();
        let reply = self
            .reply_to
            .as_deref()
            .map(|r| format!(" re {r}"))
            .unwrap_or_default();
        let first = self.body.lines().next().unwrap_or("");
        format!(
            "{} {} {} -> {}{plan}{reply}{relayed}: {first}",
            self.id, self.kind, self.from, self.to
        )
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuse a message holding something that looks like a credential
/// (`MESSAGE_SECRET`; the finding is named, never echoed), or an empty or
/// oversized body (`MESSAGE_INVALID`).
pub fn check(msg: &Message) -> Result<()> {
    if msg.body.trim().is_empty() {
        return Err(Error::new(Code::MessageInvalid, "the message is empty")
            .hint("give the text as an argument or with --body-file"));
    }
    if msg.body.len() > MAX_BODY {
        return Err(Error::new(
            Code::MessageInvalid,
            format!(
                "the message is {} bytes; at most {MAX_BODY} are accepted",
                msg.body.len()
            ),
        )
        .hint("put the long text in a file in the repository and send its path"));
    }
    let value = serde_yaml_ng::to_value(msg).map_err(|e| {
        Error::new(
            Code::Internal,
            format!("could not serialise a message: {e}"),
        )
    })?;
    // What the reader would refuse is refused here, so that a message that
    // goes out is one every clone can read (newlines only in its
    // multiline fields, no control character anywhere).
    crate::text::check_value("the message", &value, <Message as Record>::MULTILINE_FIELDS)?;
    let findings = secret::scan(&value);
    if findings.is_empty() {
        Ok(())
    } else {
        Err(secret::refusal(
            Code::MessageSecret,
            "the message",
            &findings,
        ))
    }
}

/// Sort messages as every listing shows them: by time, then id.
pub fn sort(messages: &mut [Message]) {
    messages.sort_by(|a, b| (a.at.as_str(), a.id.as_str()).cmp(&(b.at.as_str(), b.id.as_str())));
}

/// A message's key: its plan (or `_`) and its id.
pub type MessageKey = ScopedKey;

impl Record for Message {
    const NAMESPACE: &'static str = "messages";
    const KIND: &'static str = "message";
    /// Written once, under an id its content decides: two versions of one
    /// ref are the same message posted on two clones (an escalation sent
    /// twice while offline) or a forgery; every clone keeps the published
    /// one, and `sync` reports the local one as superseded.
    const DIVERGED: Diverged = Diverged::PublishedWins;
    const MULTILINE_FIELDS: &'static [&'static str] = &["body", "reason", "undo"];
    type Key = MessageKey;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        Ok(Files::from([(FILE.to_string(), yaml::to_yaml(self)?)]))
    }
    fn from_files(files: &Files, key: &MessageKey, what: &str) -> Result<Self> {
        let bytes = files
            .get(FILE)
            .ok_or_else(|| Error::new(Code::YamlInvalid, format!("{what} has no {FILE}")))?;
        let what = format!("{what}:{FILE}");
        let msg: Message = yaml::parse_with(bytes, "swarm-message", &what, Self::MULTILINE_FIELDS)?;
        if msg.id != key.id {
            return Err(Error::new(
                Code::RecordInvalid,
                format!("{what} holds message {} under the id {}", msg.id, key.id),
            ));
        }
        yaml::check_identities(&what, &[], &[("from", &msg.from)])?;
        Ok(msg)
    }
    /// A message of a closed plan (one that names no plan stays live).
    fn is_finished(
        &self,
        key: &MessageKey,
        finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool {
        key.plan != NO_PLAN && finished_elsewhere("plans", &key.plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::RecordKey;

    #[test]
    fn a_kind_from_a_newer_version_stays_readable_and_is_written_back_as_it_was() {
        let mut m = msg("b");
        m.kind = Kind::parse("poll");
        assert_eq!(m.kind, Kind::Other("poll".into()));
        let files = m.to_files().unwrap();
        let back = Message::from_files(&files, &m.key(), "x").unwrap();
        assert_eq!(back.kind, Kind::Other("poll".into()));
        assert_eq!(back.to_files().unwrap(), files);
        assert_eq!(serde_json::to_value(&Kind::Ask).unwrap(), "ask");
        assert_eq!(Kind::parse("escalation"), Kind::Escalation);
    }

    fn msg(body: &str) -> Message {
        Message::new(
            Kind::Notify,
            "ann",
            "bob",
            Some("p"),
            "2026-01-01T00:00:00Z".into(),
            body,
        )
    }

    #[test]
    fn ids_are_distinct_readable_and_sorted_by_time() {
        let a = msg("hi").stamp("20260101T000000Z", "1");
        let b = msg("hi").stamp("20260101T000000Z", "2");
        assert_ne!(a.id, b.id);
        assert!(a.id.starts_with("20260101T000000Z-ann-"), "{}", a.id);
        assert_eq!(a.key().to_path(), format!("p/{}", a.id));
    }

    #[test]
    fn escalations_with_the_same_ask_share_an_id() {
        let esc = |body: &str, nonce: &str| {
            let mut m = Message::new(Kind::Escalation, "ann", "lead", Some("p"), "t".into(), body);
            m.class = Some("approval".into());
            m.stamp("20260101T000000Z", nonce).id
        };
        assert_eq!(esc("need prod access", "1"), esc("need prod access", "2"));
        assert_ne!(esc("need prod access", "1"), esc("need staging", "1"));
    }

    #[test]
    fn secrets_and_empty_bodies_are_refused() {
        let e = check(&msg("token ghp_abcdefghijklmnopqrstuvwxyz0123456789")).unwrap_err();
        assert_eq!(e.code, Code::MessageSecret);
        assert!(!e.message.contains("ghp_abcdef"));
        assert_eq!(check(&msg("  ")).unwrap_err().code, Code::MessageInvalid);
        check(&msg("all good")).unwrap();
    }

    #[test]
    fn readers() {
        let m = msg("x");
        assert!(m.is_for("bob"));
        assert!(!m.is_for("ann"));
        let mut all = msg("x");
        all.to = "all".into();
        assert!(all.is_for("cat") && !all.is_for("ann"));
    }
}
