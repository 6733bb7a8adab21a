//! `reserve`, `release`, `reservations`, `reserve --check` and
//! `reserve --recover`: read the reservation ledger, decide with the rules
//! of [`crate::records::reservation`], publish the shards the decision
//! changed in the store's fetch → decide → publish loop (see that module
//! for why the ledger is one, stored in shards). A refusal writes nothing;
//! a lost race re-reads and decides again.

use std::path::{Path, PathBuf};

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::records::reservation::{
    self, normalise, shard, shard::Part, stored, Conflict, Entry, Ledger, Pattern, Request, Shape,
};
use crate::session::Ctx;
use crate::store::records::{Publish, Records};
use crate::store::remote;
use crate::store::{short, Event, Store};

/// How many times a write re-reads the ledger after losing a race on it to
/// a change that does not conflict with its own.
pub const ATTEMPTS: usize = 12;

/// What `reserve`, `release` or `reserve --recover` did.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    pub action: &'static str,
    pub holder: String,
    /// The entry reserved, renewed or recovered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<Entry>,
    /// The ids released.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub released: Vec<String>,
    pub commit: String,
    pub published: bool,
}

/// The arguments of `reserve`.
#[derive(Debug, Clone, Default)]
pub struct ReserveArgs {
    pub paths: Vec<String>,
    pub lease: Option<String>,
    pub shared: bool,
    pub task: Option<String>,
    pub reason: Option<String>,
}

/// Whether paths compare case-insensitively here (`core.ignoreCase`).
pub fn ignore_case(store: &Store) -> bool {
    store
        .repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false)
}

fn lease(ctx: &Ctx, flag: Option<&str>) -> Result<SignedDuration> {
    ctx.lease(flag, &reservation::RESERVE_LEASE)
}

/// The current directory relative to the worktree root ("" at the root).
fn prefix(root: &Path) -> Result<String> {
    let cwd = std::env::current_dir().map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let (cwd, root) = (canonical(&cwd), canonical(root));
    Ok(cwd
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default())
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Refuse a path that leaves the worktree through a symlink: any existing
/// leading part of its literal prefix that resolves outside the root, or
/// into the repository's git directory (`link -> .git`).
fn inside(root: &Path, git_dir: &Path, p: &Pattern) -> Result<()> {
    let root = canonical(root);
    let git_dir = canonical(git_dir);
    let literal = p.as_str().split(['*', '?', '[']).next().unwrap_or("");
    let mut at = root.clone();
    for seg in literal.split('/').filter(|s| !s.is_empty()) {
        at.push(seg);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            break;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::canonicalize(&at).unwrap_or_else(|_| PathBuf::from("/"));
            if !target.starts_with(&root) || target.starts_with(&git_dir) {
                return Err(Error::new(
                    Code::ReservationPathInvalid,
                    format!("'{p}' cannot be reserved: it leaves the worktree through the symlink {seg}; nothing was written"),
                )
                .hint("reserve the files inside this repository"));
            }
        }
    }
    Ok(())
}

/// Normalise the paths as typed here; every one is checked before anything
/// is read or written.
pub fn patterns(ctx: &Ctx, paths: &[String]) -> Result<Vec<Pattern>> {
    if paths.is_empty() {
        return Err(Error::new(Code::Usage, "name at least one path to reserve")
            .hint("e.g. `git swarm reserve src/parser/ docs/*.md`"));
    }
    let root = ctx.store.workdir_or_err()?;
    let here = prefix(&root)?;
    let git_dir = ctx.store.common_dir();
    let mut out: Vec<Pattern> = Vec::new();
    for p in paths {
        let mut pat = normalise(p, &here)?;
        inside(&root, &git_dir, &pat)?;
        // A directory named without its '/' is reserved as the directory.
        if pat.shape() == Shape::File && root.join(pat.as_str()).is_dir() {
            pat = Pattern(format!("{pat}/"));
        }
        if !out.contains(&pat) {
            out.push(pat);
        }
    }
    Ok(out)
}

fn read(store: &Store, part: Part, at: ObjectId) -> Result<Ledger> {
    Records::<Ledger>::new(store)
        .at(&part.key(), at)
        .map(|v| v.value)
        .map_err(repairable)
}

/// A part of the reservations that cannot be read, with the way out.
fn repairable(e: Error) -> Error {
    e.hint("the reservations are shared by every clone: `git swarm reservations --repair --reason <why>` publishes the last readable version of each part that cannot be read on top of it (history keeps both)")
}

/// How many versions back `--repair` looks for a readable ledger.
const REPAIR_DEPTH: usize = 1000;

/// What `reservations --repair` did.
#[derive(Debug, Clone, Serialize)]
pub struct Repaired {
    /// The unreadable version repaired (the first, when several parts were).
    pub unreadable: String,
    /// The readable version whose content was restored (None: none was
    /// found, the part starts empty).
    pub restored_from: Option<String>,
    /// Every part repaired, by ref.
    pub parts: Vec<RepairedPart>,
    pub entries: usize,
    pub commit: String,
    pub published: bool,
}

/// One record of the reservations `--repair` restored.
#[derive(Debug, Clone, Serialize)]
pub struct RepairedPart {
    pub refname: String,
    pub unreadable: String,
    pub restored_from: Option<String>,
    pub commit: String,
}

/// The newest readable version below `bad` (None: none within
/// [`REPAIR_DEPTH`]; a parent that cannot be read ends the walk).
fn readable_below(store: &Store, part: Part, bad: ObjectId) -> (Option<ObjectId>, Ledger) {
    let mut at = store.first_parent(bad).ok().flatten();
    for _ in 0..REPAIR_DEPTH {
        let Some(c) = at else { break };
        if let Ok(l) = read(store, part, c) {
            return (Some(c), l);
        }
        at = store.first_parent(c).ok().flatten();
    }
    (None, Ledger::default())
}

/// `git swarm reservations --repair --reason …`: when a record of the
/// reservations cannot be read (a forged or corrupt version stops every
/// guard and every reservation command), publish its newest readable
/// ancestor's content as its next version, in the same publish loop as
/// every reservation write. Readable reservations are left alone (`USAGE`).
pub fn repair(ctx: &Ctx, reason: &str) -> Result<Repaired> {
    let actor = ctx.actor()?;
    if reason.trim().is_empty() {
        return Err(Error::new(Code::Usage, "a repair needs a --reason").hint(
            "e.g. `git swarm reservations --repair --reason \"forged version pushed by hand\"`",
        ));
    }
    check_text(None, Some(reason), &[])?;
    let store = &ctx.store;
    let done = ledger_publish(ctx).run(|txn| {
        let mut bad = Vec::new();
        let mut any = false;
        for part in stored::parts() {
            if let Some(at) = txn.tip(&stored::refname(part))?.base {
                any = true;
                if read(store, part, at).is_err() {
                    bad.push((part, at));
                }
            }
        }
        if !any {
            return Err(Error::new(
                Code::Usage,
                "there is no reservation ledger to repair",
            ));
        }
        if bad.is_empty() {
            return Err(
                Error::new(Code::Usage, "the reservations read fine; nothing to repair")
                    .hint("`git swarm reservations` lists them"),
            );
        }
        let mut parts = Vec::new();
        let mut entries = 0;
        for (part, at) in bad {
            let (from, ledger) = readable_below(store, part, at);
            let summary = format!(
                "reservations repaired: {} ({reason})",
                from.map_or("no readable version: started empty".to_string(), |c| {
                    format!("restored {}", short(c))
                })
            );
            let event = Event::new("reservations-repaired", &actor, summary)
                .trailer("Swarm-Repaired", at.to_string().as_str());
            let new = txn.write(&part.key(), &ledger, &event)?;
            entries += ledger.entries.len();
            parts.push(RepairedPart {
                refname: stored::refname(part),
                unreadable: at.to_string(),
                restored_from: from.map(|c| c.to_string()),
                commit: new.to_string(),
            });
        }
        let first = parts[0].clone();
        Ok(Repaired {
            unreadable: first.unreadable,
            restored_from: first.restored_from,
            parts,
            entries,
            commit: first.commit,
            published: ctx.remote().is_some(),
        })
    })?;
    Ok(done.then)
}

/// The ledger as this clone knows it (local, or the last fetched mirror
/// when that is newer), without fetching: every shard, merged.
pub fn known(ctx: &Ctx) -> Result<Ledger> {
    stored::known(&ctx.store, ctx.remote()).map_err(repairable)
}

/// Decide on the ledger and publish the shards the decision changed, in
/// the publish loop. The commit returned is the first one written (the
/// newest version of a part, when nothing changed).
fn write<T: Clone>(
    ctx: &Ctx,
    actor: &str,
    kind: &str,
    mut decide: impl FnMut(&mut Ledger, Timestamp, bool) -> Result<(T, String)>,
) -> Result<(T, ObjectId)> {
    let store = &ctx.store;
    let done = ledger_publish(ctx).run(|txn| {
        let before = stored::current(txn).map_err(repairable)?;
        let mut ledger = before.merged();
        let (then, summary) = decide(&mut ledger, store.clock.now(), txn.online())?;
        let event = Event::new(kind, actor, summary);
        let new = match stored::write(txn, &before, &ledger, &event)? {
            Some(new) => new,
            None => stored::catch_up(txn)?,
        };
        crate::failpoint::point("reserve:objects");
        Ok((then, new))
    })?;
    Ok(done.then)
}

/// The ledger's publication: fetched first, retried [`ATTEMPTS`] times.
fn ledger_publish(ctx: &Ctx) -> Publish<'_> {
    Publish::new(&ctx.store, ctx.remote())
        .fetch([shard::PREFIX])
        .attempts(ATTEMPTS)
        .point("reserve")
        .exhausted(kept_changing)
}

/// Every attempt of a ledger write lost a race (`CAS_FAILED`).
fn kept_changing(lines: &[String]) -> Error {
    Error::new(
        Code::CasFailed,
        format!(
            "the reservation ledger kept changing under {ATTEMPTS} attempts; nothing was written ({})",
            lines.join("; ")
        ),
    )
    .hint("run the command again")
}

/// Control characters and credentials in what the ledger would publish
/// (`TEXT_INVALID`, `SECRET_IN_TEXT`), before anything is read or written:
/// the ledger is shared with every clone and keeps every version.
fn check_text(task: Option<&str>, reason: Option<&str>, paths: &[String]) -> Result<()> {
    let mut fields = vec![
        ("--task", task.unwrap_or("")),
        ("--reason", reason.unwrap_or("")),
    ];
    fields.extend(paths.iter().map(|p| ("path", p.as_str())));
    crate::secret::check_fields("the reservation", &fields)
}

/// `git swarm reserve <path>…`
pub fn reserve(ctx: &Ctx, args: &ReserveArgs) -> Result<Written> {
    let actor = ctx.actor()?;
    let paths = patterns(ctx, &args.paths)?;
    check_text(args.task.as_deref(), args.reason.as_deref(), &args.paths)?;
    // In the worktree of a lane that took a task, the reservation is for
    // that task: a handoff from the lane carries it.
    let task = args
        .task
        .clone()
        .or_else(|| ctx.lane_here().and_then(|l| l.record.task));
    let req = Request {
        holder: actor.clone(),
        paths,
        shared: args.shared,
        task,
        reason: args.reason.clone(),
        lease: lease(ctx, args.lease.as_deref())?,
    };
    let ic = ignore_case(&ctx.store);
    let (entry, commit) = write(ctx, &actor, "reserved", |ledger, now, online| {
        let e = reservation::reserve_as(ledger, &req, now, ic, online)?;
        let list: Vec<&str> = e.paths.iter().map(Pattern::as_str).collect();
        Ok((
            e.clone(),
            format!("{} reserves {} ({})", actor, list.join(" "), e.id),
        ))
    })?;
    Ok(written(
        ctx,
        "reserved",
        actor,
        Some(entry),
        Vec::new(),
        commit,
    ))
}

fn written(
    ctx: &Ctx,
    action: &'static str,
    holder: String,
    entry: Option<Entry>,
    released: Vec<String>,
    commit: ObjectId,
) -> Written {
    Written {
        action,
        holder,
        entry,
        released,
        commit: commit.to_string(),
        published: ctx.remote().is_some(),
    }
}

/// `git swarm release <id|path>…`
pub fn release(ctx: &Ctx, targets: &[String]) -> Result<Written> {
    let actor = ctx.actor()?;
    if targets.is_empty() {
        return Err(
            Error::new(Code::Usage, "name a reservation id or a path to release")
                .hint("list yours with `git swarm reservations`"),
        );
    }
    let root = ctx.store.workdir_or_err()?;
    let here = prefix(&root)?;
    let mut named = Vec::new();
    for t in targets {
        let is_id = reservation::is_id(t);
        let pat = if is_id {
            None
        } else {
            Some(normalise(t, &here)?)
        };
        named.push((t.clone(), pat));
    }
    let ic = ignore_case(&ctx.store);
    let done = write(ctx, &actor, "released", |ledger, now, _| {
        let ids = reservation::release(ledger, &actor, &named, now, ic)?;
        Ok((ids.clone(), format!("{actor} releases {}", ids.join(" "))))
    });
    let (ids, commit) = match done {
        Err(e) if e.code == Code::ReservationNotFound => {
            released_already(ctx, &actor, &named, ic)?.ok_or(e)?
        }
        other => other?,
    };
    Ok(written(ctx, "released", actor, None, ids, commit))
}

/// A release a previous run published and was killed before its local
/// ledger moved: the local ledger (behind the published one) still holds
/// what the targets name, the published one no longer does. The local ref
/// catches up, and the release is done: its ids and the published commit.
fn released_already(
    ctx: &Ctx,
    actor: &str,
    named: &[(String, Option<reservation::Pattern>)],
    ic: bool,
) -> Result<Option<(Vec<String>, ObjectId)>> {
    let store = &ctx.store;
    let tips = stored::tips(store, ctx.remote())?;
    let mut behind = Vec::new();
    for (part, tip) in &tips {
        if let (Some(_), Some(published)) = (tip.local, tip.base) {
            if tip.local_behind(store)? {
                behind.push((*part, published));
            }
        }
    }
    let Some(&(_, first)) = behind.first() else {
        return Ok(None);
    };
    let local: Vec<(Part, Option<ObjectId>)> = tips
        .iter()
        .map(|(p, t)| match behind.iter().any(|(b, _)| b == p) {
            true => (*p, t.local),
            false => (*p, t.base),
        })
        .collect();
    let mut before = stored::at(store, &local)?.merged();
    let Ok(ids) = reservation::release(&mut before, actor, named, store.clock.now(), ic) else {
        return Ok(None);
    };
    let published: Vec<(Part, Option<ObjectId>)> = tips.iter().map(|(p, t)| (*p, t.base)).collect();
    let now_live = stored::at(store, &published)?.merged();
    if now_live
        .entries
        .iter()
        .any(|e| ids.contains(&e.id) && e.released_at.is_none())
    {
        return Ok(None);
    }
    for (part, published) in behind {
        match remote::adopt(
            store,
            &stored::refname(part),
            published,
            "git-swarm",
            "catch up with the remote",
        ) {
            Err(e) if e.code == Code::CasFailed => {}
            other => other?,
        }
    }
    Ok(Some((ids, first)))
}

/// `finish`: release the reservations still held for the finished plan's
/// `tasks`, whoever holds them, in one ledger write by the leader (`why`
/// in its journal). Nothing is written when none is held.
pub fn release_for_tasks(ctx: &Ctx, tasks: &[(String, String)], why: &str) -> Result<Vec<String>> {
    let actor = ctx.actor()?;
    let now = ctx.store.clock.now();
    let mut probe = known(ctx)?;
    if reservation::release_for_tasks(&mut probe, tasks, now).is_empty() {
        return Ok(Vec::new());
    }
    let (ids, _) = write(ctx, &actor, "released", |ledger, now, _| {
        let ids = reservation::release_for_tasks(ledger, tasks, now);
        Ok((
            ids.clone(),
            format!("{actor} releases {} ({why})", ids.join(" ")),
        ))
    })?;
    Ok(ids)
}

/// `git swarm reserve --recover <id> --reason …`
pub fn recover(ctx: &Ctx, id: &str, reason: &str, lease_flag: Option<&str>) -> Result<Written> {
    let actor = ctx.actor()?;
    if reason.trim().is_empty() {
        return Err(Error::new(Code::Usage, "a recovery needs a --reason")
            .hint("say why the previous holder's reservation is taken over"));
    }
    check_text(None, Some(reason), &[])?;
    let lease = lease(ctx, lease_flag)?;
    let ic = ignore_case(&ctx.store);
    let (entry, commit) = write(
        ctx,
        &actor,
        "reservation-recovered",
        |ledger, now, online| {
            let e = reservation::recover_as(ledger, &actor, id, reason, (lease, now), ic, online)?;
            Ok((e.clone(), format!("{actor} recovers {id} as {}", e.id)))
        },
    )?;
    Ok(written(
        ctx,
        "recovered",
        actor,
        Some(entry),
        Vec::new(),
        commit,
    ))
}

/// What `reserve --check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub holder: String,
    pub paths: Vec<Pattern>,
    pub conflicts: Vec<Conflict>,
}

/// `git swarm reserve --check <path>…`: fetch the ledger, report conflicts.
pub fn check(ctx: &Ctx, paths: &[String], shared: bool) -> Result<Checked> {
    let actor = ctx.actor()?;
    let paths = patterns(ctx, paths)?;
    if let Some(r) = ctx.remote() {
        crate::store::mirror::fetch_refs(&ctx.store, r, &[shard::PREFIX])?;
    }
    let ledger = known(ctx)?;
    let req = Request {
        holder: actor.clone(),
        paths: paths.clone(),
        shared,
        task: None,
        reason: None,
        lease: SignedDuration::ZERO,
    };
    let conflicts = reservation::conflicts(
        &ledger,
        &req,
        ctx.store.clock.now(),
        ignore_case(&ctx.store),
    );
    Ok(Checked {
        holder: actor,
        paths,
        conflicts,
    })
}

/// `git swarm reservations [--all]`: live entries (with `--all`, expired
/// ones too), and the time it is now.
pub fn list(ctx: &Ctx, all: bool) -> Result<(Vec<Entry>, Timestamp)> {
    // The ledger as the remote has it now (a listing: a remote that cannot
    // be reached leaves what was fetched before, with one warning).
    if let Some(r) = ctx.remote() {
        crate::store::mirror::fetch_refs(&ctx.store, r, &[shard::PREFIX])?;
    }
    let ledger = known(ctx)?;
    let now = ctx.store.clock.now();
    let entries = ledger
        .entries
        .into_iter()
        .filter(|e| all || e.live(now))
        .collect();
    Ok((entries, now))
}
