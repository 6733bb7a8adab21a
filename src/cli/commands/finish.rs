//! `git swarm finish --plan P [--out FILE]`: the end of a plan and its
//! completion report.

use std::path::PathBuf;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::ops::finish::{self, Finished};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("finish", Facts::WRITE.and(Facts::NO_KEEP))];

#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The plan to finish (its child plans finish with it).
    #[arg(long, value_name = "P")]
    pub plan: String,
    /// Write the completion report (markdown) to FILE instead of printing it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn finish(g: &Global, a: FinishArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let args = finish::Args {
        plan: a.plan,
        out: a.out,
    };
    finish::finish(&ctx, &args).map(|f| render(&f))
}

/// Without `--out` the report alone is the output (so `> FILE` keeps it
/// whole); with it, what was closed and where the report went.
pub fn render(f: &Finished) -> Output {
    let text = match &f.out {
        None => f.report.clone(),
        Some(path) => summary(f, path),
    };
    let mut out = Output::new(f, text);
    for w in &f.warnings {
        out = out.warn(w.clone());
    }
    out
}

fn summary(f: &Finished, path: &str) -> String {
    let mut text = format!("plan {} finished", f.plan);
    if f.closed.is_empty() {
        text.push_str(": nothing was left open");
    } else {
        text.push_str(&format!("; closed {}", f.closed.join(", ")));
    }
    text.push('\n');
    if f.released {
        text.push_str(&format!(
            "leadership released by {} at epoch {}\n",
            f.leader, f.epoch
        ));
    } else if f.resumed {
        text.push_str(&format!(
            "leadership was released at epoch {} by an earlier run\n",
            f.epoch
        ));
    }
    text.push_str(&format!("completion report written to {path}\n"));
    text
}
