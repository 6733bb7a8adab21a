//! A base branch brought up to date from the remote before a decision is
//! made on it: `lane new` starts from it and `task done` judges a merge by
//! it, and the remote is where the base moves (PRs merge there, the leader
//! pushes there). A base named `<remote>/<branch>` is fetched from that
//! remote into its remote-tracking ref; a local branch (`main`) has its
//! copy on the code remote (`swarm.codeRemote`) fetched, which then counts
//! beside it. A
//! commit, a tag or an expression is not fetched. Offline, nothing is.

use super::Ctx;

/// What bringing a base up to date did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// Nothing to fetch: offline, no remote, or the base is no branch of one.
    NotRemote,
    /// Fetched: the remote-tracking ref that holds the remote's tip (None
    /// when the remote has no such branch).
    Fetched { tracking: Option<String> },
    /// The fetch failed: the decision is made on this clone's copy.
    Failed {
        remote: String,
        branch: String,
        why: String,
        /// When this clone's copy was last updated (or its tip committed).
        copy_of: Option<String>,
    },
}

impl Refreshed {
    /// The remote-tracking ref that counts beside a local base, if fetched.
    pub fn tracking(&self) -> Option<&str> {
        match self {
            Refreshed::Fetched { tracking } => tracking.as_deref(),
            _ => None,
        }
    }

    /// One line saying what the failure means for `what` (e.g. "started
    /// from"), when the fetch failed.
    pub fn warning(&self, base: &str, what: &str) -> Option<String> {
        let Refreshed::Failed {
            remote,
            branch,
            why,
            copy_of,
        } = self
        else {
            return None;
        };
        let of = copy_of
            .as_deref()
            .map(|d| format!(" as of {d}"))
            .unwrap_or_default();
        Some(format!(
            "could not fetch {branch} from {remote} ({why}); {what} this clone's copy of {base}{of}, which may be behind"
        ))
    }
}

/// The remote and branch a base lives on, and whether the base names the
/// remote-tracking ref itself (`origin/main`) rather than a local branch.
pub(crate) fn on_remote(ctx: &Ctx, base: &str) -> Option<(String, String, bool)> {
    let name = base.strip_prefix("refs/remotes/").unwrap_or(base);
    if let Some((remote, branch)) = name.split_once('/') {
        let configured = ctx.store.config(&format!("remote.{remote}.url")).is_some();
        if configured && !branch.is_empty() {
            return Some((remote.to_string(), branch.to_string(), true));
        }
    }
    if base.starts_with("refs/") && !base.starts_with("refs/heads/") {
        return None;
    }
    let branch = base.strip_prefix("refs/heads/").unwrap_or(base);
    let is_branch = ctx
        .store
        .ref_target(&format!("refs/heads/{branch}"))
        .ok()
        .flatten()
        .is_some();
    let remote = ctx.settings.code_remote.as_deref()?;
    is_branch.then(|| (remote.to_string(), branch.to_string(), false))
}

/// Fetch the remote's copy of `base` (see the module text). Never an
/// error: a failed fetch is [`Refreshed::Failed`], for the caller to say.
pub fn refresh(ctx: &Ctx, base: &str) -> Refreshed {
    if ctx.offline() {
        return Refreshed::NotRemote;
    }
    let Some((remote, branch, _)) = on_remote(ctx, base) else {
        return Refreshed::NotRemote;
    };
    let tracking = format!("refs/remotes/{remote}/{branch}");
    match ctx.store.git.fetch_branch(&remote, &branch) {
        Ok(true) => Refreshed::Fetched {
            tracking: Some(tracking),
        },
        Ok(false) => Refreshed::Fetched { tracking: None },
        Err(e) => Refreshed::Failed {
            why: crate::text::clean(e.message.lines().last().unwrap_or_default()).into_owned(),
            copy_of: copy_date(ctx, &tracking),
            remote,
            branch,
        },
    }
}

/// When the copy at `refname` was last updated here (its reflog), else
/// when its tip was committed.
fn copy_date(ctx: &Ctx, refname: &str) -> Option<String> {
    let git = &ctx.store.git;
    let stamp = git
        .run([
            "log",
            "-g",
            "-1",
            "--date=unix",
            "--format=%gd",
            refname,
            "--",
        ])
        .ok()
        .and_then(|s| {
            let (_, rest) = s.trim().split_once("@{")?;
            rest.trim_end_matches('}').parse::<i64>().ok()
        })
        .or_else(|| git.committer_time(refname).ok().flatten())?;
    jiff::Timestamp::from_second(stamp)
        .ok()
        .map(crate::clock::rfc3339)
}
