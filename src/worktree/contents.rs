//! What a snapshot of a checkout holds: per path its state, content and
//! mode ([`Snapshot`], recorded in the packet that carries it), and the
//! pure rules of what a snapshot may hold (a path's state from `git
//! status`, the size limit, the paths and modes that must never be
//! written into a checkout). Taking one is [`super::snapshot`]'s,
//! restoring one [`super::restore`]'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Code, Error};

/// The default of `swarm.snapshotLimit`: 10 MiB of uncommitted files.
pub const DEFAULT_LIMIT: u64 = 10 * 1024 * 1024;

/// What a packet records of its snapshot (`packet.yaml`, `snapshot:`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    /// The snapshot commit: tree = the working tree's content, first parent
    /// the head, second parent a commit of the staged (index) tree.
    pub commit: String,
    /// Total bytes of the files it holds.
    pub size: u64,
    /// Per changed path: its state and content.
    pub paths: BTreeMap<String, SnapshotPath>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SnapshotPath {
    pub state: PathState,
    /// The git blob id of the content (`deleted` when absent).
    pub content: String,
    /// The git file mode (`100644`, `100755`, `120000`), absent when deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default)]
    pub size: u64,
    /// A rename's source path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

open_enum! {
    /// The state of a path in a snapshot; one a newer version writes is
    /// kept as written.
    pub enum PathState {
        Staged = "staged",
        Unstaged = "unstaged",
        StagedAndUnstaged = "staged+unstaged",
        Untracked = "untracked",
        Deleted = "deleted",
        Renamed = "renamed",
        /// `git add -N`: restored as one.
        IntentToAdd = "intent-to-add",
    }
}

/// The state of a path from its `git status --porcelain` letters.
pub fn state_of(xy: &str) -> PathState {
    let mut letters = xy.chars();
    let x = letters.next().unwrap_or(' ');
    let y = letters.next().unwrap_or(' ');
    match (x, y) {
        ('?', _) => PathState::Untracked,
        ('R', _) | ('C', _) => PathState::Renamed,
        ('D', _) | (_, 'D') => PathState::Deleted,
        (' ', 'A') => PathState::IntentToAdd,
        (' ', _) => PathState::Unstaged,
        (_, ' ') => PathState::Staged,
        _ => PathState::StagedAndUnstaged,
    }
}

/// `SNAPSHOT_TOO_LARGE` when `size` is over `limit`.
pub fn check_size(size: u64, limit: u64, biggest: &[(String, u64)]) -> Result<(), Error> {
    if size <= limit {
        return Ok(());
    }
    let named: Vec<String> = biggest
        .iter()
        .take(3)
        .map(|(p, s)| format!("{p} ({s} bytes)"))
        .collect();
    Err(Error::new(
        Code::SnapshotTooLarge,
        format!(
            "the uncommitted work is {size} bytes, over the snapshot limit of {limit} bytes (largest: {}); nothing was written",
            named.join(", ")
        ),
    )
    .hint("commit and push the large files, or raise the limit: `git config swarm.snapshotLimit <bytes>`"))
}

/// Why a snapshot tree's entry must not be written into a checkout, if it
/// must not: a snapshot comes from the remote, and whoever can push there
/// could otherwise make `accept` write into `.git` (a hook runs code) or
/// out of the worktree. The rules git's own `verify_path` applies, plus
/// the modes a snapshot can hold.
pub fn unsafe_entry(path: &str, mode: &str) -> Option<&'static str> {
    if !matches!(mode, "100644" | "100755" | "120000" | "160000") {
        return Some("not a file, executable, symlink or submodule");
    }
    if path.is_empty() || path.starts_with('/') {
        return Some("not a relative path");
    }
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Some("an empty, `.` or `..` path component");
        }
        if part.contains('\\') {
            return Some("a backslash in the path (a separator on Windows)");
        }
        // `.git`, and the names NTFS and HFS+ read as `.git` (`.git.`,
        // `.git `, `.git::$INDEX_ALLOCATION`, `git~1`, `.g\u{200c}it`), in
        // any case.
        let lower: String = part
            .to_lowercase()
            .chars()
            .filter(|c| !hfs_ignorable(*c))
            .collect();
        let trimmed = lower
            .split(':')
            .next()
            .unwrap_or("")
            .trim_end_matches(['.', ' ']);
        if trimmed == ".git" || lower == "git~1" {
            return Some("a path inside .git");
        }
        if part
            .chars()
            .any(|c| c.is_control() || crate::text::forbidden(c, false))
        {
            return Some("a control character in the path");
        }
    }
    None
}

/// Why a path of the uncommitted work cannot travel in a packet, if it
/// cannot: the ONE rule `handoff` (and `lane snapshot`) apply before
/// publishing and `accept` applies before writing. It holds every rule a
/// reader of the packet applies to a path: the record reader's (no
/// control, bidi or separator character in any text) and the snapshot
/// restore's ([`unsafe_entry`]: a TAB, a backslash, `.git`, `..`).
pub fn path_refusal(path: &str) -> Option<&'static str> {
    if path.contains('\u{fffd}') {
        // What git printed was not UTF-8: the name cannot be said in a record.
        return Some("a name that is not UTF-8");
    }
    if crate::text::first_forbidden(path, false).is_some() || path.contains('\t') {
        return Some("a control character, TAB or bidi control in the name");
    }
    unsafe_entry(path, "100644")
}

/// Why an entry of this (raw) mode cannot be restored by a snapshot, if it
/// cannot: a snapshot writes files, executables and symlinks only.
pub fn mode_refusal(mode: &str) -> Option<&'static str> {
    match mode {
        "100644" | "100755" | "120000" => None,
        "160000" => Some("a submodule (gitlink): a snapshot does not carry one"),
        _ => Some("a mode outside git's set (100644, 100755, 120000, 160000, 040000)"),
    }
}

/// The code points HFS+ ignores in names (git's `is_hfs_dotgit` list).
fn hfs_ignorable(c: char) -> bool {
    matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
}

/// The entries of a snapshot tree (path, mode) that must not be written:
/// [`unsafe_entry`], a path given twice, and a path under an entry that is
/// not a directory (a symlink `l` and `l/x` would write through the link).
pub fn unsafe_entries<'a>(entries: &[(&'a str, &str)]) -> Vec<(&'a str, &'static str)> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    // Compared case-folded: on a case-insensitive file system a symlink `A`
    // is the directory `a/` of another entry.
    let leaves: std::collections::BTreeSet<String> =
        entries.iter().map(|(p, _)| p.to_lowercase()).collect();
    for (path, mode) in entries {
        let folded = path.to_lowercase();
        if let Some(why) = unsafe_entry(path, mode) {
            out.push((*path, why));
        } else if !seen.insert(folded.clone()) {
            out.push((*path, "the path is in the tree twice"));
        } else if folded
            .match_indices('/')
            .any(|(i, _)| leaves.contains(&folded[..i]))
        {
            out.push((*path, "a path under a file or symlink of the snapshot"));
        }
    }
    out
}

/// The content of each path in the checkout, as git would store it: the
/// blob id of a file's bytes (of a symlink's target, for a link), or
/// `deleted`. No filters run, so both sides of a handoff hash alike.
pub fn content_ids(
    repo: &gix::Repository,
    workdir: &Path,
    paths: &[String],
) -> crate::error::Result<BTreeMap<String, String>> {
    let kind = repo.object_hash();
    let mut out = BTreeMap::new();
    for p in paths {
        let full = workdir.join(p);
        let bytes = match std::fs::symlink_metadata(&full) {
            // A file where a directory on the way was: the path is gone.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                out.insert(p.clone(), "deleted".to_string());
                continue;
            }
            Err(e) => return Err(crate::fsutil::io_error(&full, e)),
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&full)
                .map_err(|e| crate::fsutil::io_error(&full, e))?
                .into_os_string()
                .into_encoded_bytes(),
            Ok(m) if m.is_dir() => {
                // A nested repository or submodule: its content is not ours to hash.
                out.insert(p.clone(), "directory".to_string());
                continue;
            }
            Ok(_) => std::fs::read(&full).map_err(|e| crate::fsutil::io_error(&full, e))?,
        };
        let id = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &bytes)
            .map_err(|e| Error::gix("could not hash a file", e))?;
        out.insert(p.clone(), id.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(state_of("??"), "untracked");
        assert_eq!(state_of("M "), "staged");
        assert_eq!(state_of(" M"), "unstaged");
        assert_eq!(state_of("MM"), "staged+unstaged");
        assert_eq!(state_of("A "), "staged");
        assert_eq!(state_of(" D"), "deleted");
        assert_eq!(state_of("D "), "deleted");
        assert_eq!(state_of("R "), "renamed");
        assert_eq!(state_of(" T"), "unstaged");
    }

    #[test]
    fn size_limit() {
        assert!(check_size(10, 10, &[]).is_ok());
        let e = check_size(11, 10, &[("big.bin".into(), 11)]).unwrap_err();
        assert_eq!(e.code, Code::SnapshotTooLarge);
        assert!(e.message.contains("big.bin (11 bytes)"), "{}", e.message);
    }

    #[test]
    fn entries_that_would_write_into_git_or_through_a_link_are_unsafe() {
        assert_eq!(unsafe_entry("src/a.rs", "100644"), None);
        assert_eq!(unsafe_entry("bin/run", "100755"), None);
        assert_eq!(unsafe_entry("link", "120000"), None);
        for bad in [
            ".git/hooks/pre-commit",
            "sub/.GIT/config",
            ".git./hooks/x",
            ".git /x",
            "GIT~1/hooks/x",
            "../outside",
            "a/../../b",
            "/etc/passwd",
            "a//b",
            "./a",
            "",
            "a\tb",
        ] {
            assert!(unsafe_entry(bad, "100644").is_some(), "{bad:?}");
        }
        assert!(unsafe_entry("a", "040000").is_some());
        for bad in [
            ".git::$INDEX_ALLOCATION/hooks/x",
            ".git\\hooks\\x",
            ".g\u{200c}it/hooks/x",
            ".GIT:/x",
        ] {
            assert!(unsafe_entry(bad, "100644").is_some(), "{bad:?}");
        }
        assert!(!unsafe_entries(&[("A", "120000"), ("a/x", "100644")]).is_empty());
        let entries = [
            ("lnk", "120000"),
            ("lnk/pwn.txt", "100644"),
            ("ok", "100644"),
            ("ok", "100644"),
        ];
        let found = unsafe_entries(&entries);
        assert_eq!(
            found,
            vec![
                (
                    "lnk/pwn.txt",
                    "a path under a file or symlink of the snapshot"
                ),
                ("ok", "the path is in the tree twice"),
            ]
        );
        assert!(unsafe_entries(&[("a/b", "100644"), ("a/c", "100755")]).is_empty());
    }
}
