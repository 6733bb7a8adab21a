//! `git swarm plan …`

use std::path::PathBuf;

use clap::Subcommand;
use git_swarm::error::Result;
use git_swarm::output::Output;
use git_swarm::plan;

use super::Global;

#[derive(Debug, Subcommand)]
pub enum PlanCmd {
    /// Create a plan (fails with PLAN_EXISTS if it exists).
    New {
        /// Plan name: [a-z0-9][a-z0-9._-]{0,62}.
        plan: String,
        /// One-line title (default: the name).
        #[arg(long)]
        title: Option<String>,
        /// Make this a child plan of P (shown under P in `status`).
        #[arg(long, value_name = "P")]
        parent: Option<String>,
        /// Start from this file: a PLAN.md text (at most 1 MiB), or a plan.yaml record (*.yaml, *.yml; at most 64 KiB). A regular file only: no FIFO or device.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// Show a plan's record and text.
    Show {
        plan: String,
        /// Print a pull-request body that folds the plan in (instead of committing PLAN.md).
        #[arg(long)]
        pr_body: bool,
    },
    /// List all plans (an unreadable record is listed as UNREADABLE, with a warning; exit 0).
    List,
    /// Snapshot the worktree's plan file into the plan ref, merging in what
    /// others saved since it was checked out (PLAN_SAVE_CONFLICT when both
    /// changed the same lines: nothing is saved). The plan file must be a
    /// regular file (never a symlink, FIFO or device; PLAN_FILE_UNSAFE) of
    /// at most 1 MiB.
    Save {
        /// Plan name (default: the plan of the lane you are in, or the only plan).
        plan: Option<String>,
        /// Read the plan text from this file (default: swarm.planFile at the worktree root). Named here, a symlink is followed; it must reach a regular file.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Journal message.
        #[arg(short = 'm', long = "message", value_name = "MSG")]
        message: Option<String>,
        /// Set the contract in force (packets name it; accept checks it).
        #[arg(long, value_name = "ID")]
        contract: Option<String>,
    },
    /// Write the plan text into the worktree as an untracked file. Never writes through a symlink (refused with PLAN_FILE_UNSAFE, --force or not).
    Checkout {
        /// Plan name (default: the plan of the lane you are in, or the only plan).
        plan: Option<String>,
        /// Overwrite local edits that were never saved.
        #[arg(long)]
        force: bool,
    },
    /// Print the plan's journal, newest first.
    Log { plan: String },
    /// Mark the plan finished (gc may archive it later).
    Close {
        plan: String,
        /// Close it even with active lanes or open child plans.
        #[arg(long)]
        force: bool,
    },
    /// Reopen a closed plan (the inverse of close; also brings back a plan gc archived).
    Reopen { plan: String },
}

pub fn run(g: &Global, cmd: PlanCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        PlanCmd::New {
            plan: name,
            title,
            parent,
            from,
        } => plan::new(
            &ctx,
            plan::NewPlan {
                name: &name,
                title: title.as_deref(),
                parent: parent.as_deref(),
                from: from.as_deref(),
            },
        ),
        PlanCmd::Show {
            plan: name,
            pr_body,
        } => {
            if pr_body {
                plan::pr_body(&ctx, &name)
            } else {
                plan::show(&ctx, &name)
            }
        }
        PlanCmd::List => plan::list(&ctx),
        PlanCmd::Save {
            plan: name,
            file,
            message,
            contract,
        } => plan::save(
            &ctx,
            name.as_deref(),
            file.as_deref(),
            message.as_deref(),
            contract.as_deref(),
        ),
        PlanCmd::Checkout { plan: name, force } => {
            let name = match name {
                Some(n) => n,
                None => plan::infer(&ctx)?,
            };
            plan::checkout(&ctx, &name, force)
        }
        PlanCmd::Log { plan: name } => plan::log(&ctx, &name),
        PlanCmd::Close { plan: name, force } => plan::close(&ctx, &name, force),
        PlanCmd::Reopen { plan: name } => plan::reopen(&ctx, &name),
    }
}
