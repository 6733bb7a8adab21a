//! `git swarm handoff`, `packets`, `packet show`, `packet withdraw`, `accept`

use std::path::PathBuf;

use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::output::Output;

use git_swarm::packet::{self, HandoffInput};

use super::Global;

#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// capacity_critical, capacity_low, context_pressure, usage_limit or lead_handover.
    #[arg(long, value_name = "R")]
    pub reason: String,
    /// The plan (default: the plan of the lane you are in, or the only plan).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// The task in progress.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub task: Option<String>,
    /// The step in progress.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub step: Option<String>,
    /// Something done (repeatable).
    #[arg(long = "done", value_name = "X", allow_hyphen_values = true)]
    pub done: Vec<String>,
    /// A verified claim with its evidence path (repeatable).
    #[arg(
        long = "verified",
        value_name = "CLAIM=EVIDENCE",
        allow_hyphen_values = true
    )]
    pub verified: Vec<String>,
    /// A gate not yet verified: the successor must re-run it (repeatable).
    #[arg(long = "unverified", value_name = "GATE", allow_hyphen_values = true)]
    pub unverified: Vec<String>,
    /// The next step, in order (repeatable).
    #[arg(long = "next", value_name = "STEP", allow_hyphen_values = true)]
    pub next: Vec<String>,
    /// An open request (repeatable).
    #[arg(long = "request", value_name = "X", allow_hyphen_values = true)]
    pub request: Vec<String>,
    /// A decision taken (repeatable).
    #[arg(long = "decision", value_name = "TEXT", allow_hyphen_values = true)]
    pub decision: Vec<String>,
    /// Also write the packet to FILE (mode 0600).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PacketsArgs {
    /// Only packets of this plan.
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Only packets not yet accepted (nor withdrawn).
    #[arg(long)]
    pub open: bool,
}

#[derive(Debug, Subcommand)]
pub enum PacketCmd {
    /// Show one packet (and its acceptance, if any).
    Show { packet_id: String },
    /// Withdraw a packet you wrote, before anyone accepted it (e.g. one
    /// written to the wrong plan): recorded on the packet ref, never
    /// deleted; a withdrawn packet refuses `accept`.
    Withdraw {
        packet_id: String,
        /// Why it is withdrawn (kept with the packet).
        #[arg(long, value_name = "R", allow_hyphen_values = true)]
        reason: String,
    },
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    pub packet_id: String,
}

pub fn handoff(g: &Global, a: HandoffArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    packet::handoff(
        &ctx,
        HandoffInput {
            reason: a.reason,
            plan: a.plan,
            task: a.task,
            step: a.step,
            done: a.done,
            verified: a.verified,
            unverified: a.unverified,
            next: a.next,
            requests: a.request,
            decisions: a.decision,
            export: a.export,
        },
    )
}

pub fn packets(g: &Global, a: PacketsArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    packet::list(&ctx, a.plan.as_deref(), a.open)
}

pub fn packet(g: &Global, c: PacketCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match c {
        PacketCmd::Show { packet_id } => packet::show(&ctx, &packet_id),
        PacketCmd::Withdraw { packet_id, reason } => packet::withdraw(&ctx, &packet_id, &reason),
    }
}

pub fn accept(g: &Global, a: AcceptArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    packet::accept(&ctx, &a.packet_id)
}
