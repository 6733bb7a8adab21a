//! `wait`: block until something of a kind arrives, at (almost) no cost.
//!
//! Each round is one cheap local check (reading refs) and, online, one
//! question to the remote limited to the refs the wait watches (and the
//! plan's): `git fetch --dry-run` of their prefixes, which the remote
//! answers by advertising only those refs, so the cost of a round does not
//! grow with unrelated records (10,000 message refs do not slow a wait for
//! packets); only when the answer says something moved is anything fetched. Between rounds the
//! process sleeps, the interval doubling from `--interval` up to the
//! ceiling `--max-interval`: it never spins. Sleeps go through the verify
//! wait clock (`GIT_SWARM_VIRTUAL_WAITS=1` makes them virtual, so a test
//! plays a 10-minute wait out at once and counts its rounds).
//!
//! What "arrives" means per kind: `message`, an unread message for me (the
//! inbox cursor; it is marked read unless `--peek`); `packet`, `lead`,
//! `task`, a ref under that kind's namespace (of `--plan`, if given) that
//! is new or moved since the wait began; `verdict`, the notes moved; `any`,
//! any of these. A new kind is one more line in [`Watch::prefixes`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::{all, Cursor, Quiet};
use crate::error::{Code, Error, Result};
use crate::integrations::github::wait::Waits;
use crate::records::message::Message;
use crate::session::Ctx;
use crate::store::mirror;
use crate::store::ref_stamp::{self, RefStamp};

open_enum! {
    /// What a `wait` waits for (`--for`); `Other` is a value typed that is
    /// none of these, refused before anything is read.
    pub enum WaitKind {
        Message = "message",
        Packet = "packet",
        Lead = "lead",
        Task = "task",
        Verdict = "verdict",
        Any = "any",
    }
}

/// What one `wait` watches.
pub struct Watch {
    pub kind: WaitKind,
    pub plan: Option<String>,
    pub timeout: Duration,
    pub interval: Duration,
    pub ceiling: Duration,
    pub peek: bool,
}

/// What woke the wait, and what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct Woke {
    pub kind: WaitKind,
    /// New unread messages for me (`message`, `any`).
    pub messages: Vec<Message>,
    /// Refs new or moved since the wait began (other kinds).
    pub refs: Vec<String>,
    pub cost: Cost,
}

/// The cost of a wait: rounds of local checks, `ls-remote` queries, fetches,
/// and the time it slept.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cost {
    pub checks: u64,
    pub remote_queries: u64,
    pub fetches: u64,
    /// Rounds where the remote could not be asked (the wait goes on).
    pub remote_errors: u64,
    pub slept_ms: u64,
}

impl Watch {
    /// The local ref prefixes whose changes count as arrivals (besides
    /// messages, which go by the cursor). Tasks and reservations are added
    /// here as their kinds land (`refs/swarm/tasks/<plan>/`).
    fn prefixes(&self) -> Vec<String> {
        // The kind's prefix, then the plan's name and a `/`: plan `shop`
        // is not a prefix of plan `shop-api`'s records.
        let plan = |prefix: &str| match &self.plan {
            Some(p) => format!("{prefix}{p}/"),
            None => prefix.to_string(),
        };
        let of = |kind: &WaitKind| -> Vec<String> {
            match kind {
                WaitKind::Packet => vec![plan(crate::records::packet::PREFIX)],
                // One leader record per plan: that ref exactly.
                WaitKind::Lead => vec![match &self.plan {
                    Some(p) => crate::records::lead::lead_ref(p),
                    None => crate::records::lead::PREFIX.to_string(),
                }],
                WaitKind::Task => vec![plan(crate::records::task::PREFIX)],
                WaitKind::Verdict => vec![crate::store::notes::NOTES_REF.to_string()],
                _ => vec![],
            }
        };
        if self.kind == WaitKind::Any {
            [
                WaitKind::Packet,
                WaitKind::Lead,
                WaitKind::Task,
                WaitKind::Verdict,
            ]
            .iter()
            .flat_map(of)
            .collect()
        } else {
            of(&self.kind)
        }
    }

    fn wants_messages(&self) -> bool {
        matches!(self.kind, WaitKind::Message | WaitKind::Any)
    }
}

/// The refs under `prefixes`, local and in the remote's mirror.
fn snapshot(ctx: &Ctx, prefixes: &[String]) -> Result<BTreeMap<String, String>> {
    let mut refs = BTreeMap::new();
    let remote = ctx.settings.remote.as_deref();
    for prefix in prefixes {
        let mut places = vec![(prefix.clone(), prefix.clone())];
        if let Some(r) = remote {
            // A swarm ref's prefix, or the notes ref.
            places.push((crate::store::mirror::mirror_ref(r, prefix), prefix.clone()));
        }
        for (place, shown) in places {
            // A name not ending in `/` is one ref: listing it as a prefix
            // would take every ref whose name starts with it.
            let exact = !place.ends_with('/');
            for (name, id) in ctx.store.list_refs(&place)? {
                if exact && name != place {
                    continue;
                }
                let name = format!("{shown}{}", &name[place.len()..]);
                let id = id.to_string();
                // The newer of local and mirror is not known here; either
                // moving is an arrival, so keep both.
                refs.insert(format!("{name}@{}", id), id);
            }
        }
    }
    Ok(refs)
}

/// Block until something arrives; `WAIT_TIMEOUT` (exit 1) at the timeout.
/// `notice` hears, once per streak, that the remote stopped answering (the
/// wait goes on over what this clone knows) and that it answers again.
pub fn wait(ctx: &Ctx, watch: &Watch, notice: &mut dyn FnMut(&str)) -> Result<Woke> {
    if let WaitKind::Other(_) = watch.kind {
        return Err(
            Error::new(Code::Usage, format!("cannot wait for '{}'", watch.kind))
                .hint(format!("use one of {}", WaitKind::NAMES.join(", "))),
        );
    }
    let reader = ctx.actor()?;
    let prefixes = watch.prefixes();
    let start = snapshot(ctx, &prefixes)?;
    // The clock of this wait (virtual under GIT_SWARM_VIRTUAL_WAITS=1).
    let clock = Waits::new();
    let deadline = clock.now() + watch.timeout;
    let mut interval = watch.interval.max(Duration::from_millis(10));
    // The local refs a round reads, and their stamp when last read: a round
    // whose stamp is the same reads nothing (see store::ref_stamp).
    let local = local_prefixes(ctx, watch, &prefixes);
    let remote_dir = ctx
        .remote()
        .and_then(|r| crate::store::mirror::level::remote_dir(&ctx.store, r));
    let mut w = Waiting {
        ctx,
        watch,
        reader,
        prefixes,
        start,
        local,
        remote_dir,
        cost: Cost::default(),
        unreachable: false,
        read_at: None,
        local_seen: None,
        remote_seen: None,
    };
    w.remote_seen = w.level_at_start();
    w.local_seen = w.quiet_at_start();
    loop {
        w.cost.checks += 1;
        if let Some(woke) = w.local_round()? {
            return Ok(woke);
        }
        if let Some(r) = ctx.remote() {
            if let Some(woke) = w.remote_check(r, notice)? {
                return Ok(woke);
            }
        }
        let now = clock.now();
        if now >= deadline {
            return Err(w.timed_out());
        }
        let nap = interval.min(deadline - now);
        clock.sleep(nap, "poll");
        w.cost.slept_ms += u64::try_from(nap.as_millis()).unwrap_or(u64::MAX);
        interval = (interval * 2).min(watch.ceiling.max(watch.interval));
    }
}

/// One [`wait`] under way: what it watches and started from, what it cost
/// so far, and the stamps of the refs when last read.
struct Waiting<'a> {
    ctx: &'a Ctx,
    watch: &'a Watch,
    reader: String,
    prefixes: Vec<String>,
    start: BTreeMap<String, String>,
    /// The local refs a round reads ([`local_prefixes`]).
    local: Vec<String>,
    /// The remote's own refs directory, when it is on this machine.
    remote_dir: Option<std::path::PathBuf>,
    cost: Cost,
    /// The last question to the remote failed.
    unreachable: bool,
    read_at: Option<BTreeMap<String, String>>,
    local_seen: Option<RefStamp>,
    remote_seen: Option<RefStamp>,
}

impl Waiting<'_> {
    /// The last wait, or the last whole fetch, found the mirror level with
    /// the remote at these stamps (taken first: a move since shows).
    fn level_at_start(&self) -> Option<RefStamp> {
        let (ctx, watch) = (self.ctx, self.watch);
        let (Some(r), Some(dir)) = (ctx.remote(), self.remote_dir.as_deref()) else {
            return None;
        };
        let stamp = ref_stamp::stamp(dir, &remote_prefixes(watch));
        (level_text(ctx, r, watch, &stamp)
            .is_some_and(|t| std::fs::read_to_string(level_path(ctx, r, watch)).ok() == Some(t))
            || crate::store::mirror::level::holds(&ctx.store, r, dir))
        .then_some(stamp)
    }

    /// Nothing was unread when the message refs were last read (by a wait
    /// or `inbox`), and none moved since: the first round has nothing to read.
    fn quiet_at_start(&self) -> Option<RefStamp> {
        let ctx = self.ctx;
        if !self.watch.wants_messages() {
            return None;
        }
        let stamp = ref_stamp::stamp(&ctx.store.common_dir(), &self.local);
        Quiet::holds(&ctx.store, &self.reader, &super::refs_stamp(ctx)).then_some(stamp)
    }

    /// The cheap local check of a round: when the local refs moved since
    /// last read, what arrived in them (None: nothing yet).
    fn local_round(&mut self) -> Result<Option<Woke>> {
        let ctx = self.ctx;
        let stamp = ref_stamp::stamp(&ctx.store.common_dir(), &self.local);
        if self.local_seen.as_ref() != Some(&stamp) {
            let messages = self.watch.wants_messages().then(|| super::refs_stamp(ctx));
            if let Some(woke) = self.arrived()? {
                return Ok(Some(woke));
            }
            if let (Some(m), None) = (messages, &self.watch.plan) {
                Quiet::mark(&ctx.store, &self.reader, &m);
            }
            self.local_seen = Some(stamp);
        }
        Ok(None)
    }

    /// The question to remote `r` of a round (and the fetch when something
    /// moved there), telling `notice` when it stops or starts answering;
    /// what arrived with the fetch (None: nothing yet).
    fn remote_check(&mut self, r: &str, notice: &mut dyn FnMut(&str)) -> Result<Option<Woke>> {
        let ctx = self.ctx;
        let errors_before = self.cost.remote_errors;
        let fetched = remote_round(
            ctx,
            r,
            self.watch,
            &mut self.cost,
            self.remote_dir.as_deref(),
            &mut self.remote_seen,
        )?;
        let failing = self.cost.remote_errors > errors_before;
        if failing && !self.unreachable {
            notice(&format!(
                "{}; still waiting",
                mirror::unreachable_warning(&ctx.store, r)
            ));
        } else if !failing && self.unreachable {
            notice(&format!("remote '{r}' answers again"));
        }
        self.unreachable = failing;
        if fetched {
            return self.arrived();
        }
        Ok(None)
    }

    /// [`arrived`] for this wait.
    fn arrived(&mut self) -> Result<Option<Woke>> {
        arrived(
            self.ctx,
            self.watch,
            &self.reader,
            &self.prefixes,
            &self.start,
            &self.cost,
            &mut self.read_at,
        )
    }

    /// `WAIT_TIMEOUT`: nothing arrived for the reader in time, with the
    /// cost of the wait and how many questions to the remote failed.
    fn timed_out(&self) -> Error {
        let cost = &self.cost;
        let unanswered = if cost.remote_errors > 0 {
            format!(
                " ({} of {} questions to the remote failed: nothing it holds could be seen then)",
                cost.remote_errors, cost.remote_queries
            )
        } else {
            String::new()
        };
        Error::new(
            Code::WaitTimeout,
            format!(
                "nothing of kind '{}' arrived for {} before the timeout{unanswered}",
                self.watch.kind, self.reader
            ),
        )
        .hint("wait again, or raise --timeout")
        .with_detail(serde_json::json!({ "cost": cost }))
    }
}

/// The local refs whose moves a round looks at: the watched prefixes and
/// the messages, each with its mirror of the remote.
fn local_prefixes(ctx: &Ctx, watch: &Watch, prefixes: &[String]) -> Vec<String> {
    let mut out: Vec<String> = prefixes.to_vec();
    if watch.wants_messages() {
        out.push(crate::records::message::PREFIX.to_string());
    }
    if let Some(r) = ctx.settings.remote.as_deref() {
        let mirrored: Vec<String> = out.iter().map(|p| mirror::mirror_ref(r, p)).collect();
        out.extend(mirrored);
    }
    out
}

/// Where a wait remembers that the mirror was level with a remote on this
/// machine for its prefixes: `.git/swarm/wait-level/<remote>-<hash>`.
fn level_path(ctx: &Ctx, r: &str, watch: &Watch) -> std::path::PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    remote_prefixes(watch).hash(&mut h);
    ctx.store
        .common_dir()
        .join("swarm")
        .join("wait-level")
        .join(format!("{r}-{:016x}", h.finish()))
}

/// The remote's stamp with the stamp of its mirror here (None while
/// either is fresh).
fn level_text(ctx: &Ctx, r: &str, watch: &Watch, remote: &RefStamp) -> Option<String> {
    let mirrored: Vec<String> = remote_prefixes(watch)
        .iter()
        .map(|p| mirror::mirror_ref(r, p))
        .collect();
    let here = ref_stamp::stamp(&ctx.store.common_dir(), &mirrored);
    Some(format!("{}--\n{}", remote.digest()?, here.digest()?))
}

/// Remember that the mirror is level with the remote at `remote`'s stamp.
fn mark_level(ctx: &Ctx, r: &str, watch: &Watch, remote: &RefStamp) {
    let Some(text) = level_text(ctx, r, watch, remote) else {
        return;
    };
    let path = level_path(ctx, r, watch);
    if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = crate::fsutil::replace_file(&path, text.as_bytes());
}

/// The remote refs a wait asks about: its kinds' prefixes (the
/// messages' too, for `message` and `any`) and, with `--plan`, the plan's
/// record. Never all of `refs/swarm/`.
fn remote_prefixes(watch: &Watch) -> Vec<String> {
    let mut out = watch.prefixes();
    if watch.wants_messages() {
        out.push(match &watch.plan {
            Some(p) => format!("{}{p}/", crate::records::message::PREFIX),
            None => crate::records::message::PREFIX.to_string(),
        });
    }
    if let Some(p) = &watch.plan {
        out.push(crate::records::plan::plan_ref(p));
    }
    out
}

/// One question to the remote (would a fetch of the watched refs change
/// anything here?), and that fetch when it would; true when it fetched. An
/// unreachable remote is a round without news, not the end of the wait.
/// A remote on this machine (`dir`) is asked by the stamp of its ref files
/// first: unchanged since the last round that found nothing new, the round
/// is over without a git process.
fn remote_round(
    ctx: &Ctx,
    r: &str,
    watch: &Watch,
    cost: &mut Cost,
    dir: Option<&std::path::Path>,
    seen: &mut Option<RefStamp>,
) -> Result<bool> {
    // A push budget's queue whose window passed goes out now: a wait may be
    // this clone's only command for a while (no daemon publishes it).
    let _ = crate::store::remote::budget::flush_if_due(&ctx.store, r);
    cost.remote_queries += 1;
    let prefixes = remote_prefixes(watch);
    let stamp = dir.map(|d| ref_stamp::stamp(d, &prefixes));
    if stamp.is_some() && *seen == stamp {
        mirror::stamp_reached(&ctx.store, r);
        return Ok(false);
    }
    let specs: Vec<String> = prefixes
        .iter()
        .map(|p| format!("+{p}*:{}*", mirror::mirror_ref(r, p)))
        .collect();
    // A refspec's glob takes every name that starts with the watched one
    // (plan `shop`'s leader ref and plan `shop-api`'s): only a watched ref
    // moving is news.
    let watched = |moved: &String| {
        prefixes.iter().any(|p| {
            let m = mirror::mirror_ref(r, p);
            match p.ends_with('/') {
                true => moved.starts_with(&m),
                false => *moved == m,
            }
        })
    };
    // Watching the messages (the kind of record that grows to thousands),
    // one listing compared with the mirror here is cheaper than a dry-run
    // fetch, whose connectivity check walks every advertised ref.
    let asked = match watch.wants_messages() {
        true => mirror::remote_moves(&ctx.store, r, &prefixes),
        false => ctx.store.git.fetch_would_move(r, &specs),
    };
    match asked {
        Err(_) => {
            cost.remote_errors += 1;
            Ok(false)
        }
        Ok(moved) if !moved.iter().any(watched) => {
            if let Some(s) = &stamp {
                mark_level(ctx, r, watch, s);
            }
            *seen = stamp;
            Ok(false)
        }
        Ok(_) => {
            cost.fetches += 1;
            let refs: Vec<&str> = prefixes.iter().map(String::as_str).collect();
            if mirror::fetch_refs(&ctx.store, r, &refs).is_err() {
                cost.remote_errors += 1;
                return Ok(false);
            }
            // The stamp was taken before the question: a move since shows.
            *seen = stamp;
            Ok(true)
        }
    }
}

fn arrived(
    ctx: &Ctx,
    watch: &Watch,
    reader: &str,
    prefixes: &[String],
    start: &BTreeMap<String, String>,
    cost: &Cost,
    read_at: &mut Option<BTreeMap<String, String>>,
) -> Result<Option<Woke>> {
    let mut messages = Vec::new();
    // The messages are read again only when a message ref (local or
    // mirrored) moved since they were last read and held nothing new: a
    // round over 2,000 unchanged messages lists their refs, no more.
    let message_refs = match watch.wants_messages() {
        true => Some(snapshot(
            ctx,
            &[crate::records::message::PREFIX.to_string()],
        )?),
        false => None,
    };
    if message_refs.is_some() && message_refs != *read_at {
        let mut cursor = Cursor::load(&ctx.store, reader)?;
        messages = all(ctx)?
            .into_iter()
            .filter(|m| m.is_for(reader) && !cursor.read.contains(&m.id))
            .filter(|m| watch.plan.is_none() || m.plan == watch.plan)
            .collect();
        if !messages.is_empty() && !watch.peek {
            cursor.advance(messages.iter().map(|m| m.id.as_str()))?;
        }
        *read_at = message_refs;
    }
    let refs: Vec<String> = if prefixes.is_empty() {
        Vec::new()
    } else {
        snapshot(ctx, prefixes)?
            .into_keys()
            .filter(|k| !start.contains_key(k))
            .map(|k| k.split_once('@').map(|(n, _)| n.to_string()).unwrap_or(k))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    if messages.is_empty() && refs.is_empty() {
        return Ok(None);
    }
    Ok(Some(Woke {
        kind: watch.kind.clone(),
        messages,
        refs,
        cost: cost.clone(),
    }))
}
