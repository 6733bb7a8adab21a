//! `notify`, `ask`, `reply`, `decide`, `escalate` (posting a message) and
//! `inbox` (reading what is new, with a per-reader cursor). `wait` is in
//! [`wait`].
//!
//! Posting writes one new ref (`refs/swarm/messages/<plan>/<id>`) and pushes
//! it alone; a ref nobody else can create cannot lose a race, so posting
//! never exits 3. When the push fails (offline, remote down) the message
//! stays local and the next `sync` publishes it.
//!
//! The inbox cursor is local to the clone: `<git common dir>/swarm/inbox/
//! <reader>`, the ids already read, one a line. It is the reader's state,
//! not the swarm's: it is never pushed, and every worktree of a clone shares
//! it. A set of ids rather than a position, because a message posted offline
//! earlier can arrive after later ones were read.

mod address;
pub mod announce;
pub mod wait;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::git::{PushOutcome, PushUpdate};
use crate::records::lead::lead_ref;
use crate::records::message::{self, Kind, Message, MessageKey, PREFIX};
use crate::session::Ctx;
use crate::store::records::{Record, RecordKey, Records};
use crate::store::yaml::Unreadable;
use crate::store::{mirror, remote, Event, Store};

/// What to post.
#[derive(Debug, Clone)]
pub struct Post {
    pub kind: Kind,
    /// An address, `lead`, or `all` (`reply` and `escalate` fill it).
    pub to: String,
    pub plan: Option<String>,
    pub body: String,
    pub reply_to: Option<String>,
    pub relayed_from: Option<String>,
    pub options: Vec<String>,
    pub reason: Option<String>,
    pub undo: Option<String>,
    pub class: Option<String>,
    pub task: Option<String>,
    /// Shown at once to agents whose hooks are installed, even to `all`.
    pub urgent: bool,
}

impl Post {
    /// A post of `kind` to `to` (an address, `lead` or `all`) saying
    /// `body`, nothing else set.
    pub fn new(kind: Kind, to: impl Into<String>, body: impl Into<String>) -> Post {
        Post {
            kind,
            to: to.into(),
            plan: None,
            body: body.into(),
            reply_to: None,
            relayed_from: None,
            options: Vec::new(),
            reason: None,
            undo: None,
            class: None,
            task: None,
            urgent: false,
        }
    }
}

/// A posted message and whether it reached the remote.
#[derive(Debug, Clone, Serialize)]
pub struct Posted {
    pub message: Message,
    #[serde(rename = "ref")]
    pub refname: String,
    pub published: bool,
    #[serde(skip)]
    pub warning: Option<String>,
}

/// Post one message: resolve its addressee, refuse secrets, write its ref,
/// push it.
pub fn post(ctx: &Ctx, p: Post) -> Result<Posted> {
    let store = &ctx.store;
    let from = ctx.actor()?;
    if let Some(plan) = &p.plan {
        crate::names::validate_name("plan", plan)?;
    }
    if let Some(r) = &p.relayed_from {
        crate::names::validate_address(r)?;
    }
    if let Some(online) = ctx.remote() {
        // Best effort: the leader and the replied-to message may be newer there.
        let _ = mirror::fetch(store, online);
    }
    let (p, lead_of, unknown_to) = addressed(ctx, &from, p)?;
    let msg = compose(store, &from, p, lead_of)?;
    let key = msg.key();
    let commit = create(ctx, &from, &key, &msg)?;
    let refname = Message::refname(&key);
    let (published, warning) = match ctx.remote() {
        None => (false, None),
        Some(r) => publish_one(store, r, &refname, commit),
    };
    if !published && msg.kind == Kind::Escalation {
        if let Some(sent) = sent_meanwhile(ctx, &key, commit)? {
            return Err(already_sent(&sent));
        }
    }
    let warning = warnings(ctx, &msg, warning, unknown_to)?;
    Ok(Posted {
        message: msg,
        refname,
        published,
        warning,
    })
}

/// The post with its addressee resolved (a reply: whoever wrote; `lead`:
/// the plan's leader) and its plan filled in; whether it went to the
/// leader, and the warning for an addressee nobody knows.
fn addressed(ctx: &Ctx, from: &str, mut p: Post) -> Result<(Post, bool, Option<String>)> {
    let mut lead_of = false;
    if let Some(id) = p.reply_to.clone() {
        let original = find(ctx, &id)?.ok_or_else(|| {
            Error::new(Code::MessageNotFound, format!("no message has the id {id}"))
                .hint("`git swarm inbox --all` lists messages; `git swarm sync` fetches new ones")
        })?;
        p.to = original.from.clone();
        if p.plan.is_none() {
            p.plan = original.plan.clone();
        }
    }
    // As every command given no plan: the plan of the lane we are in,
    // whoever the message is for (`lead`, a name, `all`).
    if p.plan.is_none() {
        p.plan = ctx.lane_here().map(|l| l.record.plan);
    }
    if p.to == "lead" {
        p.to = leader(ctx, p.plan.as_deref())?;
        lead_of = true;
    } else if p.to != "all" {
        crate::names::validate_address(&p.to)?;
    }
    // A reply goes to whoever wrote; `lead` and `all` are resolved above.
    let unknown_to = if p.reply_to.is_none() && !lead_of && p.to != "all" {
        address::unknown(ctx, from, &p.to)?
    } else {
        None
    };
    Ok((p, lead_of, unknown_to))
}

/// The message `from` posts, stamped with its id now, and checked
/// ([`message::check`]: no credential, a body neither empty nor oversized).
fn compose(store: &Store, from: &str, p: Post, lead_of: bool) -> Result<Message> {
    let now = store.clock.now();
    let mut msg = Message::new(
        p.kind.clone(),
        from,
        &p.to,
        p.plan.as_deref(),
        crate::clock::rfc3339(now),
        &p.body,
    );
    msg.reply_to = p.reply_to;
    msg.lead_of = lead_of;
    msg.relayed_from = p.relayed_from;
    msg.options = p.options;
    msg.reason = p.reason;
    msg.undo = p.undo;
    msg.class = p.class;
    msg.task = p.task;
    msg.urgent = p.urgent;
    let nonce = format!("{}-{}", std::process::id(), nanos());
    let msg = msg.stamp(&now.strftime("%Y%m%dT%H%M%SZ").to_string(), &nonce);
    message::check(&msg)?;
    Ok(msg)
}

/// Write the message's ref in this clone; an escalation already sent (here,
/// or as this ref) is `ESCALATION_SENT`.
fn create(ctx: &Ctx, from: &str, key: &MessageKey, msg: &Message) -> Result<gix::ObjectId> {
    if msg.kind == Kind::Escalation {
        if let Some(sent) = find(ctx, &msg.id)? {
            return Err(already_sent(&sent));
        }
    }
    let event = Event::new(
        "message",
        from,
        format!("{} {} -> {}", msg.kind, msg.id, msg.to),
    );
    let created = Records::<Message>::new(&ctx.store).create(key, msg, &event);
    match created {
        Ok(c) => Ok(c),
        Err(e) if e.code == Code::CasFailed && msg.kind == Kind::Escalation => {
            Err(already_sent(msg))
        }
        Err(e) => Err(e),
    }
}

/// The push's `warning` joined with the plan journal's, the unknown
/// addressee's, and one for a plan this clone does not know.
fn warnings(
    ctx: &Ctx,
    msg: &Message,
    mut warning: Option<String>,
    unknown_to: Option<String>,
) -> Result<Option<String>> {
    if let Some(w) = journal(ctx, msg) {
        warning = Some(warning.map_or(w.clone(), |first| format!("{first}; {w}")));
    }
    if let Some(w) = unknown_to {
        warning = Some(warning.map_or(w.clone(), |first| format!("{first}; {w}")));
    }
    if let Some(plan) = msg.plan.as_deref() {
        let tip = remote::tip(
            &ctx.store,
            ctx.settings.remote.as_deref(),
            &crate::records::plan::plan_ref(plan),
        )?;
        if tip.base.is_none() {
            let w = format!("no plan '{plan}' is known in this clone (a typo? `git swarm plan list`; `git swarm sync` fetches the shared plans): the message was posted all the same");
            warning = Some(warning.map_or(w.clone(), |first| format!("{first}; {w}")));
        }
    }
    Ok(warning)
}

/// A decision or escalation about a plan is also an entry in the plan's
/// journal (`git swarm plan log`), once per message; `sync` publishes it
/// with the plan. A plan this clone does not have keeps the message only.
/// A failure is a warning: the message, the record that counts, is written.
fn journal(ctx: &Ctx, msg: &Message) -> Option<String> {
    let plan = msg.plan.as_deref()?;
    if msg.kind != Kind::Decision && msg.kind != Kind::Escalation {
        return None;
    }
    let first = msg.body.lines().next().unwrap_or("");
    let event = Event::new(
        msg.kind.as_str(),
        &msg.from,
        format!("{}: {first}", msg.kind),
    )
    .trailer("Swarm-Message", msg.id.as_str());
    match crate::records::plan::journal(
        &ctx.store,
        ctx.remote(),
        plan,
        &event,
        None,
        Some(("Swarm-Message", &msg.id)),
    ) {
        Ok(_) => None,
        Err(e) if e.code == Code::NotFound => None,
        Err(e) => Some(format!(
            "the plan journal entry was not written ({}); the message was",
            e.message
        )),
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Push one new message ref; a failure leaves it for `sync` (a warning).
fn publish_one(
    store: &Store,
    r: &str,
    refname: &str,
    commit: gix::ObjectId,
) -> (bool, Option<String>) {
    let update = PushUpdate {
        refname: refname.to_string(),
        new: Some(commit.to_string()),
        expected: None,
    };
    match remote::publish(store, r, &[update], &[]) {
        Ok(PushOutcome::Ok) => (true, None),
        Ok(PushOutcome::Rejected(lines)) => (
            false,
            Some(remote::not_published(&format!(
                "the remote refused the message ({})",
                lines.join("; ")
            ))),
        ),
        Err(_) if mirror::gone(store, r) => (
            false,
            Some(remote::not_published(&store.run.reach.kept_why())),
        ),
        Err(e) => (
            false,
            Some(remote::not_published(&format!(
                "could not publish the message ({})",
                e.message
            ))),
        ),
    }
}

/// An escalation another clone published first under the same id (both
/// sent it at once): this clone takes the published message in place of
/// its own, so that `sync` has nothing to join, and the caller refuses.
fn sent_meanwhile(ctx: &Ctx, key: &MessageKey, mine: gix::ObjectId) -> Result<Option<Message>> {
    let (Some(r), store) = (ctx.remote(), &ctx.store) else {
        return Ok(None);
    };
    let refname = Message::refname(key);
    if mirror::fetch_refs(store, r, &[&refname]).is_err() {
        return Ok(None);
    }
    let Some(theirs) = store.ref_target(&mirror::mirror_ref(r, &refname))? else {
        return Ok(None);
    };
    if theirs == mine {
        return Ok(None);
    }
    // One that cannot be read is not taken: this clone's stays, for `sync`.
    let Ok(sent) = Records::<Message>::new(store)
        .at(key, theirs)
        .map(|v| v.value)
    else {
        return Ok(None);
    };
    store.cas(
        &refname,
        Some(mine),
        Some(theirs),
        &sent.from,
        "escalation: sent first by another clone",
    )?;
    Ok(Some(sent))
}

/// `ESCALATION_SENT`: an escalation is recorded once.
fn already_sent(sent: &Message) -> Error {
    Error::new(
        Code::EscalationSent,
        format!(
            "this escalation was already sent by {} at {} ({})",
            sent.from, sent.at, sent.id
        ),
    )
    .hint("it is recorded; `git swarm wait --for message` waits for the answer")
    .with_detail(serde_json::json!({ "message": sent }))
}

/// The current leader of `plan`; a child plan without a leader of its own
/// (a lane's plan under its coordinator's) is led by its nearest parent's.
/// `NO_LEADER` when none of them has one.
fn leader(ctx: &Ctx, plan: Option<&str>) -> Result<String> {
    let plan = plan.ok_or_else(|| {
        Error::new(Code::MessageInvalid, "`lead` needs a plan: whose leader?")
            .hint("add --plan P (in a lane's worktree the lane's plan is meant)")
    })?;
    let remote = ctx.settings.remote.as_deref();
    if let Some(leader) =
        crate::ops::lead::nearest(&ctx.store, remote, plan)?.and_then(|r| r.leader)
    {
        return Ok(leader);
    }
    Err(Error::new(
        Code::NoLeader,
        format!("plan {plan} has no leader ({})", lead_ref(plan)),
    )
    .hint("address someone by name, or `all`; `git swarm lead status --plan P` shows the record"))
}

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
