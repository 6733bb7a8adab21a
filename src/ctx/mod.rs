//! The session (L2.5): the per-command context: the open store, resolved settings, and the
//! global flags (`--as`, `--offline`). Built once by the CLI, passed down.

mod guard;

use std::path::Path;

use crate::config::{self, Settings};
use crate::error::Result;
use crate::store::Store;

pub struct Ctx {
    pub store: Store,
    pub settings: Settings,
    pub as_flag: Option<String>,
    pub offline: bool,
}

impl Ctx {
    pub fn open(
        cwd: &Path,
        as_flag: Option<String>,
        offline: bool,
        remote: Option<&str>,
    ) -> Result<Ctx> {
        let store = Store::open(cwd)?;
        let settings = Settings::load(&store, remote)?;
        Ok(Ctx {
            store,
            settings,
            as_flag,
            offline,
        })
    }

    /// Like [`Ctx::open`], ignoring a configured remote that does not exist
    /// (for read-only commands, which then show local records only).
    pub fn open_without_remote(cwd: &Path, as_flag: Option<String>, offline: bool) -> Result<Ctx> {
        let store = Store::open(cwd)?;
        let mut settings = Settings::load_for_guards(&store);
        settings.remote = None;
        Ok(Ctx {
            store,
            settings,
            as_flag,
            offline,
        })
    }

    /// Who is acting, if known.
    pub fn actor_opt(&self) -> Result<Option<String>> {
        config::identity(&self.store, self.as_flag.as_deref(), || {
            self.lane_owner_here()
        })
    }

    /// Who is acting; an error with a hint when nobody is known.
    pub fn actor(&self) -> Result<String> {
        self.actor_opt()?.ok_or_else(config::identity_missing)
    }

    /// The remote to publish to, unless `--offline`.
    pub fn remote(&self) -> Option<&str> {
        if self.offline {
            None
        } else {
            self.settings.remote.as_deref()
        }
    }

    /// The active lane whose worktree is the one we run in, if any: the
    /// checked-out branch is the lane's branch and the path is the record's
    /// path; and it is a linked worktree, or the main checkout of a clone
    /// where the lane was accepted (an acceptance there backs the record).
    /// A lane record comes from the shared remote: its `path` alone proves
    /// nothing here.
    pub fn lane_here(&self) -> Option<crate::lane::Lane> {
        self.lane_here_in(true)
    }

    fn lane_here_in(&self, main_if_accepted: bool) -> Option<crate::lane::Lane> {
        let here = std::fs::canonicalize(self.store.workdir()?).ok()?;
        let main = crate::lane::main_worktree(&self.store).ok()?;
        let in_main = std::fs::canonicalize(&main).ok().as_deref() == Some(here.as_path());
        if in_main && !main_if_accepted {
            return None;
        }
        let branch = crate::git::Git::new(&here).current_branch().ok()??;
        crate::lane::all(&self.store)
            .ok()?
            .0
            .into_iter()
            .find(|lane| {
                lane.record.is_active()
                    && lane.record.branch == branch
                    && lane.record.branch == crate::lane::branch_of(&lane.feature)
                    && std::fs::canonicalize(&lane.record.path).ok().as_deref()
                        == Some(here.as_path())
                    && (!in_main
                        || crate::packet::handoff_accepted(
                            &self.store,
                            &lane.feature,
                            &lane.record.owner,
                            &lane.record.path,
                        )
                        .unwrap_or(false))
            })
    }

    /// Identity comes from a lane only in a linked worktree.
    fn lane_owner_here(&self) -> Option<String> {
        self.lane_here_in(false).map(|lane| lane.record.owner)
    }
}
