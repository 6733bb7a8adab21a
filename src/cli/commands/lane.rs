//! `git swarm lane …` and `git swarm report …`

use crate::cli::output::report_unreadable;
use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec, When};
use clap::{Args, Subcommand};
use git_swarm::error::Result;
use git_swarm::ops::lane::list::{self, LaneList};
use git_swarm::ops::lane::remove::{self, LaneRemoved, PruneLine, Pruned};
use git_swarm::ops::lane::report::{self, Reported};
use git_swarm::ops::lane::snapshot::{self, Snapshotted};
use git_swarm::ops::lane::start::{self, LaneStarted, NewLane};
use git_swarm::records::lane::{ReportKind, State, Worktree};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::when(
        "lane new",
        Facts::WRITE.and(Facts::NO_SWEEP),
        &[(When::Given("task"), Facts::ARBITRATION)],
    ),
    Spec::new("lane list", Facts::LIST.and(Facts::NO_SWEEP)),
    Spec::new("lane rm", Facts::WRITE.and(Facts::NO_SWEEP)),
    Spec::new("lane prune", Facts::WRITE.and(Facts::NO_SWEEP)),
    Spec::when(
        "lane snapshot",
        Facts::WRITE.and(Facts::BUDGETED).and(Facts::NO_SWEEP),
        &[(When::Absent("lane"), Facts::IN_LANE)],
    ),
    Spec::when(
        "report",
        Facts::WRITE.and(Facts::BUDGETED),
        &[(When::Absent("lane"), Facts::IN_LANE)],
    ),
];

#[derive(Debug, Subcommand)]
pub enum LaneCmd {
    /// Create a lane: worktree <swarm.worktreeRoot>/<feature> on new branch feat/<feature>. One executor per plan: with a remote, the remote's lanes are checked first and the start is published at once, so of two machines starting a lane of one plan only one keeps it. Run it again to finish a start that was interrupted.
    New {
        /// Feature name: [a-z0-9][a-z0-9._-]{0,62}.
        feature: String,
        /// The plan this lane executes (default: the only plan; with several, say which).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Start the branch here (default: swarm.base, else the remote's default branch, else main).
        #[arg(long, value_name = "REV")]
        base: Option<String>,
        /// Who works in this lane (default: you).
        #[arg(long, value_name = "ADDR")]
        owner: Option<String>,
        /// Take task T (of --plan P, else of the one plan here or on the
        /// remote that has it): the lane starts on a child plan of P named
        /// after the feature and titled after the task, T is claimed for the
        /// lane's owner and tied to feat/<feature>, all in one atomic push
        /// (exit 3 and nothing made when someone else holds T; exit 4 and
        /// nothing made when the remote cannot be reached, unless --offline).
        #[arg(long, value_name = "T", conflicts_with = "no_task")]
        task: Option<String>,
        /// Start without a task although --plan has ready, unclaimed tasks
        /// (without it that is refused, LANE_NEEDS_TASK, listing them).
        #[arg(long)]
        no_task: bool,
    },
    /// List lanes with branch, head, ahead/behind, dirty paths and last report.
    List {
        /// Also show removed lanes.
        #[arg(long)]
        all: bool,
    },
    /// Remove a lane's worktree, branch and record.
    Rm {
        /// The lane's feature name (`git swarm lane list` shows them).
        feature: String,
        /// Remove even with uncommitted changes or an unmerged branch.
        #[arg(long)]
        force: bool,
        /// Keep the feat/<feature> branch.
        #[arg(long)]
        keep_branch: bool,
    },
    /// Remove this clone's lanes whose branch is merged into the base
    /// (ancestry, or a recorded merged verdict) and whose worktree is clean,
    /// and the clean old worktrees of lanes handed over elsewhere.
    Prune {
        /// Only say what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Publish the lane's uncommitted work (staged, unstaged, untracked) at
    /// refs/swarm/wip/<feature>, so `forecast` counts it: taken on a copy of
    /// the index (the lane's index and files are untouched), refused with
    /// nothing written when a file looks like a credential or the work is
    /// over swarm.snapshotLimit. A clean worktree publishes "nothing
    /// uncommitted". Only the lane's owner publishes; the newer snapshot wins.
    Snapshot {
        /// The lane (default: the lane whose worktree you are in).
        #[arg(long, value_name = "F")]
        lane: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub what: ReportWhat,
    /// The lane reporting (default: the lane whose worktree you are in).
    #[arg(long, value_name = "F", global = true)]
    pub lane: Option<String>,
    /// A capacity line, e.g. "ok 64% @work1".
    #[arg(long, value_name = "TEXT", global = true)]
    pub capacity: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ReportWhat {
    /// The lane's plan is written and ready.
    PlanReady,
    /// A pull request is open.
    PrOpen {
        /// The pull request's URL.
        url: String,
    },
    /// Blocked: the escalation class and what it needs.
    Blocked {
        /// The escalation class (one word).
        class: String,
        /// What it needs (the rest of the line).
        #[arg(required = true, num_args = 1..)]
        what: Vec<String>,
    },
    /// The lane wrote a handoff packet.
    Handoff {
        /// The packet id `git swarm handoff` printed.
        packet: String,
    },
    /// The lane's work is done.
    Done,
}

pub fn run(g: &Global, cmd: LaneCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    match cmd {
        LaneCmd::New {
            feature,
            plan,
            base,
            owner,
            task,
            no_task,
        } => {
            let args = NewLane {
                feature: &feature,
                plan: plan.as_deref(),
                base: base.as_deref(),
                owner: owner.as_deref(),
                task: task.as_deref(),
                no_task,
            };
            let out = start::new(&ctx, args)?;
            // The agent hooks installed in this clone, in the new checkout.
            let path = match &out {
                LaneStarted::New(n) => n.lane.path.clone(),
                LaneStarted::Finished { lane, .. } => lane.path.clone(),
            };
            let hooks = git_swarm::integrations::agent::install::into_worktree(
                &ctx,
                std::path::Path::new(&path),
            );
            let mut out = started(out);
            out.warnings.extend(hooks);
            Ok(out)
        }
        LaneCmd::List { all } => list::list(&ctx, all).map(|l| listed(g.json, l)),
        LaneCmd::Rm {
            feature,
            force,
            keep_branch,
        } => remove::rm(&ctx, &feature, force, keep_branch).map(removed),
        LaneCmd::Prune { dry_run } => remove::prune(&ctx, dry_run).map(pruned),
        LaneCmd::Snapshot { lane } => {
            snapshot::snapshot(&ctx, lane.as_deref()).map(|s| snapshotted(s, &ctx))
        }
    }
}

pub fn report(g: &Global, a: ReportArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let kind = match a.what {
        ReportWhat::PlanReady => ReportKind::PlanReady,
        ReportWhat::PrOpen { url } => ReportKind::PrOpen(url),
        ReportWhat::Blocked { class, what } => ReportKind::Blocked {
            class,
            what: what.join(" "),
        },
        ReportWhat::Handoff { packet } => ReportKind::Handoff(packet),
        ReportWhat::Done => ReportKind::Done,
    };
    let out = report::report(&ctx, a.lane.as_deref(), kind, a.capacity.as_deref())?;
    for w in &out.warnings {
        say!("warning: {w}");
    }
    Ok(reported(out))
}

/// `lane new`
fn started(s: LaneStarted) -> Output {
    let mut text = String::new();
    match &s {
        LaneStarted::Finished {
            lane, journalled, ..
        } => {
            text.push_str(&format!(
                "an earlier `git swarm lane new {}` was interrupted after writing its record: finishing it\n",
                lane.feature
            ));
            if *journalled {
                text.push_str(&format!("journalled lane-started in plan {}\n", lane.plan));
            }
            text.push_str(&format!(
                "started lane {} for plan {}: worktree {} on {}\ncd {}\n",
                lane.feature, lane.plan, lane.path, lane.branch, lane.path
            ));
        }
        LaneStarted::New(n) => {
            let l = &n.lane;
            for note in &n.notes {
                text.push_str(&format!("{note}\n"));
            }
            text.push_str(&format!(
                "started lane {} for plan {}: worktree {} on {} from {} ({})\n",
                l.feature,
                l.plan,
                l.path,
                l.branch,
                l.base,
                &l.base_commit[..12]
            ));
            if n.plan_file.is_some() {
                text.push_str(&format!(
                    "{} checked out there, untracked (save edits with `git swarm plan save`)\n",
                    n.plan_file_setting
                ));
            }
            if let Some(t) = &n.task {
                text.push_str(&format!(
                    "task {}/{} claimed by {} until {}, tied to {} (lane plan {}, child of {})\n",
                    t.plan,
                    t.id,
                    t.holder,
                    t.lease_until.as_deref().unwrap_or("-"),
                    t.branch,
                    t.lane_plan,
                    t.plan
                ));
            }
            if n.published {
                let what = if n.task.is_some() {
                    "the lane, its plan and the task's claim"
                } else {
                    "the lane and its plan entry"
                };
                text.push_str(&format!(
                    "published: the remote has {what} (one executor per plan, across machines)\n"
                ));
            }
            text.push_str(&format!("cd {}\n", l.path));
        }
    }
    let hooks_missing = matches!(&s, LaneStarted::New(n) if !n.hooks_installed);
    let mut out = Output::new(&s, text);
    if let LaneStarted::New(n) = &s {
        for w in &n.warnings {
            out = out.warn(w.clone());
        }
    }
    if hooks_missing {
        out = out.warn("the guard hooks are not installed in this repository, so commits in the lane are not checked: run `git swarm init`");
    }
    out
}

/// `lane list`
fn listed(wanted: bool, l: LaneList) -> Output {
    let mut text = String::new();
    if l.lanes.is_empty() && l.unreadable.is_empty() {
        text.push_str(
            "no active lanes: start one with `git swarm lane new <feature> --plan <plan>`\n",
        );
    }
    for s in &l.lanes {
        let mut line = format!(
            "{}  plan {}  owner {}  {}",
            s.feature, s.plan, s.owner, s.branch
        );
        if let Some(h) = &s.head {
            line.push_str(&format!(" @ {}", &h[..12]));
        }
        match (s.ahead, s.behind) {
            (Some(a), Some(b)) => line.push_str(&format!("  +{a} -{b} vs {}", s.base)),
            _ => line.push_str(&format!("  from {}", s.base)),
        }
        if s.state != State::Active {
            line.push_str(&format!("  ({})", s.state));
        }
        text.push_str(&line);
        text.push('\n');
        let where_ = match s.worktree {
            Worktree::Missing => " (directory missing)",
            Worktree::Elsewhere => " (in another clone)",
            _ => "",
        };
        text.push_str(&format!("  path    {}{where_}\n", s.path));
        if s.worktree == Worktree::Present {
            let mut dirty = s.dirty.join(", ");
            if s.plan_unsaved {
                if !dirty.is_empty() {
                    dirty.push_str(", ");
                }
                dirty.push_str("unsaved plan edits");
            }
            if dirty.is_empty() {
                dirty = "clean".into();
            }
            text.push_str(&format!("  dirty   {dirty}\n"));
        }
        if let Some(r) = &s.last_report {
            let cap = r
                .capacity
                .as_deref()
                .map(|c| format!("  capacity={c}"))
                .unwrap_or_default();
            let cleared = r
                .cleared
                .as_deref()
                .map(|c| format!("  [no longer blocking: {c}]"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  report  {}{cap}  ({}, {}){cleared}\n",
                r.text, r.by, r.at
            ));
        }
        if let Some(t) = l.spend.get(&s.feature) {
            text.push_str(&format!("  spent   {}\n", super::status::spent(t)));
        }
    }
    if l.removed_hidden > 0 {
        text.push_str(&format!(
            "({} not shown: `git swarm lane list --all`)\n",
            count(l.removed_hidden, "removed lane", "removed lanes")
        ));
    }
    report_unreadable(Output::listing(wanted, &l, text), &l.unreadable)
}

/// `lane rm`
fn snapshotted(s: Snapshotted, ctx: &git_swarm::session::Ctx) -> Output {
    let what = if s.clean {
        "nothing uncommitted".to_string()
    } else {
        format!("{} ({} bytes)", count(s.paths, "path", "paths"), s.size)
    };
    let head = &s.head[..s.head.len().min(12)];
    let mut text = match (&s.published_to, s.unchanged) {
        (_, true) => format!(
            "snapshot of lane {} unchanged ({what}, taken on {head}): {} already holds it\n",
            s.lane, s.refname
        ),
        (Some(r), false) => format!(
            "snapshot of lane {} published to {r} at {}: {what}, taken on {head}\n",
            s.lane, s.refname
        ),
        (None, false) => format!(
            "snapshot of lane {} kept at {}: {what}, taken on {head}\n",
            s.lane, s.refname
        ),
    };
    if !s.clean {
        text.push_str("`git swarm forecast` now counts this work for the lane\n");
    }
    let kept = s.published_to.is_none() && !s.unchanged;
    let out = Output::new(&s, text);
    if kept {
        // The one wording, on stderr like every other write's.
        out.warn(git_swarm::store::remote::not_published(
            &ctx.store.run.reach.kept_why(),
        ))
    } else {
        out
    }
}

fn removed(r: LaneRemoved) -> Output {
    let feature = &r.feature;
    let mut text = if r.resumed {
        format!("completed the removal of lane {feature}")
    } else {
        format!("removed lane {feature}")
    };
    if r.worktree_removed {
        text.push_str(&format!(": worktree {} deleted", r.path));
    }
    if r.branch_deleted {
        text.push_str(&format!(
            ", branch {} deleted (was {})",
            r.branch,
            r.branch_head.as_deref().map(|h| &h[..12]).unwrap_or("-")
        ));
    } else if r.branch_head.is_some() && r.local {
        text.push_str(&format!(", branch {} kept", r.branch));
    }
    text.push_str(&format!(
        "\nthe record stays in {} (state: removed)\n",
        git_swarm::records::lane::lane_ref(feature)
    ));
    let warning = r.not_published.clone();
    let out = Output::new(&r, text);
    match warning {
        Some(w) => out.warn(w),
        None => out,
    }
}

/// `lane prune`
fn pruned(p: Pruned) -> Output {
    for w in &p.warnings {
        say!("warning: {w}");
    }
    let verb = if p.dry_run { "would remove" } else { "removed" };
    let mut text = String::new();
    for line in &p.order {
        match *line {
            PruneLine::Kept(i) => {
                let k = &p.kept[i];
                text.push_str(&format!("{:<13}{}: {}\n", "kept", k.feature, k.reason));
            }
            PruneLine::Removed(i) => {
                let r = &p.removed[i];
                text.push_str(&format!("{verb:<13}{}: {}\n", r.feature, r.why));
            }
            PruneLine::OldWorktree(i) => {
                let o = &p.old_worktrees[i];
                text.push_str(&format!(
                    "{verb:<13}{}: old worktree {} (the lane was handed over to {}, at {}; branch {} kept)\n",
                    o.feature, o.worktree, o.owner, o.path, o.branch
                ));
            }
        }
    }
    if p.order.is_empty() {
        text.push_str("no active lanes\n");
    }
    report_unreadable(Output::new(&p, text), &p.unreadable)
}

/// `report`
fn reported(r: Reported) -> Output {
    let mut text = format!("lane {} → plan {}: {}\n", r.lane, r.plan, r.text);
    if let Some(c) = &r.capacity {
        text.push_str(&format!("capacity={c}\n"));
    }
    Output::new(&r, text)
}
