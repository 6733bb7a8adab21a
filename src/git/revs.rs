//! Revisions: resolving, ancestry, counts, the branch checked out, commit times.

use super::{failed, Git};
use crate::error::Result;

impl Git {
    /// Is `ancestor` reachable from `descendant`?
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        let out = self.output(["merge-base", "--is-ancestor", ancestor, descendant])?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(
                &["merge-base", "--is-ancestor", ancestor, descendant],
                &out,
            )),
        }
    }

    pub fn rev_parse(&self, rev: &str) -> Result<Option<String>> {
        let out = self.output([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ])?;
        if out.status.success() {
            Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            ))
        } else {
            Ok(None)
        }
    }

    /// The commit `rev` names, if any.
    pub fn resolve(&self, rev: &str) -> Result<Option<gix::ObjectId>> {
        Ok(self
            .rev_parse(rev)?
            .and_then(|s| gix::ObjectId::from_hex(s.as_bytes()).ok()))
    }

    /// Does `rev` name a commit that is in the object database?
    pub fn has_commit(&self, rev: &str) -> Result<bool> {
        Ok(self.rev_parse(rev)?.is_some())
    }

    /// Committer time of `rev` (seconds since the epoch), None if unknown.
    pub fn committer_time(&self, rev: &str) -> Result<Option<i64>> {
        let out = self.output(["show", "-s", "--format=%ct", rev, "--"])?;
        if !out.status.success() {
            return Ok(None);
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse().ok())
    }

    /// The checked-out branch (`feat/x`), None on a detached HEAD.
    pub fn current_branch(&self) -> Result<Option<String>> {
        let out = self.output(["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(failed(
                &["symbolic-ref", "--quiet", "--short", "HEAD"],
                &out,
            )),
        }
    }

    /// (ahead, behind): commits in `head` not in `base`, and in `base` not in `head`.
    pub fn ahead_behind(&self, base: &str, head: &str) -> Result<(u64, u64)> {
        let out = self.run([
            "rev-list",
            "--left-right",
            "--count",
            &format!("{base}...{head}"),
        ])?;
        let mut it = out
            .split_whitespace()
            .map(|n| n.parse::<u64>().unwrap_or(0));
        let behind = it.next().unwrap_or(0);
        let ahead = it.next().unwrap_or(0);
        Ok((ahead, behind))
    }

    /// Commits given by rev-list arguments (e.g. `A..B`, or `B --not --remotes=origin`), oldest first.
    pub fn rev_list(&self, args: &[&str]) -> Result<Vec<String>> {
        let mut all = vec!["rev-list", "--reverse"];
        all.extend_from_slice(args);
        all.push("--");
        Ok(self
            .run(&all)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }
}
