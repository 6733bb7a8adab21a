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
//! The hot path: the ledger ref is looked up first, and when there is none,
//! or no entry of someone else, nothing else is read. Otherwise only the
//! index range and HEAD's subtree under each reserved path are compared.
//! No process is spawned (pre-push and `check --range` list commits with
//! git, as their other guards do).

use std::collections::BTreeMap;

use gix::bstr::{BStr, ByteSlice};
use gix::ObjectId;
use jiff::Timestamp;

use super::findings::{unreadable, Findings, Violation};
use super::staged::Staged;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::model::reservation::{covers, parse_ledger, Enforce, Entry, Ledger, Pattern, Shape};
use crate::model::reservation::{LEDGER_REF, RECORD_FILE};

pub const RESERVATIONS: &str = "reservations";

/// Blob id and mode of each file under a pattern.
type Files = BTreeMap<String, (ObjectId, u32)>;

/// The guard's setting and the ledger, when there is anything to judge.
pub struct Ledgered {
    pub mode: Enforce,
    pub ledger: Ledger,
    pub ignore_case: bool,
}

fn read_ledger_at(repo: &gix::Repository, tip: ObjectId) -> Result<Ledger> {
    let what = || format!("{LEDGER_REF}:{RECORD_FILE}");
    let commit = repo
        .find_commit(tip)
        .map_err(|e| unreadable(RESERVATIONS, what(), e))?;
    let tree = commit
        .tree()
        .map_err(|e| unreadable(RESERVATIONS, what(), e))?;
    let entry = tree
        .lookup_entry_by_path(RECORD_FILE)
        .map_err(|e| unreadable(RESERVATIONS, what(), e))?
        .ok_or_else(|| unreadable(RESERVATIONS, what(), "the file is missing"))?;
    let blob = entry
        .object()
        .map_err(|e| unreadable(RESERVATIONS, what(), e))?;
    parse_ledger(&blob.data).map_err(|e| unreadable(RESERVATIONS, what(), e.message))
}

/// The setting, and the ledger (the local one, or the last fetched one when
/// it is further on). None when the guard is off or there is no ledger.
pub fn load(ctx: &Ctx) -> Result<Option<Ledgered>> {
    let store = &ctx.store;
    let mode = Enforce::parse(store.config("swarm.reservations").as_deref());
    if mode == Enforce::Off {
        return Ok(None);
    }
    let mut tips = Vec::new();
    let local = store
        .ref_target(LEDGER_REF)
        .map_err(|e| unreadable(RESERVATIONS, LEDGER_REF, e.message))?;
    tips.extend(local);
    if let Some(remote) = ctx.settings.remote.as_deref() {
        let mirror = crate::store::mirror::mirror_ref(remote, LEDGER_REF);
        let published = store
            .ref_target(&mirror)
            .map_err(|e| unreadable(RESERVATIONS, &mirror, e.message))?;
        tips.extend(published.filter(|p| Some(*p) != local));
    }
    let mut best: Option<Ledger> = None;
    for tip in tips {
        let ledger = read_ledger_at(&store.repo, tip)?;
        if best.as_ref().is_none_or(|b| ledger.next >= b.next) {
            best = Some(ledger);
        }
    }
    let ignore_case = store
        .repo
        .config_snapshot()
        .boolean("core.ignoreCase")
        .unwrap_or(false);
    Ok(best.map(|ledger| Ledgered {
        mode,
        ledger,
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
fn others<'l>(ledger: &'l Ledger, actor: &str) -> Vec<&'l Entry> {
    ledger
        .entries
        .iter()
        .filter(|e| e.holder != actor && !e.shared && e.released_at.is_none())
        .collect()
}

/// Report `path` touched under entry `e` at `when`.
fn report(
    l: &Ledgered,
    e: &Entry,
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
    if !e.live(when) {
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

/// Pre-commit: the staged changes against HEAD, under each reserved path
/// (the index as the other guards read it).
pub fn check_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    let Some(l) = load(ctx)? else { return Ok(()) };
    let actor = ctx.actor_opt().ok().flatten().unwrap_or_default();
    let entries = others(&l.ledger, &actor);
    if entries.is_empty() {
        return Ok(());
    }
    f.ran(RESERVATIONS);
    let repo = &ctx.store.repo;
    let index = staged.index.as_ref().map(|i| &i.0);
    let head_tree = match repo.head_commit() {
        Ok(c) => Some(
            c.tree_id()
                .map_err(|e| unreadable(RESERVATIONS, "HEAD's tree", e))?
                .detach(),
        ),
        Err(_) => None,
    };
    let now = ctx.store.clock.now();
    // Every reserved path looks up its directory in HEAD: keep decoded trees.
    let mut repo = repo.clone();
    repo.object_cache_size(Some(4 << 20));
    let repo = &repo;
    let mut head_dirs = BTreeMap::new();
    for e in entries {
        for p in &e.paths {
            if unchanged_dir(repo, index, head_tree, p, l.ignore_case, &mut head_dirs)? {
                continue;
            }
            let in_index = index_files(index, p, l.ignore_case);
            let head = tree_files(repo, head_tree, p, l.ignore_case)?;
            for touched in differing(&in_index, &head) {
                report(&l, e, &touched, now, None, f);
            }
        }
    }
    Ok(())
}

/// Whether nothing under the pattern's directory is staged: the index's
/// cache tree for that directory is valid and is HEAD's tree there (as
/// `git diff --cached` skips such a directory). Only then is it skipped.
fn unchanged_dir(
    repo: &gix::Repository,
    index: Option<&gix::index::File>,
    head_tree: Option<ObjectId>,
    p: &Pattern,
    ic: bool,
    memo: &mut BTreeMap<String, Option<ObjectId>>,
) -> Result<bool> {
    let (Some(index), Some(head_tree)) = (index, head_tree) else {
        return Ok(false);
    };
    let dir = dir_of(p);
    if ic || dir.is_empty() {
        return Ok(false);
    }
    let Some(cached) = cached_tree_id(index, &dir) else {
        return Ok(false);
    };
    let head = match memo.get(&dir) {
        Some(id) => *id,
        None => {
            let err =
                |e: &dyn std::fmt::Display| unreadable(RESERVATIONS, format!("{dir} in HEAD"), e);
            let root = repo.find_tree(head_tree).map_err(|e| err(&e))?;
            let id = root
                .lookup_entry_by_path(dir.trim_end_matches('/'))
                .map_err(|e| err(&e))?
                .filter(|e| e.mode().is_tree())
                .map(|e| e.object_id());
            memo.insert(dir.clone(), id);
            id
        }
    };
    Ok(head == Some(cached))
}

/// The cache tree's id for `dir` (`a/b/`), when that entry is valid.
fn cached_tree_id(index: &gix::index::File, dir: &str) -> Option<ObjectId> {
    let mut node = index.tree()?;
    for seg in dir.split('/').filter(|s| !s.is_empty()) {
        node = node
            .children
            .iter()
            .find(|c| c.name.as_slice() == seg.as_bytes())?;
    }
    node.num_entries.map(|_| node.id)
}

fn index_files(index: Option<&gix::index::File>, p: &Pattern, ic: bool) -> Files {
    let mut out = Files::new();
    let Some(index) = index else { return out };
    let dir = if ic { String::new() } else { dir_of(p) };
    let range = if dir.is_empty() {
        Some(0..index.entries().len())
    } else {
        index.prefixed_entries_range(dir.as_bytes().as_bstr())
    };
    let Some(range) = range else { return out };
    for e in &index.entries()[range] {
        if e.stage_raw() != 0 || e.flags.contains(gix::index::entry::Flags::INTENT_TO_ADD) {
            continue;
        }
        let name: &BStr = e.path(index);
        let name = name.to_str_lossy();
        if covers(p, &name, ic) {
            out.insert(name.into_owned(), (e.id, e.mode.bits()));
        }
    }
    out
}

/// Pre-push and `check --range`: each commit against its first parent,
/// judged against the reservations live now (a committer date is whatever
/// the committer wrote, so it cannot let a commit through); `actor` and the
/// commit's author pass.
pub fn check_commits(ctx: &Ctx, commits: &[ObjectId], f: &mut Findings) -> Result<()> {
    let Some(l) = load(ctx)? else { return Ok(()) };
    let actor = ctx.actor_opt().ok().flatten().unwrap_or_default();
    let entries = others(&l.ledger, &actor);
    if entries.is_empty() {
        return Ok(());
    }
    f.ran(RESERVATIONS);
    let repo = &ctx.store.repo;
    let when = ctx.store.clock.now();
    for &c in commits {
        let err = |e: &dyn std::fmt::Display| unreadable(RESERVATIONS, format!("commit {c}"), e);
        let commit = repo.find_commit(c).map_err(|e| err(&e))?;
        let tree = commit.tree_id().map_err(|e| err(&e))?.detach();
        let parent = match commit.parent_ids().next() {
            Some(p) => Some(
                repo.find_commit(p.detach())
                    .map_err(|e| err(&e))?
                    .tree_id()
                    .map_err(|e| err(&e))?
                    .detach(),
            ),
            None => None,
        };
        let author = commit.author().map_err(|e| err(&e))?;
        let (name, email) = (author.name.to_string(), author.email.to_string());
        let local = email.split('@').next().unwrap_or("").to_string();
        for e in &entries {
            if [&name, &email, &local].iter().any(|a| **a == e.holder) {
                continue;
            }
            for p in &e.paths {
                let after = tree_files(repo, Some(tree), p, l.ignore_case)?;
                let before = tree_files(repo, parent, p, l.ignore_case)?;
                for touched in differing(&after, &before) {
                    report(&l, e, &touched, when, Some(c), f);
                }
            }
        }
    }
    Ok(())
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
    check_commits(ctx, &commits, f)
}
