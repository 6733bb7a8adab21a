//! Shims: the leader kind now lives in `crate::model::lead` (the record and
//! the rule), `crate::ctx::lead` (reading it in a session) and
//! `crate::workflow::lead` (the commands). These paths keep other areas'
//! imports working until they move to the new ones.

pub use crate::ctx::lead::{known, read_at};
pub use crate::model::lead::{
    lead_ref, parse_duration, parse_record, LeadRecord, Op, RECORD_FILE, SCHEMA,
};
