//! Which plan, and where its file lives: the plan a command means when none
//! is named, where the worktree's plan file lives and which plan it was
//! checked out from, and writing it safely. A plan's journal is the plan
//! kind's (`records::plan::journal`).

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::Ctx;
use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;
use crate::names;
use crate::records::plan::{Plan, PREFIX, TEXT_FILE};
use crate::store::Store;

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
        Some(h) if h != plan.record.plan => match crate::records::plan::load(store, h)? {
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
        let out = store
            .git
            .at(worktree)
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
