//! Closed lanes' worktrees go by themselves: every command (and `lane
//! prune`) removes, in this clone, the worktree of a lane whose record is
//! closed (removed, here or on another clone), keeping any uncommitted work
//! first as the lane's snapshot (`refs/swarm/wip/<feature>`, as `lane
//! snapshot` publishes it) and saying so. The branch stays.
//!
//! Cheap when there is nothing to do: one read of the directory git keeps
//! its linked worktrees in (`<git common dir>/worktrees/`) and of each
//! one's `HEAD` file; the lane records are read only when a worktree is on
//! a lane branch (`feat/<feature>`). The git hooks never run it. The
//! worktree the command runs inside is left for a command run elsewhere.

use std::path::{Path, PathBuf};

use crate::error::{Code, Result};
use crate::records::lane::wip::wip_ref;
use crate::session::Ctx;

/// The linked worktrees of this clone on a lane branch: (feature, path).
fn lane_worktrees(ctx: &Ctx) -> Vec<(String, PathBuf)> {
    let dir = ctx.store.common_dir().join("worktrees");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let admin = e.path();
        let Ok(head) = std::fs::read_to_string(admin.join("HEAD")) else {
            continue;
        };
        let Some(feature) = head.trim().strip_prefix("ref: refs/heads/feat/") else {
            continue;
        };
        if !crate::names::is_valid_name(feature) {
            continue;
        }
        let Ok(gitdir) = std::fs::read_to_string(admin.join("gitdir")) else {
            continue;
        };
        let Some(path) = Path::new(gitdir.trim()).parent() else {
            continue;
        };
        if path.is_dir() {
            out.push((feature.to_string(), path.to_path_buf()));
        }
    }
    out
}

/// Remove the worktrees of closed lanes in this clone; one line each for
/// the command to say (removed, with the snapshot that keeps its work; or
/// kept, and why). Never fails the command.
pub fn sweep_closed(ctx: &Ctx) -> Vec<String> {
    sweep(ctx).into_iter().map(|s| s.line).collect()
}

/// One closed lane's worktree seen by [`sweep`].
pub struct Swept {
    pub feature: String,
    /// Its worktree was removed.
    pub removed: bool,
    pub line: String,
}

/// [`sweep_closed`], saying which lane each line is about.
pub fn sweep(ctx: &Ctx) -> Vec<Swept> {
    let found = lane_worktrees(ctx);
    if found.is_empty() {
        return Vec::new();
    }
    let Ok((lanes, _)) = crate::records::lane::known(&ctx.store, ctx.settings.remote.as_deref())
    else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for (feature, path) in found {
        let Some(lane) = lanes.iter().find(|l| l.feature == feature) else {
            continue;
        };
        if lane.record.is_active() {
            continue;
        }
        if crate::session::lane::cwd_inside(&path) {
            let line = format!(
                "lane {feature} is closed; its worktree {} goes at your next git-swarm command outside it",
                path.display()
            );
            lines.push(Swept {
                feature,
                removed: false,
                line,
            });
            continue;
        }
        match close_one(ctx, &feature, &lane.record.owner, &path) {
            Ok(line) => lines.push(Swept { feature, removed: true, line }),
            Err(e) => lines.push(Swept { removed: false, line: format!(
                "lane {feature} is closed, but its worktree {} was kept: {} (remove it by hand: `git worktree remove {}`)",
                path.display(),
                e.message,
                path.display()
            ), feature }),
        }
    }
    lines
}

/// Snapshot what is uncommitted in `path` (if anything), then remove it.
fn close_one(ctx: &Ctx, feature: &str, owner: &str, path: &Path) -> Result<String> {
    let git = ctx.store.git.at(path);
    let dirty = !git
        .run(["status", "--porcelain", "--untracked-files=all"])?
        .trim()
        .is_empty();
    let kept = if dirty {
        let actor = ctx
            .actor_opt()
            .ok()
            .flatten()
            .unwrap_or_else(|| owner.to_string());
        let now = ctx.store.clock.now();
        let date = format!("@{} +0000", now.as_second());
        let exclude = vec![ctx.settings.plan_file.trim_start_matches('/').to_string()];
        let limit = crate::worktree::snapshot::limit(&ctx.store)?;
        let taken = crate::worktree::snapshot::take_at(
            &git,
            git.cwd(),
            &exclude,
            &actor,
            limit,
            &date,
            Code::SnapshotSecret,
        )?;
        match taken {
            Some(s) => {
                let id = gix::ObjectId::from_hex(s.commit.as_bytes())
                    .map_err(|e| crate::error::Error::gix("bad snapshot commit id", e))?;
                let refname = wip_ref(feature);
                let (_, published) = super::snapshot::publish(ctx, &refname, id, &actor)?;
                Some(format!(
                    "; its uncommitted work ({}) is kept as the snapshot {refname} at {}{}",
                    crate::text::count(s.paths.len(), "path", "paths"),
                    &s.commit[..12],
                    if published.is_some() {
                        ""
                    } else {
                        " (here only; `git swarm sync` publishes it)"
                    }
                ))
            }
            None => None,
        }
    } else {
        None
    };
    ctx.store.git.worktree_remove(path)?;
    Ok(format!(
        "lane {feature} is closed: removed its worktree {}{} (the branch feat/{feature} stays)",
        path.display(),
        kept.unwrap_or_default()
    ))
}
