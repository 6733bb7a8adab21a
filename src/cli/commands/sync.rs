//! `git swarm sync`: the command, the rendering of its report, and its
//! conflict error.

use crate::cli::output::Output;
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::ops::sync::SyncReport;

use crate::cli::Global;

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Sync with this remote instead of swarm.remote / origin.
    #[arg(long, value_name = "R")]
    pub remote: Option<String>,
}

pub fn sync(g: &Global, a: SyncArgs) -> Result<Output> {
    if g.offline {
        return Err(Error::new(
            Code::Usage,
            "sync talks to the remote: it cannot run with --offline",
        ));
    }
    let ctx = g.ctx_with_remote(a.remote.as_deref())?;
    let actor = ctx.actor_opt()?.unwrap_or_else(|| "git-swarm".to_string());
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = |step: &str| {
        if tty {
            say!("sync: {step}");
        }
    };
    let report = git_swarm::ops::sync::sync(&ctx, &actor, &mut progress)?;
    eprint!("{}", warnings_text(&report));
    if let Some(err) = conflict_error(&report) {
        if !g.json {
            crate::cli::emit(&mut std::io::stdout().lock(), &render(&report).text);
        }
        return Err(err);
    }
    Ok(render(&report))
}

/// The warnings of a sync, one `warning:` line each, for stderr.
pub fn warnings_text(report: &SyncReport) -> String {
    report
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect()
}

pub fn render(report: &SyncReport) -> Output {
    let mut text = String::new();
    let mut line = |label: &str, items: &[String]| {
        for i in items {
            text.push_str(&format!("{label:<8} {i}\n"));
        }
    };
    line("pulled", &report.pulled);
    line("merged", &report.merged);
    line("pushed", &report.pushed);
    line("archived", &report.archived);
    for f in &report.fenced {
        text.push_str(&format!(
            "fenced   {}: your record {} was superseded by the published {}\n",
            f.r#ref,
            &f.local[..12],
            &f.remote[..12]
        ));
    }
    for f in &report.superseded {
        // Packets lose an acceptance; tasks and other kinds a version.
        let what = if f.r#ref.starts_with(git_swarm::records::packet::PREFIX) {
            "acceptance"
        } else {
            "version"
        };
        // A lane's snapshot is replaced whole: the newer one wins.
        let rule = if f
            .r#ref
            .starts_with(git_swarm::records::lane::wip::WIP_PREFIX)
        {
            "the newer snapshot wins".to_string()
        } else {
            format!("the {what} published first wins")
        };
        text.push_str(&format!(
            "lost     {}: {rule} ({}); yours was {}\n",
            f.r#ref,
            &f.remote[..12],
            &f.local[..12]
        ));
    }
    for c in &report.conflicts {
        text.push_str(&format!(
            "conflict {}: created independently here ({}) and on {} ({}); left untouched\n",
            c.r#ref,
            &c.local[..12],
            report.remote,
            &c.remote[..12]
        ));
    }
    for m in &report.moved {
        text.push_str(&format!(
            "lost     {}: {}; yours ({}) is kept at {}, the remote holds {}\n",
            m.r#ref,
            m.why,
            &m.local[..12],
            m.kept,
            &m.remote[..12]
        ));
    }
    if text.is_empty() {
        text.push_str(&format!("up to date with {}\n", report.remote));
    }
    Output::new(report, text)
}

/// Exit 3 `PLAN_CONFLICT` when any record could not be reconciled; every
/// other ref has been synced by then.
pub fn conflict_error(report: &SyncReport) -> Option<Error> {
    if report.conflicts.is_empty() {
        return moved_error(report);
    }
    let names: Vec<&str> = report.conflicts.iter().map(|c| c.r#ref.as_str()).collect();
    Some(
        Error::new(
            Code::PlanConflict,
            format!(
                "{} created independently here and on {}: {}",
                if names.len() == 1 { "a record was" } else { "records were" },
                report.remote,
                names.join(", ")
            ),
        )
        .hint("your local record is untouched; rename yours (create it under another name and delete this ref), or drop it with `git update-ref -d <ref>` and sync again")
        .with_detail(serde_json::to_value(report).expect("serialisable")),
    )
}

/// Exit 1 `LANE_MOVED` when a write of this clone was not joined because
/// the lane it was made for changed hands on the remote; every other ref
/// has been synced by then.
fn moved_error(report: &SyncReport) -> Option<Error> {
    if report.moved.is_empty() {
        return None;
    }
    let why: Vec<String> = report
        .moved
        .iter()
        .map(|m| format!("{}: {}", m.r#ref, m.why))
        .collect();
    let kept: Vec<&str> = report.moved.iter().map(|m| m.kept.as_str()).collect();
    Some(
        Error::new(
            Code::LaneMoved,
            format!(
                "sync kept the published version of {} on {}: {}",
                git_swarm::text::count(report.moved.len(), "record", "records"),
                report.remote,
                why.join("; ")
            ),
        )
        .hint(format!(
            "your version is kept at {} (`git log` shows it); tell the lane's owner what still matters, e.g. `git swarm notify <owner> ...`, then delete it with `git update-ref -d`",
            kept.join(", ")
        ))
        .with_detail(serde_json::to_value(report).expect("serialisable")),
    )
}

#[cfg(test)]
mod tests {
    use git_swarm::records::packet::packet_ref;
    use git_swarm::records::task::task_ref;
    use git_swarm::store::reconcile::Fenced;

    use super::*;

    #[test]
    fn a_lost_packet_names_its_acceptance_and_any_other_kind_its_version() {
        let lost = |r: &str| Fenced {
            r#ref: r.to_string(),
            local: "a".repeat(40),
            remote: "b".repeat(40),
        };
        let report = SyncReport {
            superseded: vec![lost(&packet_ref("p", "x")), lost(&task_ref("p", "t"))],
            ..Default::default()
        };
        let text = render(&report).text;
        assert!(
            text.contains(&format!(
                "lost     {}: the acceptance published first wins (bbbbbbbbbbbb)",
                packet_ref("p", "x")
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
            "lost     {}: the version published first wins (bbbbbbbbbbbb); yours was aaaaaaaaaaaa",
            task_ref("p", "t")
        )),
            "{text}"
        );
    }
}
