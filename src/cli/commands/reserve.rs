//! `git swarm reserve`, `release`, `reservations`.

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec, When};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::ops::reserve::{self, Written};
use git_swarm::records::reservation::Entry;
use jiff::Timestamp;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::when(
        "reserve",
        Facts::WRITE,
        &[(When::Absent("check"), Facts::ARBITRATION)],
    ),
    Spec::new("release", Facts::WRITE),
    Spec::when(
        "reservations",
        Facts::NONE,
        &[
            (When::Absent("repair"), Facts::LIST),
            (When::Given("repair"), Facts::WRITE),
        ],
    ),
];

#[derive(Debug, Args)]
pub struct ReserveCmdArgs {
    /// Files, directories (ending in '/') or globs, relative to where you are.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Lease length, e.g. 30m, 2h (default swarm.reservationLease, else 2h).
    #[arg(long, value_name = "DURATION")]
    pub lease: Option<String>,
    /// Shared: conflicts only with exclusive reservations (the default is exclusive).
    #[arg(long)]
    pub shared: bool,
    /// The task this reservation is for (shown to whoever it blocks).
    #[arg(long, value_name = "T")]
    pub task: Option<String>,
    /// Why (shown to whoever it blocks).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Only say who holds what would conflict with these paths (exit 1 on a conflict); writes nothing.
    #[arg(long, conflicts_with = "recover")]
    pub check: bool,
    /// Take over an expired reservation by id (needs --reason); records the previous holder and expiry.
    #[arg(long, value_name = "ID")]
    pub recover: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Reservation ids (r3) or paths you reserved.
    #[arg(value_name = "ID|PATH", required = true)]
    pub targets: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReservationsArgs {
    /// Include expired reservations (kept in the ledger for a week, for --recover).
    #[arg(long)]
    pub all: bool,
    /// The ledger cannot be read (forged or corrupt): publish its last readable version on top (needs --reason).
    #[arg(long, requires = "reason")]
    pub repair: bool,
    /// Why the ledger is repaired (with --repair).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// "1h20m left", "expired 5m ago".
pub fn lease_left(e: &Entry, now: Timestamp) -> String {
    let Some(until) = e.until() else {
        return "lease unreadable".into();
    };
    let d = until.duration_since(now);
    let mins = d.as_secs().unsigned_abs().div_ceil(60);
    let text = if mins >= 60 {
        format!("{}h{:02}m", mins / 60, mins % 60)
    } else {
        format!("{mins}m")
    };
    if d.is_positive() {
        format!("{text} left")
    } else {
        format!("expired {text} ago")
    }
}

pub fn row(e: &Entry, now: Timestamp) -> String {
    let paths: Vec<&str> = e.paths.iter().map(|p| p.as_str()).collect();
    let task = e
        .task
        .as_deref()
        .map(|t| format!("  task {t}"))
        .unwrap_or_default();
    format!(
        "{:<5} {:<16} {:<9} {:<14} {}{task}\n",
        e.id,
        e.holder,
        if e.shared { "shared" } else { "exclusive" },
        lease_left(e, now),
        paths.join(" ")
    )
}

pub fn reserve(g: &Global, a: ReserveCmdArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    if a.check {
        let checked = reserve::check(&ctx, &a.paths, a.shared)?;
        let now = ctx.store.clock.now();
        let mut text = String::new();
        for c in &checked.conflicts {
            text.push_str(&format!("{} conflicts with {}", c.path, row(&c.entry, now)));
        }
        if checked.conflicts.is_empty() {
            text.push_str("no conflicts: these paths are free for you\n");
        }
        let exit = u8::from(!checked.conflicts.is_empty());
        return Ok(Output::new(&checked, text).with_exit(exit));
    }
    if let Some(id) = &a.recover {
        if !a.paths.is_empty() {
            return Err(Error::new(Code::Usage, "--recover takes an id, not paths")
                .hint("e.g. `git swarm reserve --recover r3 --reason \"holder is gone\"`"));
        }
        let reason = a.reason.as_deref().unwrap_or("");
        let done = reserve::recover(&ctx, id, reason, a.lease.as_deref())?;
        return Ok(render(&ctx, done));
    }
    let args = reserve::ReserveArgs {
        paths: a.paths,
        lease: a.lease,
        shared: a.shared,
        task: a.task,
        reason: a.reason,
    };
    let done = reserve::reserve(&ctx, &args)?;
    Ok(render(&ctx, done))
}

fn render(ctx: &git_swarm::session::Ctx, done: Written) -> Output {
    let now = ctx.store.clock.now();
    let mut text = match &done.entry {
        // The row starts with the id.
        Some(e) => format!("{}: {}", done.action, row(e, now)),
        None => format!("released {}\n", done.released.join(" ")),
    };
    if let Some(from) = done.entry.as_ref().and_then(|e| e.recovered_from.as_ref()) {
        text.push_str(&format!(
            "recovered {} from {} (expired {}): {}\n",
            from.id, from.previous_holder, from.expired_at, from.reason
        ));
    }
    if !done.published {
        let out = Output::new(&done, text);
        return out.warn(git_swarm::store::remote::not_published(
            &ctx.store.run.reach.kept_why(),
        ));
    }
    // As every write says where it went.
    if let Some(remote) = ctx.remote() {
        text.push_str(&format!("published to {remote}\n"));
    }
    Output::new(&done, text)
}

pub fn release(g: &Global, a: ReleaseArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let done = reserve::release(&ctx, &a.targets)?;
    Ok(render(&ctx, done))
}

pub fn reservations(g: &Global, a: ReservationsArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    if a.repair {
        let done = reserve::repair(&ctx, a.reason.as_deref().unwrap_or(""))?;
        let text = match &done.restored_from {
            Some(c) => format!(
                "repaired the reservation ledger: restored {} ({}) on top of the unreadable {}\n",
                &c[..12],
                count(done.entries, "entry", "entries"),
                &done.unreadable[..12]
            ),
            None => format!(
                "repaired the reservation ledger: no readable version before {}, it starts empty\n",
                &done.unreadable[..12]
            ),
        };
        let out = Output::new(&done, text);
        if !done.published {
            return Ok(out.warn(git_swarm::store::remote::not_published(
                &ctx.store.run.reach.kept_why(),
            )));
        }
        return Ok(out);
    }
    let (entries, now) = reserve::list(&ctx, a.all)?;
    let mut text = String::new();
    for e in &entries {
        text.push_str(&row(e, now));
    }
    text.push_str(&format!(
        "{}\n",
        count(entries.len(), "reservation", "reservations")
    ));
    // What this clone last fetched, as every read-only view says.
    let mirror = match ctx.settings.remote.as_deref() {
        Some(r) => Some(git_swarm::store::remote::MirrorView::read(
            &ctx.store,
            r,
            &[git_swarm::records::reservation::shard::PREFIX],
        )?),
        None => None,
    };
    if let Some(m) = &mirror {
        text.push_str(&crate::cli::output::mirror_text(m, now));
    }
    let json = serde_json::json!({
        "mirror": mirror,
        "now": git_swarm::clock::rfc3339(now),
        "reservations": entries.iter().map(|e| {
            let mut v = serde_json::to_value(e).expect("entries serialise");
            v["live"] = serde_json::json!(e.live(now));
            v["lease_left"] = serde_json::json!(lease_left(e, now));
            v
        }).collect::<Vec<_>>(),
    });
    Ok(Output::new(json, text))
}
