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

pub mod attribution;
pub mod cache;
pub mod changeset;
pub mod fenced;
pub mod lane_refs;
pub mod plan_file;
pub mod range;
pub mod staged;

use std::fmt::Display;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::Settings;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::output::Output;
use crate::store::Store;

pub const PLAN_UNTRACKED: &str = "plan-untracked";
pub const CHANGESET_UNIQUE: &str = "changeset-unique";
pub const ATTRIBUTION: &str = "attribution";
pub const FENCED_PUBLISH: &str = "fenced-publish";

/// One broken rule.
#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub guard: &'static str,
    /// What it is about: a path, a commit-message line, or a ref.
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub problem: String,
    pub fix: String,
    /// changeset-unique: a name that is free everywhere it was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<String>,
}

/// What a guard run found.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    pub guards: Vec<&'static str>,
    pub violations: Vec<Violation>,
    /// Things done or worth knowing that are not violations (e.g. stripped lines).
    pub notes: Vec<String>,
}

impl Findings {
    fn ran(&mut self, guard: &'static str) {
        if !self.guards.contains(&guard) {
            self.guards.push(guard);
        }
    }

    /// Exit 0 with a summary, or `GUARD_FAILED` (exit 1) listing every violation.
    pub fn into_output(self, refused: &str, text_ok: String) -> Result<Output> {
        if self.violations.is_empty() {
            let json = serde_json::json!({
                "ok": true,
                "guards": self.guards,
                "notes": self.notes,
            });
            return Ok(Output::new(json, text_ok));
        }
        let n = self.violations.len();
        let mut msg = format!(
            "{refused}: {n} guard violation{}",
            if n == 1 { "" } else { "s" }
        );
        for v in &self.violations {
            let at = v
                .commit
                .as_deref()
                .map(|c| format!(" (commit {})", &c[..c.len().min(12)]))
                .unwrap_or_default();
            msg.push_str(&format!(
                "\n  [{}] {}{at}: {}\n    fix: {}",
                v.guard, v.subject, v.problem, v.fix
            ));
        }
        Err(Error::check("GUARD_FAILED", msg)
            .hint("the guards are described in the README, section \"Hooks and guards\"")
            .with_detail(serde_json::json!({
                "guards": self.guards,
                "violations": self.violations,
                "notes": self.notes,
            })))
    }
}

/// A guard could not run: fail closed (exit 4), naming what it could not read.
pub fn unreadable(guard: &str, what: impl Display, err: impl Display) -> Error {
    Error::env(
        "GUARD_ERROR",
        format!("guard {guard} could not read {what}: {err}"),
    )
    .hint("nothing was checked, so nothing passes: fix the cause and run again")
}

/// Open the repository the way git describes it to a hook: `GIT_DIR` (a
/// linked worktree's `.git/worktrees/<id>`) and the current directory.
pub fn open(as_flag: Option<String>) -> Result<Ctx> {
    let cwd =
        std::env::current_dir().map_err(|e| unreadable("setup", "the current directory", e))?;
    // The one way git-swarm opens a repository (GIT_DIR first, like git);
    // every failure there is exit 4, so a guard fails closed.
    let store = Store::open(&cwd)?;
    let settings = Settings::load_for_guards(&store);
    Ok(Ctx {
        store,
        settings,
        as_flag,
        offline: true,
    })
}

/// The index git tells the hook to read: `GIT_INDEX_FILE` (a temporary index
/// for `git commit -a` / `git commit -- path`, relative to the worktree root),
/// else the worktree's own index.
pub fn index_path(repo: &gix::Repository) -> PathBuf {
    match std::env::var_os("GIT_INDEX_FILE").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
            }
        }
        None => repo.index_path(),
    }
}

/// `hook pre-commit` and `check --staged`: the staged changes.
pub fn pre_commit(ctx: &Ctx) -> Result<Findings> {
    let staged = staged::Staged::read(ctx)?;
    let mut f = Findings::default();
    f.ran(PLAN_UNTRACKED);
    plan_file::check_staged(ctx, &staged, &mut f)?;
    f.ran(CHANGESET_UNIQUE);
    changeset::check_staged(ctx, &staged, &mut f)?;
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
    Ok(f)
}

/// `check --range BASE..HEAD`
pub fn check_range(ctx: &Ctx, range: &str) -> Result<(Findings, range::Range)> {
    range::check(ctx, range)
}
