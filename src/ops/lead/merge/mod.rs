//! `lead merge`: the leader's merge queue. The lanes of a plan whose work
//! is ready (branch pushed, last report `PR open` or `done`, or named on
//! the command line) are landed one after the other onto the current base:
//! merged in a temporary worktree by the repository's merge rule
//! (`swarm.mergeStyle`), the gate run there (`swarm.gate` or `--gate`),
//! then published by the fenced push ([`super::run`] with [`Op::Push`]),
//! so a stale leader lands nothing. Each landed lane's task is marked done
//! on the merge's evidence, its lane record and child plan closed, and its
//! owner told. A lane that conflicts with the base or fails its gate is not
//! landed: its owner gets a resolution brief and the queue goes on.
//!
//! Re-run after a kill, the queue continues where it stopped and never
//! lands a lane twice: a lane whose head is already in the base (a merge
//! commit or a fast-forward), or whose landing commit is on the base's
//! first-parent line (its `Swarm-Landed: <feature> <head>` trailer, which a
//! squash or rebase landing carries) is only finished (task, lane, plan,
//! message), not merged again.

use std::path::Path;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::git::Git;
use crate::integrations::github::client::{parse_pr_arg, GitHub, RepoId};
use crate::integrations::github::verdict::{Require, State};
use crate::integrations::verify::{self, Request, Target, Timing};
use crate::names;
use crate::ops::message::{self, Post};
use crate::records::lane::{self, Lane, LastReportKind};
use crate::records::lead::Op;
use crate::records::message::Kind;
use crate::session::Ctx;

/// The most lines of a gate's output or of a conflict's hunks a brief
/// carries (the tail of the gate, the head of each hunk).
const BRIEF_LINES: usize = 40;

mod brief;
mod gate;
mod github;
mod local;
mod queue;
mod refused;
use brief::{brief, tell};
use github::{land_github, pr_of, Outcome};
use local::{already_landed, land};
pub use local::{landings, Landing};
pub use queue::base_branch;
use queue::{lanes, take, Pair};

use gate::trim_head;
pub use gate::{no_test_ran, run_gate};

/// How a lane is put onto the base (`swarm.mergeStyle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    Merge,
    Squash,
    Rebase,
}

impl Style {
    fn parse(text: &str) -> Result<Style> {
        match text.trim() {
            "merge" => Ok(Style::Merge),
            "squash" => Ok(Style::Squash),
            "rebase" => Ok(Style::Rebase),
            other => Err(Error::new(
                Code::ConfigInvalid,
                format!("swarm.mergeStyle is '{other}': it must be merge, squash or rebase"),
            )
            .hint("e.g. `git config swarm.mergeStyle squash`")),
        }
    }
}

/// What `lead merge` was asked.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// Only these lanes (each then counts as ready without a report).
    pub features: Vec<String>,
    pub plan: Option<String>,
    /// The gate command (else `swarm.gate`).
    pub gate: Option<String>,
    /// Land without a gate (said in the output and the owner's message).
    pub no_gate: bool,
    pub dry_run: bool,
}

/// The queue's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Queue {
    pub plan: String,
    pub leader: String,
    pub epoch: u64,
    pub style: Style,
    pub gate: Option<String>,
    pub dry_run: bool,
    /// The lanes in the order the queue took them.
    pub order: Vec<String>,
    pub landed: Vec<Landed>,
    pub refused: Vec<Refused>,
    /// Lanes of the plan that are not ready, with why.
    pub waiting: Vec<Waiting>,
    pub warnings: Vec<String>,
}

/// A lane the queue landed (or, after a kill, found landed and finished).
#[derive(Debug, Clone, Serialize)]
pub struct Landed {
    pub lane: String,
    pub owner: String,
    pub task: Option<String>,
    pub head: String,
    pub base: String,
    /// The commit on the base that carries the lane's work.
    pub commit: String,
    /// An earlier run had landed it; this one only finished it.
    pub resumed: bool,
    /// The gate's last line, when one ran.
    pub gate: Option<String>,
    /// What the lane's end closed: the task done, the lane, the child plan.
    pub closed: Vec<String>,
    /// The message to the owner.
    pub message: Option<String>,
}

/// A lane the queue did not land, and the brief its owner was sent.
#[derive(Debug, Clone, Serialize)]
pub struct Refused {
    pub lane: String,
    pub owner: String,
    /// `MERGE_CONFLICT`, `GATE_FAILED`, `PUSH_REJECTED`; through a GitHub
    /// PR: `PR_NOT_READY`, `HEAD_MOVED` (the merge API's 409, or the PR's
    /// head is not the pushed branch) or `PR_NOT_MERGEABLE`.
    pub code: &'static str,
    pub head: String,
    pub base: String,
    pub base_commit: String,
    pub paths: Vec<String>,
    /// The forecast pairs this lane is in that conflict.
    pub pairs: Vec<String>,
    pub brief: String,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    pub lane: String,
    pub why: String,
}

/// A lane in the queue.
struct Item {
    lane: Lane,
    /// The branch's head as the code remote has it.
    head: String,
    /// The base branch (at the code remote) and its remote-tracking ref.
    base: String,
    tracking: String,
}

/// Makes the GitHub client, once, when a lane's PR is on GitHub.
pub type GitHubFactory<'a> = dyn FnMut() -> Result<Box<dyn GitHub>> + 'a;

/// What a run of the queue works with: the code remote, the plan, the
/// merge rule and the gate.
struct Settings {
    code: String,
    plan: String,
    style: Style,
    gate: Option<String>,
}

/// Run the queue. A lane whose last report is `PR open <GitHub PR URL>` is
/// landed through that PR (`github` makes the client when one is needed).
pub fn merge(ctx: &Ctx, args: &Args, github: &mut GitHubFactory<'_>) -> Result<Queue> {
    let store = &ctx.store;
    let actor = ctx.actor()?;
    let s = settings(ctx, args)?;
    let (leader, epoch) = fence(ctx, &s.plan, &actor, args.dry_run)?;
    // The records as the remote has them, kept here.
    let mut warnings = Vec::new();
    if ctx.remote().is_some() {
        let report = crate::ops::sync::sync(ctx, &actor, &mut |_| {})?;
        warnings.extend(report.warnings);
    }
    let lanes = lanes(ctx, &s.plan, &args.features)?;
    let (items, waiting, pairs) = take(&store.git, &s.code, lanes, &args.features)?;
    let mut q = Queue {
        plan: s.plan.clone(),
        leader,
        epoch,
        style: s.style,
        gate: s.gate.clone(),
        dry_run: args.dry_run,
        order: items.iter().map(|i| i.lane.feature.clone()).collect(),
        landed: Vec::new(),
        refused: Vec::new(),
        waiting,
        warnings,
    };
    if args.dry_run {
        return Ok(q);
    }
    let mut client: Option<Box<dyn GitHub>> = None;
    let mut run = Run {
        ctx,
        s: &s,
        pairs: &pairs,
        client: &mut client,
        github,
    };
    for item in &items {
        if !run.land_item(item, &mut q)? {
            break;
        }
    }
    if ctx.remote().is_some() {
        if let Err(e) = crate::ops::sync::sync(ctx, &actor, &mut |_| {}) {
            q.warnings.push(format!(
                "the closed lanes and plans are recorded here but `sync` failed ({}): run `git swarm sync`",
                e.message
            ));
        }
    }
    Ok(q)
}

/// One run of the queue: what landing each lane needs.
struct Run<'r, 'g> {
    ctx: &'r Ctx,
    s: &'r Settings,
    pairs: &'r [Pair],
    /// The GitHub client, made by `github` for the first lane with a pull
    /// request.
    client: &'r mut Option<Box<dyn GitHub>>,
    github: &'r mut GitHubFactory<'g>,
}

impl Run<'_, '_> {
    /// Land one lane (through its pull request, or here), or find it
    /// landed already, or refuse it, into `q`. False when the queue stops:
    /// the base moved under it, so the rest would fail the same way.
    fn land_item(&mut self, item: &Item, q: &mut Queue) -> Result<bool> {
        let git = &self.ctx.store.git;
        let base_tip = git.rev_parse(&item.tracking)?.unwrap_or_default();
        let pr = pr_of(item);
        let outcome = if let Some((repo, number, url)) = &pr {
            let gh = match &mut *self.client {
                Some(c) => c,
                None => self.client.insert((self.github)()?),
            };
            land_github(
                self.ctx,
                &self.s.plan,
                item,
                repo,
                *number,
                url,
                self.s.style,
                gh.as_mut(),
                &mut q.warnings,
            )?
        } else if let Some(commit) = already_landed(git, item, &base_tip)? {
            q.landed.push(finish(
                self.ctx,
                &self.s.plan,
                item,
                &commit,
                true,
                None,
                &mut q.warnings,
            ));
            return Ok(true);
        } else {
            land(
                self.ctx,
                &self.s.plan,
                &self.s.code,
                item,
                &base_tip,
                self.s.style,
                self.s.gate.as_deref(),
            )?
        };
        match outcome {
            Outcome::Landed { commit, gate } => {
                failpoint::point("lead-merge:landed");
                if pr.is_none() {
                    let _ = self
                        .ctx
                        .store
                        .git
                        .run(["update-ref", &item.tracking, &commit]);
                }
                q.landed.push(finish(
                    self.ctx,
                    &self.s.plan,
                    item,
                    &commit,
                    false,
                    gate,
                    &mut q.warnings,
                ));
            }
            Outcome::Refused {
                code,
                paths,
                detail,
            } => {
                q.refuse(self.ctx, item, &base_tip, self.pairs, (code, paths, detail));
                if pr.is_none() && code == "PUSH_REJECTED" {
                    // The base moved under the queue: the rest would fail
                    // the same way; a re-run starts from the new base.
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

/// The code remote, the plan, the merge rule and the gate of a run, each
/// refused with what to do when it is missing or contradictory.
fn settings(ctx: &Ctx, args: &Args) -> Result<Settings> {
    let store = &ctx.store;
    for f in &args.features {
        names::validate_name("feature", f)?;
    }
    let Some(code) = ctx.code_remote().map(str::to_string) else {
        return Err(Error::new(
            Code::RemoteMissing,
            "lead merge lands lanes on the shared remote's base and none is configured (or --offline was given)",
        )
        .hint("add one (`git remote add origin <url>`) or set swarm.remote"));
    };
    let plan = match &args.plan {
        Some(p) => {
            names::validate_name("plan", p)?;
            p.clone()
        }
        None => crate::session::plan::infer(ctx)?,
    };
    let style = Style::parse(
        &store
            .config("swarm.mergeStyle")
            .unwrap_or_else(|| "merge".into()),
    )?;
    let gate = match (&args.gate, args.no_gate) {
        (Some(_), true) => {
            return Err(Error::new(Code::Usage, "--gate and --no-gate exclude each other"))
        }
        (Some(g), false) => Some(g.clone()),
        (None, true) => None,
        (None, false) => match store.config("swarm.gate").filter(|g| !g.trim().is_empty()) {
            Some(g) => Some(g),
            None => {
                return Err(Error::new(
                    Code::Usage,
                    "lead merge runs a gate before it lands a lane, and none is set",
                )
                .hint("set one (`git config swarm.gate \"cargo test\"`) or pass --gate CMD; --no-gate lands without one (said in every message)"))
            }
        },
    };
    Ok(Settings {
        code,
        plan,
        style,
        gate,
    })
}

/// The fence, first: a renew is leader-only and fenced like every leader
/// command (LEAD_FENCED / NOT_LEADER, nothing written). The real fence is
/// the landing push itself, which moves the lead ref too. A dry run only
/// reads who leads.
fn fence(ctx: &Ctx, plan: &str, actor: &str, dry_run: bool) -> Result<(String, u64)> {
    if dry_run {
        let c = super::check(ctx, plan)?;
        return Ok((c.leader.unwrap_or_default(), c.epoch));
    }
    let ran = super::run(
        ctx,
        plan,
        Op::Renew {
            lease: None,
            lanes: None,
        },
    )?;
    Ok((actor.to_string(), ran.record.epoch))
}

/// A landed lane's end: its task done (the merge is the evidence), its
/// lane record closed, its child plan closed, its owner told. Each step is
/// idempotent, so a re-run after a kill completes what is left.
#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &Ctx,
    plan: &str,
    item: &Item,
    commit: &str,
    resumed: bool,
    gate: Option<String>,
    warnings: &mut Vec<String>,
) -> Landed {
    let f = &item.lane.feature;
    let mut closed = Vec::new();
    if let Some((p, id)) = item
        .lane
        .record
        .task
        .as_deref()
        .and_then(|t| t.split_once('/'))
    {
        match crate::ops::task::landed(ctx, p, id, commit) {
            Ok(_) => closed.push(format!("task {p}/{id} done")),
            Err(e) => warnings.push(format!("task {p}/{id} is not marked done: {}", e.message)),
        }
    }
    failpoint::point("lead-merge:task-done");
    let ended = crate::ops::lane::end::end(ctx, &item.lane, plan);
    closed.extend(ended.closed);
    warnings.extend(ended.warnings);
    let body = format!(
        "lead merge landed lane {f} on {} in {}{}{}; closed: {}",
        item.base,
        &commit[..commit.len().min(12)],
        match &gate {
            Some(g) => format!(" (gate: {g})"),
            None => " (no gate ran)".into(),
        },
        if resumed {
            ", finished after an interrupted run"
        } else {
            ""
        },
        if closed.is_empty() {
            "nothing".into()
        } else {
            closed.join(", ")
        }
    );
    let message = tell(ctx, plan, item, &body, warnings);
    Landed {
        lane: f.clone(),
        owner: item.lane.record.owner.clone(),
        task: item.lane.record.task.clone(),
        head: item.head.clone(),
        base: item.base.clone(),
        commit: commit.to_string(),
        resumed,
        gate,
        closed,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::base_branch;
    use super::gate::no_test_ran;

    #[test]
    fn an_exit_0_that_ran_no_test_is_named() {
        assert!(no_test_ran("running 0 tests\ntest result: ok. 0 passed\n").is_some());
        assert!(
            no_test_ran("running 0 tests\nrunning 3 tests\ntest result: ok. 3 passed\n").is_none()
        );
        assert!(no_test_ran("collected 0 items\n").is_some());
        assert!(no_test_ran("No tests found, exiting with code 0\n").is_some());
        assert!(no_test_ran("?   \tex/pkg\t[no test files]\n").is_some());
        assert!(no_test_ran("?   \tex/a\t[no test files]\nok  \tex/b\t0.1s\n").is_none());
        assert!(no_test_ran("  0 passing (2ms)\n").is_some());
        assert!(no_test_ran("  10 passing (2ms)\n").is_none());
        assert!(no_test_ran("0 passing\n").is_some());
        assert!(no_test_ran("all good\n").is_none());
    }

    #[test]
    fn a_lane_base_names_the_branch_at_the_code_remote() {
        assert_eq!(base_branch("origin/main", "origin"), "main");
        assert_eq!(base_branch("refs/remotes/origin/dev", "origin"), "dev");
        assert_eq!(base_branch("main", "origin"), "main");
        assert_eq!(base_branch("refs/heads/release/1", "origin"), "release/1");
    }
}
