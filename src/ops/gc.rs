//! `git swarm gc`: archive every registered kind's finished records older
//! than an age (see [`crate::store::archive`] for how, and why it is safe).

use crate::error::Result;
use crate::store::archive::{self, GcReport};
use crate::store::Store;

/// `swarm.gcAge`, default 14 days.
pub fn configured_age(store: &Store) -> Result<jiff::SignedDuration> {
    crate::config::gc_age(store)
}

/// Archive the finished records of every kind in `crate::records::kinds()`
/// whose tip is older than `older_than`; with `dry_run`, only say which.
pub fn gc(
    store: &Store,
    actor: &str,
    older_than: jiff::SignedDuration,
    dry_run: bool,
) -> Result<GcReport> {
    archive::gc(store, crate::records::kinds(), actor, older_than, dry_run)
}
