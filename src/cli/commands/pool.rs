//! `git swarm pool add|list|rm`.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::ops::pool::{self, Changed, Listed};
use git_swarm::records::pool::Declared;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("pool add", Facts::WRITE.and(Facts::NO_KEEP)),
    Spec::new("pool list", Facts::LIST),
    Spec::new("pool rm", Facts::WRITE.and(Facts::NO_KEEP)),
];

#[derive(Debug, Subcommand)]
pub enum PoolCmd {
    /// Declare an account agents may run on (or change one): its host, the swarm address its agents act under, the environment its host gets (never a credential: name the account's config directory instead).
    Add(AddArgs),
    /// List the declared accounts and who holds each (free, leased, removed).
    List {
        /// Removed accounts too.
        #[arg(long)]
        all: bool,
    },
    /// Remove an account from the pool (refused while a session holds it).
    Rm {
        /// The account.
        account: String,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The account's name ([A-Za-z0-9][A-Za-z0-9._-]*).
    pub account: String,
    /// The host it runs: claude, codex or gemini.
    #[arg(long, value_parser = ["claude", "codex", "gemini"])]
    pub host: String,
    /// KEY=VALUE set on the host process on top of the runner's environment, e.g. CLAUDE_CONFIG_DIR=~/.claude-work1 (repeatable; a value or a name that looks like a credential is refused).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// The host's profile name, for your own bookkeeping.
    #[arg(long)]
    pub profile: Option<String>,
    /// A note shown by `pool list`.
    #[arg(long)]
    pub note: Option<String>,
    /// The swarm address its agents act under (GIT_SWARM_AS); defaults to the account's name.
    #[arg(long, value_name = "ADDRESS")]
    pub address: Option<String>,
}

pub fn run(g: &Global, cmd: PoolCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        PoolCmd::Add(a) => {
            let d = Declared {
                account: a.account,
                host: a.host,
                address: a.address,
                env: a.env,
                profile: a.profile,
                note: a.note,
            };
            Ok(changed(pool::add(&ctx, &d)?))
        }
        PoolCmd::Rm { account } => Ok(changed(pool::remove(&ctx, &account)?)),
        PoolCmd::List { all } => {
            let (listed, bad) = pool::list(&ctx, all)?;
            let json = serde_json::json!({ "accounts": listed, "unreadable": bad });
            let mut out = Output::listing(g.json, json, text(&listed));
            for b in bad {
                out = out.warn(format!("unreadable account: {b}"));
            }
            Ok(out)
        }
    }
}

fn changed(c: Changed) -> Output {
    let a = &c.account;
    let text = match (c.command, c.already) {
        (_, true) => format!("account {}: already so, nothing written\n", a.account),
        ("pool rm", _) => format!("removed account {} from the pool\n", a.account),
        _ => format!(
            "account {} ({}, acts as {}) is in the pool\n",
            a.account, a.host, a.address
        ),
    };
    let mut out = Output::new(&c, text);
    if let Some(w) = &c.warning {
        out = out.warn(w.clone());
    }
    out
}

fn text(listed: &[Listed]) -> String {
    if listed.is_empty() {
        return "no account in the pool (`git swarm pool add <account> --host claude` declares one)\n".into();
    }
    let mut out = String::new();
    for l in listed {
        let r = &l.record;
        let mut line = format!(
            "{:<16} {:<7} as {:<16} {}",
            l.account, l.host, l.address, l.state
        );
        if let (Some(lease), "leased") = (&r.lease, l.state.as_str()) {
            line.push_str(&format!(" by {} until {}", lease.holder, lease.until));
            if let Some(lane) = &lease.lane {
                line.push_str(&format!(" (lane {lane})"));
            }
        }
        if !r.env.is_empty() {
            let keys: Vec<&str> = r.env.keys().map(String::as_str).collect();
            line.push_str(&format!("  env {}", keys.join(",")));
        }
        if let Some(n) = &r.note {
            line.push_str(&format!("  # {n}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
