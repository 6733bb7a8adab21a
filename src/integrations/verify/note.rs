//! The verdict as a note line on the head commit (`refs/notes/swarm`), so
//! whoever reads the history later sees what was verified and when.

use super::Report;
use crate::integrations::github::verdict::Verdict;
use crate::session::Ctx;
use crate::store::Event;

/// Append the verdict's note line; a failure is a warning, not an error.
/// True if the note is there.
pub(super) fn record(ctx: &Ctx, v: &Verdict, report: &mut dyn Report) -> bool {
    let Some(sha) = v.head_sha.as_deref() else {
        return false;
    };
    let Ok(target) = gix::ObjectId::from_hex(sha.as_bytes()) else {
        return false;
    };
    let actor = ctx
        .actor_opt()
        .ok()
        .flatten()
        .unwrap_or_else(|| "git-swarm".to_string());
    let line = serde_json::json!({
        "kind": "verdict",
        "state": v.state.as_str(),
        "repo": v.repo,
        "number": v.number,
        "head_sha": v.head_sha,
        "merge_commit": v.merge_commit,
        "confirmed_on_base": v.confirmed_on_base,
        "at": crate::clock::rfc3339(ctx.store.clock.now()),
    });
    let event = Event::new(
        "verdict",
        &actor,
        format!("verify {}#{}: {}", v.repo, v.number, v.state.as_str()),
    );
    match ctx.store.note_append(target, &line, &event, ctx.remote()) {
        Ok(()) => true,
        Err(e) => {
            report.warn(&format!(
                "the verdict was not recorded as a note: {}",
                e.message
            ));
            false
        }
    }
}
