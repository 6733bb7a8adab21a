//! `git swarm demo`.

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("demo", Facts::APART)];

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the throwaway repositories and print where they are.
    #[arg(long)]
    pub keep: bool,
    /// Run the method's drill instead: two clones, two `run --lead`
    /// runners, four Claude Code accounts (the CLI must be on PATH or named
    /// by GIT_SWARM_CLAUDE), each talking to a scripted model on 127.0.0.1;
    /// a handoff, an agent killed, the coordinator's runner killed.
    #[arg(long)]
    pub agents: bool,
}

pub fn demo(_g: &Global, a: DemoArgs) -> Result<Output> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot find the git-swarm binary: {e}"),
        )
    })?;
    let done = git_swarm::ops::demo::run(&exe, a.keep, a.agents, &mut std::io::stderr())?;
    let mut text = format!(
        "demo complete: {} ran as expected\n",
        count(done.steps.len(), "step", "steps")
    );
    if let Some(k) = &done.kept {
        text.push_str(&format!("the repositories are kept in {k}\n"));
    }
    Ok(Output::new(&done, text))
}
