//! Which lane, and where lanes live: the lane we run in ([`Ctx::lane_here`],
//! the identity a lane's worktree gives), where this clone puts lanes (the
//! main worktree, `swarm.worktreeRoot`, the default base) and what a lane's
//! worktree holds ([`probe`]). Reading and writing lane records is the
//! lane kind's (`records::lane`).

use std::path::{Path, PathBuf};

use super::Ctx;
use crate::error::{Code, Error, Result};
use crate::fsutil::same_path;
use crate::records::lane::{self, Lane};
use crate::records::packet::backs_lane;
use crate::store::Store;

mod probe;

pub use probe::{cwd_inside, ignored_paths, inspect, left_behind, merged, probe, uncommitted};

/// The main worktree's root: lanes live under it, whichever worktree we run in.
pub fn main_worktree(store: &Store) -> Result<PathBuf> {
    store
        .git
        .worktree_paths()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::new(Code::GitFailed, "`git worktree list` named no worktree"))
}

/// The base a new lane starts from when `--base` is not given:
/// `swarm.base`, else the code remote's default branch (`<remote>/HEAD`,
/// else `<remote>/main`), else `main`, else the branch checked out
/// (`master`…). The code remote, not the coordination remote: that is where
/// the base branch lives (and what the trust list is read from).
pub fn default_base(ctx: &Ctx) -> String {
    if let Some(base) = &ctx.settings.base {
        return base.clone();
    }
    if let Some(remote) = ctx.settings.code_remote.as_deref() {
        if let Some(base) = remote_base(ctx, remote) {
            return base;
        }
    }
    // No remote base: main, else the branch checked out here (e.g. master).
    if let Ok(Some(_)) = ctx.store.repo.try_find_reference("refs/heads/main") {
        return "main".to_string();
    }
    if let Ok(Some(head)) = ctx.store.repo.head_name() {
        if let Some(short) = head.as_bstr().to_string().strip_prefix("refs/heads/") {
            return short.to_string();
        }
    }
    "main".to_string()
}

fn remote_base(ctx: &Ctx, remote: &str) -> Option<String> {
    let head = format!("refs/remotes/{remote}/HEAD");
    if let Ok(Some(r)) = ctx.store.repo.try_find_reference(head.as_str()) {
        if let Some(name) = r.target().try_name() {
            let name = name.as_bstr().to_string();
            if let Some(short) = name.strip_prefix("refs/remotes/") {
                return Some(short.to_string());
            }
            return Some(name);
        }
    }
    // A clone of a then-empty remote has no <remote>/HEAD: the remote's
    // main is still what "merged" means for shared work.
    let main = format!("refs/remotes/{remote}/main");
    if let Ok(Some(_)) = ctx.store.repo.try_find_reference(main.as_str()) {
        return Some(format!("{remote}/main"));
    }
    None
}

/// Where this clone puts lane `feature`'s worktree.
pub fn lane_path(ctx: &Ctx, main: &Path, feature: &str) -> PathBuf {
    let root = Path::new(&ctx.settings.worktree_root);
    let root = if root.is_absolute() {
        root.to_path_buf()
    } else {
        main.join(root)
    };
    root.join(feature)
}

/// [`lane_path`] for a lane about to be created: `swarm.worktreeRoot` must
/// lead inside the main worktree (symlinks resolved), unless
/// `swarm.worktreeRootAllowOutside` is true, and never into the git directory.
pub fn confined_lane_path(ctx: &Ctx, main: &Path, feature: &str) -> Result<PathBuf> {
    let value = &ctx.settings.worktree_root;
    let refuse = |why: &str| {
        Error::new(
            Code::ConfigInvalid,
            format!("swarm.worktreeRoot = '{}' {why}", value.escape_debug()),
        )
    };
    let path = lane_path(ctx, main, feature);
    let lexical = if Path::new(value).is_absolute() {
        Path::new(value).starts_with(main)
            && !Path::new(value)
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
    } else {
        crate::fsutil::confined_relative(value).is_some()
    };
    let inside = lexical && crate::fsutil::resolves_inside(main, &path);
    if !inside && !ctx.settings.worktree_root_allow_outside {
        return Err(refuse("leads outside the main worktree")
            .hint("use a directory inside the main worktree (default _swarm-worktrees)")
            .hint("to keep lane worktrees elsewhere on purpose, allow it: `git config swarm.worktreeRootAllowOutside true`"));
    }
    if crate::fsutil::resolves_inside(&ctx.store.common_dir(), &path)
        || crate::fsutil::resolves_inside(ctx.store.repo.git_dir(), &path)
        || Path::new(value)
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(refuse("leads into the git directory")
            .hint("use a directory of the worktree (default _swarm-worktrees)"));
    }
    Ok(path)
}

/// Where `lane new` marks a start under way (a cache in the git directory
/// shared by all worktrees): present after a kill, it tells a re-run that
/// the branch and worktree it finds were made for this lane.
pub fn start_marker(store: &Store, feature: &str) -> PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("lane-start")
        .join(feature)
}

impl Ctx {
    /// The active lane whose worktree is the one we run in, if any: the
    /// checked-out branch is the lane's branch and the path is the record's
    /// path; and it is a linked worktree, or the main checkout of a clone
    /// where the lane was accepted (an acceptance there backs the record).
    /// A lane record comes from the shared remote: its `path` alone proves
    /// nothing here.
    pub fn lane_here(&self) -> Option<Lane> {
        let here = std::fs::canonicalize(self.store.workdir()?).ok()?;
        let main = main_worktree(&self.store).ok()?;
        let in_main = std::fs::canonicalize(&main).ok().as_deref() == Some(here.as_path());
        let branch = self.store.git.at(&here).current_branch().ok()??;
        lane::all(&self.store).ok()?.0.into_iter().find(|lane| {
            lane.record.is_active()
                && lane.record.branch == branch
                && lane.record.branch == lane::branch_of(&lane.feature)
                && std::fs::canonicalize(&lane.record.path).ok().as_deref() == Some(here.as_path())
                && (!in_main
                    || backs_lane(
                        &self.store,
                        None,
                        &lane.feature,
                        &lane.record.owner,
                        &lane.record.path,
                    )
                    .unwrap_or(false))
        })
    }

    /// Identity comes from a lane only in a linked worktree: the owner of
    /// the active lane whose branch is checked out here and whose record
    /// names this path ([`Ctx::lane_here`] without the main checkout). The
    /// hooks ask on every commit, so this spawns no process and reads the
    /// one lane record the branch names (`feat/<feature>`), not every lane.
    pub(super) fn lane_owner_here(&self) -> Option<String> {
        let repo = &self.store.repo;
        if repo.kind() != gix::repository::Kind::LinkedWorkTree {
            return None;
        }
        let here = std::fs::canonicalize(self.store.workdir()?).ok()?;
        let head = repo.head_name().ok()??;
        let branch = std::str::from_utf8(head.as_bstr())
            .ok()?
            .strip_prefix("refs/heads/")?;
        let feature = branch.strip_prefix("feat/")?;
        if !crate::names::is_valid_name(feature) {
            return None;
        }
        let lane = lane::load(&self.store, feature).ok()??;
        (lane.record.is_active()
            && lane.record.branch == branch
            && std::fs::canonicalize(&lane.record.path).ok().as_deref() == Some(here.as_path()))
        .then_some(lane.record.owner)
    }

    /// Refuse with `LANE_MOVED` in the worktree this clone made for a lane
    /// (`<worktree root>/<feature>` on `feat/<feature>`) once the lane was
    /// handed over to a checkout elsewhere: its record is fetched first
    /// (when the remote answers; else the last fetched copy decides), so an
    /// old owner whose clone has not synced since cannot write into it. Any
    /// other worktree, or the lane's own, passes. What `report`, `lane
    /// snapshot`, `handoff` and the task commands check before they write.
    pub fn refuse_if_moved(&self) -> Result<()> {
        let Some(here) = self.store.workdir().map(Path::to_path_buf) else {
            return Ok(());
        };
        let Ok(Some(branch)) = self.store.git.current_branch() else {
            return Ok(());
        };
        let Some(feature) = branch
            .strip_prefix("feat/")
            .filter(|f| crate::names::is_valid_name(f))
        else {
            return Ok(());
        };
        let main = main_worktree(&self.store)?;
        if !same_path(&lane_path(self, &main, feature), &here) {
            return Ok(());
        }
        let refname = lane::lane_ref(feature);
        if let Some(remote) = self.remote() {
            // A remote that does not answer leaves the last fetched copy to decide.
            let _ = crate::store::mirror::fetch_refs(&self.store, remote, &[&refname]);
        }
        let known =
            match lane::require_newest(&self.store, self.settings.remote.as_deref(), feature) {
                Ok(l) => l,
                Err(e) if e.code == Code::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
        let worktrees = self.store.git.worktree_paths()?;
        match left_behind(self, &known, &worktrees)? {
            Some(_) => Err(moved_error(&known, &here)),
            None => Ok(()),
        }
    }

    /// The lane whose old worktree we run in, if it was handed over since.
    pub fn moved_from_here(&self) -> Option<Lane> {
        let here = self.store.workdir()?.to_path_buf();
        let worktrees = self.store.git.worktree_paths().ok()?;
        lane::all(&self.store).ok()?.0.into_iter().find(|lane| {
            left_behind(self, lane, &worktrees)
                .ok()
                .flatten()
                .is_some_and(|p| same_path(&p, &here))
        })
    }
}

/// Said where a handed-over lane's old worktree is used.
pub fn moved_error(lane: &Lane, here: &Path) -> Error {
    let r = &lane.record;
    Error::new(
        Code::LaneMoved,
        format!(
            "{} was lane {}'s worktree, but the lane was handed over: {} owns it now, at {}",
            here.display(),
            lane.feature,
            r.owner,
            r.path
        ),
    )
    .hint(format!(
        "the lane's reports, snapshots, handoffs and task writes come from there (or pass --lane {} on purpose where a command takes it)",
        lane.feature
    ))
    .hint("`git swarm lane prune` removes this old worktree once nothing in it is uncommitted (the branch stays)")
    .with_detail(serde_json::json!({ "feature": lane.feature, "owner": r.owner, "path": r.path }))
}
