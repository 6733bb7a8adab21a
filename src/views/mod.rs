//! L3, the read models: `status`, `state` and the dashboard (`serve`),
//! derived from the records and returned for the CLI to render.

pub mod agents;
pub mod dashboard;
pub mod state;
pub mod status;

use crate::records::lane::{LaneRecord, LastReportKind};
use crate::records::packet::OpenPacket;
use crate::store::Store;

/// Mark a lane's `blocked` last report cleared when something answered it
/// since ([`LaneRecord::blocked_cleared`]: its task done or cancelled, a
/// handoff packet for its branch, an accept), so that `status`, `lane
/// list` and the dashboard no longer count it. Reads the lane's one task
/// only, and only for a `blocked` report; `packets` are the open ones.
pub fn clear_stale_blocked(
    store: &Store,
    remote: Option<&str>,
    record: &mut LaneRecord,
    packets: &[OpenPacket],
) {
    let blocked = record
        .last_report
        .as_ref()
        .is_some_and(|r| r.kind == LastReportKind::Blocked);
    if !blocked {
        return;
    }
    use crate::records::task::{self, Status};
    let task_closed = record
        .task
        .as_deref()
        .and_then(|t| t.split_once('/'))
        .and_then(|(plan, id)| task::known_one(store, remote, plan, id).ok().flatten())
        .map(|k| k.record.status)
        .filter(|s| matches!(s, Status::Done | Status::Cancelled))
        .map(Status::as_str);
    let handoff_at = packets
        .iter()
        .filter(|p| p.branch.as_deref() == Some(record.branch.as_str()))
        .map(|p| p.created_at.as_str())
        .max();
    let why = record.blocked_cleared(task_closed, handoff_at);
    if let Some(r) = record.last_report.as_mut() {
        r.cleared = why;
    }
}
