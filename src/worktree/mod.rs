//! A checkout's files (L1, beside `git`): taking a snapshot of its
//! uncommitted work without touching it ([`snapshot`]), restoring one
//! into a successor's checkout ([`restore`]), and setting a repository up
//! for git-swarm: the hook shims and the excludes ([`setup`]). No session
//! and no record kind: callers hand in the repository and the settings.

pub mod contents;
pub mod restore;
pub mod setup;
pub mod snapshot;
pub mod tree;
