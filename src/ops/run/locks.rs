//! Stale git locks in a lane's worktree: an agent killed in the middle of a
//! git command (SIGKILL, a crash) leaves `index.lock`, `AUTO_MERGE.lock`…
//! in the worktree's git dir, and every git command of its successor then
//! fails. Before launching on a lane the runner removes them, unless a live
//! process still works in that worktree (its lock may be held).

use std::path::{Path, PathBuf};

/// What was found in a lane worktree's git dir.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Locks {
    /// No lock file.
    None,
    /// These stale lock files were removed.
    Cleared(Vec<String>),
    /// These lock files were left: the process with this pid has its
    /// working directory in the worktree (or, without /proc, none could be
    /// ruled out: pid 0).
    Locked(Vec<String>, u32),
}

/// The git dir of a worktree: `.git` itself, or the one its `.git` file names.
fn git_dir(worktree: &Path) -> Option<PathBuf> {
    let dot = worktree.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let path = PathBuf::from(text.trim().strip_prefix("gitdir:")?.trim());
    Some(if path.is_absolute() {
        path
    } else {
        worktree.join(path)
    })
}

/// A live process whose working directory is in `worktree` (None when there
/// is none; Some(0) when /proc cannot tell).
fn live_in(worktree: &Path) -> Option<u32> {
    let root = worktree.canonicalize().ok()?;
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Some(0);
    };
    let me = std::process::id();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(cwd) = std::fs::read_link(p.path().join("cwd")) {
            if cwd.starts_with(&root) {
                return Some(pid);
            }
        }
    }
    None
}

/// Remove the `*.lock` files of `worktree`'s git dir when no live process
/// works in the worktree.
pub(super) fn clear_stale(worktree: &Path) -> Locks {
    let Some(dir) = git_dir(worktree) else {
        return Locks::None;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Locks::None;
    };
    let mut locks: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "lock"))
        .collect();
    if locks.is_empty() {
        return Locks::None;
    }
    locks.sort();
    let names = locks
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .collect();
    if let Some(pid) = live_in(worktree) {
        return Locks::Locked(names, pid);
    }
    for l in &locks {
        let _ = std::fs::remove_file(l);
    }
    Locks::Cleared(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worktree(root: &Path) -> (PathBuf, PathBuf) {
        let wt = root.join("lane");
        let gd = root.join("gitdir");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::create_dir_all(&gd).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gd.display())).unwrap();
        std::fs::write(gd.join("index.lock"), "").unwrap();
        std::fs::write(gd.join("AUTO_MERGE.lock"), "").unwrap();
        std::fs::write(gd.join("HEAD"), "ref: refs/heads/x\n").unwrap();
        (wt, gd)
    }

    #[test]
    fn stale_locks_are_cleared_and_live_ones_left() {
        let tmp = tempfile::tempdir().unwrap();
        let (wt, gd) = worktree(tmp.path());
        // A live process working in the worktree: its locks stay.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&wt)
            .spawn()
            .unwrap();
        let got = clear_stale(&wt);
        let _ = child.kill();
        let _ = child.wait();
        let names = vec!["AUTO_MERGE.lock".to_string(), "index.lock".to_string()];
        assert_eq!(got, Locks::Locked(names.clone(), child.id()));
        assert!(gd.join("index.lock").exists());
        // It is gone: they are stale, and removed; nothing else is.
        assert_eq!(clear_stale(&wt), Locks::Cleared(names));
        assert!(!gd.join("index.lock").exists() && !gd.join("AUTO_MERGE.lock").exists());
        assert!(gd.join("HEAD").exists());
        assert_eq!(clear_stale(&wt), Locks::None);
    }
}
