//! The `reservations` guard: a change to a path someone else reserved
//! exclusively, with a live lease, is refused (`swarm.reservations =
//! enforce`, the default), or only reported (`warn`), or not looked at
//! (`off`). Own reservations, shared ones and expired ones pass (an expired
//! one is noted). Pre-commit judges the staged changes, pre-push and
//! `check --range` each commit, against the reservations live now: a
//! committer date is the committer's to write, so a backdated `--no-verify`
//! commit must not slip through, and the ledger keeps a released entry only
//! until its next write, so what was live at an old commit's time is not
//! known for sure.
//!
//! Which ledger: the one read every listing uses (each shard local when it
//! contains the mirrored one, else the mirror as last fetched, merged as
//! every reader merges them), so a clone that only fetched enforces what
//! it fetched.
//!
//! The hot path: the reservation refs are listed first (one listing of
//! each side), and when there is none, or no entry of someone else,
//! nothing else is read. Each shard comes from a cache keyed by its commit
//! (`ledger`), not from its YAML; the identity
//! from the lane record the checked-out branch names (no process). The
//! staged paths are found once (`changed`), only in directories a pattern
//! can reach and not where the index's cache tree equals HEAD's tree; each
//! pattern then looks at those under its literal directory. No process is
//! spawned (pre-push and `check --range` list commits with git, as their
//! other guards do) — except before a hook refuses: then the remote's
//! ledger is fetched and the change judged again, so a reservation released
//! on another machine does not block a clone that has not fetched since.

mod changed;
mod ledger;

use std::collections::BTreeMap;

use gix::bstr::ByteSlice;
use gix::ObjectId;
use jiff::Timestamp;

use self::changed::{staged_changes, Wanted};
use self::ledger::Cache;
pub use self::ledger::{Held, Version};
use super::findings::{unreadable, Findings, Violation};
use super::staged::Staged;
use crate::error::Result;
use crate::records::reservation::shard::{self, Part};
use crate::records::reservation::{covers, lease_running, stored, Enforce, Pattern, Shape};
use crate::session::Ctx;

pub const RESERVATIONS: &str = "reservations";

/// Blob id and mode of each file under a pattern.
type Files = BTreeMap<String, (ObjectId, u32)>;

/// The guard's setting and the ledger, when there is anything to judge.
pub struct Ledgered {
    pub mode: Enforce,
    pub ledger: Version,
    pub ignore_case: bool,
}

/// The setting, and the ledger as this clone knows it: the one read every
/// listing uses (`remote::live_tip`: the local ledger, or the last fetched
/// one unless the local one contains it; under `swarm.trust=require` its
/// newest trusted version). None when the guard is off or there is no
/// (trusted) ledger. The mirror is looked at even though a hook never
/// fetches first: a clone that only fetched enforces what it fetched.
pub fn load(ctx: &Ctx) -> Result<Option<Ledgered>> {
    let store = &ctx.store;
    let mode = Enforce::parse(store.config("swarm.reservations").as_deref());
    if mode == Enforce::Off {
        return Ok(None);
    }
    let remote = ctx.settings.remote.as_deref();
    let mut cache: Option<Cache> = None;
    let mut read: Vec<(Part, Version)> = Vec::new();
    let fail = |refname: &str, e: crate::error::Error| unreadable(RESERVATIONS, refname, e.message);
    let tips = stored::tips(store, remote).map_err(|e| fail(shard::PREFIX, e))?;
    for (part, tip) in tips {
        let refname = stored::refname(part);
        let fail = |e| fail(&refname, e);
        let Some(base) = tip.base else { continue };
        // Under swarm.trust=require a part with no trusted version reserves nothing.
        if store.refused(&refname, base).map_err(fail)?.is_some() {
            continue;
        }
        let cache = cache.get_or_insert_with(|| Cache::load(&store.repo));
        read.push((part, cache.at(&store.repo, base, &refname)?));
    }
    let Some(cache) = cache else {
        return Ok(None);
    };
    cache.save();
    let ignore_case = store
        .repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false);
    Ok(Some(Ledgered {
        mode,
        ledger: Version::merged(&read),
        ignore_case,
    }))
}

/// The directory a pattern's files all lie under ("" for the root).
fn dir_of(p: &Pattern) -> String {
    let s = p.as_str();
    let lit = s.find(['*', '?', '[']).map_or(s, |i| &s[..i]);
    match p.shape() {
        Shape::Dir => lit.to_string(),
        _ => lit
            .rfind('/')
            .map_or(String::new(), |i| lit[..=i].to_string()),
    }
}

/// The files under `p` in the tree `tree` (recursively from its directory).
fn tree_files(
    repo: &gix::Repository,
    tree: Option<ObjectId>,
    p: &Pattern,
    ic: bool,
) -> Result<Files> {
    let mut out = Files::new();
    let Some(tree) = tree else { return Ok(out) };
    let err = |e: &dyn std::fmt::Display| unreadable(RESERVATIONS, format!("the tree at {p}"), e);
    let root = repo.find_tree(tree).map_err(|e| err(&e))?;
    let dir = dir_of(p);
    let start = if dir.is_empty() || ic {
        Some((root.id, String::new()))
    } else {
        root.lookup_entry_by_path(dir.trim_end_matches('/'))
            .map_err(|e| err(&e))?
            .filter(|e| e.mode().is_tree())
            .map(|e| (e.object_id(), dir.clone()))
    };
    let Some(start) = start else {
        // Not a directory there: a file reserved by its own path.
        if p.shape() == Shape::File && !ic {
            if let Some(e) = root.lookup_entry_by_path(p.as_str()).map_err(|e| err(&e))? {
                if !e.mode().is_tree() {
                    out.insert(
                        p.as_str().to_string(),
                        (e.object_id(), e.mode().value() as u32),
                    );
                }
            }
        }
        return Ok(out);
    };
    let mut stack = vec![start];
    while let Some((id, prefix)) = stack.pop() {
        let t = repo.find_tree(id).map_err(|e| err(&e))?;
        for entry in t.iter() {
            let entry = entry.map_err(|e| err(&e))?;
            let name = format!("{prefix}{}", entry.filename().to_str_lossy());
            if entry.mode().is_tree() {
                stack.push((entry.object_id(), format!("{name}/")));
            } else if covers(p, &name, ic) {
                out.insert(name, (entry.object_id(), entry.mode().value() as u32));
            }
        }
    }
    Ok(out)
}

/// The paths whose version differs between the two sets.
fn differing(a: &Files, b: &Files) -> Vec<String> {
    let mut out: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    out.sort();
    out.dedup();
    out
}

/// The entries that could stop `actor` (or be noted): others', exclusive,
/// not released.
fn others<'l>(ledger: &'l Version, actor: &str) -> Vec<&'l Held> {
    ledger
        .entries
        .iter()
        .filter(|e| e.holder != actor && !e.shared && !e.released)
        .collect()
}

/// Report `path` touched under entry `e` at `when`.
fn report(
    l: &Ledgered,
    e: &Held,
    path: &str,
    when: Timestamp,
    commit: Option<ObjectId>,
    f: &mut Findings,
) {
    let task = e
        .task
        .as_deref()
        .map(|t| format!(", task {t}"))
        .unwrap_or_default();
    let at = commit
        .map(|c| format!(" (commit {})", &c.to_string()[..12]))
        .unwrap_or_default();
    if !lease_running(&e.lease_until, when) {
        f.notes.push(format!(
            "warning: {path}{at} was reserved by {} ({}{task}) until {}, which expired: it passes",
            e.holder, e.id, e.lease_until
        ));
        return;
    }
    let problem = format!(
        "reserved exclusively by {} ({}{task}) until {}",
        e.holder, e.id, e.lease_until
    );
    let fix = format!(
        "ask {} to release it (`git swarm release {}`), wait until {}, or leave {path} out of this change; `git swarm reservations` lists them",
        e.holder, e.id, e.lease_until
    );
    if l.mode == Enforce::Warn {
        f.notes.push(format!(
            "warning (swarm.reservations=warn): {path}{at} is {problem}"
        ));
        return;
    }
    f.violations.push(Violation {
        guard: RESERVATIONS,
        subject: path.to_string(),
        commit: commit.map(|c| c.to_string()),
        problem,
        fix,
        proposed: None,
    });
}

/// The ledger and who is acting, when an entry of someone else could stop
/// a change (the guard then counts as run).
fn judging(ctx: &Ctx, f: &mut Findings) -> Result<Option<(Ledgered, String)>> {
    let Some(l) = load(ctx)? else { return Ok(None) };
    let actor = ctx.actor_opt().ok().flatten().unwrap_or_default();
    if others(&l.ledger, &actor).is_empty() {
        return Ok(None);
    }
    f.ran(RESERVATIONS);
    Ok(Some((l, actor)))
}

/// The live exclusive reservations of someone else that cover each of
/// `paths` (repository-relative), for the agents' pre-tool-use hook: local
/// state only (the ledger as this clone knows it, see [`load`]: local, or
/// the mirror as last fetched). Empty when the guard is off or only warns.
pub fn held_by_others(ctx: &Ctx, paths: &[String]) -> Result<Vec<(String, Held)>> {
    let Some(l) = load(ctx)? else {
        return Ok(Vec::new());
    };
    if l.mode != Enforce::Enforce {
        return Ok(Vec::new());
    }
    let actor = ctx.actor_opt().ok().flatten().unwrap_or_default();
    let now = ctx.store.clock.now();
    let mut out = Vec::new();
    for e in others(&l.ledger, &actor) {
        if !lease_running(&e.lease_until, now) {
            continue;
        }
        for path in paths {
            if e.paths.iter().any(|p| covers(p, path, l.ignore_case)) {
                out.push((path.clone(), e.clone()));
            }
        }
    }
    Ok(out)
}

/// Pre-commit: the staged changes against HEAD, under each reserved path
/// (the index as the other guards read it). The changed paths are found
/// once, only in the directories the patterns name (see `changed`); each
/// pattern then looks only at those under its literal directory.
pub fn check_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    judged_on_fresh_ledger(ctx, f, |judged| judge_staged(ctx, staged, judged))
}

fn judge_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    let Some((l, actor)) = judging(ctx, f)? else {
        return Ok(());
    };
    let entries = others(&l.ledger, &actor);
    let repo = &ctx.store.repo;
    let dir = |p: &Pattern| {
        if l.ignore_case {
            String::new()
        } else {
            dir_of(p)
        }
    };
    let wanted = Wanted::new(entries.iter().flat_map(|e| &e.paths).map(dir).collect());
    let index = staged.index.as_ref().map(|i| &i.0);
    let changed = staged_changes(repo, index, staged.head_tree, &wanted)?;
    if changed.is_empty() {
        return Ok(());
    }
    let now = ctx.store.clock.now();
    for e in entries {
        for p in &e.paths {
            let d = dir(p);
            let from = changed.partition_point(|c| c.as_str() < d.as_str());
            let under = changed[from..].iter().take_while(|c| c.starts_with(&d));
            for touched in under.filter(|c| covers(p, c, l.ignore_case)) {
                report(&l, e, touched, now, None, f);
            }
        }
    }
    Ok(())
}

/// Pre-push and `check --range`: each commit against its first parent,
/// judged against the reservations live now (a committer date is whatever
/// the committer wrote, so it cannot let a commit through); `actor` and the
/// commit's author pass.
pub fn check_commits(ctx: &Ctx, commits: &[ObjectId], f: &mut Findings) -> Result<()> {
    let Some((l, actor)) = judging(ctx, f)? else {
        return Ok(());
    };
    let entries = others(&l.ledger, &actor);
    let repo = &ctx.store.repo;
    let when = ctx.store.clock.now();
    for &c in commits {
        let err = |e: &dyn std::fmt::Display| unreadable(RESERVATIONS, format!("commit {c}"), e);
        let commit = repo.find_commit(c).map_err(|e| err(&e))?;
        let tree = commit.tree_id().map_err(|e| err(&e))?.detach();
        let mut parents = Vec::new();
        for p in commit.parent_ids() {
            let parent = repo.find_commit(p.detach()).map_err(|e| err(&e))?;
            parents.push(parent.tree_id().map_err(|e| err(&e))?.detach());
        }
        let author = commit.author().map_err(|e| err(&e))?;
        let (name, email) = (author.name.to_string(), author.email.to_string());
        let local = email.split('@').next().unwrap_or("").to_string();
        for e in &entries {
            if [&name, &email, &local].iter().any(|a| **a == e.holder) {
                continue;
            }
            for p in &e.paths {
                let after = tree_files(repo, Some(tree), p, l.ignore_case)?;
                for touched in merged_changes(repo, &after, &parents, p, l.ignore_case)? {
                    report(&l, e, &touched, when, Some(c), f);
                }
            }
        }
    }
    Ok(())
}

/// The paths under `p` a commit with tree files `after` changes against
/// its first parent, less those a merge took as they were on another
/// parent: a merge brings in work its own commits carry (judged by their
/// own authors, when they are pushed), so only what differs from every
/// parent (a conflict resolved, an evil merge) is the merge author's.
fn merged_changes(
    repo: &gix::Repository,
    after: &Files,
    parents: &[ObjectId],
    p: &Pattern,
    ic: bool,
) -> Result<Vec<String>> {
    let first = tree_files(repo, parents.first().copied(), p, ic)?;
    let mut touched = differing(after, &first);
    for &other in parents.iter().skip(1) {
        if touched.is_empty() {
            break;
        }
        let theirs = tree_files(repo, Some(other), p, ic)?;
        touched.retain(|path| after.get(path) != theirs.get(path));
    }
    Ok(touched)
}

/// Pre-push: the commits each pushed ref brings that the remote's
/// tracking refs do not have (git's ref lines on `input`).
pub fn check_push(ctx: &Ctx, remote: &str, input: &str, f: &mut Findings) -> Result<()> {
    if load(ctx)?.is_none_or(|l| others(&l.ledger, "").is_empty()) {
        return Ok(());
    }
    let mut commits: Vec<ObjectId> = Vec::new();
    for line in input.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, local_sha, _, remote_sha] = fields[..] else {
            continue;
        };
        if local_sha.bytes().all(|b| b == b'0') {
            continue;
        }
        let remotes = if remote.is_empty() {
            "--remotes".to_string()
        } else {
            format!("--remotes={remote}")
        };
        let mut args = vec![local_sha, "--not", remotes.as_str()];
        if !remote_sha.bytes().all(|b| b == b'0') {
            args.push(remote_sha);
        }
        let listed = ctx.store.git.rev_list(&args).map_err(|e| {
            unreadable(
                RESERVATIONS,
                format!("the commits of {local_sha}"),
                e.message,
            )
        })?;
        for c in listed {
            let id = ObjectId::from_hex(c.as_bytes())
                .map_err(|e| unreadable(RESERVATIONS, "the pushed commits", e))?;
            if !commits.contains(&id) {
                commits.push(id);
            }
        }
    }
    judged_on_fresh_ledger(ctx, f, |judged| check_commits(ctx, &commits, judged))
}

/// Judge with `judge`; when that would refuse and there is a shared
/// remote, fetch the remote's ledger and judge again before refusing: the
/// ledger here may be older than the remote's, and a holder who released
/// since must not block. Only a refusal pays for the fetch; a failed fetch
/// is a warning and the refusal stands on this clone's copy.
fn judged_on_fresh_ledger(
    ctx: &Ctx,
    f: &mut Findings,
    judge: impl Fn(&mut Findings) -> Result<()>,
) -> Result<()> {
    let mut judged = Findings::default();
    judge(&mut judged)?;
    if !judged.violations.is_empty() {
        if let Some(coordination) = ctx.settings.remote.as_deref() {
            match crate::store::mirror::fetch_refs(&ctx.store, coordination, &[shard::PREFIX]) {
                Ok(()) => {
                    judged = Findings::default();
                    judge(&mut judged)?;
                }
                Err(e) => judged.notes.push(format!(
                    "warning: could not fetch the reservations from '{coordination}' ({}); judged on the copy this clone has",
                    e.message.lines().next().unwrap_or_default()
                )),
            }
        }
    }
    for g in judged.guards {
        f.ran(g);
    }
    f.violations.extend(judged.violations);
    f.notes.extend(judged.notes);
    Ok(())
}
