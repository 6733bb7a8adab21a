//! Leadership announcements: `lead claim`, `lead handover` and `lead
//! takeover` post one message to the plan saying who leads it now, from
//! which epoch, and why (an urgent `notify` to `all`, so that every lane's
//! agent hooks show it at the next prompt and `wait --for message` wakes).
//!
//! Exactly one per change: the message's id is derived from the change
//! alone (`lead-e<epoch>-<hash of plan, epoch and leader>`; every change of
//! leader moves the epoch), and its content from the leader record's
//! journal entry, so a re-run after a kill finds the message it wrote (and
//! publishes it if it had not) instead of writing a second one, and two
//! clones that announce the same change write the same ref.
//!
//! The clone of the one who lost or gained the leadership through someone
//! else's command (the old leader after a takeover, the new one after a
//! handover) is told at its next command that knows the message
//! ([`notices`]: a listing of refs and a read of the new announcements
//! only, from a per-reader file `<git common dir>/swarm/announced/<reader>`;
//! none at all while the message refs' stamp, [`crate::store::ref_stamp`],
//! is the one at which the reader's last look ended).

use std::collections::BTreeSet;
use std::path::PathBuf;

use gix::ObjectId;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{publish_one, Posted};
use crate::error::{Code, Error, Result};
use crate::records::lead::LeadRecord;
use crate::records::message::{self, Kind, Message, MessageKey, PREFIX};
use crate::session::Ctx;
use crate::store::records::{Record, Records};
use crate::store::{mirror, Event, JournalEntry, Store};

/// How every announcement's id begins.
pub const ID_PREFIX: &str = "lead-e";

/// The id of the announcement of `leader` leading `plan` from `epoch`.
pub fn id(plan: &str, epoch: u64, leader: &str) -> String {
    let mut h = Sha256::new();
    for part in [plan, &epoch.to_string(), leader] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let hex: String = h.finalize()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{ID_PREFIX}{epoch}-{hex}")
}

/// What announcing did: the message, and whether an earlier run (or
/// another clone) had written it already.
#[derive(Debug, Clone, Serialize)]
pub struct Announced {
    #[serde(flatten)]
    pub posted: Posted,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub already: bool,
}

/// Announce the change of leader the record at `commit` holds (the
/// outcome of a `lead claim`, `handover` or `takeover`, fresh or found
/// already published). None when the record names no leader, or its
/// epoch's journal entry is not a change of leader.
pub fn leadership(
    ctx: &Ctx,
    plan: &str,
    record: &LeadRecord,
    commit: &str,
) -> Result<Option<Announced>> {
    let store = &ctx.store;
    let Some(leader) = record.current_leader() else {
        return Ok(None);
    };
    let Ok(tip) = ObjectId::from_hex(commit.as_bytes()) else {
        return Ok(None);
    };
    let entry = store.journal(tip, Some(32))?.into_iter().find(|e| {
        e.epoch == Some(record.epoch)
            && matches!(
                e.event.as_str(),
                "lead-claimed" | "lead-handover" | "lead-takeover"
            )
    });
    let Some(entry) = entry else {
        return Ok(None);
    };
    let msg = announcement(plan, leader, record.epoch, &entry)?;
    let key = msg.key();
    let refname = Message::refname(&key);
    // Written already, by an earlier run of this command or by another
    // clone: published there, nothing to do; here only, publish it.
    if let Some(r) = ctx.remote() {
        let _ = mirror::fetch_refs(store, r, &[&refname]);
        if let Some(theirs) = store.ref_target(&mirror::mirror_ref(r, &refname))? {
            let sent = Records::<Message>::new(store).at(&key, theirs)?.value;
            return Ok(Some(announced(sent, refname, true, None, true)));
        }
    }
    let (commit, already, msg) = written_here(store, &key, &refname, msg)?;
    crate::failpoint::point("announce:written");
    let (published, warning) = match ctx.remote() {
        None => (false, None),
        Some(r) => publish_one(store, r, &refname, commit),
    };
    Ok(Some(announced(msg, refname, published, warning, already)))
}

/// Who led before and why the leader changed, from the change's journal
/// `entry` (a handover, a takeover, else a claim).
fn change_of(entry: &JournalEntry) -> (Option<String>, String) {
    let trailer = |k: &str| entry.trailers.get(k).cloned();
    match entry.event.as_str() {
        "lead-handover" => (
            Some(entry.actor.clone()),
            format!("handed over by {}", entry.actor),
        ),
        "lead-takeover" => {
            let previous = trailer("Swarm-Previous-Leader").filter(|p| p != "nobody");
            let how = if trailer("Swarm-Forced").is_some() {
                "forced"
            } else {
                "lease expired"
            };
            let reason = trailer("Swarm-Reason").unwrap_or_default();
            (
                previous.clone(),
                format!(
                    "took over from {} ({how}: {reason})",
                    previous.as_deref().unwrap_or("nobody")
                ),
            )
        }
        _ => (None, "claimed".to_string()),
    }
}

/// The announcement of `leader` leading `plan` from `epoch`, as the
/// change's journal `entry` says it (its author and time), checked.
fn announcement(plan: &str, leader: &str, epoch: u64, entry: &JournalEntry) -> Result<Message> {
    let (previous, why) = change_of(entry);
    let body = format!(
        "{leader} leads plan {plan} from epoch {epoch}: {why}. Leader commands of earlier epochs are fenced; `git swarm lead status --plan {plan}` shows the record."
    );
    let mut msg = Message::new(
        Kind::Notify,
        &entry.actor,
        "all",
        Some(plan),
        entry.time.clone(),
        &body,
    );
    msg.id = id(plan, epoch, leader);
    msg.urgent = true;
    msg.leader = Some(leader.to_string());
    msg.epoch = Some(epoch);
    msg.previous_leader = previous;
    message::check(&msg)?;
    Ok(msg)
}

/// The announcement's ref in this clone: written now, or found written
/// (by an earlier run, or another process meanwhile: `true`); its commit
/// and the message it holds.
fn written_here(
    store: &Store,
    key: &MessageKey,
    refname: &str,
    msg: Message,
) -> Result<(ObjectId, bool, Message)> {
    let records = Records::<Message>::new(store);
    Ok(match store.ref_target(refname)? {
        Some(mine) => (mine, true, records.at(key, mine)?.value),
        None => {
            let event = Event::new(
                "message",
                &msg.from,
                format!("{} {} -> {}", msg.kind, msg.id, msg.to),
            );
            match records.create(key, &msg, &event) {
                Ok(c) => (c, false, msg),
                // Another process of this clone wrote it meanwhile.
                Err(e) if e.code == Code::CasFailed => {
                    let mine = store.ref_target(refname)?.ok_or(e)?;
                    (mine, true, records.at(key, mine)?.value)
                }
                Err(e) => return Err(e),
            }
        }
    })
}

fn announced(
    message: Message,
    refname: String,
    published: bool,
    warning: Option<String>,
    already: bool,
) -> Announced {
    Announced {
        posted: Posted {
            message,
            refname,
            published,
            warning,
        },
        already,
    }
}

/// Fetch the announcements of `plan` (one glob, a few refs): a leader
/// command refused as fenced learns why, for [`notices`].
pub fn fetch(ctx: &Ctx, plan: &str) {
    if let Some(r) = ctx.remote() {
        let prefix = format!("{PREFIX}{plan}/{ID_PREFIX}");
        let _ = mirror::fetch_refs(&ctx.store, r, &[&prefix]);
    }
}

/// Publish this clone's announcements of `plan` the remote lacks: those a
/// leader command killed between writing and pushing one left here (a
/// re-run of the command publishes them, whatever it decides). Best
/// effort: what stays local goes with the next `sync`.
pub fn flush(ctx: &Ctx, plan: &str) {
    let Some(r) = ctx.remote() else {
        return;
    };
    let store = &ctx.store;
    let prefix = format!("{PREFIX}{plan}/{ID_PREFIX}");
    let Ok(local) = store.list_refs(&prefix) else {
        return;
    };
    if local.is_empty() {
        return;
    }
    let _ = mirror::fetch_refs(store, r, &[&prefix]);
    for (refname, id) in local {
        let there = store
            .ref_target(&mirror::mirror_ref(r, &refname))
            .ok()
            .flatten();
        if there.is_none() {
            let _ = publish_one(store, r, &refname, id);
        }
    }
}

/// The lines to show the one acting here about announcements this clone
/// knows (local or fetched) and has not shown them: a takeover from them,
/// or a handover to them, by someone else. Each is shown once per reader;
/// the others are only marked seen. Never fails a command: what cannot be
/// read is left for the inbox.
pub fn notices(ctx: &Ctx) -> Vec<String> {
    let Ok(Some(reader)) = ctx.actor_opt() else {
        return Vec::new();
    };
    // No message ref moved since this reader's last look found every
    // announcement seen: nothing to list (every command ends here, and a
    // clone may hold thousands of messages).
    let stamp = super::refs_stamp(ctx);
    let quiet = quiet_path(ctx, &reader);
    let digest = stamp.digest();
    if digest.is_some() && std::fs::read_to_string(&quiet).ok() == digest {
        return Vec::new();
    }
    let Ok(lines) = notices_for(ctx, &reader) else {
        return Vec::new();
    };
    if let Some(d) = digest {
        if let Some(dir) = quiet.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // A cache: failing to write it costs one listing at the next command.
        let _ = crate::fsutil::replace_file(&quiet, d.as_bytes());
    }
    lines
}

/// The stamp of the message refs (taken before they were listed) at which
/// `reader`'s announcements were last all seen:
/// `<git common dir>/swarm/announced-at/<reader>`.
fn quiet_path(ctx: &Ctx, reader: &str) -> PathBuf {
    ctx.store
        .common_dir()
        .join("swarm")
        .join("announced-at")
        .join(reader)
}

fn notices_for(ctx: &Ctx, reader: &str) -> Result<Vec<String>> {
    let store = &ctx.store;
    let mut prefixes = vec![PREFIX.to_string()];
    if let Some(r) = ctx.settings.remote.as_deref() {
        prefixes.push(mirror::mirror_ref(r, PREFIX));
    }
    let mut found: Vec<(MessageKey, ObjectId)> = Vec::new();
    for prefix in &prefixes {
        for (name, id) in store.list_refs(prefix)? {
            let Some(key) = crate::store::records::RecordKey::from_path(&name[prefix.len()..])
            else {
                continue;
            };
            let key: MessageKey = key;
            if key.id.starts_with(ID_PREFIX) {
                found.push((key, id));
            }
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let mut seen = Seen::load(ctx, reader)?;
    let records = Records::<Message>::new(store);
    let mut lines = Vec::new();
    let mut new = BTreeSet::new();
    for (key, id) in found {
        let name = crate::store::records::RecordKey::to_path(&key);
        if seen.ids.contains(&name) || new.contains(&name) {
            continue;
        }
        new.insert(name);
        let Ok(m) = records.at(&key, id).map(|v| v.value) else {
            continue;
        };
        if m.from == reader {
            continue;
        }
        let plan = m.plan.as_deref().unwrap_or("-");
        let epoch = m.epoch.unwrap_or(0);
        let leader = m.leader.as_deref().unwrap_or("-");
        if m.previous_leader.as_deref() == Some(reader) {
            lines.push(format!(
                "plan {plan}: {leader} leads it from epoch {epoch}, you no longer do ({}; {}): your leader commands are fenced",
                m.from, m.id
            ));
        } else if m.leader.as_deref() == Some(reader) {
            lines.push(format!(
                "plan {plan}: you lead it from epoch {epoch}, handed over by {} ({}); `git swarm lead renew --plan {plan}` keeps the lease",
                m.from, m.id
            ));
        }
    }
    seen.add(new)?;
    Ok(lines)
}

/// The announcements already seen by a reader in this clone.
struct Seen {
    path: PathBuf,
    ids: BTreeSet<String>,
}

impl Seen {
    fn load(ctx: &Ctx, reader: &str) -> Result<Seen> {
        let path = ctx
            .store
            .common_dir()
            .join("swarm")
            .join("announced")
            .join(reader);
        let ids = match std::fs::read_to_string(&path) {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(io(&path, e)),
        };
        Ok(Seen { path, ids })
    }

    fn add(&mut self, new: BTreeSet<String>) -> Result<()> {
        if new.is_empty() {
            return Ok(());
        }
        self.ids.extend(new);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let text: String = self.ids.iter().map(|id| format!("{id}\n")).collect();
        crate::fsutil::replace_file(&self.path, text.as_bytes()).map_err(|e| io(&self.path, e))
    }
}

fn io(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::new(
        Code::IoFailed,
        format!("cannot use {}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_name_the_epoch_and_differ_by_leader_and_plan() {
        let a = super::id("p", 3, "ann");
        assert!(a.starts_with("lead-e3-"), "{a}");
        assert_eq!(a, super::id("p", 3, "ann"));
        assert_ne!(a, super::id("p", 3, "bob"));
        assert_ne!(a, super::id("q", 3, "ann"));
    }
}
