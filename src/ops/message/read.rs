//! Reading messages: every message this clone knows, one by id, the last
//! question asked, and `inbox` with its per-reader cursor (see the parent
//! module for where the cursor lives and why it is a set of ids).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::records::message::{self, Kind, Message, MessageKey, PREFIX};
use crate::session::Ctx;
use crate::store::records::{RecordKey, Records};
use crate::store::yaml::Unreadable;
use crate::store::{mirror, Store};

/// Every message this clone knows: its own refs and the remote's mirror,
/// one per id, in the order every listing uses (time, then id).
pub fn all(ctx: &Ctx) -> Result<Vec<Message>> {
    Ok(all_and_unreadable(ctx)?.0)
}

/// [`all`], and the message refs that could not be read (local or
/// mirrored, one per name): an inbox says so instead of dropping them.
pub fn all_and_unreadable(ctx: &Ctx) -> Result<(Vec<Message>, Vec<Unreadable>)> {
    let records = Records::<Message>::new(&ctx.store);
    let mut by_key: BTreeMap<MessageKey, Message> = BTreeMap::new();
    let mut bad: BTreeMap<String, Unreadable> = BTreeMap::new();
    if let Some(r) = ctx.settings.remote.as_deref() {
        let (mirrored, unread) = records.all_under(&crate::store::mirror::mirror_ref(r, PREFIX))?;
        for v in mirrored {
            by_key.insert(v.key.clone(), relay_checked(&ctx.store, v)?);
        }
        bad.extend(unread.into_iter().map(|u| (u.name.clone(), u)));
    }
    let (local, unread) = records.all_under(PREFIX)?;
    for v in local {
        by_key.insert(v.key.clone(), relay_checked(&ctx.store, v)?);
    }
    bad.extend(unread.into_iter().map(|u| (u.name.clone(), u)));
    // A name read well on one side is not unreadable.
    bad.retain(|name, _| MessageKey::from_path(name).is_none_or(|k| !by_key.contains_key(&k)));
    let mut out: Vec<Message> = by_key.into_values().collect();
    message::sort(&mut out);
    Ok((out, bad.into_values().collect()))
}

/// A relayed message, with `swarm.trust` on: whether the person it relays
/// signed its commit (a relayed approval adds nothing of theirs).
fn relay_checked(store: &Store, v: crate::store::records::Versioned<Message>) -> Result<Message> {
    let mut msg = v.value;
    msg.extra.remove("relay_signed");
    if let Some(from) = msg.relayed_from.as_deref() {
        msg.relay_signed = store.signed_by(
            <Message as crate::store::records::Record>::NAMESPACE,
            v.commit,
            from,
        )?;
    }
    Ok(msg)
}

/// The newest `ask` addressed to the one acting (by name, as the plan's
/// leader, or to `all`), optionally from `from`, among the messages this
/// clone knows after fetching: what `reply --last` answers. `ASK_NOT_FOUND`
/// when there is none.
pub fn last_ask(ctx: &Ctx, from: Option<&str>) -> Result<Message> {
    let me = ctx.actor()?;
    if let Some(f) = from {
        crate::names::validate_address(f)?;
    }
    if let Some(r) = ctx.remote() {
        let _ = mirror::fetch(&ctx.store, r);
    }
    let newest = all(ctx)?
        .into_iter()
        .rfind(|m| m.kind == Kind::Ask && m.is_for(&me) && from.is_none_or(|f| m.from == f));
    newest.ok_or_else(|| {
        let whose = from.map(|f| format!(" from {f}")).unwrap_or_default();
        Error::new(
            Code::AskNotFound,
            format!("no ask{whose} addressed to {me} is known in this clone"),
        )
        .hint("`git swarm sync` fetches new messages; `git swarm inbox --all` lists yours; `git swarm reply <id> <text>` answers any message")
    })
}

/// The message with this id, if this clone knows it.
pub fn find(ctx: &Ctx, id: &str) -> Result<Option<Message>> {
    Ok(all(ctx)?.into_iter().find(|m| m.id == id))
}

/// The per-reader cursor (see the module doc).
pub struct Cursor {
    path: PathBuf,
    pub read: BTreeSet<String>,
}

impl Cursor {
    pub fn load(store: &Store, reader: &str) -> Result<Cursor> {
        let path = store.common_dir().join("swarm").join("inbox").join(reader);
        let read = match std::fs::read_to_string(&path) {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(io(&path, e)),
        };
        Ok(Cursor { path, read })
    }

    /// Mark `ids` read and write the cursor atomically.
    pub fn advance<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let before = self.read.len();
        self.read.extend(ids.into_iter().map(str::to_string));
        if self.read.len() == before {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let text: String = self.read.iter().map(|id| format!("{id}\n")).collect();
        crate::fsutil::replace_file(&self.path, text.as_bytes()).map_err(|e| io(&self.path, e))
    }
}

/// The stamp of this clone's message refs, local and mirrored
/// ([`crate::store::ref_stamp`]).
pub fn refs_stamp(ctx: &Ctx) -> crate::store::ref_stamp::RefStamp {
    let mut prefixes = vec![PREFIX.to_string()];
    if let Some(r) = ctx.settings.remote.as_deref() {
        prefixes.push(crate::store::mirror::mirror_ref(r, PREFIX));
    }
    crate::store::ref_stamp::stamp(&ctx.store.common_dir(), &prefixes)
}

/// "Nothing unread for `reader`", remembered with the stamp of the message
/// refs it was seen at (taken before they were read) and of the cursor
/// after: `.git/swarm/inbox-quiet/<reader>`. A `wait` that starts on the
/// same stamps has nothing to read (its first round lists no message
/// refs); any message ref moving, or the cursor changing, voids it.
pub struct Quiet;

impl Quiet {
    fn path(store: &Store, reader: &str) -> PathBuf {
        store
            .common_dir()
            .join("swarm")
            .join("inbox-quiet")
            .join(reader)
    }

    fn text(
        store: &Store,
        reader: &str,
        refs: &crate::store::ref_stamp::RefStamp,
    ) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let cursor = store.common_dir().join("swarm").join("inbox").join(reader);
        let cursor = std::fs::metadata(cursor)
            .map(|m| format!("{}.{} {} {}", m.mtime(), m.mtime_nsec(), m.ino(), m.size()))
            .unwrap_or_else(|_| "-".into());
        refs.digest().map(|d| format!("cursor {cursor}\n{d}"))
    }

    /// Remember that `reader` had nothing unread at `refs`.
    pub fn mark(store: &Store, reader: &str, refs: &crate::store::ref_stamp::RefStamp) {
        let Some(text) = Self::text(store, reader, refs) else {
            return;
        };
        let path = Self::path(store, reader);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // A cache: failing to write it costs one full read later.
        let _ = crate::fsutil::replace_file(&path, text.as_bytes());
    }

    /// Whether `reader` had nothing unread at these very stamps.
    pub fn holds(store: &Store, reader: &str, refs: &crate::store::ref_stamp::RefStamp) -> bool {
        Self::text(store, reader, refs).is_some_and(|text| {
            std::fs::read_to_string(Self::path(store, reader))
                .ok()
                .as_deref()
                == Some(text.as_str())
        })
    }
}

fn io(path: &std::path::Path, e: std::io::Error) -> Error {
    Error::new(
        Code::IoFailed,
        format!("cannot use the inbox cursor {}: {e}", path.display()),
    )
}

/// What `inbox` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Inbox {
    pub reader: String,
    pub messages: Vec<Message>,
    /// The ids among `messages` not read before this call.
    pub new: Vec<String>,
    pub advanced: bool,
    /// Message refs that could not be read (anyone's: who they were for is
    /// in the part that could not be read).
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

/// The messages for `reader` (not theirs), optionally of one plan: the
/// unread ones, or with `all` every one. Unless `peek`, the unread shown are
/// marked read.
pub fn inbox(ctx: &Ctx, plan: Option<&str>, all_too: bool, peek: bool) -> Result<Inbox> {
    let reader = ctx.actor()?;
    if let Some(r) = ctx.remote() {
        mirror::fetch(&ctx.store, r)?;
    }
    let stamp = refs_stamp(ctx);
    let mut cursor = Cursor::load(&ctx.store, &reader)?;
    let (every, unreadable) = all_and_unreadable(ctx)?;
    let mine: Vec<Message> = every
        .into_iter()
        .filter(|m| m.is_for(&reader) && plan.is_none_or(|p| m.plan.as_deref() == Some(p)))
        .collect();
    let new: Vec<String> = mine
        .iter()
        .filter(|m| !cursor.read.contains(&m.id))
        .map(|m| m.id.clone())
        .collect();
    let messages = if all_too {
        mine
    } else {
        mine.into_iter().filter(|m| new.contains(&m.id)).collect()
    };
    if !peek {
        cursor.advance(new.iter().map(String::as_str))?;
    }
    if plan.is_none() && (!peek || new.is_empty()) && unreadable.is_empty() {
        Quiet::mark(&ctx.store, &reader, &stamp);
    }
    Ok(Inbox {
        reader,
        messages,
        advanced: !peek && !new.is_empty(),
        new,
        unreadable,
    })
}
