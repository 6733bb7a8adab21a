//! Settings from `git config swarm.*` resolved once per command, and the
//! identity rule of SPEC §2: `--as` > `GIT_SWARM_AS` > `swarm.as` > the owner
//! of the lane whose worktree we are in.

use crate::error::{Error, Result};
use crate::names;
use crate::store::Store;

/// Every `swarm.*` key, its default and what it does; the README table and
/// `git swarm init --json` are generated from this list.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "swarm.as",
        "(unset)",
        "your address, used when --as and GIT_SWARM_AS are not given, outside a lane worktree (inside one, the lane's owner)",
    ),
    (
        "swarm.remote",
        "origin, when it exists",
        "the shared remote that records sync through",
    ),
    (
        "swarm.base",
        "the remote's default branch, else main",
        "base branch for new lanes and for guards",
    ),
    (
        "swarm.worktreeRoot",
        "_swarm-worktrees",
        "where lane worktrees are created, relative to the main worktree (or absolute); it must lead inside the main worktree",
    ),
    (
        "swarm.worktreeRootAllowOutside",
        "false",
        "true allows a swarm.worktreeRoot outside the main worktree (never inside .git)",
    ),
    (
        "swarm.planFile",
        "PLAN.md",
        "the plan file kept untracked in each worktree: a relative path inside it (no .., no .git); never a symlink",
    ),
    (
        "swarm.changesetDir",
        ".changeset",
        "directory whose *.md files must have unique names",
    ),
    (
        "swarm.reservedChangesets",
        "pr-<N>-review.md",
        "comma-separated reserved changeset patterns; <N> is any number, * any text",
    ),
    (
        "swarm.attribution",
        "block",
        "AI attribution trailers in commit messages: block, strip or allow",
    ),
    (
        "swarm.protect",
        "(unset)",
        "refs that only `lead push` may move (multi-valued, e.g. refs/heads/main); `init` adds the base branch unless --no-protect",
    ),
    (
        "swarm.holdPattern",
        "Auto-merge withheld",
        "a PR comment matching this regex, newer than the head, holds the merge",
    ),
    (
        "swarm.lease",
        "30m",
        "default leader lease for lead claim/renew/takeover",
    ),
    (
        "swarm.gcAge",
        "14d",
        "gc archives finished records whose last change is older than this",
    ),
    (
        "swarm.gcThreshold",
        "2000",
        "sync runs gc first when there are more live swarm refs than this",
    ),
];

#[derive(Debug, Clone)]
pub struct Settings {
    pub remote: Option<String>,
    pub base: Option<String>,
    pub worktree_root: String,
    /// `swarm.worktreeRootAllowOutside`: lane worktrees may live outside
    /// the main worktree.
    pub worktree_root_allow_outside: bool,
    pub plan_file: String,
    pub changeset_dir: String,
}

impl Settings {
    pub fn load(store: &Store, remote_override: Option<&str>) -> Result<Settings> {
        let settings = Self::read(store, remote_override);
        if let Some(r) = &settings.remote {
            if store.config(&format!("remote.{r}.url")).is_none() {
                return Err(Error::usage("REMOTE_MISSING", format!("remote '{r}' does not exist"))
                    .hint(format!("add it with `git remote add {r} <url>`, or set swarm.remote to an existing remote")));
            }
        }
        Ok(settings)
    }

    /// The settings for the hooks and `check`, without validating the
    /// remote: the guards never publish and only glob `refs/remotes/*/…`,
    /// and a guard must not block a commit over a setting it does not need
    /// (SPEC §5). A remote that does not exist simply has no refs here.
    pub fn load_for_guards(store: &Store) -> Settings {
        Self::read(store, None)
    }

    fn read(store: &Store, remote_override: Option<&str>) -> Settings {
        let remote = match remote_override {
            Some(r) => Some(r.to_string()),
            None => match store.config("swarm.remote") {
                Some(r) => Some(r),
                None => {
                    if store.config("remote.origin.url").is_some() {
                        Some("origin".to_string())
                    } else {
                        None
                    }
                }
            },
        };
        Settings {
            remote,
            base: store.config("swarm.base"),
            worktree_root: store
                .config("swarm.worktreeRoot")
                .unwrap_or_else(|| "_swarm-worktrees".to_string()),
            worktree_root_allow_outside: store
                .repo
                .config_snapshot()
                .boolean("swarm.worktreeRootAllowOutside")
                .unwrap_or(false),
            plan_file: store
                .config("swarm.planFile")
                .unwrap_or_else(|| "PLAN.md".to_string()),
            changeset_dir: store
                .config("swarm.changesetDir")
                .unwrap_or_else(|| ".changeset".to_string())
                .trim_end_matches('/')
                .to_string(),
        }
    }
}

/// Resolve who is acting: `--as`, else `GIT_SWARM_AS`, else (inside a lane
/// worktree) the lane's owner, else `swarm.as`. The lane owner comes before
/// `swarm.as` because that setting is repository-wide: it is shared by every
/// worktree, so above the owner it would journal every lane's reports as
/// whoever set it (the coordinator).
pub fn identity(
    store: &Store,
    flag: Option<&str>,
    lane_owner: impl FnOnce() -> Option<String>,
) -> Result<Option<String>> {
    let found = match flag {
        Some(a) => Some(a.to_string()),
        None => match std::env::var("GIT_SWARM_AS").ok().filter(|v| !v.is_empty()) {
            Some(a) => Some(a),
            None => lane_owner().or_else(|| store.config("swarm.as")),
        },
    };
    if let Some(a) = &found {
        names::validate_address(a)?;
    }
    Ok(found)
}

pub fn identity_missing() -> Error {
    Error::usage("IDENTITY_MISSING", "this command needs to know who you are")
        .hint("pass --as <address> or set GIT_SWARM_AS (per process: right for an agent in a lane)")
        .hint("or `git config swarm.as <address>`: repository-wide, shared by every worktree; inside a lane worktree the lane's owner comes first")
}
