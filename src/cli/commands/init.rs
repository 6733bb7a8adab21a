//! `git swarm init`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new(
    "init",
    Facts::WRITE
        .and(Facts::QUIET)
        .and(Facts::NO_PUBLISH)
        .and(Facts::NO_FLUSH),
)];

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Use this remote as the shared remote (sets swarm.remote): records
    /// sync through it; the code stays on swarm.codeRemote (else origin when
    /// it exists, else this remote).
    #[arg(long, value_name = "R")]
    pub remote: Option<String>,
    /// Keep records on a repository of their own: adds the remote `swarm`
    /// at URL and sets swarm.remote to it; the code (lane branches, the
    /// base) stays on swarm.codeRemote, else origin (without either it
    /// warns, and the code goes to the coordination remote). Idempotent;
    /// every clone of the swarm runs the same command.
    #[arg(long, value_name = "URL", conflicts_with = "remote")]
    pub coordination_remote: Option<String>,
    /// Do not install the hook shims.
    #[arg(long)]
    pub no_hooks: bool,
    /// Do not add the base branch to swarm.protect (by default, with a
    /// remote, it is added, so only `lead push` moves it). Recorded as an
    /// empty swarm.protect, so later runs leave it alone.
    #[arg(long)]
    pub no_protect: bool,
    /// Also install the agent hooks for these hosts (claude, codex, gemini; comma-separated), as `git swarm agent install --host …` does.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    pub agents: Vec<String>,
}

pub fn init(g: &Global, a: InitArgs) -> Result<Output> {
    let (coordination, mut warnings) = match &a.coordination_remote {
        Some(url) => {
            let cwd = std::env::current_dir().map_err(|e| {
                Error::new(
                    Code::IoFailed,
                    format!("cannot read the current directory: {e}"),
                )
            })?;
            // The command's store: its remote operations count in its JSON.
            let store = git_swarm::store::Store::open_with(&cwd, &[], g.run.clone())?;
            git_swarm::ops::init::coordination_remote(&store, url)?
        }
        None => (Vec::new(), Vec::new()),
    };
    let ctx = g.ctx_with_remote(a.remote.as_deref())?;
    let hosts = a
        .agents
        .iter()
        .filter(|h| !h.trim().is_empty())
        .map(|h| {
            git_swarm::records::agent::Host::parse(h.trim()).ok_or_else(|| {
                Error::new(Code::Usage, format!("unknown agent host '{h}'"))
                    .hint("use claude, codex or gemini")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut done = git_swarm::ops::init::init(&ctx, a.remote.as_deref(), a.no_hooks, a.no_protect)?;
    if !coordination.is_empty() {
        done.changed = true;
        done.actions.splice(0..0, coordination);
    }
    warnings.extend(git_swarm::ops::init::unshared_warning(&ctx)?);
    let mut text = String::new();
    let agents = if hosts.is_empty() {
        None
    } else {
        let opts = git_swarm::integrations::agent::install::Options {
            hosts,
            ..Default::default()
        };
        Some(git_swarm::integrations::agent::install::install(
            &ctx, &opts,
        )?)
    };
    if done.actions.is_empty()
        && agents
            .as_ref()
            .is_none_or(|a| a.files.iter().all(|f| f.action == "unchanged"))
    {
        text.push_str("already swarm-ready: nothing to change\n");
    }
    for a in &done.actions {
        text.push_str(a);
        text.push('\n');
    }
    if let Some(hint) = done.trust_hint.as_deref().filter(|_| done.changed) {
        text.push_str(&format!("note: {hint}\n"));
    }
    let mut json = serde_json::to_value(&done).expect("serialisable");
    if let Some(ag) = &agents {
        for f in ag.files.iter().filter(|f| f.action != "unchanged") {
            text.push_str(&format!("agent hooks: {} {}\n", f.action, f.path));
        }
        json["agents"] = serde_json::to_value(ag).expect("serialisable");
    }
    Ok(warnings
        .into_iter()
        .fold(Output::new(json, text), Output::warn))
}
