//! A cheap "did any ref under these prefixes change?" for a repository on
//! this machine, by the file system alone: git moves a ref by writing a
//! lock file and renaming it over the loose ref (the directory's mtime
//! changes), by rewriting `packed-refs` through a rename, or, with the
//! reftable backend, by renaming a new `reftable/tables.list` into place.
//! The stamp is the status (mtime, inode, size) of each directory under the
//! prefixes, of their nearest existing ancestors, of `packed-refs` and of
//! `reftable/tables.list`: equal stamps mean no ref under the prefixes
//! moved, so a polling loop (`wait`) lists thousands of refs only when
//! something did. A different stamp says only "look again". File times
//! are coarse (a kernel tick): a stamp holding a directory's time less than
//! 100 ms old (2 s on a file system that keeps whole seconds) equals no
//! other, since a second change in the same tick would not show; a file
//! git replaces by a rename gets a new inode.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A file's mtime (seconds, nanoseconds), inode and size.
type Status = (i64, i64, u64, u64);

/// The status of the files a ref update touches, see the module docs.
#[derive(Debug, Clone)]
pub struct RefStamp {
    files: Vec<(PathBuf, Option<Status>)>,
    /// A time in it is too recent to tell a later change in the same tick.
    fresh: bool,
}

impl PartialEq for RefStamp {
    fn eq(&self, other: &RefStamp) -> bool {
        !self.fresh && !other.fresh && self.files == other.files
    }
}

fn status(path: &Path) -> Option<Status> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.mtime(), m.mtime_nsec(), m.ino(), m.size()))
}

/// The stamp of the refs under `prefixes` (`refs/swarm/messages/`, or one
/// ref's full name) in the repository whose common git directory is `git_dir`.
pub fn stamp(git_dir: &Path, prefixes: &[String]) -> RefStamp {
    let mut paths = vec![
        git_dir.join("packed-refs"),
        git_dir.join("reftable").join("tables.list"),
    ];
    for prefix in prefixes {
        // The directory holding the prefix's refs (for one ref: its parent).
        let dir = match prefix.strip_suffix('/') {
            Some(d) => git_dir.join(d),
            None => git_dir
                .join(prefix)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        };
        // Missing, its creation shows on the nearest ancestor that exists.
        let mut at = dir.as_path();
        while !at.is_dir() && at.starts_with(git_dir) && at != git_dir {
            match at.parent() {
                Some(p) => at = p,
                None => break,
            }
        }
        walk_dirs(at, &mut paths);
    }
    paths.sort();
    paths.dedup();
    let files: Vec<_> = paths.into_iter().map(|p| (p.clone(), status(&p))).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(i128::MAX);
    let fresh = files.iter().any(|(path, s)| {
        s.is_some_and(|(secs, nsec, ..)| {
            let window: i128 = if nsec == 0 {
                2_000_000_000
            } else {
                100_000_000
            };
            path.is_dir() && i128::from(secs) * 1_000_000_000 + i128::from(nsec) >= now - window
        })
    });
    RefStamp { files, fresh }
}

impl RefStamp {
    /// The stamp as text, to keep in a file and compare with a later one;
    /// None for a fresh stamp (it equals no other).
    pub fn digest(&self) -> Option<String> {
        if self.fresh {
            return None;
        }
        Some(
            self.files
                .iter()
                .map(|(path, s)| match s {
                    Some((secs, nsec, ino, size)) => {
                        format!("{} {secs}.{nsec} {ino} {size}\n", path.display())
                    }
                    None => format!("{} -\n", path.display()),
                })
                .collect(),
        )
    }
}

/// `dir` and every directory under it (loose refs nest by name).
fn walk_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk_dirs(&entry.path(), out);
        }
    }
}

/// The git directory of a remote whose URL names a repository on this
/// machine (an absolute path or a `file://` URL), None for any other.
pub fn local_remote_dir(url: &str) -> Option<PathBuf> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    // A bare repository, else a work tree's `.git` directory (a `.git`
    // file pointing elsewhere is not followed: the caller asks git).
    [path.to_path_buf(), path.join(".git")]
        .into_iter()
        .find(|d| d.join("HEAD").is_file() && d.join("refs").is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set every file's times an hour back, as if nothing moved for long.
    fn age(dir: &Path) {
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut dirs = Vec::new();
        walk_dirs(dir, &mut dirs);
        for d in dirs {
            let f = std::fs::File::open(&d).unwrap();
            f.set_modified(old).unwrap();
        }
    }

    #[test]
    fn a_ref_renamed_into_a_directory_changes_the_stamp() {
        let tmp = tempfile::tempdir().unwrap();
        let git = tmp.path();
        std::fs::create_dir_all(git.join("refs/swarm/messages/p")).unwrap();
        let prefixes = vec!["refs/swarm/messages/".to_string()];
        let before = stamp(git, &prefixes);
        assert_ne!(before, stamp(git, &prefixes), "a fresh stamp equals none");
        age(git);
        let before = stamp(git, &prefixes);
        assert_eq!(before, stamp(git, &prefixes), "nothing moved");
        // As git does: a lock file, renamed over the ref.
        let lock = git.join("refs/swarm/messages/p/m1.lock");
        std::fs::write(&lock, "0000\n").unwrap();
        std::fs::rename(&lock, git.join("refs/swarm/messages/p/m1")).unwrap();
        assert_ne!(before, stamp(git, &prefixes));
        // A new plan's directory, under a prefix that did not exist yet.
        let one = vec!["refs/swarm/tasks/".to_string()];
        age(git);
        let before = stamp(git, &one);
        std::fs::create_dir_all(git.join("refs/swarm/tasks/q")).unwrap();
        assert_ne!(before, stamp(git, &one));
    }
}
