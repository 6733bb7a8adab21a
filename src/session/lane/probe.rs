//! Where a lane stands in this clone: its worktree, branch, base and
//! uncommitted work (`lane list`, `lane rm`, `lane prune`).

use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::{lane_path, main_worktree};
use crate::error::Result;
use crate::fsutil::same_path;
use crate::git::Git;
use crate::records::lane::{merged_state, Lane, LaneRecord, LaneState, Merged, Worktree};
use crate::records::packet::backs_lane;
use crate::session::Ctx;
use crate::store::Store;

/// Where an active lane stands in this clone (a removed one is not looked at).
pub fn inspect(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf]) -> Result<LaneState> {
    probe(ctx, lane, worktrees, false)
}

/// Where a lane stands in this clone. `leftovers`: for a removed lane too,
/// look at what an interrupted removal may have left here (its worktree,
/// its branch); its worktree is then `gone` once deleted from this clone.
pub fn probe(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf], leftovers: bool) -> Result<LaneState> {
    let r = &lane.record;
    let path = PathBuf::from(&r.path);
    let worktree = worktree_of(ctx, lane, worktrees, leftovers)?;
    let mut st = LaneState::of(&lane.feature, r, worktree);
    if matches!(worktree, Worktree::Removed | Worktree::Elsewhere) {
        return Ok(st);
    }
    let git = &ctx.store.git;
    let head = ctx.store.ref_target(&format!("refs/heads/{}", r.branch))?;
    st.head = head.map(|h| h.to_string());
    let base = git.resolve(&r.base)?;
    if let (Some(h), Some(b)) = (head, base) {
        let (ahead, behind) = git.ahead_behind(&b.to_string(), &h.to_string())?;
        st.ahead = Some(ahead);
        st.behind = Some(behind);
    }
    st.merged = Some(merged(ctx, r, head, base)?);
    if worktree == Worktree::Present {
        (st.dirty, st.plan_unsaved) = uncommitted(ctx, &r.plan, &path)?;
    }
    Ok(st)
}

fn worktree_of(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf], leftovers: bool) -> Result<Worktree> {
    let r = &lane.record;
    let path = PathBuf::from(&r.path);
    // A lane's worktree is a linked one, or the main checkout (the first
    // entry of `git worktree list`) only where an accepted handoff moved the
    // lane: a forged record may name any directory.
    let registered = worktrees.iter().skip(1).any(|w| same_path(w, &path))
        || (worktrees.first().is_some_and(|w| same_path(w, &path))
            && backs_lane(
                &ctx.store,
                ctx.settings.remote.as_deref(),
                &lane.feature,
                &r.owner,
                &r.path,
            )?);
    Ok(if !r.is_active() && !leftovers {
        Worktree::Removed
    } else if registered && path.is_dir() {
        Worktree::Present
    } else if registered {
        Worktree::Missing
    } else if !r.is_active() && made_here(ctx, lane)? {
        Worktree::Gone
    } else {
        Worktree::Elsewhere
    })
}

/// How the lane's branch (at `head`) relates to its base (at `base`).
pub fn merged(
    ctx: &Ctx,
    r: &LaneRecord,
    head: Option<ObjectId>,
    base: Option<ObjectId>,
) -> Result<Merged> {
    let Some(h) = head else {
        return Ok(merged_state(None, false, false, &r.base_commit));
    };
    let verdict = crate::records::note::has_merged_verdict(&ctx.store, h)?;
    let in_base = !verdict && base.is_some_and(|b| ctx.store.is_ancestor(h, b).unwrap_or(false));
    Ok(merged_state(head, verdict, in_base, &r.base_commit))
}

/// The lane's worktree path is where this clone puts that lane's worktree
/// (compared by its directory, which outlives the worktree).
fn made_here(ctx: &Ctx, lane: &Lane) -> Result<bool> {
    let main = main_worktree(&ctx.store)?;
    let here = lane_path(ctx, &main, &lane.feature);
    let recorded = Path::new(&lane.record.path);
    Ok(match (here.parent(), recorded.parent()) {
        (Some(a), Some(b)) => here.file_name() == recorded.file_name() && same_path(a, b),
        _ => false,
    })
}

/// Uncommitted work in a lane worktree: the paths `git status` shows (the
/// plan file, a git-excluded local copy, is not one of them), and whether
/// the plan file has edits the plan does not have.
pub fn uncommitted(ctx: &Ctx, plan: &str, path: &Path) -> Result<(Vec<String>, bool)> {
    let plan_file = ctx.settings.plan_file.trim_start_matches('/');
    let dirty = ctx
        .store
        .git
        .at(path)
        .dirty_paths()?
        .into_iter()
        .filter(|p| p != plan_file)
        .collect();
    let unsaved = match crate::session::plan::plan_file_in(ctx, path) {
        Ok(file) => plan_file_unsaved(&ctx.store, plan, &file)?,
        Err(_) => false,
    };
    Ok((dirty, unsaved))
}

/// The worktree's plan file has text that no saved version of the plan has.
/// A plan file that is a symlink, a FIFO or oversized is never read (it
/// could block, or point outside the repository) and counts as unsaved, so
/// removing the lane needs `--force`; an unreadable plan record likewise.
fn plan_file_unsaved(store: &Store, plan_name: &str, file: &Path) -> Result<bool> {
    use crate::fsutil::{read_limited, Follow, ReadError, MAX_TEXT};
    let content = match read_limited(file, Follow::No, MAX_TEXT) {
        Ok(c) => c,
        Err(ReadError::Missing) => return Ok(false),
        Err(ReadError::Io(_)) => return Ok(false),
        Err(_) => return Ok(true),
    };
    let Ok(Some(plan)) = crate::records::plan::load(store, plan_name) else {
        return Ok(true);
    };
    Ok(!crate::session::plan::is_saved_version(
        store, &plan, &content,
    )?)
}

/// The current directory is inside `path`.
pub fn cwd_inside(path: &Path) -> bool {
    let (Ok(cwd), Ok(p)) = (
        std::env::current_dir().and_then(std::fs::canonicalize),
        std::fs::canonicalize(path),
    ) else {
        return false;
    };
    cwd.starts_with(p)
}

/// The worktree this clone made for an active lane that was handed over to
/// a checkout elsewhere since (`accept` moved the lane's `path`): left
/// behind, it no longer speaks for the lane.
pub fn left_behind(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf]) -> Result<Option<PathBuf>> {
    if !lane.record.is_active() {
        return Ok(None);
    }
    let main = main_worktree(&ctx.store)?;
    let mine = lane_path(ctx, &main, &lane.feature);
    let registered = worktrees.iter().any(|w| same_path(w, &mine));
    let moved = !same_path(&mine, Path::new(&lane.record.path));
    Ok((registered && moved && mine.is_dir()).then_some(mine))
}

/// Ignored files in a worktree (`git status --ignored`): a `.env` or a
/// build output is lost when the worktree is deleted, so it keeps it.
pub fn ignored_paths(path: &Path) -> Result<Vec<String>> {
    let out = Git::new(path).run([
        "status",
        "--porcelain=v1",
        "-z",
        "--ignored=matching",
        "--untracked-files=all",
    ])?;
    Ok(out
        .split('\0')
        .filter_map(|e| e.strip_prefix("!! "))
        .map(str::to_string)
        .collect())
}
