//! `git swarm status`.

use crate::cli::output::report_unreadable;
use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::views::status::{cut, LaneStatus, PlanStatus, StatusView, TITLE_WIDTH};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("status", Facts::LIST)];

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this plan (and its children).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
}

pub fn status(g: &Global, a: StatusArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    git_swarm::views::status::status(&ctx, a.plan.as_deref()).map(|v| status_output(g.json, v))
}

fn status_output(wanted: bool, view: StatusView) -> Output {
    let mut text = String::new();
    if view.plans.is_empty() && view.unreadable.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    render_plans(&view.plans, 0, view.now, &mut text);
    render_spend(&view.spend, &mut text);
    let (open, blocked) = view.attention();
    if open + blocked > 0 {
        text.push_str(&format!(
            "needs attention: {}, {}\n",
            count(open, "open packet", "open packets"),
            count(blocked, "blocked lane", "blocked lanes")
        ));
    }
    if view.reservations > 0 {
        text.push_str(&format!(
            "{} live (`git swarm reservations`)\n",
            count(view.reservations, "reservation", "reservations")
        ));
    }
    if let Some(m) = &view.mirror {
        text.push_str(&crate::cli::output::mirror_text(m, view.now));
    }
    match &view.queued {
        Some(q) if !q.refs.is_empty() => text.push_str(&format!(
            "queued (swarm.pushBudget {}): {} since {}, published with this clone's next push or by the first git-swarm command from {}: {}\n",
            q.budget,
            count(q.refs.len(), "write", "writes"),
            q.since.as_deref().unwrap_or("(unknown)"),
            q.publish_by.as_deref().unwrap_or("now"),
            q.refs.join(", ")
        )),
        _ if view.unpublished > 0 => text.push_str(&format!(
            "{} not published: `git swarm sync` publishes {}\n",
            count(view.unpublished, "local change", "local changes"),
            if view.unpublished == 1 { "it" } else { "them" }
        )),
        _ => {}
    }
    report_unreadable(Output::listing(wanted, &view, text), &view.unreadable)
}

/// A plan's last forecast: its count, age, and whether lanes moved since.
fn forecast_line(f: &git_swarm::records::forecast::Seen, now: jiff::Timestamp) -> String {
    let age =
        f.at.parse::<jiff::Timestamp>()
            .map(|t| git_swarm::clock::ago(now, t))
            .unwrap_or_else(|_| f.at.clone());
    let mut line = format!("forecast: {}", count(f.conflicts, "conflict", "conflicts"));
    if f.reserved > 0 {
        line.push_str(&format!(
            ", {} reserved by others",
            count(f.reserved, "changed path", "changed paths")
        ));
    }
    line.push_str(&format!(" ({age} ago"));
    if f.moved {
        line.push_str("; lanes moved since: `git swarm forecast`");
    }
    line.push(')');
    line
}

/// `12,345 tokens, 0.42 USD` (cost only where a host reported it).
pub fn spent(t: &git_swarm::integrations::capacity::spend::Totals) -> String {
    let cost = t
        .cost_usd
        .map(|c| format!(", {c:.2} USD"))
        .unwrap_or_default();
    format!("{} tokens{cost}", t.total_tokens)
}

/// What the swarm spent: per plan, then per task.
fn render_spend(s: &git_swarm::integrations::capacity::spend::Summary, out: &mut String) {
    if s.plans.is_empty() && s.tasks.is_empty() {
        return;
    }
    let join = |m: &std::collections::BTreeMap<
        String,
        git_swarm::integrations::capacity::spend::Totals,
    >| {
        m.iter()
            .map(|(k, t)| format!("{k} {}", spent(t)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !s.plans.is_empty() {
        out.push_str(&format!("spent by plan: {}\n", join(&s.plans)));
    }
    if !s.tasks.is_empty() {
        out.push_str(&format!("spent by task: {}\n", join(&s.tasks)));
    }
}

/// The plan tree as `status` shows it, children indented under parents.
/// One lane of a plan: its branch, owner and state, then what is known of
/// it (orphaned, its agent, its capacity and spend, why it is blocked).
fn render_lane(lane: &LaneStatus, pad: &str, out: &mut String) {
    out.push_str(&format!(
        "{pad}  lane {} on {} owner {}{}\n",
        lane.feature,
        lane.branch.as_deref().unwrap_or("?"),
        lane.owner.as_deref().unwrap_or("-"),
        lane.state
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default()
    ));
    if lane.orphaned {
        out.push_str(&format!(
            "{pad}    orphaned: its task's claim lapsed and no runner holds it; `git swarm run` on any machine (or `git swarm task recover <id> --reason …`) takes it over\n"
        ));
    }
    if let Some(a) = &lane.agent {
        out.push_str(&format!("{pad}    agent {}\n", a.line()));
    }
    if lane.capacity.is_some() || lane.spend.is_some() {
        let cap = lane
            .capacity
            .as_deref()
            .map(|c| format!("capacity={c}"))
            .unwrap_or_else(|| "capacity=?".into());
        let spend = lane
            .spend
            .as_ref()
            .map(|t| format!("  spent {}", spent(t)))
            .unwrap_or_default();
        out.push_str(&format!("{pad}    {cap}{spend}\n"));
    }
    if let Some(r) = &lane.blocked {
        out.push_str(&format!(
            "{pad}    {} (reported by {} at {})\n",
            cut(&r.text, 72),
            r.by,
            r.at
        ));
    }
}

fn render_plans(nodes: &[PlanStatus], indent: usize, now: jiff::Timestamp, out: &mut String) {
    for n in nodes {
        let pad = "  ".repeat(indent);
        let lead = match (&n.leader, n.epoch) {
            (Some(l), Some(e)) => format!("lead {l} (epoch {e})"),
            (None, Some(e)) => format!("no leader (epoch {e})"),
            _ => "no leader".to_string(),
        };
        out.push_str(&format!(
            "{pad}{} [{}] — {} — {lead}\n",
            n.plan,
            n.status,
            cut(&n.title, TITLE_WIDTH)
        ));
        for lane in &n.lanes {
            render_lane(lane, &pad, out);
        }
        if let Some(t) = &n.tasks {
            render_tasks(t, &pad, out);
        }
        if n.reservations > 0 {
            out.push_str(&format!(
                "{pad}  {} held by its lane owners\n",
                count(n.reservations, "reservation", "reservations")
            ));
        }
        if let Some(f) = &n.forecast {
            out.push_str(&format!("{pad}  {}\n", forecast_line(f, now)));
        }
        for p in &n.open_packets {
            out.push_str(&format!(
                "{pad}  packet {} open: {} by {}{} — `git swarm accept {}`\n",
                p.id,
                p.reason,
                p.author,
                p.branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default(),
                p.id
            ));
        }
        render_plans(&n.children, indent + 1, now, out);
    }
}

/// A plan's task lines in `status`.
fn render_tasks(t: &git_swarm::views::status::PlanTasks, pad: &str, out: &mut String) {
    let list = |l: &[String]| {
        if l.is_empty() {
            "-".to_string()
        } else {
            l.join(", ")
        }
    };
    let claims: Vec<String> = t
        .in_progress
        .iter()
        .map(|c| {
            let mut holder = c.holder.as_deref().unwrap_or("-").to_string();
            if let Some(l) = &c.lane {
                holder.push_str(&format!(", lane {l}"));
            }
            if c.expired {
                format!("{} ({holder}, lease EXPIRED)", c.id)
            } else {
                format!(
                    "{} ({holder}, {}m left)",
                    c.id,
                    c.lease_left_secs.div_euclid(60)
                )
            }
        })
        .collect();
    out.push_str(&format!(
        "{pad}  tasks: ready {}; in progress {}; blocked {}; done {}\n",
        list(&t.ready),
        list(&claims),
        list(&t.blocked),
        list(&t.done)
    ));
}
