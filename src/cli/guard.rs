//! `git swarm hook …` and `git swarm check …`

use clap::Args;
use git_swarm::error::Result;
use git_swarm::output::Output;

use super::{not_yet, Global};

#[derive(Debug, Args)]
pub struct HookArgs {
    /// pre-commit, commit-msg or pre-push.
    pub hook: String,
    /// The arguments git passed to the hook.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["staged", "range"])))]
pub struct CheckArgs {
    /// Check what is staged in the index.
    #[arg(long)]
    pub staged: bool,
    /// Check every commit in BASE..HEAD.
    #[arg(long, value_name = "BASE..HEAD")]
    pub range: Option<String>,
}

pub fn hook(_g: &Global, _a: HookArgs) -> Result<Output> {
    Err(not_yet("hook"))
}

pub fn check(_g: &Global, _a: CheckArgs) -> Result<Output> {
    Err(not_yet("check"))
}
