//! `git swarm capacity`: your reading and its verdict; `capacity note`
//! (a host's figures on stdin); `capacity statusline` (Claude Code's
//! status line command); `capacity budget` (the plan's spend against
//! `swarm.budget`). And the capacity check after a task boundary command
//! (`task claim`, `task done`, `accept`, `lead claim`/`takeover`).

use std::io::Read;

use crate::cli::spec::{Facts, Spec};
use clap::{Args, Subcommand};
use git_swarm::error::{Code, Error, Result};
use git_swarm::integrations::agent::capacity as check;
use git_swarm::integrations::capacity::{self, account_from_env, spend, Action, Figures, Who};
use serde_json::{json, Value};

use crate::cli::output::Output;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("capacity", Facts::READ.and(Facts::NO_FLUSH))];

#[derive(Debug, Args)]
pub struct CapacityArgs {
    #[command(subcommand)]
    pub cmd: Option<CapacityCmd>,
    /// The plan (default: your lane's, or the only one).
    #[arg(long, value_name = "P", global = true)]
    pub plan: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum CapacityCmd {
    /// Record a host's own figures (JSON on stdin) as your reading: --from statusline (Claude Code's status line input), stream (a headless rate_limit_event), headers (an object of the API's response headers).
    Note {
        /// statusline, stream or headers.
        #[arg(long, value_name = "KIND")]
        from: String,
    },
    /// Claude Code's status line command (`agent install` sets it): records the rate limits and context fill it receives, then prints what the previous status line command printed (--then), if any.
    Statusline {
        /// The status line command that was there before (run with sh -c, given the same input).
        #[arg(long, value_name = "CMD")]
        then: Option<String>,
    },
    /// The plan's spend against swarm.budget: exit 0 under (or no budget), 1 reached.
    Budget,
}

fn me(ctx: &git_swarm::session::Ctx) -> Result<String> {
    ctx.actor()
}

fn stdin_json() -> Value {
    let mut text = String::new();
    let _ = std::io::stdin()
        .lock()
        .take(4 << 20)
        .read_to_string(&mut text);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

pub fn capacity(g: &Global, a: CapacityArgs) -> Result<Output> {
    match a.cmd {
        None => show(g, a.plan),
        Some(CapacityCmd::Note { from }) => note(g, &from),
        Some(CapacityCmd::Statusline { then }) => statusline(g, then),
        Some(CapacityCmd::Budget) => budget(g, a.plan),
    }
}

fn plan_of(ctx: &git_swarm::session::Ctx, plan: Option<String>) -> Option<String> {
    plan.or_else(|| git_swarm::integrations::agent::context::plan_of(ctx, ctx.lane_here().as_ref()))
}

fn show(g: &Global, plan: Option<String>) -> Result<Output> {
    let ctx = g.ctx()?;
    let me = me(&ctx)?;
    let plan = plan_of(&ctx, plan);
    let c = check::check(&ctx, &me, plan.as_deref(), None);
    let mut text = format!("capacity={}\n{}", c.verdict.reading.line(), c.line());
    if let Some(a) = &c.advice {
        text.push_str(a);
    }
    Ok(Output::new(
        json!({
            "address": me,
            "plan": plan,
            "capacity": c.verdict.reading.line(),
            "reading": c.verdict.reading,
            "action": c.verdict.action,
            "context_used": c.verdict.context_used,
            "packet": c.packet,
            "advice": c.advice,
        }),
        text,
    ))
}

fn figures(from: &str, v: &Value) -> Result<Figures> {
    Ok(match from {
        "statusline" => Figures::from_status_line(v),
        "stream" => Figures::from_stream_event(v),
        "headers" => {
            let pairs: Vec<(String, String)> = v
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().map_or_else(|| v.to_string(), str::to_string),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Figures::from_headers(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        }
        other => {
            return Err(Error::new(
                Code::Usage,
                format!("capacity note --from '{other}' is not known"),
            )
            .hint("use --from statusline, stream or headers"))
        }
    })
}

fn note(g: &Global, from: &str) -> Result<Output> {
    let ctx = g.ctx()?;
    let me = me(&ctx)?;
    let f = figures(from, &stdin_json())?;
    let account = account_from_env();
    let r = capacity::note(&ctx.store, &Who::of(&me, account.as_deref()), &f);
    Ok(Output::new(
        json!({"address": me, "capacity": r.line(), "reading": r}),
        format!("capacity={}\n", r.line()),
    ))
}

/// Never fails (a status line that errors blanks the user's bar): it
/// records what it can and prints the previous command's output.
fn statusline(g: &Global, then: Option<String>) -> Result<Output> {
    let mut raw = String::new();
    let _ = std::io::stdin()
        .lock()
        .take(4 << 20)
        .read_to_string(&mut raw);
    let v: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    if let Ok(ctx) = g.ctx() {
        if let Ok(Some(me)) = ctx.actor_opt() {
            let account = account_from_env();
            let f = Figures::from_status_line(&v);
            if !f.windows.is_empty() || f.context_used.is_some() {
                capacity::note(&ctx.store, &Who::of(&me, account.as_deref()), &f);
            }
        }
    }
    let mut out = String::new();
    if let Some(cmd) = then.filter(|c| !c.trim().is_empty()) {
        use std::io::Write;
        use std::process::{Command, Stdio};
        if let Ok(mut child) = Command::new("sh")
            .args(["-c", &cmd])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
        {
            if let Some(mut i) = child.stdin.take() {
                let _ = i.write_all(raw.as_bytes());
            }
            if let Ok(o) = child.wait_with_output() {
                out = String::from_utf8_lossy(&o.stdout).into_owned();
            }
        }
    }
    Ok(Output::new(json!({}), out))
}

fn budget(g: &Global, plan: Option<String>) -> Result<Output> {
    let ctx = g.ctx()?;
    let plan = plan_of(&ctx, plan).ok_or_else(|| {
        Error::new(Code::Usage, "which plan? none is inferred here").hint("pass --plan <plan>")
    })?;
    let c = spend::check_budget(&ctx.store, ctx.settings.remote.as_deref(), &plan)?;
    let text = match &c {
        spend::BudgetCheck::None => format!("plan {plan}: no budget (swarm.budget)\n"),
        spend::BudgetCheck::Under { limit, spent } => {
            format!(
                "plan {plan}: under its budget ({limit}; spent {} tokens)\n",
                spent.total_tokens
            )
        }
        spend::BudgetCheck::Reached { limit, spent } => format!(
            "plan {plan}: reached its budget ({limit}; spent {} tokens): launch nothing new\n",
            spent.total_tokens
        ),
    };
    let reached = c.reached();
    Ok(
        Output::new(json!({"plan": plan, "check": c, "reached": reached}), text)
            .with_exit(u8::from(reached)),
    )
}

/// After a task boundary command succeeded: its capacity check, as
/// `capacity` in the JSON and the advice in the text. Nothing when the
/// session cannot be opened or no identity is set.
pub fn at_boundary(g: &Global, mut out: Output) -> Output {
    let Ok(ctx) = g.ctx() else { return out };
    let Ok(Some(me)) = ctx.actor_opt() else {
        return out;
    };
    let plan = git_swarm::integrations::agent::context::plan_of(&ctx, ctx.lane_here().as_ref());
    let c = check::check(&ctx, &me, plan.as_deref(), None);
    if let Value::Object(m) = &mut out.json {
        m.insert(
            "capacity".into(),
            json!({
                "line": c.verdict.reading.line(),
                "reading": c.verdict.reading,
                "action": c.verdict.action,
                "advice": c.advice,
            }),
        );
    }
    if c.verdict.action != Action::Go || c.packet.is_some() {
        if let Some(a) = &c.advice {
            out.text.push_str(a);
        }
    }
    out
}
