//! `git swarm verify …`

use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::output::Output;

use super::{not_yet, Global};

#[derive(Debug, Subcommand)]
pub enum VerifyCmd {
    /// Verify a pull request by number or URL.
    Pr {
        /// PR number or https://github.com/OWNER/NAME/pull/N URL.
        pr: String,
        /// OWNER/NAME (default: inferred from the remote URL).
        #[arg(long, value_name = "OWNER/NAME")]
        repo: Option<String>,
        #[command(flatten)]
        opts: VerifyOpts,
    },
    /// Verify the PR of a lane's branch feat/<feature>.
    Lane {
        feature: String,
        #[arg(long, value_name = "OWNER/NAME")]
        repo: Option<String>,
        #[command(flatten)]
        opts: VerifyOpts,
    },
}

#[derive(Debug, Args)]
pub struct VerifyOpts {
    /// Exit 1 unless the verdict is this: merged or ready.
    #[arg(long, value_name = "merged|ready")]
    pub require: Option<String>,
    /// Poll until the required verdict holds, a terminal verdict, or the timeout.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait may take, e.g. 10m (default 30m).
    #[arg(long, value_name = "D")]
    pub timeout: Option<String>,
}

pub fn run(_g: &Global, _c: VerifyCmd) -> Result<Output> {
    Err(not_yet("verify"))
}
