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
}

pub fn demo(_g: &Global, a: DemoArgs) -> Result<Output> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot find the git-swarm binary: {e}"),
        )
    })?;
    let done = git_swarm::ops::demo::run(&exe, a.keep, &mut std::io::stderr())?;
    let mut text = format!(
        "demo complete: {} ran as expected\n",
        count(done.steps.len(), "step", "steps")
    );
    if let Some(k) = &done.kept {
        text.push_str(&format!("the repositories are kept in {k}\n"));
    }
    Ok(Output::new(&done, text))
}
