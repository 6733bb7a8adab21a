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
use crate::session::Ctx;

/// The most lines of a gate's output or of a conflict's hunks a brief
/// carries (the tail of the gate, the head of each hunk).
const BRIEF_LINES: usize = 40;

mod brief;
mod gate;
mod github;
use brief::{brief, tell};
use github::{land_github, pr_of, Outcome};

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

/// Run the queue. A lane whose last report is `PR open <GitHub PR URL>` is
/// landed through that PR (`github` makes the client when one is needed).
pub fn merge(ctx: &Ctx, args: &Args, github: &mut GitHubFactory<'_>) -> Result<Queue> {
    let store = &ctx.store;
    let actor = ctx.actor()?;
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
    // The fence, first: a renew is leader-only and fenced like every
    // leader command (LEAD_FENCED / NOT_LEADER, nothing written). The real
    // fence is the landing push itself, which moves the lead ref too.
    let (leader, epoch) = if args.dry_run {
        let c = super::check(ctx, &plan)?;
        (c.leader.unwrap_or_default(), c.epoch)
    } else {
        let ran = super::run(
            ctx,
            &plan,
            Op::Renew {
                lease: None,
                lanes: None,
            },
        )?;
        (actor.clone(), ran.record.epoch)
    };
    // The records as the remote has them, kept here.
    let mut warnings = Vec::new();
    if ctx.remote().is_some() {
        let report = crate::ops::sync::sync(ctx, &actor, &mut |_| {})?;
        warnings.extend(report.warnings);
    }
    let (lanes, _) = lane::known(store, ctx.remote())?;
    let mut lanes: Vec<Lane> = lanes
        .into_iter()
        .filter(|l| l.record.is_active() && of_plan(ctx, &l.record, &plan))
        .collect();
    for f in &args.features {
        if !lanes.iter().any(|l| &l.feature == f) {
            return Err(Error::new(
                Code::NotFound,
                format!("plan '{plan}' has no active lane '{f}'"),
            )
            .hint(format!("`git swarm lane list` shows the lanes; `git swarm lead merge --plan {plan}` takes every ready one")));
        }
    }
    if !args.features.is_empty() {
        lanes.retain(|l| args.features.contains(&l.feature));
    }
    // The code: the lanes' branches and their bases as the remote has them.
    let mut specs: Vec<String> = Vec::new();
    for l in &lanes {
        let b = base_branch(&l.record.base, &code);
        specs.push(format!("+refs/heads/{b}:refs/remotes/{code}/{b}"));
        specs.push(format!(
            "+refs/heads/{0}:refs/remotes/{code}/{0}",
            l.record.branch
        ));
    }
    specs.sort();
    specs.dedup();
    fetch_each(&store.git, &code, &specs);
    let mut items = Vec::new();
    let mut waiting = Vec::new();
    for l in lanes {
        let named = args.features.contains(&l.feature);
        match ready(&store.git, &code, l, named)? {
            Ok(item) => items.push(item),
            Err(w) => waiting.push(w),
        }
    }
    let pairs = forecast_pairs(&store.git, &items);
    order(&mut items, &pairs);
    let mut q = Queue {
        plan: plan.clone(),
        leader,
        epoch,
        style,
        gate: gate.clone(),
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
    for item in &items {
        let base_tip = store.git.rev_parse(&item.tracking)?.unwrap_or_default();
        if let Some((repo, number, url)) = pr_of(item) {
            let gh = match &mut client {
                Some(c) => c,
                None => client.insert(github()?),
            };
            match land_github(
                ctx,
                &plan,
                item,
                &repo,
                number,
                &url,
                style,
                gh.as_mut(),
                &mut q.warnings,
            )? {
                Outcome::Landed { commit, gate } => {
                    failpoint::point("lead-merge:landed");
                    q.landed.push(finish(
                        ctx,
                        &plan,
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
                    let involved = pairs_of(&pairs, &item.lane.feature);
                    let brief = brief(
                        item, &base_tip, &store.git, code, &paths, &detail, &involved, &q.landed,
                    );
                    let message = tell(ctx, &plan, item, &brief, &mut q.warnings);
                    q.refused.push(Refused {
                        lane: item.lane.feature.clone(),
                        owner: item.lane.record.owner.clone(),
                        code,
                        head: item.head.clone(),
                        base: item.base.clone(),
                        base_commit: base_tip.clone(),
                        paths,
                        pairs: involved,
                        brief,
                        message,
                    });
                }
            }
            continue;
        }
        if let Some(commit) = already_landed(&store.git, item, &base_tip)? {
            q.landed.push(finish(
                ctx,
                &plan,
                item,
                &commit,
                true,
                None,
                &mut q.warnings,
            ));
            continue;
        }
        match land(ctx, &plan, &code, item, &base_tip, style, gate.as_deref())? {
            Outcome::Landed { commit, gate } => {
                failpoint::point("lead-merge:landed");
                let _ = store.git.run(["update-ref", &item.tracking, &commit]);
                q.landed.push(finish(
                    ctx,
                    &plan,
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
                let involved = pairs_of(&pairs, &item.lane.feature);
                let brief = brief(
                    item, &base_tip, &store.git, code, &paths, &detail, &involved, &q.landed,
                );
                let message = tell(ctx, &plan, item, &brief, &mut q.warnings);
                q.refused.push(Refused {
                    lane: item.lane.feature.clone(),
                    owner: item.lane.record.owner.clone(),
                    code,
                    head: item.head.clone(),
                    base: item.base.clone(),
                    base_commit: base_tip.clone(),
                    paths,
                    pairs: involved,
                    brief,
                    message,
                });
                if code == "PUSH_REJECTED" {
                    // The base moved under the queue: the rest would fail
                    // the same way; a re-run starts from the new base.
                    break;
                }
            }
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

/// Whether the lane works for `plan`: its task is one of the plan's, or it
/// runs on the plan itself or on a child plan of it.
fn of_plan(ctx: &Ctx, rec: &lane::LaneRecord, plan: &str) -> bool {
    if rec.plan == plan {
        return true;
    }
    if let Some((p, _)) = rec.task.as_deref().and_then(|t| t.split_once('/')) {
        return p == plan;
    }
    crate::records::plan::load(&ctx.store, &rec.plan)
        .ok()
        .flatten()
        .is_some_and(|p| p.record.parent.as_deref() == Some(plan))
}

/// The branch at the code remote a lane's base names (`origin/main` →
/// `main`, `refs/heads/main` → `main`).
pub fn base_branch(base: &str, code: &str) -> String {
    let b = base.strip_prefix("refs/remotes/").unwrap_or(base);
    let b = b.strip_prefix(&format!("{code}/")).unwrap_or(b);
    b.strip_prefix("refs/heads/").unwrap_or(b).to_string()
}

/// Fetch each refspec on its own: a lane whose branch was never pushed
/// must not stop the others (it is reported as waiting).
fn fetch_each(git: &Git, code: &str, specs: &[String]) {
    if git.fetch(code, specs).is_ok() {
        return;
    }
    for s in specs {
        let _ = git.fetch(code, std::slice::from_ref(s));
    }
}

/// A lane is ready when its branch is at the code remote with work beyond
/// its base and its last report is `PR open` or `done` (or it was named).
fn ready(
    git: &Git,
    code: &str,
    lane: Lane,
    named: bool,
) -> Result<std::result::Result<Item, Waiting>> {
    let feature = lane.feature.clone();
    let wait = |why: String| {
        Ok(Err(Waiting {
            lane: feature.clone(),
            why,
        }))
    };
    let base = base_branch(&lane.record.base, code);
    let tracking = format!("refs/remotes/{code}/{base}");
    let pushed = format!("refs/remotes/{code}/{}", lane.record.branch);
    let Some(head) = git.rev_parse(&pushed)? else {
        return wait(format!(
            "its branch {} is not on {code} (push it: `git push {code} {}`)",
            lane.record.branch, lane.record.branch
        ));
    };
    if git.rev_parse(&tracking)?.is_none() {
        return wait(format!("its base {base} is not on {code}"));
    }
    if head == lane.record.base_commit {
        return wait(format!(
            "its branch {} has no commits beyond its base",
            lane.record.branch
        ));
    }
    let report = lane.record.last_report.as_ref().map(|r| r.kind.clone());
    let reported = matches!(
        report,
        Some(LastReportKind::PrOpen) | Some(LastReportKind::Done)
    );
    if !reported && !named {
        let last = lane
            .record
            .last_report
            .as_ref()
            .map(|r| format!("'{}'", r.text))
            .unwrap_or_else(|| "none".into());
        return wait(format!(
            "its last report is {last}, not `PR open` or `done` (the lane reports `git swarm report done`, or name it: `git swarm lead merge {feature}`)"
        ));
    }
    Ok(Ok(Item {
        lane,
        head,
        base,
        tracking,
    }))
}

/// A pair of lanes that `git merge-tree` says conflict, and their paths.
struct Pair {
    a: String,
    b: String,
    paths: Vec<String>,
}

/// The conflict forecast between the ready lanes' heads (the same
/// `git merge-tree` the forecast runs).
fn forecast_pairs(git: &Git, items: &[Item]) -> Vec<Pair> {
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        for y in &items[i + 1..] {
            if let Ok(r) = git.merge_tree_report(&x.head, &y.head) {
                if !r.conflicts.is_empty() {
                    out.push(Pair {
                        a: x.lane.feature.clone(),
                        b: y.lane.feature.clone(),
                        paths: r.conflicts.into_iter().map(|(p, _)| p).collect(),
                    });
                }
            }
        }
    }
    out
}

/// The lanes that conflict with nothing first, then by how many lanes
/// they conflict with, then by name.
fn order(items: &mut [Item], pairs: &[Pair]) {
    let count = |f: &str| pairs.iter().filter(|p| p.a == f || p.b == f).count();
    items.sort_by(|x, y| {
        (count(&x.lane.feature), &x.lane.feature).cmp(&(count(&y.lane.feature), &y.lane.feature))
    });
}

fn pairs_of(pairs: &[Pair], f: &str) -> Vec<String> {
    pairs
        .iter()
        .filter(|p| p.a == f || p.b == f)
        .map(|p| format!("{} × {} ({})", p.a, p.b, p.paths.join(", ")))
        .collect()
}

/// The commit on the base that already carries this lane's work, if an
/// earlier run landed it: the head in the base, or a first-parent commit
/// since the lane's start with its `Swarm-Landed` trailer.
fn already_landed(git: &Git, item: &Item, base_tip: &str) -> Result<Option<String>> {
    if base_tip.is_empty() {
        return Ok(None);
    }
    if git.is_ancestor(&item.head, base_tip)? {
        return Ok(Some(base_tip.to_string()));
    }
    let found = landings(git, &item.lane.record.base_commit, base_tip)?;
    Ok(found
        .into_iter()
        .find(|l| l.feature == item.lane.feature && l.head == item.head)
        .map(|l| l.commit))
}

/// A landing on the base: the commit carrying a `Swarm-Landed: <feature>
/// <head>` trailer.
#[derive(Debug, Clone, Serialize)]
pub struct Landing {
    pub commit: String,
    pub feature: String,
    pub head: String,
}

/// The landings on `base_tip`'s first-parent line since `since` (all of
/// it when `since` is empty or unknown here), newest first.
pub fn landings(git: &Git, since: &str, base_tip: &str) -> Result<Vec<Landing>> {
    let range = if since.is_empty() || !git.has_commit(since)? {
        base_tip.to_string()
    } else {
        format!("{since}..{base_tip}")
    };
    let log = git.run([
        "log",
        "--first-parent",
        "--format=%H%x00%(trailers:key=Swarm-Landed,valueonly)%x01",
        &range,
    ])?;
    let mut out = Vec::new();
    for entry in log.split('\u{1}') {
        if let Some((commit, trailers)) = entry.trim().split_once('\0') {
            for t in trailers.lines() {
                if let Some((feature, head)) = t.trim().split_once(' ') {
                    out.push(Landing {
                        commit: commit.trim().to_string(),
                        feature: feature.to_string(),
                        head: head.trim().to_string(),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn landed_trailer(feature: &str, head: &str) -> String {
    format!("Swarm-Landed: {feature} {head}")
}

/// Merge, gate and publish one lane.
fn land(
    ctx: &Ctx,
    plan: &str,
    code: &str,
    item: &Item,
    base_tip: &str,
    style: Style,
    gate: Option<&str>,
) -> Result<Outcome> {
    let store = &ctx.store;
    let dir = store
        .common_dir()
        .join("swarm")
        .join("merge")
        .join(&item.lane.feature);
    let _ = store
        .git
        .run(["worktree", "remove", "--force", &dir.display().to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = store.git.worktree_prune();
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::new(Code::IoFailed, format!("{}: {e}", parent.display())))?;
    }
    store.git.run([
        "worktree",
        "add",
        "--detach",
        "--quiet",
        &dir.display().to_string(),
        base_tip,
    ])?;
    let out = in_worktree(ctx, plan, code, item, base_tip, style, gate, &dir);
    let _ = store
        .git
        .run(["worktree", "remove", "--force", &dir.display().to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = store.git.worktree_prune();
    out
}

#[allow(clippy::too_many_arguments)]
fn in_worktree(
    ctx: &Ctx,
    plan: &str,
    code: &str,
    item: &Item,
    base_tip: &str,
    style: Style,
    gate: Option<&str>,
    dir: &Path,
) -> Result<Outcome> {
    let wt = Git::new(dir);
    let feature = &item.lane.feature;
    let task = item
        .lane
        .record
        .task
        .as_deref()
        .map(|t| format!(" (task {t})"))
        .unwrap_or_default();
    let subject = format!("Merge lane {feature}{task} into {}", item.base);
    let trailer = landed_trailer(feature, &item.head);
    let message = format!("{subject}\n\n{trailer}\n");
    let merged = match style {
        Style::Merge => wt.output(["merge", "--no-ff", "--no-edit", "-m", &message, &item.head])?,
        Style::Squash => wt.output(["merge", "--squash", &item.head])?,
        Style::Rebase => {
            wt.run(["checkout", "--quiet", "--detach", &item.head])?;
            wt.output(["rebase", "--quiet", base_tip])?
        }
    };
    if !merged.status.success() {
        let paths: Vec<String> = wt
            .run(["diff", "--name-only", "--diff-filter=U"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let hunks = wt.run(["diff"]).unwrap_or_default();
        let _ = wt.output(["merge", "--abort"]);
        let _ = wt.output(["rebase", "--abort"]);
        let detail = if paths.is_empty() {
            trim_head(&format!(
                "{}{}",
                String::from_utf8_lossy(&merged.stdout),
                String::from_utf8_lossy(&merged.stderr)
            ))
        } else {
            trim_head(&hunks)
        };
        return Ok(Outcome::Refused {
            code: "MERGE_CONFLICT",
            paths,
            detail,
        });
    }
    match style {
        Style::Merge => {}
        Style::Squash => {
            wt.run(["commit", "--quiet", "--allow-empty", "-m", &message])?;
        }
        Style::Rebase => {
            wt.run([
                "commit",
                "--quiet",
                "--amend",
                "--no-edit",
                "--trailer",
                &trailer,
            ])?;
        }
    }
    let commit = wt.rev_parse("HEAD")?.unwrap_or_default();
    let gate_line = match gate {
        None => None,
        Some(cmd) => match run_gate(cmd, dir)? {
            Ok(last) => Some(last),
            Err(output) => {
                return Ok(Outcome::Refused {
                    code: "GATE_FAILED",
                    paths: Vec::new(),
                    detail: output,
                })
            }
        },
    };
    failpoint::point("lead-merge:gated");
    let spec = format!("{commit}:refs/heads/{}", item.base);
    match super::run(
        ctx,
        plan,
        Op::Push {
            refspecs: vec![spec],
        },
    ) {
        Ok(_) => Ok(Outcome::Landed {
            commit,
            gate: gate_line,
        }),
        Err(e) if e.code == Code::PushRejected => Ok(Outcome::Refused {
            code: "PUSH_REJECTED",
            paths: Vec::new(),
            detail: format!(
                "{} refused the landing push (its {} moved meanwhile): {}",
                code, item.base, e.message
            ),
        }),
        Err(e) => Err(e),
    }
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
