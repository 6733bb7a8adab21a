//! `git swarm lead …`

use clap::Subcommand;
use git_swarm::error::Result;
use git_swarm::output::Output;

use git_swarm::lead::{self, Op};

use super::Global;

#[derive(Debug, Subcommand)]
pub enum LeadCmd {
    /// Claim leadership of a plan (epoch 1, or epoch+1 after a release).
    Claim {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// Ordered successors, comma-separated.
        #[arg(long, value_name = "A,B", value_delimiter = ',', required = true)]
        succession: Vec<String>,
        /// Lanes under this leader, comma-separated.
        #[arg(long, value_name = "X,Y", value_delimiter = ',')]
        lanes: Vec<String>,
        /// Lease length, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Extend the lease (leader only; epoch unchanged).
    Renew {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// Lease length from now, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
        /// Replace the lanes list (as lanes start and finish), comma-separated.
        #[arg(long, value_name = "X,Y", value_delimiter = ',')]
        lanes: Option<Vec<String>>,
    },
    /// Hand leadership to ADDR (leader only; epoch+1).
    Handover {
        addr: String,
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// The new leader's lease, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
        /// Hand over to an address that is not in the succession (it is added).
        #[arg(long)]
        force: bool,
    },
    /// Take leadership as a succession member (lease expired, or --force).
    Takeover {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        #[arg(long, value_name = "R")]
        reason: String,
        /// Take over although the lease is still live.
        #[arg(long)]
        force: bool,
        /// Your lease, e.g. 30m, 2h (default swarm.lease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Give up leadership (leader only; epoch unchanged).
    Release {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Replace the ordered succession (leader only; epoch unchanged; published at once).
    Succession {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        /// The new succession, in order, comma-separated.
        #[arg(value_name = "A,B", value_delimiter = ',', required = true)]
        succession: Vec<String>,
    },
    /// Print the leader record's journal, newest first (epochs, events, actors).
    Log {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Show the leader record.
    Status {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Exit 0 iff you are the current leader (at the remote, when there is one).
    Check {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
    },
    /// Fenced publish: push refspecs and a new lead record in one atomic push.
    Push {
        /// The plan.
        #[arg(long, value_name = "P")]
        plan: String,
        #[arg(required = true, value_name = "REFSPEC")]
        refspecs: Vec<String>,
    },
}

pub fn run(g: &Global, cmd: LeadCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        LeadCmd::Claim {
            plan,
            succession,
            lanes,
            lease,
        } => lead::run(
            &ctx,
            &plan,
            Op::Claim {
                succession,
                lanes,
                lease,
            },
        ),
        LeadCmd::Renew { plan, lease, lanes } => lead::run(&ctx, &plan, Op::Renew { lease, lanes }),
        LeadCmd::Handover {
            addr,
            plan,
            lease,
            force,
        } => lead::run(
            &ctx,
            &plan,
            Op::Handover {
                to: addr,
                lease,
                force,
            },
        ),
        LeadCmd::Takeover {
            plan,
            reason,
            force,
            lease,
        } => lead::run(
            &ctx,
            &plan,
            Op::Takeover {
                reason,
                force,
                lease,
            },
        ),
        LeadCmd::Release { plan } => lead::run(&ctx, &plan, Op::Release),
        LeadCmd::Succession { plan, succession } => {
            lead::run(&ctx, &plan, Op::Succession { succession })
        }
        LeadCmd::Log { plan } => lead::log(&ctx, &plan),
        LeadCmd::Status { plan } => lead::status(&ctx, &plan),
        LeadCmd::Check { plan } => lead::check(&ctx, &plan),
        LeadCmd::Push { plan, refspecs } => lead::run(&ctx, &plan, Op::Push { refspecs }),
    }
}
