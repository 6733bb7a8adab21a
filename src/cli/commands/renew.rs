//! `git swarm renew`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::ops::renew::{self, Renewed};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("renew", Facts::WRITE)];

#[derive(Debug, Args)]
pub struct RenewArgs {
    /// Only when one of your claims or reservations is due (then all of them), as the agent hook does: past half its lease, or past three quarters under swarm.pushBudget.
    #[arg(long)]
    pub due: bool,
}

pub fn renew(g: &Global, a: RenewArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let done = renew::renew(&ctx, a.due)?;
    let json = serde_json::to_value(&done).expect("serialisable");
    Ok(Output::new(json, text(&done)))
}

fn text(r: &Renewed) -> String {
    if r.nothing {
        let mut out = match (&r.due_from, r.skipped.is_empty()) {
            (Some(from), true) => {
                format!("nothing due yet: the first of your holdings comes due at {from}\n")
            }
            (None, true) => {
                "nothing to renew (no claim or reservation held, or none due with --due)\n"
                    .to_string()
            }
            (_, false) => "nothing renewed\n".to_string(),
        };
        for s in &r.skipped {
            out.push_str(&format!("not renewed: {s}\n"));
        }
        return out;
    }
    let mut out = String::new();
    let how = if r.published {
        "in one push"
    } else {
        "in this clone"
    };
    out.push_str(&format!(
        "renewed {how}: {} claim(s), {} reservation(s)\n",
        r.tasks.len(),
        r.reservations.len()
    ));
    if let Some(u) = &r.task_lease_until {
        out.push_str(&format!("  tasks {} until {u}\n", r.tasks.join(", ")));
    }
    if let Some(u) = &r.reservation_lease_until {
        out.push_str(&format!(
            "  reservations {} until {u}\n",
            r.reservations.join(", ")
        ));
    }
    for s in &r.skipped {
        out.push_str(&format!("not renewed: {s}\n"));
    }
    out
}
