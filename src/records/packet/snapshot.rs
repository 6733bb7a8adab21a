//! The snapshot a packet carries: the lane's uncommitted work (staged,
//! unstaged, untracked-not-ignored) as one commit on
//! `refs/swarm/snapshots/<plan>/<id>`, published with the packet in the
//! same atomic push. The packet records, per path, its state and content
//! ([`Snapshot`]); those types and their rules are the checkout's
//! ([`crate::worktree::contents`]), as are taking and restoring one. This
//! module holds the snapshot refs as a kind.

use gix::ObjectId;

use crate::store::records::{AnyKind, Diverged};
use crate::store::Store;

pub use crate::worktree::contents::{
    check_size, mode_refusal, path_refusal, state_of, unsafe_entries, unsafe_entry, PathState,
    Snapshot, SnapshotPath, DEFAULT_LIMIT,
};

/// Where every snapshot ref lives.
pub const SNAPSHOT_PREFIX: &str = "refs/swarm/snapshots/";

/// The snapshot ref tied to packet `id` of `plan`.
pub fn snapshot_ref(plan: &str, id: &str) -> String {
    format!("{SNAPSHOT_PREFIX}{plan}/{id}")
}

/// The snapshot refs as a kind for `sync` and `gc`: a snapshot is written
/// once and never changes (the published one wins), and is finished — so
/// `gc` archives it — when the packet it is tied to is (accepted or
/// withdrawn), in the same run.
pub struct SnapshotKind;

impl AnyKind for SnapshotKind {
    fn namespace(&self) -> &'static str {
        "snapshots"
    }
    fn kind(&self) -> &'static str {
        "snapshot"
    }
    fn diverged(&self) -> Diverged {
        Diverged::PublishedWinsIfRelated
    }
    fn finished(
        &self,
        _store: &Store,
        path: &str,
        _tip: ObjectId,
        finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool {
        finished_elsewhere("packets", path)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refs() {
        assert_eq!(super::snapshot_ref("p", "x"), "refs/swarm/snapshots/p/x");
    }
}
