//! The session (L2.5): who acts (`--as`, the configured identity, a lane's
//! owner), where (the open store; which lane we run in, where lanes, the
//! base and the plan file live: [`lane`], [`base`], [`plan`]), the resolved
//! settings (the remotes unless `--offline`, a kind's lease) and which plan
//! a command means. Built once by the CLI ([`Ctx::open`]) or a guard
//! ([`Ctx::open_for_guards`]), passed down; a command asks it once and hands
//! the answers to its steps. No kind reader lives here: a kind's reads are
//! the kind's (`records::<kind>`, over `store::records::Records`), and worktree
//! work is [`crate::worktree`]'s, one level below.

pub mod base;
pub mod lane;
pub mod plan;

use std::path::Path;
use std::sync::Arc;

use crate::config::{self, LeaseSetting, Settings};
use crate::error::Result;
use crate::store::{CommandState, Store};

pub struct Ctx {
    pub store: Store,
    pub settings: Settings,
    pub as_flag: Option<String>,
    /// Whether this command reaches the remote, and if not, why.
    pub network: Network,
}

/// Whether a command reaches its remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// It fetches and publishes.
    Online,
    /// `--offline`: writes are kept in this clone, nothing is fetched.
    Offline,
    /// A write the push budget (`swarm.pushBudget`) holds: kept in this
    /// clone and queued, published with the queue (nothing fetched first:
    /// nobody races for it).
    Held,
}

impl Ctx {
    /// A lease length: the command's `--lease`, else `git config` of the
    /// setting's key, else its default, each read by the kind's own parser;
    /// a bad configured value is hinted at its key.
    pub fn lease(
        &self,
        flag: Option<&str>,
        setting: &LeaseSetting,
    ) -> Result<jiff::SignedDuration> {
        let LeaseSetting {
            key,
            default,
            parse,
        } = setting;
        if let Some(f) = flag {
            return parse(f, "--lease");
        }
        match self.store.config(key) {
            Some(v) => parse(&v, key).map_err(|e| e.hint(format!("fix `git config {key}`"))),
            None => parse(default, "the default lease"),
        }
    }

    /// The session of one command in `cwd`, sharing the command's state
    /// `run` (its remote operations, what it does when the remote cannot
    /// be reached, its trust notices) with every other session it opens.
    pub fn open(
        cwd: &Path,
        as_flag: Option<String>,
        network: Network,
        remote: Option<&str>,
        run: &Arc<CommandState>,
    ) -> Result<Ctx> {
        let store = Store::open_with(cwd, &config::command_line_parameters()?, run.clone())?;
        let settings = Settings::load(&store, remote)?;
        Ok(Ctx {
            store,
            settings,
            as_flag,
            network,
        }
        .with_trust_base())
    }

    /// Like [`Ctx::open`], ignoring a configured remote that does not exist
    /// (for read-only commands, which then show local records only).
    pub fn open_without_remote(
        cwd: &Path,
        as_flag: Option<String>,
        network: Network,
        run: &Arc<CommandState>,
    ) -> Result<Ctx> {
        let store = Store::open_with(cwd, &config::command_line_parameters()?, run.clone())?;
        let mut settings = Settings::load_for_guards(&store);
        settings.remote = None;
        let exists = |r: &String| store.config(&format!("remote.{r}.url")).is_some();
        settings.code_remote = settings.code_remote.filter(exists);
        Ok(Ctx {
            store,
            settings,
            as_flag,
            network,
        }
        .with_trust_base())
    }

    /// Tell the store where the trust list lives: the base branch's tip as
    /// the remote has it (its remote-tracking ref), else the local branch
    /// when there is no remote copy. Only looked up when `swarm.trust` is on.
    pub(crate) fn with_trust_base(self) -> Self {
        if self.store.trust.policy() == crate::store::trust::Policy::Off {
            return self;
        }
        let base = lane::default_base(&self);
        let exists = |r: &str| matches!(self.store.ref_target(r), Ok(Some(_)));
        // The remote's copy first (as `base::refresh` names it), then the
        // local branch.
        let mut candidates = Vec::new();
        match base::on_remote(&self, &base) {
            Some((remote, branch, _)) => {
                candidates.push(format!("refs/remotes/{remote}/{branch}"));
                candidates.push(format!("refs/heads/{branch}"));
            }
            None => {
                if let Some(remote) = self.settings.code_remote.as_deref() {
                    candidates.push(format!("refs/remotes/{remote}/{base}"));
                }
                candidates.push(match base.starts_with("refs/") {
                    true => base.clone(),
                    false => format!("refs/heads/{base}"),
                });
            }
        }
        let found = candidates.into_iter().find(|r| exists(r));
        self.store.trust.set_base(found);
        self
    }

    /// The session a guard runs in: the repository git describes to the
    /// hook (`GIT_DIR` first, like git; every failure there is exit 4, so
    /// a guard fails closed), settings that never fail to load (a guard
    /// reads only what it needs, and says so when it cannot), and no
    /// network.
    pub fn open_for_guards(cwd: &Path, as_flag: Option<String>) -> Result<Ctx> {
        let store = Store::open_with(cwd, &config::command_line_parameters()?, Arc::default())?;
        let settings = Settings::load_for_guards(&store);
        Ok(Ctx {
            store,
            settings,
            as_flag,
            network: Network::Offline,
        }
        .with_trust_base())
    }

    /// Who is acting, if known.
    pub fn actor_opt(&self) -> Result<Option<String>> {
        config::identity(&self.store, self.as_flag.as_deref(), || {
            self.lane_owner_here()
        })
    }

    /// Who is acting and where that came from (`--as`, `GIT_SWARM_AS`,
    /// `lane owner`, `swarm.as`), checked as [`Ctx::actor_opt`] checks it.
    pub fn actor_source(&self) -> Result<Option<(String, &'static str)>> {
        let found = config::identity_source(&self.store, self.as_flag.as_deref(), || {
            self.lane_owner_here()
        });
        if let Some((a, _)) = &found {
            crate::names::validate_address(a)?;
        }
        Ok(found)
    }

    /// Who is acting; an error with a hint when nobody is known.
    pub fn actor(&self) -> Result<String> {
        self.actor_opt()?.ok_or_else(config::identity_missing)
    }

    /// Whether this command does not reach the remote (`--offline`, or a
    /// write the push budget holds).
    pub fn offline(&self) -> bool {
        self.network != Network::Online
    }

    /// The remote to publish to, unless `--offline`.
    pub fn remote(&self) -> Option<&str> {
        self.reachable(self.settings.remote.as_deref())
    }

    /// The code remote to fetch branches from and push them to, unless
    /// `--offline` (or it was found unreachable, as [`Ctx::remote`]).
    pub fn code_remote(&self) -> Option<&str> {
        self.reachable(self.settings.code_remote.as_deref())
    }

    /// A configured remote, unless `--offline` or a write this run found it
    /// unreachable: then the command goes on as with `--offline` (see
    /// `mirror::Reach::keep_writes_when_unreachable`).
    fn reachable<'a>(&self, remote: Option<&'a str>) -> Option<&'a str> {
        match remote {
            _ if self.offline() => None,
            Some(r) if crate::store::mirror::gone(&self.store, r) => None,
            r => r,
        }
    }

    /// Whether the code lives on a remote other than the records: then a
    /// branch and a record cannot move in one atomic push.
    pub fn split_remotes(&self) -> bool {
        match (&self.settings.remote, &self.settings.code_remote) {
            (Some(r), Some(c)) => r != c,
            _ => false,
        }
    }
}
