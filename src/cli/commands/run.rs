//! `git swarm run`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::ops::run::{self, Options};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("run", Facts::WRITE)];

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan whose ready tasks get agents (default: the one plan there is, or the one checked out here).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// At most this many agents of this runner at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_lanes: usize,
    /// Exit 0 when no task is ready and none of this runner's agents works, instead of waiting for more.
    #[arg(long)]
    pub once: bool,
    /// Claim the plan's leadership first (`lead claim`).
    #[arg(long)]
    pub lead: bool,
    /// The coordinator's own account: never given to a lane.
    #[arg(long, value_name = "A")]
    pub account: Option<String>,
}

pub fn run(g: &Global, a: RunArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let plan = match a.plan {
        Some(p) => p,
        None => git_swarm::session::plan::infer(&ctx)?,
    };
    let opts = Options {
        plan,
        max_lanes: a.max_lanes.max(1),
        once: a.once,
        lead: a.lead,
        account: a.account,
    };
    let json = g.json;
    let ran = run::run(&ctx, opts, &mut |s| {
        if !json {
            say!("run: {}", s.text);
        }
    })?;
    let text = format!(
        "run of plan {}: {} agent(s) launched{}\n",
        ran.plan,
        ran.launched,
        if ran.stopped_by_signal {
            ", stopped by a signal"
        } else {
            ""
        }
    );
    Ok(Output::new(&ran, text))
}
