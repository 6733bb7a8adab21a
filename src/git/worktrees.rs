//! Worktrees and branches: add, remove, prune, list; delete a branch.

use super::{version, Git};
use crate::error::{Code, Error, Result};
use std::path::{Path, PathBuf};

impl Git {
    /// `git worktree add -b <branch> <path> <start>`: a new branch in a new worktree.
    ///
    /// Two `git worktree add` running at once in one repository can read
    /// each other's half-written `.git/worktrees/<id>` and fail, so git-swarm
    /// takes the kernel lock `<common dir>/swarm/worktree.lock` around it
    /// ([`crate::fsutil::Lock`]), waiting up to 30 s for a live holder (a
    /// killed one has released it).
    pub fn worktree_add(
        &self,
        common_dir: &Path,
        path: &Path,
        branch: &str,
        start: &str,
    ) -> Result<()> {
        let lock = common_dir.join("swarm").join("worktree.lock");
        let _held = crate::fsutil::Lock::take(&lock, std::time::Duration::from_secs(30))
            .map_err(|e| crate::fsutil::io_error(&lock, e))?
            .ok_or_else(|| {
                Error::new(
                    Code::CasFailed,
                    format!("{} is held by another git-swarm", lock.display()),
                )
                .hint("wait for the other `lane new` or `accept --worktree` to finish, then run this again")
            })?;
        crate::failpoint::point("worktree:add");
        let path = path.to_string_lossy();
        self.run([
            "worktree",
            "add",
            "--quiet",
            "--no-track",
            "-b",
            branch,
            path.as_ref(),
            start,
        ])
        .map(|_| ())
    }

    /// `git worktree remove --force <path>`: callers check for uncommitted
    /// work themselves (ignoring the untracked plan file) before calling.
    pub fn worktree_remove(&self, path: &Path) -> Result<()> {
        let path = path.to_string_lossy();
        self.run(["worktree", "remove", "--force", path.as_ref()])
            .map(|_| ())
    }

    /// Forget worktrees whose directory is gone.
    pub fn worktree_prune(&self) -> Result<()> {
        self.run(["worktree", "prune"]).map(|_| ())
    }

    /// The worktrees git knows, main worktree first (`git worktree list --porcelain`).
    pub fn worktree_paths(&self) -> Result<Vec<PathBuf>> {
        Ok(self
            .worktree_fields()?
            .iter()
            .filter_map(|l| l.strip_prefix("worktree "))
            .map(PathBuf::from)
            .collect())
    }

    /// The fields of `git worktree list --porcelain` (`worktree <path>`,
    /// `branch <ref>`, `locked <why>`, …), NUL-separated with `-z` (git
    /// 2.36), else one a line (a path holding a newline is then misread:
    /// git before 2.36 has no way to say it).
    pub fn worktree_fields(&self) -> Result<Vec<String>> {
        let z = version::has(version::Need::WorktreeListZ);
        let out = match z {
            true => self.run(["worktree", "list", "--porcelain", "-z"])?,
            false => self.run(["worktree", "list", "--porcelain"])?,
        };
        let sep = if z { '\0' } else { '\n' };
        Ok(out.split(sep).map(str::to_string).collect())
    }

    /// Delete a local branch whatever its merge state (callers decide that).
    pub fn branch_delete(&self, branch: &str) -> Result<()> {
        self.run(["branch", "--quiet", "-D", branch]).map(|_| ())
    }
}
