//! `git swarm task …`

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::Subcommand;
use git_swarm::error::{Code, Error, Result};
use git_swarm::ops::task::{self, Fields, Listed, NewTask, OpArgs, Ran, Shown};
use git_swarm::records::task::Status;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("task new", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new("task list", Facts::LIST),
    Spec::new("task show", Facts::LIST),
    Spec::new("task update", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new("task ready", Facts::LIST),
    Spec::new(
        "task claim",
        Facts::WRITE
            .and(Facts::IN_LANE)
            .and(Facts::ARBITRATION)
            .and(Facts::BOUNDARY),
    ),
    Spec::new("task renew", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new("task release", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new("task block", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new(
        "task done",
        Facts::WRITE.and(Facts::IN_LANE).and(Facts::BOUNDARY),
    ),
    Spec::new("task cancel", Facts::WRITE.and(Facts::IN_LANE)),
    Spec::new(
        "task recover",
        Facts::WRITE.and(Facts::IN_LANE).and(Facts::ARBITRATION),
    ),
];

#[derive(Debug, clap::Args)]
pub struct FieldArgs {
    /// One line saying what the task is.
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
    /// Tasks of the same plan that must be done first (repeat or comma-separate).
    #[arg(long, value_name = "ID,…", value_delimiter = ',')]
    depends_on: Option<Vec<String>>,
    /// Paths the work will likely touch (repeat or comma-separate).
    #[arg(long, value_name = "PATH,…", value_delimiter = ',')]
    files_hint: Option<Vec<String>>,
    /// Acceptance criteria (repeat the flag, one criterion each).
    #[arg(long, value_name = "TEXT")]
    acceptance: Option<Vec<String>>,
    /// Who is meant to do it (an address; the claim is separate).
    #[arg(long, value_name = "ADDRESS")]
    owner: Option<String>,
    /// The branch whose merge makes the task done.
    #[arg(long, value_name = "BRANCH")]
    branch: Option<String>,
    /// The lane doing it (sets the branch to feat/<lane> unless --branch).
    #[arg(long, value_name = "FEATURE")]
    lane: Option<String>,
}

impl FieldArgs {
    fn fields(self, clear_owner: bool, clear_branch: bool) -> Fields {
        Fields {
            title: self.title,
            depends_on: self.depends_on.map(non_empty),
            files_hint: self.files_hint.map(non_empty),
            acceptance: self.acceptance,
            owner: self.owner,
            branch: self.branch,
            lane: self.lane,
            clear_owner,
            clear_branch,
        }
    }
}

fn non_empty(list: Vec<String>) -> Vec<String> {
    list.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Create a task in a plan (published at once).
    New {
        /// The new task's id, unique in its plan ([a-z0-9][a-z0-9._-]*, e.g. t1 or login-form).
        #[arg(required_unless_present = "from")]
        id: Option<String>,
        /// Create every task of FILE in one push: one `<id> <title>` a line, or a YAML list of `- id: …` / `  title: …` (with depends_on, files_hint, acceptance, owner, branch, lane); a bad line refuses the whole file, naming its line, and nothing is written.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["id", "title", "depends_on", "files_hint", "acceptance", "owner", "branch", "lane"])]
        from: Option<std::path::PathBuf>,
        /// The plan the task belongs to.
        #[arg(long, value_name = "P")]
        plan: String,
        #[command(flatten)]
        fields: FieldArgs,
    },
    /// List tasks (of a plan; filtered by status).
    List {
        /// Only this plan's tasks (default: every plan's).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// open, in_progress, blocked, done, cancelled (repeat or comma-separate).
        #[arg(long, value_name = "S,…", value_delimiter = ',')]
        status: Vec<String>,
    },
    /// Show one task and its journal (its audit trail).
    Show {
        /// The task id (default: the task of the lane whose worktree you are in).
        id: Option<String>,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
    },
    /// Change a task's fields (never its claim or status).
    Update {
        /// The task id (as `task new` named it, e.g. T1).
        id: String,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        #[command(flatten)]
        fields: FieldArgs,
        /// Remove the owner.
        #[arg(long)]
        clear_owner: bool,
        /// Remove the branch and lane.
        #[arg(long)]
        clear_branch: bool,
    },
    /// Open, unclaimed tasks whose dependencies are done: what to take next.
    Ready {
        /// Only this plan's tasks (default: every plan's).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
    },
    /// Claim a task for yourself (published at once; exit 3 if someone else has it), or with --next the first ready one.
    Claim {
        /// The task id (as `task new` named it, e.g. T1).
        #[arg(required_unless_present = "next", conflicts_with = "next")]
        id: Option<String>,
        /// Claim the first ready task (of --plan, else of every plan): one another clone takes first is passed over for another ready one at once; the output names the task taken (exit 1, NO_READY_TASK, when none is ready).
        #[arg(long)]
        next: bool,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Lease length, e.g. 30m, 2h (default swarm.taskLease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Extend your claim's lease (one push; renew at about half the lease).
    Renew {
        /// The task id (default: the task of the lane whose worktree you are in).
        id: Option<String>,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Lease length from now (default swarm.taskLease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
    /// Give your claim up; the task is open again.
    Release {
        /// The task id (default: the task of the lane whose worktree you are in).
        id: Option<String>,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
    },
    /// Mark a task blocked (the holder, or anyone for an unclaimed task).
    Block {
        /// The task id (default: the task of the lane whose worktree you are in).
        id: Option<String>,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Why it is blocked (shown in `task show` and the journal).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Complete your task: refused unless its branch is merged (or --unverified --reason); releases the reservations you hold for it in the same push.
    Done {
        /// The task id (default: the task of the lane whose worktree you are in).
        id: Option<String>,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Record it done although the merge cannot be verified (needs --reason).
        #[arg(long, requires = "reason")]
        unverified: bool,
        /// Why it is done without a verified merge (with --unverified), or how it was done (no branch).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// The branch the work must be merged into (default: the lane's base, else swarm.base/the remote's default).
        #[arg(long, value_name = "REV")]
        base: Option<String>,
    },
    /// Cancel a task (terminal).
    Cancel {
        /// The task id (as `task new` named it, e.g. T1).
        id: String,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
    },
    /// Take over an expired claim, recording the previous owner and why.
    Recover {
        /// The task id (as `task new` named it, e.g. T1).
        id: String,
        /// The task's plan (default: the one plan that has a task with this id).
        #[arg(long, value_name = "P")]
        plan: Option<String>,
        /// Why the claim is taken over (recorded with the previous holder).
        #[arg(long, value_name = "TEXT", required = true)]
        reason: String,
        /// The new holder (default: you).
        #[arg(long, value_name = "ADDRESS")]
        owner: Option<String>,
        /// The new claim's lease length (default swarm.taskLease, else 30m).
        #[arg(long, value_name = "DURATION")]
        lease: Option<String>,
    },
}

/// `task new ID` or `task new --from FILE`.
fn new(
    ctx: &git_swarm::session::Ctx,
    id: Option<String>,
    from: Option<std::path::PathBuf>,
    plan: String,
    fields: FieldArgs,
) -> Result<Output> {
    let Some(id) = id else {
        let file = from.expect("clap requires an id or --from");
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Error::new(Code::NotFound, format!("cannot read {shown}: {e}")))?;
        let lines = task::parse_task_file(&shown, &text)?;
        return task::create_many(ctx, &plan, &shown, &lines).map(|c| created(&c, ctx));
    };
    let new = NewTask {
        plan,
        id,
        fields: fields.fields(false, false),
    };
    task::create(ctx, new).map(|r| ran(&r, ctx))
}

/// `task list [--status S,…]`.
fn list(
    g: &Global,
    ctx: &git_swarm::session::Ctx,
    plan: Option<&str>,
    status: &[String],
) -> Result<Output> {
    let filter = status
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| Status::parse(s.trim()))
        .collect::<Result<Vec<_>>>()?;
    task::list(ctx, plan, &filter).map(|l| listed(g.json, &l))
}

/// The plan, id and arguments of a command on one task that `task::act`
/// carries out (renew, release, block, done, cancel, recover).
fn act_args(
    ctx: &git_swarm::session::Ctx,
    cmd: TaskCmd,
) -> Result<(Option<String>, String, OpArgs)> {
    Ok(match cmd {
        TaskCmd::Renew { id, plan, lease } => {
            let (plan, id) = task::named(ctx, id, plan)?;
            (plan, id, OpArgs::Renew { lease })
        }
        TaskCmd::Release { id, plan } => {
            let (plan, id) = task::named(ctx, id, plan)?;
            (plan, id, OpArgs::Release)
        }
        TaskCmd::Block { id, plan, reason } => {
            let (plan, id) = task::named(ctx, id, plan)?;
            (plan, id, OpArgs::Block { reason })
        }
        TaskCmd::Done {
            id,
            plan,
            unverified,
            reason,
            base,
        } => {
            let unverified = if unverified { reason } else { None };
            let (plan, id) = task::named(ctx, id, plan)?;
            (plan, id, OpArgs::Done { unverified, base })
        }
        TaskCmd::Cancel { id, plan } => (plan, id, OpArgs::Cancel),
        TaskCmd::Recover {
            id,
            plan,
            reason,
            owner,
            lease,
        } => (
            plan,
            id,
            OpArgs::Recover {
                owner,
                reason,
                lease,
            },
        ),
        _ => unreachable!("task::run handles the other commands itself"),
    })
}

pub fn run(g: &Global, cmd: TaskCmd) -> Result<Output> {
    let ctx = g.ctx()?;
    let (plan, id, op) = match cmd {
        TaskCmd::New {
            id,
            from,
            plan,
            fields,
        } => return new(&ctx, id, from, plan, fields),
        TaskCmd::List { plan, status } => return list(g, &ctx, plan.as_deref(), &status),
        TaskCmd::Ready { plan } => {
            return task::ready(&ctx, plan.as_deref()).map(|l| listed(g.json, &l))
        }
        TaskCmd::Show { id, plan } => {
            let (plan, id) = task::named(&ctx, id, plan)?;
            return task::show(&ctx, plan.as_deref(), &id).map(|s| shown(&s));
        }
        TaskCmd::Update {
            id,
            plan,
            fields,
            clear_owner,
            clear_branch,
        } => {
            let f = fields.fields(clear_owner, clear_branch);
            return task::update(&ctx, plan.as_deref(), &id, f).map(|r| ran(&r, &ctx));
        }
        TaskCmd::Claim {
            id,
            next,
            plan,
            lease,
        } => match id {
            Some(id) if !next => (plan, id, OpArgs::Claim { lease }),
            _ => {
                return task::claim_next(&ctx, plan.as_deref(), lease.as_deref())
                    .map(|r| ran(&r, &ctx))
            }
        },
        other => act_args(&ctx, other)?,
    };
    task::act(&ctx, plan.as_deref(), &id, op).map(|r| ran(&r, &ctx))
}

/// What a task command did, and (as every write says) where it went:
/// published to the remote, or kept here with the warning.
fn ran(r: &Ran, ctx: &git_swarm::session::Ctx) -> Output {
    let remote = ctx.remote();
    let rec = &r.record;
    let who = format!("task {}/{}", r.plan, r.id);
    let what = match (r.command, &rec.claim) {
        ("claim" | "renew" | "recover", Some(c)) => format!(
            "{who} is claimed by {} until {} (claim {})",
            c.holder, c.lease_until, c.epoch
        ),
        ("new", _) => format!("created {who}: {}", rec.title),
        ("update", _) => format!("updated {who}"),
        _ => format!("{who} is {}", rec.status_label()),
    };
    let mut text = what;
    if r.already {
        text.push_str(" (already so: nothing written)");
    }
    if let Some(prev) = rec
        .previous_owner
        .as_deref()
        .filter(|_| r.command == "recover")
    {
        text.push_str(&format!(
            "; recovered from {prev} (lease ended {})",
            rec.previous_lease_until.as_deref().unwrap_or("-")
        ));
    }
    if !r.lost_to_others.is_empty() {
        text.push_str(&format!(
            "; passed over {} (claimed by others first)",
            r.lost_to_others.join(", ")
        ));
    }
    if !r.released.is_empty() {
        text.push_str(&format!(
            "; released {} (its reservations)",
            r.released.join(", ")
        ));
    }
    if !r.ended.is_empty() {
        text.push_str(&format!("; its lane ended: closed {}", r.ended.join(", ")));
    }
    if let (true, false, Some(remote)) = (r.published, r.already, remote) {
        text.push_str(&format!(", published to {remote}"));
    }
    text.push('\n');
    let mut out = Output::new(r, text);
    for w in &r.warnings {
        out = out.warn(w.clone());
    }
    if !r.still_reserved.is_empty() {
        let ids = r.still_reserved.join(" ");
        out = out.warn(format!(
            "the task's reservations {ids} are still held: the reservation ledger kept changing; `git swarm release {ids}` releases them"
        ));
    }
    if !r.published && !r.already {
        out = out.warn(format!(
            "{}, and the remote may then prefer another clone's version",
            git_swarm::store::remote::not_published(&ctx.store.run.reach.kept_why())
        ));
    }
    out
}

fn created(c: &task::Created, ctx: &git_swarm::session::Ctx) -> Output {
    let mut text = format!(
        "created {} in plan {}",
        count(c.created.len(), "task", "tasks"),
        c.plan
    );
    if !c.already.is_empty() {
        text.push_str(&format!(
            " ({} already there just so: {})",
            c.already.len(),
            c.already.join(", ")
        ));
    }
    text.push('\n');
    let mut out = Output::new(c, text);
    if !c.published && !c.created.is_empty() {
        out = out.warn(git_swarm::store::remote::not_published(
            &ctx.store.run.reach.kept_why(),
        ));
    }
    out
}

fn listed(wanted: bool, l: &Listed) -> Output {
    let mut text = String::new();
    for t in &l.tasks {
        let claim = match (&t.holder, t.lease_expired) {
            (Some(h), false) => format!(
                "{h}, {}m left",
                t.lease_left_secs.unwrap_or(0).div_euclid(60)
            ),
            (Some(h), true) => format!("{h}, lease EXPIRED"),
            (None, _) => "-".into(),
        };
        let deps = if t.depends_on.is_empty() {
            String::new()
        } else {
            format!(" (after {})", t.depends_on.join(", "))
        };
        text.push_str(&format!(
            "{:<24} {:<18} {:<24} {}{deps}\n",
            format!("{}/{}", t.plan, t.id),
            t.status_label,
            claim,
            t.title
        ));
    }
    if l.tasks.is_empty() {
        text.push_str(if l.ready_only {
            "no task is ready\n"
        } else {
            "no tasks\n"
        });
    } else {
        text.push_str(&format!("{}\n", count(l.tasks.len(), "task", "tasks")));
    }
    // As every listing: a line for each record that could not be read.
    for u in &l.unreadable {
        text.push_str(&crate::cli::output::unreadable_row(u));
    }
    let mut out = Output::listing(wanted, l, text);
    for u in &l.unreadable {
        out = out.warn(crate::cli::output::unreadable_warning(u));
    }
    // A cycle is never made by one clone (refused at the write); one that
    // is there anyway (an older version raced, a forged record) is named.
    for (plan, cycle) in &l.cycles {
        out = out.warn(format!(
            "plan {plan}: the dependencies form a cycle ({}); none of these tasks can be ready: break it with `git swarm task update {} --depends-on …`",
            cycle.join(" → "),
            cycle[0]
        ));
    }
    out
}

fn shown(s: &Shown) -> Output {
    let r = &s.row;
    let mut text = format!(
        "task:     {}/{}\ntitle:    {}\nstatus:   {}{}\nowner:    {}\n",
        r.plan,
        r.id,
        r.title,
        r.status_label,
        if s.ready { " (ready)" } else { "" },
        r.owner.as_deref().unwrap_or("-"),
    );
    if let Some(h) = &r.holder {
        text.push_str(&format!(
            "claim:    {h} until {}{}\n",
            r.lease_until.as_deref().unwrap_or("-"),
            if r.lease_expired { " (EXPIRED)" } else { "" }
        ));
    }
    let list = |l: &[String]| {
        if l.is_empty() {
            "-".to_string()
        } else {
            l.join(", ")
        }
    };
    text.push_str(&format!(
        "depends:  {}\nbranch:   {}\n",
        list(&r.depends_on),
        r.branch.as_deref().unwrap_or("-")
    ));
    let strings = |field: &str| -> Vec<String> {
        s.task[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    text.push_str(&format!("files:    {}\n", list(&strings("files_hint"))));
    for a in strings("acceptance") {
        text.push_str(&format!("accept:   {a}\n"));
    }
    for (label, field) in [
        ("blocked:  ", "blocked_reason"),
        ("done as:  ", "done_reason"),
        ("previous: ", "previous_owner"),
        ("recovery: ", "recovery_reason"),
    ] {
        if let Some(v) = s.task[field].as_str() {
            text.push_str(&format!("{label}{v}\n"));
        }
    }
    text.push_str("journal:\n");
    for e in &s.journal {
        text.push_str(&format!(
            "  {} {} {:<15} {:<12} {}\n",
            &e.commit[..12],
            e.time,
            e.event,
            e.actor,
            e.summary
        ));
    }
    Output::new(s, text)
}
