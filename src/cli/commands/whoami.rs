//! `git swarm whoami`

use crate::cli::spec::{Facts, Spec};
use clap::Args;

use crate::cli::output::Output;
use crate::cli::Global;
use git_swarm::error::Result;
use git_swarm::ops::whoami::WhoAmI;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("whoami", Facts::READ)];

#[derive(Debug, Args)]
pub struct WhoamiArgs {
    /// The plan whose leader to show outside a lane's worktree (in one, the lane's plan).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
}

pub fn whoami(g: &Global, a: WhoamiArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let w = git_swarm::ops::whoami::whoami(&ctx, a.plan.as_deref())?;
    Ok(Output::new(&w, text(&w)))
}

fn text(w: &WhoAmI) -> String {
    let or = |v: &Option<String>, none: &str| v.clone().unwrap_or_else(|| none.to_string());
    let address = match (&w.address, &w.source) {
        (Some(a), Some(s)) => format!("{a} (from {s})"),
        _ => "unknown: pass --as, set GIT_SWARM_AS, or `git config swarm.as <address>`".into(),
    };
    let leader = match (&w.leader, w.epoch) {
        (Some(l), Some(e)) if w.is_leader => format!("{l}, epoch {e} (you)"),
        (Some(l), Some(e)) => format!("{l}, epoch {e} (not you)"),
        _ if w.plan.is_some() => "nobody (as this clone knows it)".into(),
        _ => "-".into(),
    };
    let key = match (&w.signing_format, &w.signing_key) {
        (Some(f), Some(k)) => format!("{f} {k}"),
        _ => "none (records are not signed)".into(),
    };
    let remote = match (&w.remote, &w.code_remote) {
        (Some(r), Some(c)) if r != c => format!("{r} (records), {c} (code)"),
        (Some(r), _) => r.clone(),
        (None, _) => "none".into(),
    };
    format!(
        "address: {address}\nlane:    {}\nplan:    {}\nleader:  {leader}\nsigning: {key} (swarm.trust {})\nremote:  {remote}{}\n",
        or(&w.lane, "- (not in a lane's worktree)"),
        or(&w.plan, "-"),
        w.trust,
        if w.offline { " (--offline)" } else { "" },
    )
}
