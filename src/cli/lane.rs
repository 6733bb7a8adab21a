//! `git swarm lane …` and `git swarm report …`

use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::lane::{self, ReportKind};
use git_swarm::output::Output;

use super::Global;

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: worktree <swarm.worktreeRoot>/<feature> on new branch feat/<feature>. Run it again to finish a start that was interrupted.
    New {
        /// Feature name: [a-z0-9][a-z0-9._-]{0,62}.
        feature: String,
        /// The plan this lane executes (default: the only plan; with several, say which).
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
    List {
        /// Also show removed lanes.
        #[arg(long)]
        all: bool,
    },
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
    /// Remove this clone's lanes whose branch is merged into the base
    /// (ancestry, or a recorded merged verdict) and whose worktree is clean,
    /// and the clean old worktrees of lanes handed over elsewhere.
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
    Blocked {
        /// The escalation class (one word).
        class: String,
        /// What it needs (the rest of the line).
        #[arg(required = true, num_args = 1..)]
        what: Vec<String>,
    },
    /// The lane wrote a handoff packet.
    Handoff { packet: String },
    /// The lane's work is done.
    Done,
}

pub fn run(g: &Global, cmd: LaneCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        LaneCmd::New {
            feature,
            plan,
            base,
            owner,
        } => lane::new(
            &ctx,
            lane::NewLane {
                feature: &feature,
                plan: plan.as_deref(),
                base: base.as_deref(),
                owner: owner.as_deref(),
            },
        ),
        LaneCmd::List { all } => lane::list(&ctx, all),
        LaneCmd::Rm {
            feature,
            force,
            keep_branch,
        } => lane::rm(&ctx, &feature, force, keep_branch),
        LaneCmd::Prune { dry_run } => lane::prune(&ctx, dry_run),
    }
}

pub fn report(g: &Global, a: ReportArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let kind = match a.what {
        ReportWhat::PlanReady => ReportKind::PlanReady,
        ReportWhat::PrOpen { url } => ReportKind::PrOpen(url),
        ReportWhat::Blocked { class, what } => ReportKind::Blocked {
            class,
            what: what.join(" "),
        },
        ReportWhat::Handoff { packet } => ReportKind::Handoff(packet),
        ReportWhat::Done => ReportKind::Done,
    };
    let out = lane::report(&ctx, a.lane.as_deref(), kind, a.capacity.as_deref())?;
    if let Some(warnings) = out.json["warnings"].as_array() {
        for w in warnings.iter().filter_map(|w| w.as_str()) {
            eprintln!("warning: {w}");
        }
    }
    Ok(out)
}
