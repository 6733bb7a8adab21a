//! `notify`, `ask`, `reply`, `decide`, `escalate`, `inbox`, `wait`, `state`.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec, When};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::ops::lane::report;
use git_swarm::ops::message::wait::{self, Watch};
use git_swarm::ops::message::{self as flow, Post, Posted};
use git_swarm::ops::task;
use git_swarm::records::lane::ReportKind;
use git_swarm::records::message::{Kind, Message, MAX_BODY};
use git_swarm::views::state;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("notify", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::new("ask", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::new("reply", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::new("inbox", Facts::WRITE.and(Facts::LISTING)),
    Spec::new("wait", Facts::WRITE.and(Facts::NO_PUBLISH)),
    Spec::new("decide", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::new("escalate", Facts::WRITE.and(Facts::BUDGETED)),
    Spec::when(
        "state",
        Facts::LISTING,
        &[
            (When::Absent("write"), Facts::READ),
            (When::Given("write"), Facts::WRITE),
        ],
    ),
];

#[derive(Debug, Args)]
pub struct BodyArgs {
    /// The plan the message is about (`lead` needs it; default: the lane's, in a lane worktree).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Read the text from this file instead of the arguments.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// An approval or answer relayed from this address (shown as relayed everywhere).
    #[arg(long, value_name = "WHO")]
    pub relayed_from: Option<String>,
}

#[derive(Debug, Args)]
pub struct NotifyArgs {
    /// An address, `lead` (the plan's current leader) or `all`.
    pub to: String,
    /// The text (words are joined by spaces).
    pub text: Vec<String>,
    /// Mark it urgent: agents hooked into a host are shown an urgent
    /// message to `all` at their next prompt (other broadcasts wait for
    /// `inbox`).
    #[arg(long)]
    pub urgent: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Debug, Args)]
pub struct ReplyArgs {
    /// The id of the message answered (see `git swarm inbox`); with --last, the first word of the text.
    #[arg(required_unless_present = "last")]
    pub message_id: Option<String>,
    /// The text.
    pub text: Vec<String>,
    /// Answer the newest ask addressed to you (by name, as leader, or to all); ASK_NOT_FOUND when there is none.
    #[arg(long)]
    pub last: bool,
    /// With --last: the newest ask from this address.
    #[arg(long, value_name = "ADDRESS", requires = "last")]
    pub from: Option<String>,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The choice made.
    pub choice: String,
    /// The options that were considered, comma-separated.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub options: Vec<String>,
    /// Why.
    #[arg(long, value_name = "TEXT", required = true)]
    pub reason: String,
    /// How to undo it.
    #[arg(long, value_name = "TEXT")]
    pub undo: Option<String>,
    /// The plan whose journal records it.
    #[arg(long, value_name = "P", required = true)]
    pub plan: String,
    /// A decision relayed from this address.
    #[arg(long, value_name = "WHO")]
    pub relayed_from: Option<String>,
}

#[derive(Debug, Args)]
pub struct EscalateArgs {
    /// What kind of help: approval, access, decision, blocked, … (a name).
    pub class: String,
    /// What is needed.
    pub what: Vec<String>,
    /// The task it blocks.
    #[arg(long, value_name = "T")]
    pub task: Option<String>,
    #[command(flatten)]
    pub body: BodyArgs,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Only messages about this plan.
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Show read messages too.
    #[arg(long)]
    pub all: bool,
    /// Show without marking anything read.
    #[arg(long)]
    pub peek: bool,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// message, packet, lead, task, verdict or any.
    #[arg(long = "for", value_name = "KIND", default_value = "any")]
    pub for_: String,
    /// Only this plan.
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Give up after this long (exit 1, WAIT_TIMEOUT).
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub timeout: String,
    /// The first pause between checks; it doubles up to --max-interval.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub interval: String,
    /// The longest pause between checks (default swarm.waitCeiling, else 60s).
    #[arg(long, value_name = "DURATION")]
    pub max_interval: Option<String>,
    /// Do not mark the messages that woke it read.
    #[arg(long)]
    pub peek: bool,
}

#[derive(Debug, Args)]
pub struct StateArgs {
    /// Only this plan.
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// Also write state.md at the top of the working tree (untracked, excluded).
    #[arg(long)]
    pub write: bool,
    /// Write the dashboard (`git swarm serve`'s page) to FILE instead: one self-contained HTML file, no script, no network (`-`: on stdout).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["write", "plan"])]
    pub html: Option<String>,
}

fn body(text: &[String], args: &BodyArgs) -> Result<String> {
    match (&args.body_file, text.is_empty()) {
        (Some(_), false) => Err(Error::new(
            Code::Usage,
            "give the text as arguments or --body-file, not both",
        )),
        (Some(path), true) => {
            let bytes = git_swarm::fsutil::read_input(path, MAX_BODY as u64)?;
            git_swarm::text::utf8(&format!("--body-file {}", path.display()), bytes)
        }
        (None, _) => Ok(text.join(" ")),
    }
}

fn posted(g: &Global, p: Post) -> Result<Output> {
    let ctx = g.ctx()?;
    Ok(render(flow::post(&ctx, p)?))
}

fn render(p: Posted) -> Output {
    let Posted {
        message,
        refname,
        published,
        warning,
    } = p;
    let where_ = if published {
        "published"
    } else {
        "kept in this clone"
    };
    let text = format!("{}\n{} ({where_})\n", message.line(), refname);
    let mut out = Output::new(
        serde_json::json!({ "message": message, "ref": refname, "published": published }),
        text,
    );
    if let Some(w) = warning {
        out = out.warn(w);
    }
    out
}

fn post_of(kind: Kind, to: String, text: String, b: BodyArgs) -> Post {
    Post {
        plan: b.plan,
        relayed_from: b.relayed_from,
        ..Post::new(kind, to, text)
    }
}

pub fn notify(g: &Global, a: NotifyArgs, kind: Kind) -> Result<Output> {
    let text = body(&a.text, &a.body)?;
    let mut p = post_of(kind, a.to, text, a.body);
    p.urgent = a.urgent;
    posted(g, p)
}

pub fn reply(g: &Global, a: ReplyArgs) -> Result<Output> {
    let (id, words) = match (a.last, a.message_id) {
        // With --last every word is the answer.
        (true, first) => (None, first.into_iter().chain(a.text).collect::<Vec<_>>()),
        (false, id) => (id, a.text),
    };
    let text = body(&words, &a.body)?;
    let id = match id {
        Some(id) => id,
        None => git_swarm::ops::message::last_ask(&g.ctx()?, a.from.as_deref())?.id,
    };
    let mut p = post_of(Kind::Reply, String::new(), text, a.body);
    p.reply_to = Some(id);
    posted(g, p)
}

pub fn decide(g: &Global, a: DecideArgs) -> Result<Output> {
    posted(
        g,
        Post {
            plan: Some(a.plan),
            relayed_from: a.relayed_from,
            options: a.options,
            reason: Some(a.reason),
            undo: a.undo,
            ..Post::new(Kind::Decision, "all", a.choice)
        },
    )
}

/// `escalate`: the message (to the plan's leader, else everyone), then,
/// from a lane worktree without `--task`, the lane is blocked: a `report
/// blocked <class> <what>` in the plan journal, as `status` shows it. With
/// `--task T` the task is blocked instead (see [`block_task`]).
pub fn escalate(g: &Global, a: EscalateArgs) -> Result<Output> {
    git_swarm::names::validate_name("escalation class", &a.class)?;
    let text = body(&a.what, &a.body)?;
    let ctx = g.ctx()?;
    let lane = ctx.lane_here();
    let mut b = a.body;
    if b.plan.is_none() {
        b.plan = lane.as_ref().map(|l| l.record.plan.clone());
    }
    let to = if b.plan.is_some() { "lead" } else { "all" };
    let mut p = post_of(Kind::Escalation, to.into(), text.clone(), b);
    p.class = Some(a.class.clone());
    p.task = a.task.clone();
    // A plan without a leader escalates to everyone.
    let result = match flow::post(&ctx, p.clone()) {
        Err(e) if to == "lead" && e.code == Code::NoLeader => flow::post(
            &ctx,
            Post {
                to: "all".into(),
                ..p
            },
        ),
        other => other,
    }?;
    let mut out = render(result);
    if let Some(id) = &a.task {
        let plan = out.json["message"]["plan"].as_str().map(str::to_string);
        out = block_task(&ctx, out, plan.as_deref(), id, &a.class, &text);
    }
    if let (Some(lane), None) = (lane, &a.task) {
        let what = text.lines().next().unwrap_or("").to_string();
        let kind = ReportKind::Blocked {
            class: a.class,
            what,
        };
        match report::report(&ctx, Some(&lane.feature), kind, None) {
            Ok(r) => {
                out.text
                    .push_str(&format!("lane {} reported blocked\n", r.lane));
                out.json["blocked_lane"] = serde_json::json!(r.lane);
            }
            Err(e) => out = out.warn(format!("the lane was not reported blocked: {}", e.message)),
        }
    }
    Ok(out)
}

/// After an escalation with `--task T` is recorded: block T through the
/// task operation's `block`, with the escalation as the reason. The task
/// rules decide who may: the claim's holder, or anyone when nobody holds
/// a claim. When the task cannot be blocked (someone else holds it, it is
/// done or cancelled, it does not exist) the escalation still stands: the
/// task's answer is a warning and `task_blocked: false` with `task_error`.
fn block_task(
    ctx: &git_swarm::session::Ctx,
    mut out: Output,
    plan: Option<&str>,
    id: &str,
    class: &str,
    text: &str,
) -> Output {
    let what = text.lines().next().unwrap_or("");
    let reason = format!("escalation [{class}]: {what}");
    let op = task::OpArgs::Block {
        reason: Some(reason),
    };
    match task::act(ctx, plan, id, op) {
        Ok(r) => {
            let how = if r.already { "was already" } else { "is now" };
            out.text
                .push_str(&format!("task {} [{}] {how} blocked\n", r.id, r.plan));
            out.json["task_blocked"] = serde_json::json!(true);
            out.json["task"] = serde_json::json!({
                "plan": r.plan, "id": r.id, "already": r.already,
                "published": r.published, "commit": r.commit,
            });
        }
        Err(e) => {
            out.json["task_blocked"] = serde_json::json!(false);
            out.json["task_error"] =
                serde_json::json!({ "code": e.code.as_str(), "message": e.message });
            out = out.warn(format!(
                "the escalation stands, but task {id} was not blocked: {} ({})",
                e.message,
                e.code.as_str()
            ));
        }
    }
    out
}

fn lines(messages: &[Message]) -> String {
    messages.iter().map(|m| format!("{}\n", m.line())).collect()
}

pub fn inbox(g: &Global, a: InboxArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let inbox = flow::inbox(&ctx, a.plan.as_deref(), a.all, a.peek)?;
    let mut text = format!(
        "{} for {} ({} new)\n",
        count(inbox.messages.len(), "message", "messages"),
        inbox.reader,
        inbox.new.len()
    );
    text.push_str(&lines(&inbox.messages));
    let unreadable = inbox.unreadable.clone();
    Ok(crate::cli::output::report_unreadable(
        Output::new(&inbox, text),
        &unreadable,
    ))
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let d = git_swarm::clock::parse_duration(text).map_err(|e| e.hint(format!("fix {flag}")))?;
    Ok(d.unsigned_abs())
}

pub fn wait_for(g: &Global, a: WaitArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let ceiling = match a
        .max_interval
        .or_else(|| ctx.store.config("swarm.waitCeiling"))
    {
        Some(c) => duration("--max-interval", &c)?,
        None => Duration::from_secs(60),
    };
    let watch = Watch {
        kind: wait::WaitKind::parse(&a.for_),
        plan: a.plan,
        timeout: duration("--timeout", &a.timeout)?,
        interval: duration("--interval", &a.interval)?,
        ceiling,
        peek: a.peek,
    };
    let woke = wait::wait(&ctx, &watch, &mut |line| say!("warning: {line}"))?;
    let mut text = lines(&woke.messages);
    for r in &woke.refs {
        text.push_str(&format!("{r}\n"));
    }
    Ok(Output::new(&woke, text))
}

pub fn state(g: &Global, a: StateArgs) -> Result<Output> {
    if let Some(file) = &a.html {
        return super::serve::write_html(g, file);
    }
    let ctx = g.ctx()?;
    let mut s = state::state(&ctx, a.plan.as_deref())?;
    let markdown = state_markdown(&s);
    if a.write {
        s.written = Some(state::write(&ctx, &markdown)?);
    }
    let text = match &s.written {
        Some(path) => format!("{markdown}\nwritten to {path}\n"),
        None => markdown,
    };
    Ok(Output::new(&s, text))
}

/// `state` as markdown: a heading, then each section's lines as a list
/// (`(none)` for an empty one), one line per item.
fn state_markdown(s: &state::State) -> String {
    let mut text = match &s.plan {
        Some(p) => format!("# Swarm state: {p}\n"),
        None => "# Swarm state\n".to_string(),
    };
    for section in &s.sections {
        text.push_str(&format!("\n## {}\n\n", section.title));
        if section.lines.is_empty() {
            text.push_str("(none)\n");
        }
        for line in &section.lines {
            text.push_str(&format!("- {}\n", line.replace('\n', " ")));
        }
    }
    text
}
