//! The session's view of plans: which plan a command means when none is
//! named, where the worktree's plan file lives and which plan it was checked
//! out from, writing it safely, and appending to a plan's journal (how lanes
//! and packets write in a plan).

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Ctx;
use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;
use crate::model::plan::{plan_ref, Plan, PREFIX, TEXT_FILE};
use crate::names;
use crate::store::kind::{Publish, Txn};
use crate::store::remote::Tip;
use crate::store::{Event, Store};

/// The plan a command means when none is named: the plan of the lane we
/// are in, else the only plan, else a usage error listing the plans. Never
/// the plan last checked out here: a main worktree serves many plans, and
/// a guess there writes into an unrelated one.
pub fn infer(ctx: &Ctx) -> Result<String> {
    if let Some(lane) = ctx.lane_here() {
        return Ok(lane.record.plan);
    }
    let plans: Vec<String> = ctx
        .store
        .list_refs(PREFIX)?
        .into_iter()
        .map(|(r, _)| r.trim_start_matches(PREFIX).to_string())
        .collect();
    match plans.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Error::new(Code::NotFound, "there is no plan yet")
            .hint("create one with `git swarm plan new <plan>`, or `git swarm sync` to fetch the shared ones")),
        many => {
            let mut err = Error::new(
                Code::PlanAmbiguous,
                format!(
                    "{} plans exist and this is no lane's worktree: say which one ({})",
                    many.len(),
                    many.join(", ")
                ),
            )
            .hint("pass the plan: --plan P (for `plan save` and `plan checkout`, the name)");
            if let Some(held) = checked_out_here(ctx) {
                err = err.hint(format!(
                    "the plan file here was checked out from plan '{held}'"
                ));
            }
            Err(err.with_detail(serde_json::json!({ "plans": many })))
        }
    }
}

/// Where the plan file lives in this worktree.
pub fn plan_file_path(ctx: &Ctx) -> Result<PathBuf> {
    plan_file_in(ctx, &ctx.store.workdir_or_err()?)
}

/// Where the plan file lives in `worktree`: `swarm.planFile`, which must be
/// a relative path without `..` or a `.git` component, in a directory that
/// (symlinks resolved) is inside the worktree and outside the git directory.
pub fn plan_file_in(ctx: &Ctx, worktree: &Path) -> Result<PathBuf> {
    let value = &ctx.settings.plan_file;
    let refuse = |why: &str| {
        Error::new(
            Code::ConfigInvalid,
            format!("swarm.planFile = '{}' {why}", value.escape_debug()),
        )
        .hint("the plan file is a path relative to the worktree root, inside it: `git config swarm.planFile PLAN.md`")
    };
    let rel = crate::fsutil::confined_relative(value).ok_or_else(|| {
        refuse("is not a relative path inside the worktree (absolute, `..` or `.git`)")
    })?;
    let path = worktree.join(&rel);
    let dir = path.parent().unwrap_or(worktree);
    if !crate::fsutil::resolves_inside(worktree, dir) {
        return Err(refuse(
            "leads outside the worktree (through a symbolic link)",
        ));
    }
    let git_dirs = [
        ctx.store.common_dir(),
        ctx.store.repo.git_dir().to_path_buf(),
    ];
    if git_dirs
        .iter()
        .any(|g| crate::fsutil::resolves_inside(g, dir))
    {
        return Err(refuse("leads into the git directory"));
    }
    Ok(path)
}

/// Read the worktree's plan file: a regular file, never through a symlink,
/// at most [`crate::fsutil::MAX_TEXT`] bytes.
pub fn read_plan_file(path: &Path) -> Result<Vec<u8>> {
    use crate::fsutil::{self, Follow, ReadError};
    fsutil::read_limited(path, Follow::No, fsutil::MAX_TEXT).map_err(|e| match e {
        ReadError::Symlink => unsafe_plan_file(path, "is a symbolic link"),
        ReadError::NotRegular(kind) => unsafe_plan_file(path, &format!("is {kind}")),
        other => fsutil::input_error(path, other, fsutil::MAX_TEXT),
    })
}

fn unsafe_plan_file(path: &Path, what: &str) -> Error {
    Error::new(
        Code::PlanFileUnsafe,
        format!(
            "{} {what}; the plan file must be a regular file, and git-swarm neither reads nor writes through anything else",
            path.display()
        ),
    )
    .hint(format!(
        "remove it (`rm {}`) and run `git swarm plan checkout <plan>` to get the plan text back",
        path.display()
    ))
    .hint("to save text kept elsewhere on purpose, name it: `git swarm plan save <plan> --file <path>`")
}

/// Write the plan's text to `path` unless that would lose local edits:
/// a file that equals some saved version of the plan is safe to replace.
pub fn write_plan_file(store: &Store, plan: &Plan, path: &Path, force: bool) -> Result<bool> {
    let text = plan.text.clone().unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new("."));
    let holder = checked_out(store, dir);
    // Never through a symlink, with or without --force: the link may point
    // anywhere (a file outside the repository, a hook in .git).
    let existing = match std::fs::symlink_metadata(path) {
        Err(_) => None,
        Ok(_) => match read_plan_file(path) {
            Ok(bytes) => Some(bytes),
            // Too large to be a saved version: only --force replaces it.
            Err(e) if e.code == Code::FileTooLarge && force => None,
            Err(e) if e.code == Code::FileTooLarge => {
                return Err(e.hint("--force replaces it with the plan's text"))
            }
            Err(e) => return Err(e),
        },
    };
    if let Some(existing) = existing {
        if existing == text.as_bytes() {
            remember_checkout(store, dir, &plan.record.plan, plan.head.commit);
            return Ok(false);
        }
        if !force {
            refuse_unsaved(store, plan, holder, path, &existing)?;
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    // A new file renamed into place: a link made meanwhile is replaced, not
    // written through.
    crate::fsutil::replace_file(path, text.as_bytes()).map_err(|e| io_error(path, e))?;
    remember_checkout(store, dir, &plan.record.plan, plan.head.commit);
    Ok(true)
}

/// `PLAN_DIRTY` unless the file holds a saved version of this plan, or of
/// the plan it was checked out from (`holder`): replacing either loses
/// nothing.
fn refuse_unsaved(
    store: &Store,
    plan: &Plan,
    holder: Option<String>,
    path: &Path,
    existing: &[u8],
) -> Result<()> {
    let from_other = match holder.as_deref() {
        Some(h) if h != plan.record.plan => match crate::model::plan::load(store, h)? {
            Some(other) => is_saved_version(store, &other, existing)?,
            None => false,
        },
        _ => false,
    };
    if from_other || is_saved_version(store, plan, existing)? {
        return Ok(());
    }
    let owner = holder.unwrap_or_else(|| plan.record.plan.clone());
    Err(Error::new(
        Code::PlanDirty,
        format!(
            "{} has edits that plan '{owner}' does not have",
            path.display()
        ),
    )
    .hint(format!(
        "save them first with `git swarm plan save {owner}`"
    ))
    .hint("or overwrite them with --force"))
}

/// Where a worktree remembers which plan its plan file was checked out
/// from: `<worktree git dir>/swarm/plan-checkout`. A cache: when it is
/// missing, commands fall back to the lane's plan or the only plan. The
/// current worktree's git dir is known; another worktree's (a new lane's)
/// is asked of git.
fn checkout_marker(store: &Store, worktree: &Path) -> Option<PathBuf> {
    let same = store
        .workdir()
        .is_some_and(|w| std::fs::canonicalize(w).ok() == std::fs::canonicalize(worktree).ok());
    let git_dir = if same {
        store.repo.git_dir().to_path_buf()
    } else {
        let out = crate::git::Git::new(worktree)
            .run(["rev-parse", "--absolute-git-dir"])
            .ok()?;
        PathBuf::from(out.trim())
    };
    Some(git_dir.join("swarm").join("plan-checkout"))
}

/// The plan whose text the worktree's plan file was checked out from.
pub fn checked_out(store: &Store, worktree: &Path) -> Option<String> {
    checked_out_at(store, worktree).map(|(plan, _)| plan)
}

/// The plan the worktree's plan file was checked out from, and the plan
/// version (commit) it was checked out or last saved at: the merge base
/// of the next `plan save`. Older markers name only the plan.
pub fn checked_out_at(store: &Store, worktree: &Path) -> Option<(String, Option<ObjectId>)> {
    let marker = std::fs::read_to_string(checkout_marker(store, worktree)?).ok()?;
    parse_marker(&marker)
}

/// The plan and commit a checkout marker names; None when it names no valid plan.
fn parse_marker(marker: &str) -> Option<(String, Option<ObjectId>)> {
    let mut lines = marker.lines();
    let name = lines.next()?.trim();
    if !names::is_valid_name(name) {
        return None;
    }
    let commit = lines
        .next()
        .and_then(|l| ObjectId::from_hex(l.trim().as_bytes()).ok());
    Some((name.to_string(), commit))
}

/// The plan checked out in the worktree we run in.
pub fn checked_out_here(ctx: &Ctx) -> Option<String> {
    checked_out(&ctx.store, ctx.store.workdir()?)
}

/// A cache, so a failure to write it is not one: `plan save` then merges
/// against nothing older than the plan's head, as before markers had commits.
pub fn remember_checkout(store: &Store, worktree: &Path, plan: &str, commit: ObjectId) {
    if let Some(marker) = checkout_marker(store, worktree) {
        if let Some(dir) = marker.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(marker, format!("{plan}\n{commit}\n"));
    }
}

/// Whether `content` is the text of some version in the plan's journal.
pub fn is_saved_version(store: &Store, plan: &Plan, content: &[u8]) -> Result<bool> {
    let walk = store.journal(plan.head.commit, None)?;
    for entry in walk {
        let id = ObjectId::from_hex(entry.commit.as_bytes())
            .map_err(|e| Error::gix("bad commit id", e))?;
        if store.blob_at(id, TEXT_FILE)?.as_deref() == Some(content) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The plan's local head, and the head to build on: the local one, unless
/// it is missing or behind the remote's published one (never dropping
/// unpublished local saves). Part of [`journal`]; `accept` checks contracts
/// against it too.
pub fn newest_head(ctx: &Ctx, plan: &str) -> Result<(Option<ObjectId>, Option<ObjectId>)> {
    let store = &ctx.store;
    let refname = plan_ref(plan);
    let local = store.ref_target(&refname)?;
    let published = match ctx.remote() {
        Some(r) => store.ref_target(&crate::store::mirror::mirror_ref(r, &refname))?,
        None => None,
    };
    let base = match (local, published) {
        (None, p) => p,
        (Some(l), Some(p)) if l != p && store.is_ancestor(l, p)? => Some(p),
        (l, _) => l,
    };
    Ok((local, base))
}

/// A plan another clone published and this one has not taken yet: fetch
/// it and catch the local ref up (as `sync` would), so that a command
/// naming it works without a `sync` first. Offline, or when the remote
/// cannot be reached, nothing changes (the command then says what is
/// missing).
pub fn catch_up(ctx: &Ctx, plan: &str) -> Result<()> {
    let refname = plan_ref(plan);
    let Some(remote) = ctx.remote() else {
        return Ok(());
    };
    if ctx.store.ref_target(&refname)?.is_some() {
        return Ok(());
    }
    if crate::store::mirror::fetch_refs(&ctx.store, remote, &[&refname]).is_err() {
        return Ok(());
    }
    let mirrored = crate::store::mirror::mirror_ref(remote, &refname);
    if let Some(published) = ctx.store.ref_target(&mirrored)? {
        crate::store::remote::adopt(
            &ctx.store,
            &refname,
            published,
            "git-swarm",
            "take the published plan",
        )?;
    }
    Ok(())
}

/// How many times [`journal`] re-reads a plan that another writer moved.
const JOURNAL_ATTEMPTS: usize = 20;

/// Append `event` to the plan's journal: a commit with the plan's own tree
/// whose parent is the plan's head, moved in with a compare-and-swap. This
/// is how lanes and packets write in a plan.
///
/// - `on: Some(head)`: exactly on that head, the one the caller decided on
///   (e.g. "this plan has no executor"); a plan that moved since is
///   `CAS_FAILED` (exit 3) and nothing is written.
/// - `on: None`: on the newest head known here (the local ref, or the
///   remote's published one when the local ref is missing or behind it, so
///   unpublished local saves are never dropped), re-read and tried again
///   when another writer wins.
///
/// `once`: a trailer (`("Swarm-Packet", id)`) that makes the entry
/// idempotent: when the journal already has an entry of this kind carrying
/// it, nothing is written (a local ref behind that entry catches up).
///
/// Returns the commit written, or None when `once` found the entry there.
///
/// The store's one publish operation run locally ([`Publish`] without a remote),
/// not `Records::update`: the new version's parent may be the published
/// head rather than the local ref, and its tree is the head's, byte for byte.
pub fn journal(
    ctx: &Ctx,
    plan: &str,
    event: &Event,
    on: Option<ObjectId>,
    once: Option<(&str, &str)>,
) -> Result<Option<ObjectId>> {
    let refname = plan_ref(plan);
    let attempts = if on.is_some() { 1 } else { JOURNAL_ATTEMPTS };
    let exhausted = |lines: &[String]| match on {
        // On the head the caller decided on: the lost race itself.
        Some(_) => Error::new(Code::CasFailed, lines.join("\n"))
            .hint("run the command again: it will start from the new value"),
        None => Error::new(
            Code::CasFailed,
            format!("plan '{plan}' kept changing; its journal entry was not written"),
        )
        .hint("run the command again: it completes what is missing"),
    };
    let done = Publish::new(&ctx.store, None)
        .attempts(attempts)
        .exhausted(exhausted)
        .run(|txn| {
            let (local, base) = match on {
                Some(head) => (Some(head), Some(head)),
                None => newest_head(ctx, plan)?,
            };
            let Some(base) = base else {
                return Err(Error::new(
                    Code::NotFound,
                    format!("plan '{plan}' does not exist here"),
                )
                .hint("run `git swarm sync` to fetch the shared plans"));
            };
            journal_step(txn, &refname, event, Tip::local(local), base, once)
        })?;
    Ok(done.then)
}

/// One round of [`journal`] on `base`, moving the ref from `tip.local`.
fn journal_step(
    txn: &mut Txn<'_>,
    refname: &str,
    event: &Event,
    tip: Tip,
    base: ObjectId,
    once: Option<(&str, &str)>,
) -> Result<Option<ObjectId>> {
    let store = txn.store();
    let actor = &event.actor;
    if let Some((key, value)) = once {
        let found = store.journal(base, None)?.iter().any(|e| {
            e.event == event.kind && e.trailers.get(key).map(String::as_str) == Some(value)
        });
        if found && tip.local != Some(base) {
            txn.write_on(refname, tip, base, actor, "catch up");
        }
        if found {
            return Ok(None);
        }
    }
    let tree = store.commit_tree(base)?;
    let commit = store.commit(tree, &[base], event)?;
    txn.write_on(refname, tip, commit, actor, &event.summary);
    Ok(Some(commit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_names_a_plan_and_maybe_a_commit() {
        assert_eq!(parse_marker("p\n"), Some(("p".into(), None)));
        let id = "1111111111111111111111111111111111111111";
        let (plan, commit) = parse_marker(&format!("p\n{id}\n")).unwrap();
        assert_eq!(plan, "p");
        assert_eq!(commit.map(|c| c.to_string()).as_deref(), Some(id));
        assert_eq!(parse_marker("p\nnot-hex\n"), Some(("p".into(), None)));
        assert_eq!(parse_marker("../x\n"), None);
        assert_eq!(parse_marker(""), None);
    }
}
