//! Reads of a remote that are not a record fetch: one branch fetched, refs listed.

use super::{failure, Git};
use crate::error::Result;

impl Git {
    /// Update `refs/remotes/<remote>/<branch>` from the remote; Ok(false)
    /// when the remote has no such branch.
    pub fn fetch_branch(&self, remote: &str, branch: &str) -> Result<bool> {
        let spec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
        let args = [
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
            spec.as_str(),
        ];
        self.net.count_fetch();
        let out = self.output(args)?;
        if out.status.success() {
            return Ok(true);
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("couldn't find remote ref") {
            return Ok(false);
        }
        Err(failure::network_error(
            &format!("fetch branch {branch} from"),
            remote,
            &out,
        ))
    }

    /// The remote's refs under any of `prefixes` (`refs/swarm/`), by one
    /// `git ls-remote`: a cheap question to ask whether anything moved
    /// there, without fetching a single object. Sorted by ref name.
    pub fn ls_remote(&self, remote: &str, prefixes: &[&str]) -> Result<Vec<(String, String)>> {
        let mut args = vec!["ls-remote".to_string(), "--quiet".into(), remote.into()];
        args.extend(prefixes.iter().map(|p| format!("{p}*")));
        self.net.count_query();
        let out = self.output(&args)?;
        if !out.status.success() {
            return Err(failure::network_error("list the refs of", remote, &out));
        }
        let out = String::from_utf8_lossy(&out.stdout);
        let mut refs: Vec<(String, String)> = out
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(_, r)| prefixes.iter().any(|p| r.starts_with(p)))
            .map(|(id, r)| (r.to_string(), id.to_string()))
            .collect();
        refs.sort();
        Ok(refs)
    }
}
