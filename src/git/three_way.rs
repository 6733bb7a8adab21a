//! Merges in memory: two commits (`merge-tree`), three texts (`merge-file`).

use super::{failed, version, Git, MergeTree};
use crate::error::{Code, Error, Result};
use std::ffi::OsStr;

impl Git {
    /// Merge `theirs` into `ours` in memory (`git merge-tree --write-tree`,
    /// git >= 2.38): nothing in the worktree, index or refs changes.
    pub fn merge_tree(&self, ours: &str, theirs: &str) -> Result<MergeTree> {
        version::require(version::Need::MergeTreeWriteTree)?;
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            ours,
            theirs,
        ];
        let out = self.output(args)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut fields = stdout.split('\0').filter(|f| !f.is_empty());
        match out.status.code() {
            Some(0) => Ok(MergeTree::Clean {
                tree: fields.next().unwrap_or_default().to_string(),
            }),
            Some(1) => {
                let _tree = fields.next();
                let mut paths: Vec<String> = fields.map(str::to_string).collect();
                paths.sort();
                paths.dedup();
                Ok(MergeTree::Conflicts(paths))
            }
            _ => Err(failed(&args, &out)),
        }
    }

    /// Three-way merge of texts (`git merge-file`): the merged text, or None
    /// when both sides changed the same lines.
    pub fn merge_text(&self, base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<Option<Vec<u8>>> {
        let dir = std::env::temp_dir().join(format!(
            "git-swarm-merge-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let io = |e: std::io::Error| Error::new(Code::IoFailed, format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(&dir).map_err(io)?;
        let (o, b, t) = (dir.join("ours"), dir.join("base"), dir.join("theirs"));
        let written = std::fs::write(&o, ours)
            .and_then(|_| std::fs::write(&b, base))
            .and_then(|_| std::fs::write(&t, theirs));
        let out = written.map_err(io).and_then(|_| {
            self.output([
                OsStr::new("merge-file"),
                OsStr::new("-p"),
                OsStr::new("--quiet"),
                o.as_os_str(),
                b.as_os_str(),
                t.as_os_str(),
            ])
        });
        let _ = std::fs::remove_dir_all(&dir);
        let out = out?;
        // Exit 0: clean; 1..=127: that many conflicts; anything else failed.
        match out.status.code() {
            Some(0) => Ok(Some(out.stdout)),
            Some(n) if (1..=127).contains(&n) => Ok(None),
            _ => Err(failed(&["merge-file"], &out)),
        }
    }
}
