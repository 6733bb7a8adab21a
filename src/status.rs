//! Shim: `status` moved to `crate::workflow::status` (its rendering to the
//! CLI). These re-exports keep the old paths working.

pub use crate::workflow::status::{collect, cut, LaneStatus, PlanStatus, TITLE_WIDTH};
