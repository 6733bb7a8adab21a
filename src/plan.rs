//! Shim: plans moved to `crate::model::plan` (the record kind and its pure
//! rules), `crate::ctx::plan` (the session helpers) and
//! `crate::workflow::plan` (the `plan` commands). These re-exports keep the
//! old paths working until every caller has moved.

pub use crate::ctx::plan::{
    checked_out, checked_out_at, infer, io_error, is_saved_version, journal, newest_head,
    plan_file_in, plan_file_path, read_plan_file, write_plan_file,
};
pub use crate::model::plan::{
    all, from_record, load, plan_ref, refuse_closed, require, Plan, PlanDoc, PlanRecord,
    MULTILINE_FIELDS, RECORD_FILE, SCHEMA, TEXT_FILE,
};
pub use crate::workflow::plan::NewPlan;
