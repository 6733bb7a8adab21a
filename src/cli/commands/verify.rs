//! `git swarm verify …`

use std::io::IsTerminal;
use std::time::Duration;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::{Args, Subcommand};
use git_swarm::error::{Code, Error, Result};
use git_swarm::integrations::github::client::RepoId;
use git_swarm::integrations::github::rest::{token_for, DiskCache, Endpoint, RestClient};
use git_swarm::integrations::github::verdict::{Require, State};
use git_swarm::integrations::verify::{self, Outcome, Report, Request, Target, Timing};
use git_swarm::session::Ctx;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("verify", Facts::REMOTE)];

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
        say!("warning: {message}");
    }
    fn progress(&mut self, message: &str) {
        if self.tty {
            say!("{message}");
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
                Error::new(
                    Code::Usage,
                    format!("--require takes merged or ready, not '{r}'"),
                )
            })
        })
        .transpose()?;
    let timeout = match opts.timeout.as_deref() {
        None => DEFAULT_TIMEOUT,
        Some(_) if !opts.wait => {
            return Err(Error::new(
                Code::Usage,
                "--timeout only applies with --wait",
            ))
        }
        Some(t) => git_swarm::clock::parse_duration(t)
            .map_err(|e| e.hint("--timeout takes a duration"))?
            .unsigned_abs(),
    };
    let ctx = g.ctx()?;
    let mut report = Stderr {
        tty: std::io::stderr().is_terminal(),
    };
    let mut client = rest_client(&ctx, &target)?;
    let req = Request {
        target,
        repo,
        require,
        wait: opts.wait,
        timeout,
    };
    let outcome = verify::verify(&ctx, &mut client, &req, &Timing::from_env(), &mut report)?;
    let mut json = serde_json::to_value(&outcome).expect("an outcome always serialises");
    json["api"] = client.base().into();
    Ok(Output {
        json,
        text: render(&outcome),
        exit: if outcome.satisfied == Some(false) {
            1
        } else {
            0
        },
        warnings: Vec::new(),
        leaves_queue: false,
    })
}

/// The REST client for the host the repository lives on (a PR URL's, else
/// the remote's), with its token and the ETag cache under the common dir.
pub(crate) fn rest_client(ctx: &Ctx, target: &Target) -> Result<RestClient> {
    // The host the repository lives on: a PR URL's, else the remote's.
    let pr_host = match target {
        Target::Pr(arg) if arg.contains("://") => RepoId::host_of_url(arg),
        _ => None,
    };
    let remote_host = ctx.settings.code_remote.as_deref().and_then(|remote| {
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
    let client = RestClient::new(
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
    Ok(client)
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The human verdict: one headline, then only what explains it.
fn render(o: &Outcome) -> String {
    let v = &o.verdict;
    let mut out = format!("{}#{}: {}", v.repo, v.number, v.state.as_str());
    if !v.reasons.is_empty() && v.state != State::Merged {
        out.push_str(&format!(" ({})", v.reasons.join(", ")));
    }
    out.push('\n');
    let head = v.head_sha.as_deref().map(short).unwrap_or("?");
    let head_ref = v.head_ref.as_deref().unwrap_or("?");
    let base = v.base.as_deref().unwrap_or("?");
    out.push_str(&format!("  head {head} ({head_ref}) into {base}\n"));
    match v.state {
        State::Merged => out.push_str(&format!(
            "  merge commit {} is on the remote's {base}\n",
            v.merge_commit.as_deref().map(short).unwrap_or("?")
        )),
        State::MergedUnconfirmed => out.push_str(&format!(
            "  GitHub says merged, but git cannot confirm merge commit {} on the remote's {base}\n",
            v.merge_commit.as_deref().map(short).unwrap_or("(none)")
        )),
        _ => {}
    }
    if let Some(ms) = &v.mergeable_state {
        if !matches!(
            v.state,
            State::Merged | State::MergedUnconfirmed | State::Closed
        ) {
            out.push_str(&format!(
                "  mergeable: {} ({ms})\n",
                v.mergeable
                    .map_or("not computed".to_string(), |m| m.to_string())
            ));
        }
    }
    if !v.conflicts.is_empty() {
        out.push_str(&format!("  conflicts: {}\n", v.conflicts.join(", ")));
    }
    if let Some(c) = &v.checks {
        out.push_str(&format!(
            "  checks: {} passed, {} failed, {} pending\n",
            c.passed, c.failed, c.pending
        ));
        for d in c.details.iter().filter(|d| d.result != "passed") {
            out.push_str(&format!("    {} {} ({})\n", d.result, d.name, d.state));
        }
    }
    if let Some(r) = &v.review_decision {
        out.push_str(&format!("  review: {r}\n"));
    }
    for h in &v.holds {
        out.push_str(&format!(
            "  held by {} at {}: {}\n",
            h.author.as_deref().unwrap_or("(unknown)"),
            h.created_at.as_deref().unwrap_or("?"),
            h.excerpt
        ));
    }
    if let (Some(r), Some(false)) = (o.require, o.satisfied) {
        if o.timed_out {
            out.push_str(&format!(
                "required {}: not reached before the timeout\n",
                r.as_str()
            ));
        } else {
            out.push_str(&format!("required {}: does not hold\n", r.as_str()));
        }
    }
    out
}
