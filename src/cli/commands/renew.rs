//! `git swarm renew`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Result};
use git_swarm::ops::renew::{self, Renewed};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("renew", Facts::WRITE)];

#[derive(Debug, Args)]
pub struct RenewArgs {
    /// Only when one of your claims or reservations is due, as the agent hook does: past half its lease, all in one push; under swarm.pushBudget claims are queued from half, and a push goes once one holding has a quarter left.
    #[arg(long)]
    pub due: bool,
}

pub fn renew(g: &Global, a: RenewArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    // The hint names the command: it is added here, at the edge.
    let done = renew::renew(&ctx, a.due).map_err(|e| match e.code {
        Code::PushRejected => e.hint("run `git swarm renew` again"),
        _ => e,
    })?;
    let json = serde_json::to_value(&done).expect("serialisable");
    let out = Output::new(json, text(&done));
    // Under the push budget a renewal that pushed nothing (queued, or
    // nothing due) leaves the queue to its window; a queued one is said,
    // and goes now if the window has passed.
    if done.published {
        return Ok(out);
    }
    match crate::cli::budget::Session::open(g)? {
        Some(session) if done.queued => Ok(session.queued_after(out)),
        Some(_) => Ok(Output {
            leaves_queue: true,
            ..out
        }),
        None => Ok(out),
    }
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
    let how = match (r.published, r.queued) {
        (true, _) => "in one push",
        (false, true) => "in this clone, queued to ride its next push",
        (false, false) => "in this clone",
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
