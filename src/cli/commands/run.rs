//! `git swarm run`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::ops::run::{self, Options};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::cli::Global;

/// The stop flag the runner reads, reached by the signal handler (a
/// handler takes no argument: this is the one place that needs a static).
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    if let Some(stop) = STOP.get() {
        stop.store(true, Ordering::SeqCst);
    }
}

/// SIGINT/SIGTERM stop the runner cleanly: launch nothing more, let the
/// agents finish.
fn stop_on_signals() -> Arc<AtomicBool> {
    let stop = STOP.get_or_init(Arc::default).clone();
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    stop
}

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("run", Facts::WRITE)];

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan whose ready tasks get agents (default: the one plan there is, or the one checked out here).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// At most this many agents of this runner at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_lanes: usize,
    /// Exit 0 when no task is ready and none of this runner's agents works, instead of waiting for more.
    #[arg(long)]
    pub once: bool,
    /// Claim the plan's leadership first (`lead claim`).
    #[arg(long)]
    pub lead: bool,
    /// The coordinator's own account: never given to a lane.
    #[arg(long, value_name = "A")]
    pub account: Option<String>,
}

pub fn run(g: &Global, a: RunArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let plan = match a.plan {
        Some(p) => p,
        None => git_swarm::session::plan::infer(&ctx)?,
    };
    let opts = Options {
        plan,
        max_lanes: a.max_lanes.max(1),
        once: a.once,
        lead: a.lead,
        account: a.account,
        stop: stop_on_signals(),
    };
    let json = g.json;
    let ran = run::run(&ctx, opts, &mut |s| {
        if !json {
            say!("run: {}", s.text);
        }
    })?;
    let text = format!(
        "run of plan {}: {} agent(s) launched{}\n",
        ran.plan,
        ran.launched,
        if ran.stopped_by_signal {
            ", stopped by a signal"
        } else {
            ""
        }
    );
    Ok(Output::new(&ran, text))
}
