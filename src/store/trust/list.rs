//! The trust list (`.swarm/allowed_signers` on the base branch) as read
//! once per process, and why a check has none to go by.

use std::path::PathBuf;

use gix::ObjectId;

use super::LIST_PATH;
use crate::store::Store;

/// The trust list as read once per process.
pub(super) struct List {
    /// Its blob id; None when the base has no trust list.
    pub(super) blob: Option<ObjectId>,
    /// Where it came from, for messages (`refs/remotes/origin/main`).
    pub(super) source: String,
    /// A copy on disk for ssh-keygen.
    pub(super) file: Option<PathBuf>,
    /// The path a list committed as a symlink names (not followed).
    symlink: Option<String>,
}

impl List {
    /// Why a signature cannot be checked: there is no list on the base
    /// (or it is a symlink, which is not followed).
    pub(super) fn missing(&self) -> String {
        match &self.symlink {
            Some(to) => format!(
                "{LIST_PATH} on {} is a symlink (to {to}), which is not followed: the list is read from the base branch's tree, where a symlink holds only its target's path; commit the file itself there",
                self.source
            ),
            None => format!(
                "no {LIST_PATH} on {} to check the signature against",
                self.source
            ),
        }
    }
}

impl Store {
    pub(super) fn trust_list(&self) -> &List {
        self.trust.list.get_or_init(|| {
            let base = self.trust.base.lock().ok().and_then(|b| b.clone());
            let source = base
                .clone()
                .unwrap_or_else(|| "(no base branch)".to_string());
            let (blob, symlink) = match base.and_then(|b| self.list_entry(&b)) {
                Some((id, false)) => (Some(id), None),
                Some((id, true)) => {
                    let target = self
                        .repo
                        .find_object(id)
                        .ok()
                        .map(|o| String::from_utf8_lossy(&o.data).into_owned());
                    (None, target)
                }
                None => (None, None),
            };
            let file = blob.and_then(|id| {
                let data = self.repo.find_object(id).ok()?.data.clone();
                let path = self.trust.dir.join(format!("{id}.allowed_signers"));
                if !path.exists() {
                    std::fs::create_dir_all(&self.trust.dir).ok()?;
                    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
                    std::fs::write(&tmp, &data).ok()?;
                    std::fs::rename(&tmp, &path).ok()?;
                }
                Some(path)
            });
            List {
                blob,
                source,
                file,
                symlink,
            }
        })
    }

    /// The blob of the trust list at the tip of `refname`, and whether it
    /// is a symlink's (whose blob is the path it names).
    fn list_entry(&self, refname: &str) -> Option<(ObjectId, bool)> {
        let tip = self.ref_target(refname).ok()??;
        let tree = self.repo.find_commit(tip).ok()?.tree().ok()?;
        let entry = tree.lookup_entry_by_path(LIST_PATH).ok()??;
        let mode = entry.mode();
        (mode.is_blob() || mode.is_link()).then(|| (entry.object_id(), mode.is_link()))
    }
}
