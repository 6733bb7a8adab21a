//! `git swarm sync`: the command, the rendering of its report, and its
//! conflict error.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::ops::sync::SyncReport;

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new(
    "sync",
    Facts::WRITE.and(Facts::NO_PUBLISH).and(Facts::NO_FLUSH),
)];

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
    let lost = |r: &str| report.lost.iter().any(|l| l.r#ref == r);
    for f in report.fenced.iter().filter(|f| !lost(&f.r#ref)) {
        text.push_str(&format!(
            "fenced   {}: your record {} was superseded by the published {}\n",
            f.r#ref,
            &f.local[..12],
            &f.remote[..12]
        ));
    }
    // What the published version replaced without losing a write: a
    // lane's snapshot (replaced whole: the newer one wins), a message
    // written twice under its content's name.
    for f in report.superseded.iter().filter(|f| !lost(&f.r#ref)) {
        let rule = if f
            .r#ref
            .starts_with(git_swarm::records::lane::wip::WIP_PREFIX)
        {
            "the newer snapshot wins"
        } else {
            "the same record was published first"
        };
        text.push_str(&format!(
            "replaced {}: {rule} ({}); yours was {}\n",
            f.r#ref,
            &f.remote[..12],
            &f.local[..12]
        ));
    }
    for l in &report.lost {
        for w in &l.writes {
            text.push_str(&format!("lost     {}: [{}] {}\n", l.r#ref, w.code, w.what));
        }
        text.push_str(&format!(
            "kept     {}: yours ({}) is at {}; the remote holds {}\n",
            l.r#ref,
            &l.local[..12],
            l.kept,
            &l.remote[..12]
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

/// Exit 3 `PLAN_CONFLICT` when any record could not be reconciled, else
/// exit 3 naming every write of this clone that could not be kept
/// (`RESERVATION_CONFLICT` when one is a reservation another clone's
/// overlaps, else `WRITE_LOST`); every other ref has been synced by then.
pub fn conflict_error(report: &SyncReport) -> Option<Error> {
    if report.conflicts.is_empty() {
        return moved_error(report).or_else(|| lost_error(report));
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

/// Exit 3 naming each write that could not be kept, what the remote
/// holds instead and where the local version is kept.
fn lost_error(report: &SyncReport) -> Option<Error> {
    if report.lost.is_empty() {
        return None;
    }
    let writes: Vec<&git_swarm::store::reconcile::LostWrite> =
        report.lost.iter().flat_map(|l| &l.writes).collect();
    let code = if writes
        .iter()
        .any(|w| w.code == Code::ReservationConflict.as_str())
    {
        Code::ReservationConflict
    } else {
        Code::WriteLost
    };
    let kept: Vec<&str> = report.lost.iter().map(|l| l.kept.as_str()).collect();
    let lines: Vec<&str> = writes.iter().map(|w| w.what.as_str()).collect();
    Some(
        Error::new(
            code,
            format!(
                "sync could not keep {} of this clone on {}: {}; the published version stands, yours is kept at {}",
                git_swarm::text::count(writes.len(), "write", "writes"),
                report.remote,
                lines.join("; "),
                kept.join(", ")
            ),
        )
        .hint("everything else is synced; redo what still matters on the published state (e.g. `git swarm reserve` other paths, or ask the holder), and `git log <kept ref>` shows your version; delete it with `git update-ref -d` when done")
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
    use git_swarm::store::reconcile::{Fenced, Lost, LostWrite};

    use super::*;

    #[test]
    fn a_lost_write_is_named_with_where_it_is_kept_and_a_replaced_record_is_not_called_lost() {
        let entry = |r: &str| Fenced {
            r#ref: r.to_string(),
            local: "a".repeat(40),
            remote: "b".repeat(40),
        };
        let task = task_ref("p", "t");
        let report = SyncReport {
            remote: "origin".into(),
            superseded: vec![entry(&packet_ref("p", "x")), entry(&task)],
            lost: vec![Lost {
                r#ref: task.clone(),
                local: "a".repeat(40),
                remote: "b".repeat(40),
                kept: format!("refs/swarm-lost/tasks/p/t@{}", "a".repeat(12)),
                writes: vec![LostWrite {
                    code: "WRITE_LOST",
                    what: "task-claimed by ann: claims t".into(),
                }],
            }],
            ..Default::default()
        };
        let text = render(&report).text;
        assert!(
            text.contains(&format!(
                "replaced {}: the same record was published first (bbbbbbbbbbbb)",
                packet_ref("p", "x")
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "lost     {task}: [WRITE_LOST] task-claimed by ann: claims t\nkept     {task}: yours (aaaaaaaaaaaa) is at refs/swarm-lost/tasks/p/t@aaaaaaaaaaaa; the remote holds bbbbbbbbbbbb\n"
            )),
            "{text}"
        );
        assert!(!text.contains(&format!("replaced {task}")), "{text}");
        let err = conflict_error(&report).expect("a lost write fails the sync");
        assert_eq!(err.code, Code::WriteLost);
        assert!(
            err.message.contains("task-claimed by ann"),
            "{}",
            err.message
        );
    }
}
