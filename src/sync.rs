//! Old paths of `sync` and the remote primitives, kept while other areas
//! move to their new homes: the remote in [`crate::store::remote`] and
//! [`crate::store::mirror`], reconciliation in [`crate::store::reconcile`],
//! the command in [`crate::workflow::sync`].

pub use crate::store::mirror::{fetch, fetch_refs, mirror_ref, MirrorView};
pub use crate::store::reconcile::{Conflict, Fenced};
pub use crate::store::remote::{
    adopt, publish, publish_record, publish_records, tip, Publish, Published, Tip,
};
pub use crate::workflow::sync::{sync, SyncReport};
