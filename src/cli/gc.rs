//! Rendering of `git swarm gc`'s report.

use crate::cli::output::Output;
use git_swarm::store::archive::GcReport;

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
            crate::cli::output::count(
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
