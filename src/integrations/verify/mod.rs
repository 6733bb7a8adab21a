//! `git swarm verify`: ask GitHub about a PR, re-derive from git what GitHub
//! claims (the merge commit is on the remote's base branch; a reported
//! conflict is real), judge, optionally poll until the required verdict
//! holds, and record the verdict as a note on the head commit. Returns an
//! [`Outcome`]; `src/cli/commands/verify.rs` renders it.

mod local;
mod note;
mod pr_state;
mod target;

use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::integrations::github::client::{parse_pr_arg, GitHub, RepoId, Stats};
use crate::integrations::github::verdict::{Judge, Require, Verdict};
use crate::integrations::github::wait::Wait;
use crate::session::Ctx;
use local::Local;

pub use target::redact_url;

pub const DEFAULT_HOLD_PATTERN: &str = "Auto-merge withheld";

/// Which PR to verify.
#[derive(Debug, Clone)]
pub enum Target {
    /// A number or a PR URL.
    Pr(String),
    /// A lane: the newest PR whose head is `feat/<feature>`.
    Lane(String),
}

#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    pub repo: Option<String>,
    pub require: Option<Require>,
    /// Poll until `require` holds or cannot hold any more, or `timeout`.
    pub wait: bool,
    pub timeout: Duration,
}

/// How long to back off while GitHub computes mergeability, and how often
/// to poll with `--wait`. Env overrides exist so tests run in milliseconds.
#[derive(Debug, Clone)]
pub struct Timing {
    pub backoff: Duration,
    pub retries: u32,
    pub poll: Duration,
}

impl Timing {
    /// `GIT_SWARM_VERIFY_BACKOFF_MS` (default 1000: waits 1, 2, 4, 8 s) and
    /// `GIT_SWARM_VERIFY_POLL_MS` (default 30000).
    pub fn from_env() -> Timing {
        let ms = |var: &str, default: u64| {
            Duration::from_millis(
                std::env::var(var)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(default),
            )
        };
        Timing {
            backoff: ms("GIT_SWARM_VERIFY_BACKOFF_MS", 1000),
            retries: 4,
            poll: ms("GIT_SWARM_VERIFY_POLL_MS", 30_000),
        }
    }
}

/// Where warnings (always) and progress (the CLI shows it on a TTY) go.
pub trait Report {
    fn warn(&mut self, message: &str);
    fn progress(&mut self, message: &str);
}

/// What `verify` concluded: the verdict (its fields at the top level of the
/// JSON), what was required of it and whether that holds, whether it was
/// noted, and how the waiting went.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    #[serde(flatten)]
    pub verdict: Verdict,
    /// `--require`, as given.
    #[serde(rename = "required")]
    pub require: Option<Require>,
    /// Whether `--require` holds (`None` without it).
    pub satisfied: Option<bool>,
    /// Whether the verdict was recorded as a note on the head commit.
    pub noted: bool,
    pub polls: u64,
    pub timed_out: bool,
    /// Every wait, in order (see [`crate::integrations::github::wait`]).
    pub waits: Vec<Wait>,
}

/// The verdict of the last poll, and how the polling ended.
struct Polled {
    verdict: Verdict,
    head_local: bool,
    polls: u64,
    timed_out: bool,
}

/// Run `verify` to its verdict (after waiting, with `--wait`) and record
/// the note. `--require` not holding is an outcome (`satisfied: false`),
/// not an error.
pub fn verify(
    ctx: &Ctx,
    gh: &mut dyn GitHub,
    req: &Request,
    timing: &Timing,
    report: &mut dyn Report,
) -> Result<Outcome> {
    if req.wait && req.require.is_none() {
        return Err(
            Error::new(Code::Usage, "--wait needs --require merged|ready")
                .hint("say what to wait for, e.g. --wait --require merged"),
        );
    }
    let hold_pattern = hold_pattern(ctx)?;
    let start = gh.waits().now();
    let deadline = req.wait.then(|| start + req.timeout);
    gh.set_wait_deadline(deadline);
    let (repo, number) = resolve(ctx, gh, req, report)?;
    let repo_name = repo.to_string();
    let judge = Judge {
        repo: &repo_name,
        number,
        hold_pattern: &hold_pattern,
    };
    let mut local = Local {
        ctx,
        repo: &repo,
        number,
        base_ref: None,
    };
    let polled = poll(gh, &mut local, &judge, req, timing, deadline, report)?;
    let verdict = polled.verdict;
    let noted = if polled.head_local {
        note::record(ctx, &verdict, report)
    } else {
        if verdict.head_sha.is_some() {
            report.warn(
                "the head commit is not available locally; the verdict was not recorded as a note",
            );
        }
        false
    };
    Ok(Outcome {
        satisfied: req.require.map(|r| r.holds(verdict.state)),
        verdict,
        require: req.require,
        noted,
        polls: polled.polls,
        timed_out: polled.timed_out,
        waits: gh.waits().taken(),
    })
}

/// `swarm.holdPattern`, or the default.
fn hold_pattern(ctx: &Ctx) -> Result<Regex> {
    let source = ctx
        .store
        .config("swarm.holdPattern")
        .unwrap_or_else(|| DEFAULT_HOLD_PATTERN.to_string());
    Regex::new(&source).map_err(|e| {
        Error::new(
            Code::Usage,
            format!("swarm.holdPattern is not a valid regular expression: {e}"),
        )
        .hint("fix it with `git config swarm.holdPattern '<regex>'`")
    })
}

/// The repository and the PR number: a lane's is looked up on GitHub, after
/// the lane is found to be known here.
fn resolve(
    ctx: &Ctx,
    gh: &mut dyn GitHub,
    req: &Request,
    report: &mut dyn Report,
) -> Result<(RepoId, u64)> {
    let (repo, number) = match &req.target {
        Target::Pr(arg) => {
            let (from_url, number) = parse_pr_arg(arg)?;
            (
                target::resolve_repo(ctx, req.repo.as_deref(), from_url)?,
                Ok(number),
            )
        }
        Target::Lane(feature) => {
            crate::names::validate_name("feature", feature)?;
            target::require_known_lane(ctx, feature)?;
            let repo = target::resolve_repo(ctx, req.repo.as_deref(), None)?;
            (repo, Err(feature))
        }
    };
    if !gh.authenticated() {
        report.warn("no GitHub token (GITHUB_TOKEN / GH_TOKEN for github.com, GH_ENTERPRISE_TOKEN / GITHUB_ENTERPRISE_TOKEN for an Enterprise host, or `gh auth token`): asking unauthenticated, with a small rate limit and no private repositories");
    }
    // A PR target has its number; a lane's is looked up (Err holds the feature).
    let number = match number {
        Ok(n) => n,
        Err(feature) => target::lane_pr(gh, &repo, feature)?,
    };
    Ok((repo, number))
}

/// Judge once, or with `--wait` until the requirement holds, cannot hold
/// any more, or the deadline passes.
fn poll(
    gh: &mut dyn GitHub,
    local: &mut Local,
    judge: &Judge,
    req: &Request,
    timing: &Timing,
    deadline: Option<Instant>,
    report: &mut dyn Report,
) -> Result<Polled> {
    let (repo, number) = (local.repo.clone(), local.number);
    let mut polls = 0u64;
    loop {
        polls += 1;
        local.base_ref = None; // fetch the base afresh on every poll
        let snap = pr_state::read(gh, &repo, number, timing, report)?;
        let (facts, head_local) = local.facts(&snap.pr, report)?;
        let mut v = judge.verdict(&snap, &facts);
        let stats = gh.stats();
        v.requests = stats.requests;
        v.not_modified = stats.not_modified;
        v.rate_limit_remaining = stats.rate_limit_remaining;
        let done = |verdict, timed_out| {
            Ok(Polled {
                verdict,
                head_local,
                polls,
                timed_out,
            })
        };
        let (Some(require), Some(deadline)) = (req.require, deadline) else {
            return done(v, false);
        };
        if require.holds(v.state) || require.is_terminal(v.state) {
            return done(v, false);
        }
        let now = gh.waits().now();
        if now >= deadline {
            v.reasons.push("timeout".into());
            return done(v, true);
        }
        let (sleep, decided_by) = next_wait(&stats, timing.poll, deadline - now, epoch_now());
        let why = if v.reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.reasons.join(", "))
        };
        report.progress(&format!(
            "{repo}#{number}: {}{why}; waiting for {}, checking again in {:.1} s",
            v.state.as_str(),
            require.as_str(),
            sleep.as_secs_f64()
        ));
        gh.waits().sleep(sleep, decided_by);
    }
}

fn epoch_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// How long to wait before the next poll, and what decided it (recorded
/// with the wait, see [`crate::integrations::github::wait`]): the poll interval, or a
/// longer `x-poll-interval` the server asked for, or the rate limit's reset
/// (at `now_epoch` seconds) when nothing remains of it; never past the
/// deadline, `left` away.
fn next_wait(
    stats: &Stats,
    poll: Duration,
    left: Duration,
    now_epoch: u64,
) -> (Duration, &'static str) {
    let (mut interval, mut decided_by) = (poll, "poll");
    if let Some(p) = stats.poll_interval.filter(|p| *p > interval) {
        (interval, decided_by) = (p, "x-poll-interval");
    }
    if stats.rate_limit_remaining == Some(0) {
        if let Some(reset) = stats.rate_limit_reset {
            let until_reset = Duration::from_secs(reset.saturating_sub(now_epoch));
            if until_reset > interval {
                (interval, decided_by) = (until_reset, "x-ratelimit-reset");
            }
        }
    }
    if left < interval {
        (left, "timeout")
    } else {
        (interval, decided_by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn the_poll_interval_waits_unless_the_server_asks_for_longer() {
        let stats = Stats::default();
        assert_eq!(next_wait(&stats, S(30), S(600), 0), (S(30), "poll"));
        let slow = Stats {
            poll_interval: Some(S(60)),
            ..Stats::default()
        };
        assert_eq!(
            next_wait(&slow, S(30), S(600), 0),
            (S(60), "x-poll-interval")
        );
        let fast = Stats {
            poll_interval: Some(S(5)),
            ..Stats::default()
        };
        assert_eq!(next_wait(&fast, S(30), S(600), 0), (S(30), "poll"));
    }

    #[test]
    fn an_exhausted_rate_limit_waits_for_its_reset() {
        let spent = Stats {
            rate_limit_remaining: Some(0),
            rate_limit_reset: Some(1_000 + 120),
            ..Stats::default()
        };
        assert_eq!(
            next_wait(&spent, S(30), S(600), 1_000),
            (S(120), "x-ratelimit-reset")
        );
        // A reset that is already past, or sooner than the poll, changes nothing.
        assert_eq!(next_wait(&spent, S(30), S(600), 2_000), (S(30), "poll"));
        let left = Stats {
            rate_limit_remaining: Some(3),
            ..spent
        };
        assert_eq!(next_wait(&left, S(30), S(600), 1_000), (S(30), "poll"));
    }

    #[test]
    fn no_wait_runs_past_the_deadline() {
        let stats = Stats::default();
        assert_eq!(next_wait(&stats, S(30), S(10), 0), (S(10), "timeout"));
        assert_eq!(next_wait(&stats, S(30), S(30), 0), (S(30), "poll"));
    }

    #[test]
    fn the_outcome_is_the_verdict_with_what_was_required_of_it() {
        let pr = serde_json::from_value(serde_json::json!({"state": "closed", "merged": false}))
            .expect("a PR");
        let re = Regex::new("x").expect("a regex");
        let judge = Judge {
            repo: "o/r",
            number: 3,
            hold_pattern: &re,
        };
        let snap = crate::integrations::github::verdict::PrFacts { pr, open: None };
        let verdict = judge.verdict(&snap, &Default::default());
        let outcome = Outcome {
            verdict,
            require: Some(Require::Merged),
            satisfied: Some(false),
            noted: false,
            polls: 1,
            timed_out: false,
            waits: vec![Wait {
                why: "poll".into(),
                ms: 5,
            }],
        };
        let json = serde_json::to_value(&outcome).expect("an outcome serialises");
        assert_eq!(json["state"], "closed");
        assert_eq!(json["number"], 3);
        assert_eq!(json["required"], "merged");
        assert_eq!(json["satisfied"], false);
        assert_eq!(json["waits"], serde_json::json!([{"why": "poll", "ms": 5}]));
        assert!(json.get("verdict").is_none() && json.get("require").is_none());
    }
}
