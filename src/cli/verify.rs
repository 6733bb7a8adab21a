//! `git swarm verify …`

use std::io::IsTerminal;
use std::time::Duration;

use clap::{Args, Subcommand};
use git_swarm::error::{Error, Result};
use git_swarm::github::client::RepoId;
use git_swarm::github::rest::{token_for, DiskCache, Endpoint, RestClient};
use git_swarm::github::verdict::Require;
use git_swarm::github::verify::{self, Report, Request, Target, Timing};
use git_swarm::output::Output;

use super::Global;

#[derive(Debug, Subcommand)]
pub enum VerifyCmd {
    /// Verify a pull request by number or URL.
    #[command(after_help = AFTER_HELP)]
    Pr {
        /// PR number or https://github.com/OWNER/NAME/pull/N URL.
        pr: String,
        /// OWNER/NAME (default: inferred from the remote URL).
        #[arg(long, value_name = "OWNER/NAME")]
        repo: Option<String>,
        #[command(flatten)]
        opts: VerifyOpts,
    },
    /// Verify the newest PR whose head is the lane's branch feat/<feature>.
    #[command(after_help = AFTER_HELP)]
    Lane {
        /// The lane's feature name (its branch is feat/<feature>).
        feature: String,
        /// OWNER/NAME (default: inferred from the remote URL).
        #[arg(long, value_name = "OWNER/NAME")]
        repo: Option<String>,
        #[command(flatten)]
        opts: VerifyOpts,
    },
}

const AFTER_HELP: &str = "Verdicts: merged (GitHub says merged and the merge commit is on the remote's base branch), merged-unconfirmed, ready, pending, blocked, conflicting, closed.\nExit: 0 a verdict was derived (and --require holds), 1 --require does not hold (or --wait timed out), 2 bad input, 4 GitHub or git failed: never a verdict.\nEnvironment: GITHUB_API_URL (default: https://api.github.com, or https://HOST/api/v3 for a GitHub Enterprise remote or GH_HOST), GITHUB_TOKEN / GH_TOKEN for github.com, GH_ENTERPRISE_TOKEN / GITHUB_ENTERPRISE_TOKEN for Enterprise hosts (else `gh auth token`).";

#[derive(Debug, Args)]
pub struct VerifyOpts {
    /// Exit 1 unless the verdict is this: merged or ready.
    #[arg(long, value_name = "merged|ready")]
    pub require: Option<String>,
    /// Poll until the required verdict holds, a terminal verdict, or the timeout.
    #[arg(long)]
    pub wait: bool,
    /// How long --wait may take, e.g. 10m (default 30m).
    #[arg(long, value_name = "D")]
    pub timeout: Option<String>,
}

/// Warnings always go to stderr; progress only when stderr is a terminal.
struct Stderr {
    tty: bool,
}

impl Report for Stderr {
    fn warn(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }
    fn progress(&mut self, message: &str) {
        if self.tty {
            eprintln!("{message}");
        }
    }
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DEFAULT_HTTP_TIMEOUT_MS: u64 = 30_000;

pub fn run(g: &Global, c: VerifyCmd) -> Result<Output> {
    let (target, repo, opts) = match c {
        VerifyCmd::Pr { pr, repo, opts } => (Target::Pr(pr), repo, opts),
        VerifyCmd::Lane {
            feature,
            repo,
            opts,
        } => (Target::Lane(feature), repo, opts),
    };
    let require = opts
        .require
        .as_deref()
        .map(|r| {
            Require::parse(r).ok_or_else(|| {
                Error::usage(
                    "USAGE",
                    format!("--require takes merged or ready, not '{r}'"),
                )
            })
        })
        .transpose()?;
    let timeout = match opts.timeout.as_deref() {
        None => DEFAULT_TIMEOUT,
        Some(_) if !opts.wait => {
            return Err(Error::usage("USAGE", "--timeout only applies with --wait"))
        }
        Some(t) => git_swarm::clock::parse_duration(t)
            .map_err(|e| e.hint("--timeout takes a duration"))?
            .unsigned_abs(),
    };
    let ctx = g.ctx()?;
    let mut report = Stderr {
        tty: std::io::stderr().is_terminal(),
    };
    // The host the repository lives on: a PR URL's, else the remote's.
    let pr_host = match &target {
        Target::Pr(arg) if arg.contains("://") => RepoId::host_of_url(arg),
        _ => None,
    };
    let remote_host = ctx.settings.remote.as_deref().and_then(|remote| {
        ctx.store
            .config(&format!("remote.{remote}.url"))
            .and_then(|url| RepoId::host_of_url(&url))
    });
    let endpoint = Endpoint::resolve(pr_host.or(remote_host).as_deref());
    let token = token_for(&endpoint);
    let http_timeout = std::env::var("GIT_SWARM_HTTP_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_HTTP_TIMEOUT_MS);
    let mut client = RestClient::new(
        &endpoint.api_url,
        token,
        Duration::from_millis(http_timeout),
    )?
    .with_disk_cache(DiskCache::new(
        ctx.store
            .common_dir()
            .join("swarm")
            .join("cache")
            .join("github"),
    ));
    let req = Request {
        target,
        repo,
        require,
        wait: opts.wait,
        timeout,
    };
    let mut out = verify::verify(&ctx, &mut client, &req, &Timing::from_env(), &mut report)?;
    out.json["api"] = client.base().into();
    Ok(out)
}
