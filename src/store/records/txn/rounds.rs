//! What one [`Publish::run`](super::Publish::run) carries from a round to the next.

use crate::error::Result;
use crate::store::mirror::{fetch_refs, gone, note_unreachable};
use crate::store::Store;

use super::Rejected;

/// What a [`Publish::run`] carries from one round to the next.
pub(super) struct Rounds<'s> {
    /// The remote that arbitrates (None: offline, the local CAS does).
    pub(super) remote: Option<&'s str>,
    /// Why a write is kept in this clone once offline.
    pub(super) why: String,
    /// git's lines of the last refusal.
    pub(super) lost: Vec<String>,
    /// What the previous round decided and the arbiter refused.
    pub(super) rejected: Option<Rejected>,
    /// The previous round lost and kept its view: no fetch this round.
    pub(super) keep_view: bool,
    /// The rounds run so far, this one included.
    pub(super) attempt: usize,
}

impl Rounds<'_> {
    /// The fetch that starts a round: offline from now on when the remote
    /// was found unreachable (earlier in this process, or by this fetch).
    pub(super) fn fetch(&mut self, store: &Store, refs: &[&str]) -> Result<()> {
        // Found unreachable earlier in this process: offline from now
        // on (with nothing to fetch, no push waits for it to time out).
        if self.remote.is_some_and(|r| gone(store, r)) {
            self.why = store.run.reach.kept_why();
            self.remote = None;
        }
        // A round that lost and kept its view decides again on what
        // its fetch showed (`Txn::keep_view_if_lost`): no fetch.
        if let (Some(r), false, false) = (
            self.remote,
            refs.is_empty(),
            std::mem::take(&mut self.keep_view),
        ) {
            match fetch_refs(store, r, refs) {
                Ok(()) if !gone(store, r) => {}
                Ok(()) => {
                    self.why = store.run.reach.kept_why();
                    self.remote = None;
                }
                // Kept only by a command that keeps its writes then
                // (`mirror::Reach::keep_writes_when_unreachable`); the
                // arbitrations (claim, reserve, accept…) fail instead.
                Err(e) if note_unreachable(store, r, &e) => {
                    self.why = format!("remote '{r}' could not be reached");
                    self.remote = None;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
