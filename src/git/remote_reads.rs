//! Reads of a remote that are not a record fetch: one branch fetched, refs listed.

use super::{failure, net, Git};
use crate::error::Result;
use std::process::Output;

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
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let out = self.read_remote(&args, net::NetTally::count_fetch)?;
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
        let out = self.read_remote(&args, net::NetTally::count_query)?;
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

    /// Run one read of a remote (`ls-remote`, a `fetch --dry-run`, a
    /// branch fetch), each attempt counted by `count`: a transient answer
    /// of the server (a dropped or reset connection, an HTTP 5xx) is tried
    /// again after a jittered pause, up to [`net::ATTEMPTS`] times, as a
    /// push or record fetch is; any other answer, and the last, is the
    /// caller's to read.
    pub(crate) fn read_remote(&self, args: &[String], count: fn(&net::NetTally)) -> Result<Output> {
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            count(&self.net);
            let out = self.output(args)?;
            if out.status.success() || attempt >= net::ATTEMPTS {
                return Ok(out);
            }
            if net::transient("", &String::from_utf8_lossy(&out.stderr)).is_none() {
                return Ok(out);
            }
            self.net.count_retry();
            self.net.backoff(attempt);
        }
    }
}
