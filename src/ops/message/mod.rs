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
mod read;
pub mod wait;

pub use read::*;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::git::{PushOutcome, PushUpdate};
use crate::records::lead::lead_ref;
use crate::records::message::{self, Kind, Message, MessageKey};
use crate::session::Ctx;
use crate::store::records::{Record, Records};
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
