//! The guards run by the hooks and by `git swarm check` (SPEC §5):
//! `plan-untracked`, `changeset-unique`, `attribution` and `fenced-publish`.
//! A violation names its guard, the path, line or ref, and the fix, and the
//! run exits 1 (`GUARD_FAILED`). A guard that cannot read what it needs never
//! passes by default: it fails closed with exit 4 (`GUARD_ERROR`) naming what
//! it could not read.
//!
//! The pre-commit path is hot (every commit of every agent): it opens the
//! repository once with gix, reads the index git names (`GIT_INDEX_FILE`),
//! looks up only the plan file and the changeset directory, compares them
//! with HEAD's tree at those paths, and reads other branches' trees only at
//! the changeset directory and only when a changeset is being added. It
//! spawns no git process.
//!
//! Guards use the store, the record model, the session and L0 only; their
//! caches are `store::cachefile` files. Inside,
//! each module imports only those below it in this list (this file, the
//! entry points, imports them all):
//! - `range` (`check --range`), `fenced` (pre-push), `changeset`
//!   (changeset-unique, the whole rule in one folder: `scope` → which
//!   refs, `others` → reading them through `lane_refs`, the lane-ref
//!   cache, and `cache`, the name cache);
//! - `plan_file` (plan-untracked), `attribution`;
//! - `reserved` (the reservations guard, over the staged changes or commits:
//!   `changed` finds the staged paths, `ledger` caches the ledger);
//! - `staged` (what a commit is about to record);
//! - `changeset::dir` (the changeset directory in a tree) and
//!   `changeset::name` (the pure name rules), the changeset rule's leaves,
//!   which `staged` and `range` read too;
//! - `findings` (violations, findings, the fail-closed error).

pub mod attribution;
pub mod changeset;
pub mod fenced;
pub mod findings;
pub mod plan_file;
pub mod range;
pub mod reserved;
pub mod staged;

use std::path::Path;

use crate::error::Result;
use crate::session::Ctx;

pub use self::findings::{
    unreadable, Findings, Violation, ATTRIBUTION, CHANGESET_UNIQUE, FENCED_PUBLISH, PLAN_UNTRACKED,
};

/// Open the repository the way git describes it to a hook: `GIT_DIR` (a
/// linked worktree's `.git/worktrees/<id>`) and the current directory.
pub fn open(as_flag: Option<String>) -> Result<Ctx> {
    let cwd =
        std::env::current_dir().map_err(|e| unreadable("setup", "the current directory", e))?;
    Ctx::open_for_guards(&cwd, as_flag)
}

/// `hook pre-commit` and `check --staged`: the staged changes.
pub fn pre_commit(ctx: &Ctx) -> Result<Findings> {
    let staged = staged::Staged::read(ctx)?;
    let mut f = Findings::default();
    f.ran(PLAN_UNTRACKED);
    plan_file::check_staged(ctx, &staged, &mut f)?;
    f.ran(CHANGESET_UNIQUE);
    changeset::check_staged(ctx, &staged, &mut f)?;
    reserved::check_staged(ctx, &staged, &mut f)?;
    Ok(f)
}

/// `hook commit-msg <file>`: block, strip or allow AI attribution.
pub fn commit_msg(ctx: &Ctx, file: &Path) -> Result<Findings> {
    let mut f = Findings::default();
    f.ran(ATTRIBUTION);
    attribution::check_message_file(ctx, file, &mut f)?;
    Ok(f)
}

/// `hook pre-push <remote> <url>` with git's ref lines on `input`.
pub fn pre_push(ctx: &Ctx, remote: &str, input: &str) -> Result<Findings> {
    let mut f = Findings::default();
    f.ran(FENCED_PUBLISH);
    f.ran(PLAN_UNTRACKED);
    fenced::check_push(ctx, remote, input, &mut f)?;
    reserved::check_push(ctx, remote, input, &mut f)?;
    Ok(f)
}

/// `check --range BASE..HEAD`
pub fn check_range(ctx: &Ctx, range: &str) -> Result<(Findings, range::Range)> {
    range::check(ctx, range)
}
