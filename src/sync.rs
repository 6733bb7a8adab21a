//! `git swarm sync`: reconcile local swarm refs with the shared remote.
//!
//! Fetch `refs/swarm/*` and `refs/notes/swarm` into
//! `refs/swarm-remotes/<remote>/…`, then per ref: fast-forward whichever side
//! is behind; when both moved, reconcile by kind (plans and lanes: a merge
//! commit joining both journals; leader records and packets: the published
//! record wins; notes: union of lines). Everything that must go out leaves in
//! ONE atomic push where each ref carries the value we expect the remote to
//! hold; a lost race is retried from a fresh fetch a bounded number of times.
//!
//! The same fetch/push primitives serve the commands that publish at once
//! (`lead`, `handoff`, `accept`): see [`publish`].

use std::collections::{BTreeMap, BTreeSet};

use gix::ObjectId;
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::git::{PushOutcome, PushUpdate};
use crate::init::mirror_refspecs;
use crate::output::Output;
use crate::store::notes::NOTES_REF;
use crate::store::{short, Event, Store};

const MAX_ATTEMPTS: usize = 5;

/// Where the remote's copy of a local swarm ref is mirrored.
pub fn mirror_ref(remote: &str, local: &str) -> String {
    if local == NOTES_REF {
        format!("refs/swarm-remotes/{remote}/notes/swarm")
    } else {
        format!(
            "refs/swarm-remotes/{remote}/{}",
            local.trim_start_matches("refs/swarm/")
        )
    }
}

/// Fetch the remote's swarm refs and notes into the mirror namespace.
pub fn fetch(store: &Store, remote: &str) -> Result<()> {
    fetch_into_mirror(store, remote, &mirror_refspecs(remote))?;
    stamp_fetch(store, remote);
    Ok(())
}

/// Where the time of the last whole-mirror fetch is kept: a cache (a
/// missing one only makes read-only views say the age is unknown).
fn fetch_stamp(store: &Store, remote: &str) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join(format!("mirror-fetched-{remote}"))
}

fn stamp_fetch(store: &Store, remote: &str) {
    let path = fetch_stamp(store, remote);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, crate::clock::rfc3339(store.clock.now()));
}

/// What read-only views (`status`, `lead status`, `packets`) know of the
/// remote's records: the last fetched mirror, how old it is, and which
/// records it has that the local refs lack (missing here, or behind).
/// Every such view shows local plus mirror, the newer of the two per
/// record, `--offline` or not (offline only means: no fetch first).
#[derive(Debug, Clone, Serialize)]
pub struct MirrorView {
    pub remote: String,
    /// When `sync` last fetched the whole mirror (None: unknown or never).
    pub fetched_at: Option<String>,
    /// Local refs (`refs/swarm/…`) the mirror has newer or alone.
    pub ahead: Vec<String>,
}

impl MirrorView {
    pub fn read(store: &Store, remote: &str, prefixes: &[&str]) -> Result<MirrorView> {
        let fetched_at = std::fs::read_to_string(fetch_stamp(store, remote))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let root = mirror_ref(remote, "refs/swarm/");
        let mut ahead = Vec::new();
        for prefix in prefixes {
            // A prefix ends in `/`; anything else names one ref exactly.
            let exact = !prefix.ends_with('/');
            for (mirrored, _) in store.list_refs(&mirror_ref(remote, prefix))? {
                let local = format!("refs/swarm/{}", &mirrored[root.len()..]);
                if exact && local != *prefix {
                    continue;
                }
                if live_tip(store, Some(remote), &local)?.local_behind(store)? {
                    ahead.push(local);
                }
            }
        }
        ahead.sort();
        Ok(MirrorView {
            remote: remote.to_string(),
            fetched_at,
            ahead,
        })
    }

    /// "mirror of origin: fetched 5m ago (…)", and a pointer to `sync`
    /// when the mirror has what the local refs lack.
    pub fn text(&self, now: jiff::Timestamp) -> String {
        let age = match self
            .fetched_at
            .as_deref()
            .map(|t| (t, t.parse::<jiff::Timestamp>()))
        {
            Some((t, Ok(at))) => format!("fetched {} ago ({t})", ago(now, at)),
            Some((t, Err(_))) => format!("fetched at {t}"),
            None => "never fetched by `git swarm sync`".to_string(),
        };
        let mut out = format!(
            "shown: local records plus the mirror of {} ({age})\n",
            self.remote
        );
        if !self.ahead.is_empty() {
            let n = self.ahead.len();
            let shown: Vec<&str> = self.ahead.iter().take(3).map(String::as_str).collect();
            out.push_str(&format!(
                "the mirror has {n} record{} your local refs lack ({}{}): `git swarm sync` brings {} in\n",
                if n == 1 { "" } else { "s" },
                shown.join(", "),
                if n > 3 { ", …" } else { "" },
                if n == 1 { "it" } else { "them" }
            ));
        }
        out
    }
}

/// A rough age: `42s`, `5m`, `3h`, `2d`.
fn ago(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let secs = now.as_second().saturating_sub(then.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// `git fetch` into the mirror. A process killed while it updated the mirror
/// leaves `<ref>.lock` behind and every later fetch fails on it: such a lock
/// is waited for and, once stale, removed (the mirror is only a cache).
fn fetch_into_mirror(store: &Store, remote: &str, specs: &[String]) -> Result<()> {
    let mut cleared = 0;
    loop {
        match store.git.fetch(remote, specs) {
            Err(e) if cleared < 3 => {
                let locked = e
                    .message
                    .split("cannot lock ref '")
                    .nth(1)
                    .and_then(|rest| rest.split('\'').next())
                    .filter(|r| r.starts_with("refs/swarm-remotes/"))
                    .map(str::to_string)
                    // A fetch killed while pruning leaves `packed-refs.lock`
                    // ("Unable to create '…/packed-refs.lock'"): the same wait.
                    .or_else(|| {
                        e.message
                            .contains("packed-refs.lock")
                            .then(|| mirror_ref(remote, "refs/swarm/"))
                    });
                match locked {
                    Some(refname) if store.clear_stale_lock(&refname) => cleared += 1,
                    _ => return Err(e),
                }
            }
            other => return other,
        }
    }
}

/// Fetch only the given local refs (e.g. one lead record) into the mirror.
/// Each is fetched as a one-ref glob so that a ref missing on the remote is
/// not an error and `--prune` drops a stale mirror of it.
pub fn fetch_refs(store: &Store, remote: &str, refs: &[&str]) -> Result<()> {
    let specs: Vec<String> = refs
        .iter()
        .map(|r| format!("+{r}*:{}*", mirror_ref(remote, r)))
        .collect();
    fetch_into_mirror(store, remote, &specs)
}

/// Publish ref updates in one atomic push with leases; on success move the
/// mirror refs too. A rejection is returned, not retried, so callers decide.
pub fn publish(
    store: &Store,
    remote: &str,
    updates: &[PushUpdate],
    extra: &[String],
) -> Result<PushOutcome> {
    let outcome = store.git.push_atomic(remote, updates, extra)?;
    if outcome == PushOutcome::Ok {
        crate::failpoint::point("publish:pushed");
        // The mirror is a cache of the remote: if another process holds its
        // lock, the next fetch corrects it, so a failure here is not one.
        let mirrors: Vec<(String, Option<ObjectId>)> = updates
            .iter()
            .map(|u| {
                let new = u
                    .new
                    .as_deref()
                    .and_then(|n| ObjectId::from_hex(n.as_bytes()).ok());
                (mirror_ref(remote, &u.refname), new)
            })
            .collect();
        let _ = store.force_many(&mirrors, "git-swarm", "mirror of a published push");
    }
    Ok(outcome)
}

/// Where one record stands before a command that publishes at once
/// (`lead`, `handoff`, `accept`) writes its next version. Read it after
/// fetching the ref with [`fetch_refs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tip {
    /// The local ref.
    pub local: Option<ObjectId>,
    /// The remote's value as just fetched (None offline or when absent there).
    pub remote: Option<ObjectId>,
    /// What the next version builds on: the published value, unless the
    /// local one descends from it (local changes not yet published).
    pub base: Option<ObjectId>,
    /// Whether a remote arbitrates (else the local CAS does).
    pub online: bool,
    /// `base` comes from a `gc` archive: the record has no live ref on
    /// either side, and its next version continues the archived history.
    pub archived: bool,
}

impl Tip {
    /// The local ref does not hold the published value yet (it is missing or
    /// behind): e.g. a previous run was killed between its push and its
    /// local update.
    pub fn local_behind(&self, store: &Store) -> Result<bool> {
        match (self.local, self.base) {
            _ if self.archived => Ok(false),
            (_, None) => Ok(false),
            (None, Some(_)) => Ok(true),
            (Some(l), Some(b)) => Ok(l != b && store.is_ancestor(l, b)?),
        }
    }
}

pub fn tip(store: &Store, remote: Option<&str>, refname: &str) -> Result<Tip> {
    let mut tip = live_tip(store, remote, refname)?;
    if tip.base.is_none() {
        if let Some(archived) = crate::gc::archived_tip(store, refname)? {
            tip.base = Some(archived);
            tip.archived = true;
        }
    }
    Ok(tip)
}

fn live_tip(store: &Store, remote: Option<&str>, refname: &str) -> Result<Tip> {
    let local = store.ref_target(refname)?;
    let Some(remote_name) = remote else {
        return Ok(Tip {
            local,
            remote: None,
            base: local,
            online: false,
            archived: false,
        });
    };
    let published = store.ref_target(&mirror_ref(remote_name, refname))?;
    let base = match (local, published) {
        (l, None) => l,
        (None, r) => r,
        (Some(l), Some(r)) => {
            if l != r && store.is_ancestor(r, l)? {
                Some(l)
            } else {
                Some(r)
            }
        }
    };
    Ok(Tip {
        local,
        remote: published,
        base,
        online: true,
        archived: false,
    })
}

/// The outcome of [`publish_record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Ok,
    /// The arbiter (the remote's lease, or the local CAS) refused: someone
    /// moved the record first. Carries git's lines when a push was refused.
    Rejected(Vec<String>),
}

/// Publish `new` (a descendant of `tip.base`) as the next version of
/// `refname`. With a remote: one atomic push with `--force-with-lease` at
/// the value just fetched (plus `extra` refspecs in the same push), and only
/// then the local ref. Offline: a local CAS from the local value.
/// `point` names the failpoints (`<point>:pushed`, between push and local ref).
#[allow(clippy::too_many_arguments)]
pub fn publish_record(
    store: &Store,
    remote: Option<&str>,
    refname: &str,
    tip: &Tip,
    new: ObjectId,
    extra: &[String],
    actor: &str,
    reason: &str,
    point: &str,
) -> Result<Published> {
    let record = Publish {
        refname,
        tip,
        new,
        actor,
        reason,
        point,
    };
    publish_records(store, remote, &record, &[], extra)
}

/// One record version to publish at once (see [`publish_record`]).
pub struct Publish<'a> {
    pub refname: &'a str,
    pub tip: &'a Tip,
    pub new: ObjectId,
    pub actor: &'a str,
    pub reason: &'a str,
    pub point: &'a str,
}

/// [`publish_record`] with companion records that must travel in the same
/// atomic push (each with its lease at the value fetched), e.g. the lane
/// record with the packet that hands it over: the remote takes all or
/// nothing. Offline the companions are left to the caller. After the push,
/// each companion's local ref is moved forward; one that holds a local
/// change the pushed value lacks is left for `sync` to join.
pub fn publish_records(
    store: &Store,
    remote: Option<&str>,
    record: &Publish<'_>,
    companions: &[PushUpdate],
    extra: &[String],
) -> Result<Published> {
    let Publish {
        refname,
        tip,
        new,
        actor,
        reason,
        point,
    } = *record;
    match remote {
        Some(r) => {
            let mut updates = vec![PushUpdate {
                refname: refname.to_string(),
                new: Some(new.to_string()),
                expected: tip.remote.map(|e| e.to_string()),
            }];
            updates.extend(companions.iter().cloned());
            match publish(store, r, &updates, extra)? {
                PushOutcome::Ok => {}
                PushOutcome::Rejected(lines) => return Ok(Published::Rejected(lines)),
            }
            crate::failpoint::point(&format!("{point}:pushed"));
            adopt(store, refname, new, actor, reason)?;
            for c in companions {
                let Some(id) = c
                    .new
                    .as_deref()
                    .and_then(|n| ObjectId::from_hex(n.as_bytes()).ok())
                else {
                    continue;
                };
                // Published already; a local ref that diverged is `sync`'s to join.
                match adopt(store, &c.refname, id, actor, reason) {
                    Err(e) if e.code == "CAS_FAILED" => {}
                    other => other?,
                }
            }
            Ok(Published::Ok)
        }
        None => match store.cas(refname, tip.local, Some(new), actor, reason) {
            Ok(()) => Ok(Published::Ok),
            Err(e) if e.code == "CAS_FAILED" => Ok(Published::Rejected(vec![e.message])),
            Err(e) => Err(e),
        },
    }
}

/// Point the local ref at a value the remote has published, when the local
/// ref is absent or behind it (an ancestor of it). A local ref holding
/// anything else has a local write the published value does not contain
/// (e.g. a concurrent `--offline` command in this clone): it is left as it
/// is and the command fails with `CAS_FAILED` naming both values, for `sync`
/// to reconcile. A CAS loop, so a concurrent local writer is never lost
/// mid-update.
pub fn adopt(store: &Store, refname: &str, new: ObjectId, actor: &str, reason: &str) -> Result<()> {
    for _ in 0..20 {
        let current = store.ref_target(refname)?;
        if current == Some(new) {
            return Ok(());
        }
        if let Some(local) = current {
            if !store.is_ancestor(local, new)? {
                return Err(Error::race(
                    "CAS_FAILED",
                    format!(
                        "{refname}: the remote has {} but the local ref holds {}, a local change the published value does not contain; the local ref was left as it is",
                        short(new),
                        short(local)
                    ),
                )
                .hint("run `git swarm sync` to reconcile the two")
                .with_detail(serde_json::json!({
                    "ref": refname,
                    "published": new.to_string(),
                    "local": local.to_string(),
                })));
            }
        }
        match store.cas(refname, current, Some(new), actor, reason) {
            Ok(()) => return Ok(()),
            Err(e) if e.code == "CAS_FAILED" => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::race(
        "CAS_FAILED",
        format!(
            "{refname} kept changing locally; the remote has {}",
            short(new)
        ),
    )
    .hint("run `git swarm sync` to catch up"))
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct SyncReport {
    pub remote: String,
    /// Local refs fast-forwarded (or created) from the remote.
    pub pulled: Vec<String>,
    /// Refs pushed to the remote.
    pub pushed: Vec<String>,
    /// Refs where both sides moved and a merge commit joined them.
    pub merged: Vec<String>,
    /// Leader records where the local divergent record was fenced by the published one.
    pub fenced: Vec<Fenced>,
    /// Packets whose local acceptance lost to the one published first.
    pub superseded: Vec<Fenced>,
    /// Records created independently on both sides: left untouched locally.
    pub conflicts: Vec<Conflict>,
    /// Notes about content that could not be merged automatically.
    pub warnings: Vec<String>,
    /// Live refs removed (here or on the remote) because `gc` archived them.
    pub archived: Vec<String>,
    /// What `gc` folded first when the live ref count passed swarm.gcThreshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<crate::gc::GcReport>,
    pub attempts: usize,
    pub pushes: usize,
}

impl SyncReport {
    /// Add one round's findings, keeping each fact once.
    fn absorb(&mut self, round: SyncReport) {
        fn merge<T: Serialize>(into: &mut Vec<T>, from: Vec<T>) {
            for item in from {
                let key = serde_json::to_string(&item).expect("serialisable");
                if !into
                    .iter()
                    .any(|x| serde_json::to_string(x).expect("serialisable") == key)
                {
                    into.push(item);
                }
            }
        }
        merge(&mut self.pulled, round.pulled);
        merge(&mut self.merged, round.merged);
        merge(&mut self.fenced, round.fenced);
        merge(&mut self.superseded, round.superseded);
        merge(&mut self.conflicts, round.conflicts);
        merge(&mut self.warnings, round.warnings);
        merge(&mut self.archived, round.archived);
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Fenced {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
}

/// The kind of a swarm ref decides how divergence is reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Journal,
    PublishedWins,
    Notes,
}

fn kind_of(refname: &str) -> Kind {
    if refname == NOTES_REF {
        Kind::Notes
    } else if refname.starts_with("refs/swarm/lead/") || refname.starts_with("refs/swarm/packets/")
    {
        Kind::PublishedWins
    } else {
        Kind::Journal
    }
}

/// `progress` hears what sync is doing (the CLI shows it on a TTY).
pub fn sync(ctx: &Ctx, actor: &str, progress: &mut dyn FnMut(&str)) -> Result<SyncReport> {
    let before = crate::lane::holders(&ctx.store);
    let mut report = sync_rounds(ctx, actor, progress)?;
    report
        .warnings
        .extend(crate::lane::unbacked_moves(&ctx.store, &before));
    Ok(report)
}

fn sync_rounds(ctx: &Ctx, actor: &str, progress: &mut dyn FnMut(&str)) -> Result<SyncReport> {
    let remote = ctx.remote().ok_or_else(|| {
        Error::usage(
            "REMOTE_MISSING",
            "sync needs a remote and none is configured",
        )
        .hint(
            "add one (`git remote add origin <url>`) or set swarm.remote; --offline disables sync",
        )
    })?;
    let store = &ctx.store;
    let mut report = SyncReport {
        remote: remote.to_string(),
        ..Default::default()
    };
    let threshold: usize = store
        .config("swarm.gcThreshold")
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    if crate::gc::live_refs(store)?.len() > threshold {
        progress("more live swarm refs than swarm.gcThreshold: running gc first…");
        let age = crate::gc::configured_age(store)?;
        report.gc = Some(crate::gc::gc(store, actor, age, false)?);
    }
    for attempt in 1..=MAX_ATTEMPTS {
        report.attempts = attempt;
        progress(&format!("fetching swarm refs from {remote}…"));
        fetch(store, remote)?;
        let mut updates = Vec::new();
        // A retry starts from a fresh fetch: what it finds again (a conflict,
        // a warning) is the same fact, reported once.
        let mut this_round = SyncReport::default();
        reconcile_all(store, remote, actor, &mut this_round, &mut updates)?;
        report.absorb(this_round);
        if updates.is_empty() {
            return Ok(report);
        }
        crate::failpoint::point("sync:reconciled");
        progress(&format!(
            "publishing {} to {remote} in one atomic push…",
            crate::output::count(updates.len(), "ref", "refs")
        ));
        report.pushes += 1;
        match publish(store, remote, &updates, &[])? {
            PushOutcome::Ok => {
                // Deletions (records gc archived) are reported as `archived`.
                report.pushed.extend(
                    updates
                        .iter()
                        .filter(|u| u.new.is_some())
                        .map(|u| u.refname.clone()),
                );
                report.pushed.sort();
                report.pushed.dedup();
                return Ok(report);
            }
            PushOutcome::Rejected(_) => continue,
        }
    }
    Err(Error::race(
        "PUSH_REJECTED",
        format!("the remote kept changing: {MAX_ATTEMPTS} sync attempts lost the race"),
    )
    .hint("run `git swarm sync` again"))
}

fn reconcile_all(
    store: &Store,
    remote: &str,
    actor: &str,
    report: &mut SyncReport,
    updates: &mut Vec<PushUpdate>,
) -> Result<()> {
    let mut local: BTreeMap<String, ObjectId> =
        store.list_refs("refs/swarm/")?.into_iter().collect();
    if let Some(n) = store.ref_target(NOTES_REF)? {
        local.insert(NOTES_REF.to_string(), n);
    }
    let mirror_prefix = format!("refs/swarm-remotes/{remote}/");
    let mut theirs: BTreeMap<String, ObjectId> = BTreeMap::new();
    for (name, id) in store.list_refs(&mirror_prefix)? {
        let rest = &name[mirror_prefix.len()..];
        let local_name = if rest == "notes/swarm" {
            NOTES_REF.to_string()
        } else if rest.starts_with("notes/") {
            continue;
        } else {
            format!("refs/swarm/{rest}")
        };
        theirs.insert(local_name, id);
    }
    let archived = archived_on_either_side(store, &local, &theirs)?;
    let names: BTreeSet<&String> = local.keys().chain(theirs.keys()).collect();
    for name in names {
        let l = local.get(name).copied();
        let r = theirs.get(name).copied();
        // A ref present on one side only, at a tip some archive holds, was
        // folded by `gc`: the deletion travels, the record is not revived.
        let was_archived = |tip: ObjectId| -> Result<bool> {
            match archived.get(name.as_str()) {
                None => Ok(false),
                Some(a) => Ok(*a == tip || store.is_ancestor(tip, *a)?),
            }
        };
        match (l, r) {
            (None, None) => {}
            (Some(l), None) if was_archived(l)? => {
                store.cas(name, Some(l), None, actor, "sync: archived by gc")?;
                report.archived.push(name.clone());
            }
            (Some(l), None) => updates.push(push_update(name, l, None)),
            (None, Some(r)) if was_archived(r)? => {
                updates.push(PushUpdate {
                    refname: name.clone(),
                    new: None,
                    expected: Some(r.to_string()),
                });
                report.archived.push(name.clone());
            }
            (None, Some(r)) => {
                store.cas(name, None, Some(r), actor, "sync: from remote")?;
                report.pulled.push(name.clone());
            }
            (Some(l), Some(r)) if l == r => {}
            (Some(l), Some(r)) => {
                if store.is_ancestor(l, r)? {
                    store.cas(name, Some(l), Some(r), actor, "sync: fast-forward")?;
                    report.pulled.push(name.clone());
                } else if store.is_ancestor(r, l)? {
                    updates.push(push_update(name, l, Some(r)));
                } else {
                    match kind_of(name) {
                        // Two packets of one id written independently (same
                        // author, same second, two machines offline) are two
                        // different handoffs, not two acceptances of one.
                        Kind::PublishedWins
                            if name.starts_with("refs/swarm/packets/")
                                && store.merge_base(l, r)?.is_none() =>
                        {
                            report.conflicts.push(Conflict {
                                r#ref: name.clone(),
                                local: l.to_string(),
                                remote: r.to_string(),
                            })
                        }
                        Kind::PublishedWins => {
                            store.cas(
                                name,
                                Some(l),
                                Some(r),
                                actor,
                                "sync: the published record wins",
                            )?;
                            let entry = Fenced {
                                r#ref: name.clone(),
                                local: l.to_string(),
                                remote: r.to_string(),
                            };
                            if name.starts_with("refs/swarm/lead/") {
                                report.fenced.push(entry);
                            } else {
                                report.superseded.push(entry);
                            }
                        }
                        Kind::Notes => {
                            let merged = merge_notes(store, l, r, actor)?;
                            store.cas(name, Some(l), Some(merged), actor, "sync: notes union")?;
                            report.merged.push(name.clone());
                            updates.push(push_update(name, merged, Some(r)));
                        }
                        Kind::Journal => match store.merge_base(l, r)? {
                            None => report.conflicts.push(Conflict {
                                r#ref: name.clone(),
                                local: l.to_string(),
                                remote: r.to_string(),
                            }),
                            Some(base) => {
                                let merged =
                                    merge_journals(store, name, base, l, r, actor, report)?;
                                store.cas(
                                    name,
                                    Some(l),
                                    Some(merged),
                                    actor,
                                    "sync: merge journals",
                                )?;
                                report.merged.push(name.clone());
                                updates.push(push_update(name, merged, Some(r)));
                            }
                        },
                    }
                }
            }
        }
    }
    Ok(())
}

/// Record name -> archived tip, from the local and the remote's archives.
fn archived_on_either_side(
    store: &Store,
    local: &BTreeMap<String, ObjectId>,
    theirs: &BTreeMap<String, ObjectId>,
) -> Result<BTreeMap<String, ObjectId>> {
    let mut out: BTreeMap<String, ObjectId> = BTreeMap::new();
    for side in [local, theirs] {
        for (name, tip) in side.range(crate::gc::ARCHIVE_PREFIX.to_string()..) {
            let Some(kind) = name.strip_prefix(crate::gc::ARCHIVE_PREFIX) else {
                break;
            };
            for (record, archived_tip) in crate::gc::entries_at(store, kind, *tip)? {
                // Two archives may hold different tips of one record: keep the newer.
                match out.get(&record) {
                    Some(existing) if store.is_ancestor(archived_tip, *existing)? => {}
                    _ => {
                        out.insert(record, archived_tip);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn push_update(name: &str, new: ObjectId, expected: Option<ObjectId>) -> PushUpdate {
    PushUpdate {
        refname: name.to_string(),
        new: Some(new.to_string()),
        expected: expected.map(|e| e.to_string()),
    }
}

/// A merge commit with parents [local, remote]: per file, the side that
/// changed since the merge base; per top-level YAML key likewise; where both
/// changed the same thing, the published (remote) value wins and the local
/// one stays reachable in the journal.
fn merge_journals(
    store: &Store,
    name: &str,
    base: ObjectId,
    l: ObjectId,
    r: ObjectId,
    actor: &str,
    report: &mut SyncReport,
) -> Result<ObjectId> {
    let b = store.read_commit(base)?.files;
    let lf = store.read_commit(l)?.files;
    let rf = store.read_commit(r)?.files;
    let mut files = BTreeMap::new();
    let keys: BTreeSet<&String> = b.keys().chain(lf.keys()).chain(rf.keys()).collect();
    for key in keys {
        let (bv, lv, rv) = (b.get(key), lf.get(key), rf.get(key));
        let chosen = if lv == rv || lv == bv {
            rv
        } else if rv == bv {
            lv
        } else if key.ends_with(".yaml") {
            match merge_yaml(bv, lv, rv) {
                Some(merged) => {
                    files.insert(key.clone(), merged);
                    continue;
                }
                None => {
                    report.warnings.push(format!(
                        "{name}:{key} changed on both sides; kept the published version, yours is at {}:{key}",
                        short(l)
                    ));
                    rv
                }
            }
        } else {
            // Text (the plan): a line-level three-way merge, as git would do;
            // only edits that overlap fall back to the published version.
            let empty = Vec::new();
            match (lv, rv) {
                (Some(lt), Some(rt)) => match store.git.merge_text(bv.unwrap_or(&empty), lt, rt)? {
                    Some(merged) => {
                        files.insert(key.clone(), merged);
                        continue;
                    }
                    None => {
                        report.warnings.push(format!(
                            "{name}:{key}: both sides edited the same lines; kept the published version, yours is at {}:{key}",
                            short(l)
                        ));
                        rv
                    }
                },
                _ => {
                    report.warnings.push(format!(
                        "{name}:{key} was removed on one side and changed on the other; kept the published state, yours is at {}:{key}",
                        short(l)
                    ));
                    rv
                }
            }
        };
        if let Some(v) = chosen {
            files.insert(key.clone(), v.clone());
        }
    }
    let tree = store.write_tree(&files)?;
    let event = Event::new("merge", actor, format!("sync: join journals of {name}"));
    store.commit(tree, &[l, r], &event)
}

/// Three-way merge of top-level YAML mapping keys; None if unparseable.
fn merge_yaml(b: Option<&Vec<u8>>, l: Option<&Vec<u8>>, r: Option<&Vec<u8>>) -> Option<Vec<u8>> {
    use serde_yaml_ng::{Mapping, Value};
    let parse = |v: Option<&Vec<u8>>| -> Option<Mapping> {
        match v {
            None => Some(Mapping::new()),
            Some(bytes) => {
                // Never hand the YAML parser a record too large or deep to read.
                crate::store::record::precheck(bytes, "record").ok()?;
                match serde_yaml_ng::from_slice::<Value>(bytes).ok()? {
                    Value::Mapping(m) => Some(m),
                    _ => None,
                }
            }
        }
    };
    let (bm, lm, rm) = (parse(b)?, parse(l)?, parse(r)?);
    let mut out = rm.clone();
    for (k, lv) in &lm {
        let bv = bm.get(k);
        let rv = rm.get(k);
        if Some(lv) != bv && rv == bv {
            out.insert(k.clone(), lv.clone());
        }
    }
    for k in bm.keys() {
        // Removed locally, untouched remotely.
        if !lm.contains_key(k) && rm.get(k) == bm.get(k) {
            out.remove(k);
        }
    }
    serde_yaml_ng::to_string(&Value::Mapping(out))
        .ok()
        .map(String::into_bytes)
}

/// Union of note lines per annotated object.
fn merge_notes(store: &Store, l: ObjectId, r: ObjectId, actor: &str) -> Result<ObjectId> {
    let mut all: BTreeMap<ObjectId, Vec<String>> = BTreeMap::new();
    for (target, lines) in store.all_notes(r)?.into_iter().chain(store.all_notes(l)?) {
        let entry = all.entry(target).or_default();
        for line in lines {
            if !entry.contains(&line) {
                entry.push(line);
            }
        }
    }
    let base_tree = store.commit_tree(r)?;
    let notes: Vec<(ObjectId, Vec<String>)> = all.into_iter().collect();
    let tree = store.notes_tree_with(base_tree, &notes)?;
    let event = Event::new("merge", actor, "sync: union of swarm notes");
    store.commit(tree, &[l, r], &event)
}

/// The warnings of a sync, one `warning:` line each, for stderr.
pub fn warnings_text(report: &SyncReport) -> String {
    report
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect()
}

pub fn render(report: &SyncReport) -> Output {
    let mut text = String::new();
    let mut line = |label: &str, items: &[String]| {
        for i in items {
            text.push_str(&format!("{label:<8} {i}\n"));
        }
    };
    line("pulled", &report.pulled);
    line("merged", &report.merged);
    line("pushed", &report.pushed);
    line("archived", &report.archived);
    for f in &report.fenced {
        text.push_str(&format!(
            "fenced   {}: your record {} was superseded by the published {}\n",
            f.r#ref,
            &f.local[..12],
            &f.remote[..12]
        ));
    }
    for f in &report.superseded {
        text.push_str(&format!(
            "lost     {}: the acceptance published first wins ({}); yours was {}\n",
            f.r#ref,
            &f.remote[..12],
            &f.local[..12]
        ));
    }
    for c in &report.conflicts {
        text.push_str(&format!(
            "conflict {}: created independently here ({}) and on {} ({}); left untouched\n",
            c.r#ref,
            &c.local[..12],
            report.remote,
            &c.remote[..12]
        ));
    }
    if text.is_empty() {
        text.push_str(&format!("up to date with {}\n", report.remote));
    }
    Output::new(report, text)
}

/// Exit 3 `PLAN_CONFLICT` when any record could not be reconciled; every
/// other ref has been synced by then.
pub fn conflict_error(report: &SyncReport) -> Option<Error> {
    if report.conflicts.is_empty() {
        return None;
    }
    let names: Vec<&str> = report.conflicts.iter().map(|c| c.r#ref.as_str()).collect();
    Some(
        Error::race(
            "PLAN_CONFLICT",
            format!(
                "{} created independently here and on {}: {}",
                if names.len() == 1 { "a record was" } else { "records were" },
                report.remote,
                names.join(", ")
            ),
        )
        .hint("your local record is untouched; rename yours (create it under another name and delete this ref), or drop it with `git update-ref -d <ref>` and sync again")
        .with_detail(serde_json::to_value(report).expect("serialisable")),
    )
}
