//! The dashboard page (maud: every string is escaped by the template, and
//! record text goes through [`shown`] besides). One page, sections in a
//! grid that folds to one column on a phone; it reads fully without
//! JavaScript. Served, it links its stylesheet and the live-update script
//! (the Content-Security-Policy allows nothing inline); as a file
//! (`state --html`), the stylesheet is inline and there is no script.

use std::collections::{BTreeMap, BTreeSet};

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::forecast_view;
use super::graph;
use super::text::{anchor, left, plain, shown};
use git_swarm::integrations::forecast::Forecast;
use git_swarm::views::dashboard::{Column, Dashboard, Lease, PlanNode, TaskView, Thread};

pub const STYLE: &str = include_str!("style.css");
pub const SCRIPT: &str = include_str!("live.js");

/// How the page is delivered.
pub enum Mode {
    /// One self-contained file: inline stylesheet, no script.
    File,
    /// Served: linked stylesheet and script, and what the live view knows.
    Served {
        fingerprint: String,
        /// "12:01:05 UTC (3 fetches)", or why the remote is not reached.
        reached: String,
    },
}

pub struct Page<'a> {
    pub dash: &'a Dashboard,
    pub forecast: Result<&'a Forecast, String>,
    pub mode: Mode,
}

pub fn render(p: &Page<'_>) -> String {
    let d = p.dash;
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                @match &p.mode {
                    Mode::File => {
                        meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:";
                        style { (PreEscaped(STYLE)) }
                    }
                    Mode::Served { fingerprint, .. } => {
                        meta name="swarm-fingerprint" content=(fingerprint);
                        link rel="stylesheet" href="style.css";
                        script src="live.js" defer {}
                    }
                }
                title { "git swarm" }
            }
            body {
                (header(p))
                nav {
                    @for (id, name) in SECTIONS { a href=(format!("#{id}")) { (name) } }
                }
                main {
                    (plans(d))
                    (lanes(d))
                    (tasks(d))
                    (forecast_view::section(&p.forecast))
                    (reservations(d))
                    (messages(d))
                    (verdicts(d))
                    (unpublished(d))
                }
            }
        }
    };
    page.into_string()
}

const SECTIONS: &[(&str, &str)] = &[
    ("plans", "Plans"),
    ("lanes", "Lanes"),
    ("tasks", "Tasks"),
    ("forecast", "Forecast"),
    ("reservations", "Reservations"),
    ("messages", "Messages"),
    ("verdicts", "Verify"),
    ("unpublished", "Not published"),
];

fn header(p: &Page<'_>) -> Markup {
    let d = p.dash;
    html! {
        header.top {
            h1 { "git swarm" }
            span.meta { "read at " (d.now) }
            span.meta {
                @match &d.remote {
                    Some(r) => { "remote " code { (plain(r)) } }
                    None => { "no remote" }
                }
            }
            @if let Some(f) = &d.fetched_at { span.meta { "mirror fetched " (plain(f)) } }
            @if let Mode::Served { reached, .. } = &p.mode {
                span.meta { "remote last reached: " span #reached { (reached) } }
                span #live { noscript { "reload for news (no script)" } }
            }
            @if !d.unreadable.is_empty() {
                span.tag.bad { (d.unreadable.len()) " unreadable record(s), below" }
            }
        }
    }
}

fn count(n: usize) -> Markup {
    html! { span.n { " (" (n) ")" } }
}

fn lease_bar(l: &Lease) -> Markup {
    html! {
        meter min="0" max="1" low="0.2" high="0.5" optimum="1" value=(format!("{:.3}", l.fraction_left())) {}
        " " span.mono title=(format!("until {}", plain(&l.until))) { (left(l.left_secs)) }
    }
}

fn plans(d: &Dashboard) -> Markup {
    fn total(nodes: &[PlanNode]) -> usize {
        nodes.iter().map(|n| 1 + total(&n.children)).sum()
    }
    fn tree(nodes: &[PlanNode], root: bool) -> Markup {
        html! {
            ul.tree.root[root] {
                @for n in nodes {
                    li.plan id=(anchor("plan", &n.plan)) data-plan=(plain(&n.plan)) {
                        strong { (shown(&n.plan)) } " "
                        @if !n.title.is_empty() { (shown(&n.title)) " " }
                        span.tag { (plain(&n.status)) } " "
                        @match (&n.leader, n.epoch) {
                            (Some(l), Some(e)) => { "leader " (shown(l)) ", epoch " (e) " " }
                            (None, Some(e)) => { span.tag.warn { "no leader" } " epoch " (e) " " }
                            _ => { span.tag { "no leader record" } " " }
                        }
                        @if let (Some(u), Some(s)) = (&n.lease_until, n.lease_left_secs) {
                            span.mono title=(format!("lease until {}", plain(u))) { (left(s)) }
                        }
                        @if !n.children.is_empty() { (tree(&n.children, false)) }
                    }
                }
            }
        }
    }
    let n = total(&d.plans);
    html! {
        section #plans data-count=(n) {
            h2 { "Plans" (count(n)) }
            @if d.plans.is_empty() { p.empty { "no plans" } } @else { (tree(&d.plans, true)) }
            @if !d.unreadable.is_empty() {
                h3 { "Unreadable records" }
                ul #unreadable data-count=(d.unreadable.len()) {
                    @for u in &d.unreadable {
                        li { code { (plain(&u.refname)) } " " span.tag.bad { (u.code.as_str()) } " " (shown(&u.reason)) }
                    }
                }
            }
        }
    }
}

/// Boards and graphs are drawn for this many tasks at most (plans with
/// unfinished tasks first); every other plan is one closed `<details>`
/// with its counts and its tasks as table rows: a swarm keeps thousands of
/// tasks, a board of them all is unreadable (and megabytes on a phone).
const DRAWN_TASKS: usize = 300;

/// Which plans get a board and a graph: in order of unfinished work first
/// (then by name), while their tasks fit in [`DRAWN_TASKS`].
fn drawn<'a>(by_plan: &BTreeMap<&'a str, Vec<&TaskView>>) -> BTreeSet<&'a str> {
    let unfinished = |ts: &[&TaskView]| {
        ts.iter()
            .any(|t| !matches!(t.column, Column::Done | Column::Cancelled))
    };
    let mut order: Vec<(&'a str, &Vec<&TaskView>)> =
        by_plan.iter().map(|(p, ts)| (*p, ts)).collect();
    order.sort_by_key(|(_, ts)| !unfinished(ts));
    let mut left = DRAWN_TASKS;
    let mut out = BTreeSet::new();
    for (plan, ts) in order {
        if ts.len() <= left {
            left -= ts.len();
            out.insert(plan);
        }
    }
    out
}

fn tasks(d: &Dashboard) -> Markup {
    let mut by_plan: BTreeMap<&str, Vec<&TaskView>> = BTreeMap::new();
    for t in &d.tasks {
        by_plan.entry(t.plan.as_str()).or_default().push(t);
    }
    let edges: usize = d.tasks.iter().map(|t| t.depends_on.len()).sum();
    let drawn = drawn(&by_plan);
    let listed = by_plan.len() - drawn.len();
    html! {
        section.wide #tasks data-count=(d.tasks.len()) data-edges=(edges) data-drawn=(drawn.len()) data-listed=(listed) {
            h2 { "Tasks" (count(d.tasks.len())) }
            @if d.tasks.is_empty() { p.empty { "no tasks" } }
            @if listed > 0 {
                p.n { "Boards and dependency graphs for " (drawn.len()) " plan(s), unfinished work first; the tasks of the other "
                    (listed) " plan(s) are listed under each (open it)." }
            }
            @for (plan, ts) in &by_plan {
                @if drawn.contains(plan) {
                    h3 id=(anchor("tasks", plan)) { "Plan " (shown(plan)) (count(ts.len())) }
                    (board(plan, ts))
                    div.scroll { (graph::svg(plan, ts)) }
                } @else {
                    (listing(plan, ts))
                }
            }
        }
    }
}

fn board(plan: &str, ts: &[&TaskView]) -> Markup {
    html! {
        div.board data-plan=(plain(plan)) {
            @for col in Column::ALL {
                @let here: Vec<&&TaskView> = ts.iter().filter(|t| t.column == col).collect();
                @if !here.is_empty() || matches!(col, Column::Ready | Column::InProgress | Column::Blocked | Column::Done) {
                    div class=(format!("col {}", col.as_str())) data-column=(col.as_str()) data-count=(here.len()) {
                        h4 { (col.as_str().replace('-', " ")) " " span.n { (here.len()) } }
                        @for t in &here { (task(t)) }
                    }
                }
            }
        }
    }
}

fn task(t: &TaskView) -> Markup {
    html! {
        div.task data-task=(plain(&t.id)) {
            span.id { (shown(&t.id)) } " " (shown(&t.title))
            @if let Some(h) = &t.holder { br; "held by " (shown(h)) }
            @if let Some(l) = &t.lease { " " (lease_bar(l)) }
            @if let Some(w) = &t.blocked_reason { br; span.why { (shown(w)) } }
            @if !t.depends_on.is_empty() {
                br; span.n { "after " (plain(&t.depends_on.join(", "))) }
            }
        }
    }
}

/// A plan's tasks as rows in a closed `<details>`, its counts on top.
fn listing(plan: &str, ts: &[&TaskView]) -> Markup {
    html! {
        details.listing id=(anchor("tasks", plan)) data-plan=(plain(plan)) data-count=(ts.len()) {
            summary {
                "Plan " (shown(plan)) (count(ts.len())) ":"
                @for col in Column::ALL {
                    @let n = ts.iter().filter(|t| t.column == col).count();
                    @if n > 0 { " " span class=(format!("tag {}", col.as_str())) { (n) " " (col.as_str().replace('-', " ")) } }
                }
            }
            div.scroll { table {
                @for t in ts {
                    tr.task data-task=(plain(&t.id)) data-column=(t.column.as_str()) {
                        td.id { (shown(&t.id)) }
                        td { (shown(&t.title)) }
                        td { (t.column.as_str()) }
                        td {
                            @if let Some(h) = &t.holder { (shown(h)) " " }
                            @if let Some(l) = &t.lease { span.mono title=(format!("until {}", plain(&l.until))) { (left(l.left_secs)) } " " }
                            @if let Some(w) = &t.blocked_reason { span.why { (shown(w)) } " " }
                            @if !t.depends_on.is_empty() { span.n { "after " (plain(&t.depends_on.join(", "))) } }
                        }
                    }
                }
            } }
        }
    }
}

fn lanes(d: &Dashboard) -> Markup {
    html! {
        section #lanes data-count=(d.lanes.len()) {
            h2 { "Lanes" (count(d.lanes.len())) }
            @if d.lanes.is_empty() { p.empty { "no active lanes" } } @else {
                div.scroll { table {
                    tr { th { "lane" } th { "owner" } th { "last report" } th { "capacity" } th { "spent" } th { "work" } }
                    @for l in &d.lanes {
                        tr.lane id=(anchor("lane", &l.feature)) data-lane=(plain(&l.feature)) {
                            td { strong { (shown(&l.feature)) } br; span.n { (shown(&l.plan)) } }
                            td { (shown(&l.owner)) }
                            td {
                                @match &l.last_report {
                                    Some(r) => { (shown(&r.text)) br; span.n { (plain(&r.at)) } }
                                    None => { span.n { "none" } }
                                }
                            }
                            td { @if let Some(c) = l.last_report.as_ref().and_then(|r| r.capacity.as_deref()) { (shown(c)) } @else { "-" } }
                            td { @if let Some(t) = &l.spend { (t.total_tokens) " tokens" @if let Some(c) = t.cost_usd { br; span.n { (format!("{c:.2} USD")) } } } @else { "-" } }
                            td {
                                @match l.dirty {
                                    Some(0) => { "clean" }
                                    Some(n) => { span.tag.warn { (n) " uncommitted" } }
                                    None => { span.n { "worktree " (l.worktree) } }
                                }
                                @if let Some(s) = &l.snapshot { br; "snapshot " code { (s) } }
                            }
                        }
                    }
                } }
            }
        }
    }
}

fn reservations(d: &Dashboard) -> Markup {
    html! {
        section #reservations data-count=(d.reservations.len()) {
            h2 { "Reservations" (count(d.reservations.len())) }
            @if d.reservations.is_empty() { p.empty { "no reservations" } } @else {
                div.scroll { table {
                    tr { th { "holder" } th { "paths" } th { "lease" } }
                    @for r in &d.reservations {
                        tr.reservation data-id=(plain(&r.id)) {
                            td { (shown(&r.holder)) @if let Some(t) = &r.task { br; span.n { "task " (shown(t)) } } }
                            td.mono { (shown(&r.paths.join(", "))) @if r.shared { " " span.tag { "shared" } } }
                            td { (lease_bar(&r.lease)) }
                        }
                    }
                } }
            }
        }
    }
}

/// Per plan, every open thread and this many of the newest others are
/// shown in full, while the page shows fewer than [`FULL_MESSAGES`]
/// messages in full; the plan's other threads are one closed `<details>`
/// of compact lines: a swarm keeps thousands of messages, a page shows
/// what wants reading first and keeps the rest one click away.
const CLOSED_THREADS_SHOWN: usize = 20;
const FULL_MESSAGES: usize = 300;

fn messages(d: &Dashboard) -> Markup {
    let mut by_plan: BTreeMap<&str, (Vec<&Thread>, Vec<&Thread>)> = BTreeMap::new();
    let mut left = FULL_MESSAGES;
    let mut closed_seen: BTreeMap<&str, usize> = BTreeMap::new();
    // Open threads first, page-wide, then the others: what the budget
    // shows in full is what wants an answer.
    let mut order: Vec<&Thread> = d.threads.iter().collect();
    order.sort_by_key(|t| !t.open);
    for t in order {
        let (full, rest) = by_plan.entry(t.plan.as_str()).or_default();
        let closed = closed_seen.entry(t.plan.as_str()).or_default();
        let wanted = t.open || *closed < CLOSED_THREADS_SHOWN;
        *closed += usize::from(!t.open);
        if wanted && t.messages.len() <= left {
            left -= t.messages.len();
            full.push(t);
        } else {
            rest.push(t);
        }
    }
    let total: usize = d.threads.iter().map(|t| t.messages.len()).sum();
    let open = d.threads.iter().filter(|t| t.open).count();
    let listed: usize = by_plan.values().map(|(_, rest)| rest.len()).sum();
    html! {
        section #messages data-count=(total) data-threads=(d.threads.len()) data-open=(open) data-listed=(listed) {
            h2 { "Messages" (count(total)) @if open > 0 { " " span.tag.warn { (open) " open" } } }
            @if d.threads.is_empty() { p.empty { "no messages" } }
            @for (plan, (full, rest)) in &by_plan {
                h3 { @if *plan == "_" { "Outside any plan" } @else { "Plan " (shown(plan)) } }
                @for t in full {
                    div class=(if t.open { "thread open" } else { "thread" }) {
                        @for (i, m) in t.messages.iter().enumerate() {
                            div class=(if i == 0 { "msg" } else { "msg reply" }) data-kind=(plain(m.kind.as_str())) {
                                (kind_tag(m.kind.as_str())) " "
                                span.who { (shown(&m.from)) } " → " (shown(&m.to)) " "
                                span.when { (plain(&m.at)) }
                                @if let Some(c) = &m.class { " " span.tag { (shown(c)) } }
                                div.body { (shown(&m.body)) }
                            }
                        }
                    }
                }
                @if !rest.is_empty() {
                    @let n: usize = rest.iter().map(|t| t.messages.len()).sum();
                    @let open_here = rest.iter().filter(|t| t.open).count();
                    details.listing data-count=(n) {
                        summary { (rest.len()) " more thread(s), " (n) " message(s)" @if open_here > 0 { ", " span.tag.warn { (open_here) " open" } } }
                        ul.compact {
                            @for t in rest {
                                @for (i, m) in t.messages.iter().enumerate() {
                                    li class=(if i == 0 { "msg" } else { "msg reply" }) {
                                        (kind_tag(m.kind.as_str())) " " (shown(&m.from)) " → " (shown(&m.to)) " "
                                        span.when { (plain(&m.at)) }
                                        @if let Some(c) = &m.class { " " span.tag { (shown(c)) } }
                                        " " (shown(&m.body))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn kind_tag(kind: &str) -> Markup {
    html! { span class=(if kind == "escalation" || kind == "ask" { "tag warn" } else { "tag" }) { (plain(kind)) } }
}

fn verdicts(d: &Dashboard) -> Markup {
    html! {
        section #verdicts data-count=(d.verdicts.len()) {
            h2 { "Verify: newest verdict per pull request" (count(d.verdicts.len())) }
            @if d.verdicts.is_empty() { p.empty { "no verdicts recorded" } } @else {
                table {
                    tr { th { "pull request" } th { "state" } th { "at" } }
                    @for v in &d.verdicts {
                        tr.verdict {
                            td { (shown(&v.repo)) "#" (v.number) @if let Some(h) = &v.head_sha { br; code { (plain(&h[..h.len().min(12)])) } } }
                            td { span class=(if v.state == "merged" || v.state == "ready" { "tag" } else { "tag warn" }) { (plain(&v.state)) }
                                 @if v.confirmed_on_base { " confirmed on base" } }
                            td.mono { (plain(&v.at)) }
                        }
                    }
                }
            }
        }
    }
}

fn unpublished(d: &Dashboard) -> Markup {
    html! {
        section #unpublished data-count=(d.unpublished.len()) {
            h2 { "Not published" (count(d.unpublished.len())) }
            @if d.remote.is_none() { p.empty { "no remote: every record is local" } }
            @else if d.unpublished.is_empty() { p.empty { "everything here is at the remote" } }
            @else {
                p { "Local records the remote does not have yet (the next command that reaches it, or " code { "git swarm sync" } ", publishes them):" }
                ul { @for r in &d.unpublished { li { code { (plain(r)) } } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use git_swarm::views::dashboard::MessageView;

    /// `plans` plans of 10 tasks and 10 messages each (task ids and
    /// message bodies unique across the page).
    fn swarm(plans: usize) -> Dashboard {
        let mut tasks = Vec::new();
        let mut threads = Vec::new();
        for p in 0..plans {
            let plan = format!("p{p:02}");
            for t in 0..10 {
                tasks.push(TaskView {
                    plan: plan.clone(),
                    id: format!("{plan}-t{t}"),
                    title: format!("title of {plan}-t{t}"),
                    column: if t < 4 { Column::Done } else { Column::Waiting },
                    holder: None,
                    lease: None,
                    blocked_reason: None,
                    depends_on: if t > 0 {
                        vec![format!("{plan}-t{}", t - 1)]
                    } else {
                        Vec::new()
                    },
                });
                threads.push(Thread {
                    plan: plan.clone(),
                    messages: vec![MessageView {
                        id: format!("{plan}-m{t}"),
                        from: "a".into(),
                        to: "b".into(),
                        kind: "notify".into(),
                        plan: Some(plan.clone()),
                        reply_to: None,
                        at: "2026-01-01T00:00:00Z".into(),
                        body: format!("body of {plan}-m{t}"),
                        class: None,
                    }],
                    open: false,
                    last_at: "2026-01-01T00:00:00Z".into(),
                });
            }
        }
        Dashboard {
            remote: None,
            now: "2026-01-01T00:00:00Z".into(),
            fetched_at: None,
            plans: Vec::new(),
            tasks,
            lanes: Vec::new(),
            reservations: Vec::new(),
            threads,
            verdicts: Vec::new(),
            unpublished: Vec::new(),
            unreadable: Vec::new(),
        }
    }

    fn page(d: &Dashboard) -> String {
        render(&Page {
            dash: d,
            forecast: Err("none".into()),
            mode: Mode::File,
        })
    }

    #[test]
    fn a_small_swarm_is_drawn_whole() {
        let html = page(&swarm(3));
        assert!(html.contains("data-drawn=\"3\" data-listed=\"0\""));
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(!html.contains("<details"));
    }

    #[test]
    fn a_large_swarm_draws_some_boards_and_lists_the_rest_on_the_page() {
        let d = swarm(40);
        let html = page(&d);
        assert!(
            html.contains("data-drawn=\"30\" data-listed=\"10\""),
            "300 tasks drawn"
        );
        assert_eq!(html.matches("<svg").count(), 30);
        // Nothing is out of reach: every task and every message is on the
        // page, the listed ones in a closed <details>.
        for t in &d.tasks {
            assert!(
                html.contains(&format!("data-task=\"{}\"", t.id))
                    && html.contains(&format!("title of {}<", t.id)),
                "{} is not on the page",
                t.id
            );
        }
        for m in d.threads.iter().flat_map(|t| &t.messages) {
            assert!(html.contains(&format!("body of {}<", m.id)), "{}", m.id);
        }
        assert!(
            html.contains("id=\"tasks-p39\""),
            "a listed plan has its anchor"
        );
        assert!(html.contains("<details class=\"listing\" id=\"tasks-p39\""));
        assert!(html.contains(
            "data-count=\"400\" data-threads=\"400\" data-open=\"0\" data-listed=\"100\""
        ));
    }
}
