//! The working treex27s status: its entries and the paths that differ from HEAD.

use super::{Git, StatusEntry};
use crate::error::Result;

impl Git {
    /// `git status --porcelain=v1` entries (untracked files listed one by
    /// one, ignored ones not): the two status letters, the path, and for a
    /// rename or copy its source path.
    pub fn status_entries(&self) -> Result<Vec<StatusEntry>> {
        let out = self.run(["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
        let mut entries = Vec::new();
        let mut fields = out.split('\0');
        while let Some(entry) = fields.next() {
            if entry.len() < 4 {
                continue;
            }
            let (status, path) = entry.split_at(3);
            let from = if status.starts_with('R') || status.starts_with('C') {
                fields.next().map(str::to_string)
            } else {
                None
            };
            entries.push(StatusEntry {
                xy: status[..2].to_string(),
                path: path.to_string(),
                from,
            });
        }
        Ok(entries)
    }

    /// Paths with uncommitted changes (staged, unstaged or untracked, not ignored), sorted.
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        let out = self.run(["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
        let mut paths = Vec::new();
        let mut fields = out.split('\0');
        while let Some(entry) = fields.next() {
            if entry.len() < 4 {
                continue;
            }
            let (status, path) = entry.split_at(3);
            paths.push(path.to_string());
            // A rename or copy carries its source path as the next field.
            if status.starts_with('R') || status.starts_with('C') {
                fields.next();
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }
}
