//! A fingerprint of every ref of the repository: one listing, hashed, so a
//! live view (`git swarm serve`) can tell in a few milliseconds whether
//! anything it shows may have changed, and the prefixes under which a kind's
//! records live, for views that read every kind.

use sha2::{Digest, Sha256};

use super::records::Record;
use super::Store;
use crate::error::Result;

/// Where every swarm record lives.
pub const ROOT: &str = "refs/swarm/";

/// `refs/swarm/<namespace>/`: the prefix of kind `R`'s refs.
pub fn prefix_of<R: Record>() -> String {
    format!("{ROOT}{}/", R::NAMESPACE)
}

/// A short hex digest of every ref under `refs/` (names and values):
/// records, their mirror, notes and branches (a lane's commits move the
/// forecast). Equal fingerprints: nothing a view reads from refs moved.
pub fn fingerprint(store: &Store) -> Result<String> {
    let mut h = Sha256::new();
    for (name, id) in store.list_refs("refs/")? {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(id.as_bytes());
    }
    let digest = h.finalize();
    Ok(digest[..12].iter().map(|b| format!("{b:02x}")).collect())
}
