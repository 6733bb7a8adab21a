//! `git swarm gc`: the command and the rendering of its report.

use crate::cli::output::{count, Output};
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::Result;
use git_swarm::store::archive::GcReport;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("gc", Facts::WRITE)];

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only records whose last change is older than this (default swarm.gcAge, else 14d).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Only say what would be archived.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn gc(g: &Global, a: GcArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let age = match a.older_than {
        Some(text) => git_swarm::clock::parse_duration(&text)?,
        None => git_swarm::ops::gc::configured_age(&ctx.store)?,
    };
    let actor = ctx.actor_opt()?.unwrap_or_else(|| "git-swarm".to_string());
    let report = git_swarm::ops::gc::gc(&ctx.store, &actor, age, a.dry_run)?;
    Ok(render(&report))
}

pub fn render(report: &GcReport) -> Output {
    let mut text = String::new();
    for (kind, names) in &report.archived {
        let verb = if report.dry_run {
            "would archive"
        } else {
            "archived"
        };
        text.push_str(&format!(
            "{verb} {} into refs/swarm/archive/{kind}\n",
            count(
                names.len(),
                &format!("{kind} record"),
                &format!("{kind} records")
            )
        ));
    }
    text.push_str(&format!(
        "live swarm refs: {} -> {}\n",
        report.live_before, report.live_after
    ));
    Output::new(report, text)
}
