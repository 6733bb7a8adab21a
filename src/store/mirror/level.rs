//! "The mirror is level with the remote", remembered by a whole fetch from
//! a remote on this machine: the stamp ([`crate::store::ref_stamp`]) of the
//! remote's swarm refs taken before the fetch, with the stamp of the mirror
//! after it, in `<git common dir>/swarm/mirror-level/<remote>`. While both
//! stamps are unchanged, no ref moved on either side since, so a `wait`
//! that starts then asks the remote nothing (no `ls-remote`, no process)
//! until the remote's files change. A remote across the network has no
//! stamp and is asked as before.

use std::path::PathBuf;

use super::super::ref_stamp::{self, RefStamp};
use super::super::refs::NOTES_REF;
use super::super::Store;
use super::mirror_ref;

/// The git directory of `remote` when it is a repository on this machine.
pub fn remote_dir(store: &Store, remote: &str) -> Option<PathBuf> {
    let url = store.config(&format!("remote.{remote}.url"))?;
    ref_stamp::local_remote_dir(&url)
}

fn path(store: &Store, remote: &str) -> PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("mirror-level")
        .join(remote)
}

/// The stamp of everything a whole fetch mirrors, on the remote.
fn remote_stamp(dir: &std::path::Path) -> RefStamp {
    ref_stamp::stamp(dir, &["refs/swarm/".to_string(), NOTES_REF.to_string()])
}

/// The stamp of the mirror of `remote` here.
fn mirror_stamp(store: &Store, remote: &str) -> RefStamp {
    ref_stamp::stamp(
        &store.common_dir(),
        &[
            mirror_ref(remote, "refs/swarm/"),
            mirror_ref(remote, NOTES_REF),
        ],
    )
}

/// The remote's stamp before a whole fetch (None for a remote that is
/// not on this machine).
pub fn before_fetch(store: &Store, remote: &str) -> Option<RefStamp> {
    remote_dir(store, remote).map(|d| remote_stamp(&d))
}

/// After a whole fetch that succeeded: the mirror is level with the remote
/// as it was at `before`. A stamp too fresh to compare records nothing.
pub fn mark(store: &Store, remote: &str, before: &RefStamp) {
    let (Some(theirs), Some(ours)) = (before.digest(), mirror_stamp(store, remote).digest()) else {
        return;
    };
    let path = path(store, remote);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // A cache: failing to write it costs one question to the remote later.
    let _ = crate::fsutil::replace_file(&path, format!("{theirs}--\n{ours}").as_bytes());
}

/// Whether the mirror is still level with the remote at `dir`: neither
/// moved since the last whole fetch that recorded it.
pub fn holds(store: &Store, remote: &str, dir: &std::path::Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path(store, remote)) else {
        return false;
    };
    let (Some(theirs), Some(ours)) = (
        remote_stamp(dir).digest(),
        mirror_stamp(store, remote).digest(),
    ) else {
        return false;
    };
    text == format!("{theirs}--\n{ours}")
}
