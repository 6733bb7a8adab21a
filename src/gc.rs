//! Old paths of `gc`, kept while other areas move: the archive is
//! [`crate::store::archive`], the command [`crate::workflow::gc`].

pub use crate::store::archive::{
    archive_ref, archived, archived_tip, entries_at, find_record, live_refs, split, GcReport,
    ARCHIVE_PREFIX,
};
pub use crate::workflow::gc::{configured_age, gc};
