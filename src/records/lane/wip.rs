//! A lane's published snapshot of its uncommitted work,
//! `refs/swarm/wip/<feature>`: one `git stash create`-style commit (tree =
//! the working tree, first parent the head it was taken on, second parent
//! a commit of the staged tree), replaced whole by each new snapshot. The
//! lane's owner is its only writer; of two versions (two clones, one
//! offline) the newer commit wins in `sync`. A snapshot of a clean
//! worktree is a commit whose tree is the head's, so "nothing uncommitted"
//! is published too (deleting the ref would not travel: a clone that has
//! it would push it back). The forecast uses a snapshot only while it sits
//! on the lane branch's current head; this module holds the pure rule.

use gix::ObjectId;

use crate::store::records::{AnyKind, Diverged};
use crate::store::Store;

pub const WIP_PREFIX: &str = "refs/swarm/wip/";

pub fn wip_ref(feature: &str) -> String {
    format!("{WIP_PREFIX}{feature}")
}

/// How a lane's snapshot relates to the lane branch's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Taken on the branch's head (or on commits after it): it stands for
    /// the lane in the forecast.
    Current,
    /// The branch moved on since (or was rewritten): ignored, flagged.
    Stale,
}

/// `on` is the snapshot's first parent, `head` the branch head as known
/// here; `head_in_on` whether `head` is an ancestor of `on`.
pub fn standing(on: ObjectId, head: ObjectId, head_in_on: bool) -> Standing {
    if on == head || head_in_on {
        Standing::Current
    } else {
        Standing::Stale
    }
}

/// The wip refs as a kind for `sync` and `gc`: the newer version wins, and
/// a snapshot is finished (archived by `gc`) once its lane is: removed, or
/// archived already.
pub struct WipKind;

impl AnyKind for WipKind {
    fn namespace(&self) -> &'static str {
        "wip"
    }
    fn kind(&self) -> &'static str {
        "wip"
    }
    fn diverged(&self) -> Diverged {
        Diverged::NewestWins
    }
    fn finished(
        &self,
        store: &Store,
        path: &str,
        _tip: ObjectId,
        finished_elsewhere: &dyn Fn(&str, &str) -> bool,
    ) -> bool {
        let lane = super::lane_ref(path);
        finished_elsewhere("lanes", path)
            || (store.ref_target(&lane).ok().flatten().is_none()
                && crate::store::archive::archived_tip(store, &lane)
                    .ok()
                    .flatten()
                    .is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    #[test]
    fn a_snapshot_on_the_head_or_after_it_stands_else_it_is_stale() {
        assert_eq!(standing(id(1), id(1), false), Standing::Current);
        assert_eq!(standing(id(2), id(1), true), Standing::Current);
        assert_eq!(standing(id(1), id(2), false), Standing::Stale);
    }

    #[test]
    fn refs() {
        assert_eq!(wip_ref("api"), "refs/swarm/wip/api");
    }
}
