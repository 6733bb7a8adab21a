//! The end of a lane: once its task is done on merged work — by the
//! holder's `task done` or by the leader's `lead merge` — its lane record
//! and its child plan are closed. The one mechanism `task done`, `lead
//! merge` and `finish` share; each step is idempotent, so a run killed
//! half way is completed by the next.

use crate::error::{Code, Result};
use crate::ops::lane::remove;
use crate::records::lane::Lane;
use crate::session::Ctx;

/// What a lane's end closed, and what it could not (why, one line each).
#[derive(Debug, Clone, Default)]
pub struct Ended {
    /// `lane <feature>`, `plan <child>`.
    pub closed: Vec<String>,
    pub warnings: Vec<String>,
}

/// Close `lane` and its child plan (the lane's plan when it is not
/// `parent`, the plan its task belongs to). Here, a clean worktree of the
/// lane goes too (the branch is kept); a worktree that cannot go now (it is
/// the current directory, it holds uncommitted work, it is in another
/// clone) is left and only the record closed.
pub fn end(ctx: &Ctx, lane: &Lane, parent: &str) -> Ended {
    let f = &lane.feature;
    let mut out = Ended::default();
    match close_lane(ctx, f) {
        Ok(()) => out.closed.push(format!("lane {f}")),
        Err(e) => out
            .warnings
            .push(format!("lane {f} is not closed: {}", e.message)),
    }
    let child = &lane.record.plan;
    if child != parent {
        match crate::ops::plan::close(ctx, child, false) {
            Ok(_) => out.closed.push(format!("plan {child}")),
            Err(e) => out
                .warnings
                .push(format!("plan {child} is not closed: {}", e.message)),
        }
    }
    out
}

/// Mark the lane's record removed: here, the worktree goes too when clean
/// (`lane rm --keep-branch`); otherwise only the record is closed and the
/// clone that has the worktree removes it (`lane prune`).
fn close_lane(ctx: &Ctx, feature: &str) -> Result<()> {
    match remove::rm(ctx, feature, false, true) {
        Ok(_) => Ok(()),
        Err(e) if e.code == Code::NotFound && e.message.contains("already removed") => Ok(()),
        Err(e)
            if matches!(
                e.code,
                Code::LaneElsewhere | Code::LaneDirty | Code::LaneUnmerged | Code::Usage
            ) =>
        {
            remove::close_record(ctx, feature, "its task is done").map(|_| ())
        }
        Err(e) => Err(e),
    }
}
