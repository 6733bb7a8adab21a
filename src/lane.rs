//! The old home of lanes, kept as paths other areas still use while the
//! record-model restructure lands. Lanes now live in:
//! - `crate::model::lane`: the record, its states and the pure rules;
//! - `crate::ctx::lane`: reading lanes, where they live in this clone, which
//!   lane we run in, handing a lane over;
//! - `crate::workflow::{lane_start, lane_remove, lane_report, lanes}`: the
//!   commands, rendered by `cli/lane.rs`.
//!
//! Shims only: new code should use the paths above.

pub use crate::ctx::lane::{
    all, at, default_base, hand_over, handover_commit, has_merged_verdict, holders, load,
    main_worktree, unbacked_moves,
};
pub use crate::model::lane::{
    branch_of, lane_ref, parse_capacity, Lane, LaneRecord, LaneState, LastReport, Merged,
    ReportKind, State, ACTIVE, RECORD_FILE, REMOVED, SCHEMA,
};

/// The lane whose old worktree we run in, if it was handed over since.
pub fn moved_from_here(ctx: &crate::ctx::Ctx) -> Option<Lane> {
    ctx.moved_from_here()
}
