//! `git swarm lane …` and `git swarm report …`

use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::output::Output;

use super::{not_yet, Global};

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: worktree <swarm.worktreeRoot>/<feature> on new branch feat/<feature>.
    New {
        /// Feature name: [a-z0-9][a-z0-9._-]{0,62}.
        feature: String,
        /// The plan this lane executes (default: the only plan).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Start the branch here (default: swarm.base, else the remote's default branch, else main).
        #[arg(long, value_name = "REV")]
        base: Option<String>,
        /// Who works in this lane (default: you).
        #[arg(long, value_name = "ADDR")]
        owner: Option<String>,
    },
    /// List lanes with branch, head, ahead/behind, dirty paths and last report.
    List,
    /// Remove a lane's worktree, branch and record.
    Rm {
        feature: String,
        /// Remove even with uncommitted changes or an unmerged branch.
        #[arg(long)]
        force: bool,
        /// Keep the feat/<feature> branch.
        #[arg(long)]
        keep_branch: bool,
    },
    /// Remove lanes whose branch is merged into the base.
    Prune {
        /// Only say what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub what: ReportWhat,
    /// The lane reporting (default: the lane whose worktree you are in).
    #[arg(long, value_name = "F", global = true)]
    pub lane: Option<String>,
    /// A capacity line, e.g. "ok 64% @work1".
    #[arg(long, value_name = "TEXT", global = true)]
    pub capacity: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ReportWhat {
    /// The lane's plan is written and ready.
    PlanReady,
    /// A pull request is open.
    PrOpen { url: String },
    /// Blocked: the escalation class and what it needs.
    Blocked { class: String, what: String },
    /// The lane wrote a handoff packet.
    Handoff { packet: String },
    /// The lane's work is done.
    Done,
}

pub fn run(_g: &Global, cmd: LaneCmd) -> Result<Output> {
    match cmd {
        LaneCmd::New { .. } => Err(not_yet("lane new")),
        LaneCmd::List => Err(not_yet("lane list")),
        LaneCmd::Rm { .. } => Err(not_yet("lane rm")),
        LaneCmd::Prune { .. } => Err(not_yet("lane prune")),
    }
}

pub fn report(_g: &Global, _a: ReportArgs) -> Result<Output> {
    Err(not_yet("report"))
}
