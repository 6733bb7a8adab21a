//! Fetches and atomic pushes with leases: the network half of the git binary.

use std::process::Stdio;

use super::{net, Git};
use crate::error::{Code, Error, Result};

/// One ref update in an atomic push: `src` is an object id (or empty to
/// delete), `expected` the value the remote must still hold (None: must not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    pub refname: String,
    pub new: Option<String>,
    pub expected: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// Every ref was updated on the remote.
    Ok,
    /// The remote (or the lease) refused; nothing moved. Carries git's lines.
    Rejected(Vec<String>),
}

impl Git {
    /// Fetch `refspecs` from `remote`, pruning only within those refspecs.
    pub fn fetch(&self, remote: &str, refspecs: &[String]) -> Result<()> {
        let mut args: Vec<String> = vec![
            "fetch".into(),
            "--quiet".into(),
            "--prune".into(),
            "--no-tags".into(),
        ];
        args.push("--no-write-fetch-head".into());
        args.push(remote.into());
        args.extend(refspecs.iter().cloned());
        // Another process of this repository may be updating the same
        // mirror refs (a second agent, or the `git push` a killed process
        // left running): a lost ref lock is retried, not reported. A
        // transient answer of the server (an HTTP 5xx, a dropped
        // connection) is retried by [`Self::read_remote`], as every read is.
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let out = self.read_remote(&args, net::NetTally::count_fetch)?;
            if out.status.success() {
                return Ok(());
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            // This clone's own mirror lock, held by another local process.
            if attempt < 5 && is_lock_contention(&stderr) && !stderr.contains("remote: ") {
                std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt)));
                continue;
            }
            return Err(super::failure::network_error("fetch from", remote, &out));
        }
    }

    /// Whether fetching `refspecs` from `remote` would change a ref here
    /// (`git fetch --dry-run --porcelain`): one question whose ref
    /// advertisement the remote limits to the refspecs' prefixes (protocol
    /// v2 `ref-prefix`), so its cost does not grow with unrelated refs, as
    /// that of `git ls-remote <pattern>` does (which lists every ref and
    /// filters them here).
    pub fn fetch_would_change(&self, remote: &str, refspecs: &[String]) -> Result<bool> {
        Ok(!self.fetch_would_move(remote, refspecs)?.is_empty())
    }

    /// The local refs a fetch of `refspecs` would move (create, update or
    /// prune), as [`Self::fetch_would_change`] asks it.
    ///
    /// A git older than 2.41 has no `fetch --porcelain`: there the same
    /// fetch is asked without it ([`Self::dry_run_would_move`]).
    pub fn fetch_would_move(&self, remote: &str, refspecs: &[String]) -> Result<Vec<String>> {
        if !super::version::has(super::version::Need::FetchPorcelain) {
            return self.dry_run_would_move(remote, refspecs);
        }
        let mut args: Vec<String> = vec![
            "fetch".into(),
            "--dry-run".into(),
            "--porcelain".into(),
            "--prune".into(),
            "--no-tags".into(),
            "--no-write-fetch-head".into(),
            remote.into(),
        ];
        args.extend(refspecs.iter().cloned());
        let out = self.read_remote(&args, net::NetTally::count_query)?;
        if !out.status.success() {
            return Err(super::failure::network_error("ask", remote, &out));
        }
        let out = String::from_utf8_lossy(&out.stdout);
        // `<flag> <old-id> <new-id> <local ref>` per line; the flag of a
        // fast-forward is a space, so the fields are read after it.
        Ok(out
            .lines()
            .filter_map(|l| l.get(2..)?.split_whitespace().nth(2))
            .map(str::to_string)
            .collect())
    }

    /// [`Self::fetch_would_move`] for a git without `fetch --porcelain`
    /// (before 2.41): the same `git fetch --dry-run`, whose ref
    /// advertisement the remote limits to the refspecs' prefixes as well,
    /// read from its human-readable lines (`-c fetch.output=full`, in the
    /// C locale): ` * [new ref]  <src> -> <dst>`, `   a..b  <src> -> <dst>`,
    /// ` - [deleted]  (none) -> <dst>`. git shortens `<dst>` by dropping
    /// `refs/` where that is unambiguous; it is put back.
    pub fn dry_run_would_move(&self, remote: &str, refspecs: &[String]) -> Result<Vec<String>> {
        let mut args: Vec<String> = vec![
            "-c".into(),
            "fetch.output=full".into(),
            "fetch".into(),
            "--dry-run".into(),
            "--prune".into(),
            "--no-tags".into(),
            "--no-write-fetch-head".into(),
            remote.into(),
        ];
        args.extend(refspecs.iter().cloned());
        let out = self.read_remote(&args, net::NetTally::count_query)?;
        if !out.status.success() {
            return Err(super::failure::network_error("ask", remote, &out));
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut moved: Vec<String> = stderr
            .lines()
            .filter_map(|l| l.split_once(" -> "))
            .filter_map(|(_, dst)| dst.split_whitespace().next())
            .map(|dst| match dst.starts_with("refs/") {
                true => dst.to_string(),
                false => format!("refs/{dst}"),
            })
            .collect();
        moved.sort();
        moved.dedup();
        Ok(moved)
    }

    /// One atomic push; every ref it updates or deletes carries an explicit
    /// lease so that the remote itself checks the expected value
    /// (compare-and-swap); a ref it creates is a plain fast-forward push.
    pub fn push_atomic(
        &self,
        remote: &str,
        updates: &[PushUpdate],
        extra_refspecs: &[String],
    ) -> Result<PushOutcome> {
        if updates.is_empty() && extra_refspecs.is_empty() {
            return Ok(PushOutcome::Ok);
        }
        let args = push_args(remote, updates, extra_refspecs);
        // A transient answer of the server (a ref it could not lock, a
        // 5xx, a dropped connection) is tried again with jittered backoff:
        // every ref carries its lease, so a retry can only land where the
        // first attempt would have.
        let mut retried = None;
        for attempt in 1..=net::ATTEMPTS {
            // Fenced pushes are our own: the fenced-publish guard lets them through.
            let mut cmd = self.command(&args);
            cmd.env("GIT_SWARM_FENCED_PUSH", "1").stdin(Stdio::null());
            self.net.count_push(updates.len() + extra_refspecs.len());
            let out = cmd
                .output()
                .map_err(|e| Error::new(Code::GitFailed, format!("could not run git push: {e}")))?;
            if out.status.success() {
                return Ok(PushOutcome::Ok);
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if let Some(why) = net::transient(&stdout, &stderr) {
                retried = Some((why, stderr.trim().to_string()));
                if attempt < net::ATTEMPTS {
                    self.net.count_retry();
                    self.net.backoff(attempt);
                }
                continue;
            }
            let outcome = classify_push_failure(remote, &stdout, &stderr)?;
            // A refused retry may only be refused because an earlier
            // attempt landed before its answer was lost: then every ref
            // already holds what this push set.
            if retried.is_some()
                && outcome != PushOutcome::Ok
                && self.remote_holds(remote, updates)?
            {
                return Ok(PushOutcome::Ok);
            }
            return Ok(outcome);
        }
        let (why, said) = retried.unwrap_or(("", String::new()));
        Err(Error::new(
            Code::RemoteBusy,
            format!(
                "the push to '{remote}' failed {} times on the server's side ({why}); this is not a lost race: {said}",
                net::ATTEMPTS
            ),
        )
        .hint("run the command again in a minute; the next `git swarm sync` finds out whether the last attempt landed"))
    }

    /// Whether `remote` holds exactly what `updates` set (deleted refs absent).
    fn remote_holds(&self, remote: &str, updates: &[PushUpdate]) -> Result<bool> {
        if updates.is_empty() {
            return Ok(false);
        }
        // The same classified, retried question as any other: a connection
        // dropped under this check is the server's, not git's.
        let names: Vec<&str> = updates.iter().map(|u| u.refname.as_str()).collect();
        let held: std::collections::BTreeMap<String, String> =
            self.ls_remote(remote, &names)?.into_iter().collect();
        Ok(updates
            .iter()
            .all(|u| held.get(&u.refname).map(String::as_str) == u.new.as_deref()))
    }
}

/// The pre-push hook's report inside git's stderr, one line each (its
/// violation and fix lines keep their indentation; its own `hint: ` prefix
/// is dropped, the caller's hint says it), without git's closing error.
fn hook_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("error: failed to push"))
        .map(|l| l.strip_prefix("hint: ").unwrap_or(l).trim_end().to_string())
        .collect()
}

/// git's words for "another process holds or just moved this ref".
fn is_lock_contention(stderr: &str) -> bool {
    stderr.contains("cannot lock ref")
        || (stderr.contains("Unable to create") && stderr.contains(".lock"))
        || stderr.contains("but expected")
}

/// Why a push failed. Porcelain lines are `<flag>\t<from>:<to>\t<summary>
/// (<reason>)`, `!` marking a rejected ref. A ref that moved under us (a
/// lease that no longer holds, a lock lost to a concurrent push) is a lost
/// race, for the caller to report or retry. The remote refusing on policy
/// (a hook, protection) is not a race: retrying cannot help. No rejected
/// ref at all means our own pre-push hook (a guard) refused.
fn classify_push_failure(remote: &str, stdout: &str, stderr: &str) -> Result<PushOutcome> {
    const RACE: &[&str] = &[
        "(stale info)",
        "(fetch first)",
        "(non-fast-forward)",
        "(failed to update ref)",
        "(failed to lock)",
        "cannot lock ref",
        "incorrect old value",
    ];
    let rejected: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with('!'))
        .map(str::to_string)
        .collect();
    // The remote's own compare-and-swap lost to a concurrent push: its
    // transaction fails ("atomic transaction failed") and it says why.
    let remote_lost_lock = stderr.lines().any(|l| {
        l.starts_with("remote: ")
            && (l.contains("cannot lock ref")
                || l.contains("but expected")
                || l.contains("reference already exists"))
    });
    if remote_lost_lock
        || rejected.iter().any(|l| RACE.iter().any(|r| l.contains(r)))
        || (rejected.is_empty() && RACE.iter().any(|r| stderr.contains(r)))
    {
        return Ok(PushOutcome::Rejected(rejected));
    }
    let remote_says: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("remote: "))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !rejected.is_empty() {
        let mut err = Error::new(
            Code::PushDenied,
            format!(
                "the remote '{remote}' refused the push: {}",
                rejected.join("; ")
            ),
        );
        for line in remote_says {
            err = err.hint(format!("remote: {line}"));
        }
        return Err(
            err.hint("nothing was published; ask whoever runs the remote, retrying will not help")
        );
    }
    if stderr.contains("failed to push some refs") && !stderr.contains("fatal:") {
        let mut err = Error::new(
            Code::GuardFailed,
            format!("the pre-push hook refused the push to '{remote}'; nothing was published"),
        )
        .hint("what it said:");
        for line in hook_lines(stderr) {
            err = err.hint(line);
        }
        return Err(err.hint("fix what the guard names, then run the command again"));
    }
    Err(super::failure::failure_error(
        "push to",
        remote,
        Some(128),
        stdout,
        stderr,
    ))
}

/// The arguments of one atomic, porcelain push of `updates` (each with
/// its lease, but for a ref the push creates) and `extra_refspecs`.
fn push_args(remote: &str, updates: &[PushUpdate], extra_refspecs: &[String]) -> Vec<String> {
    let mut args: Vec<String> = vec!["push".into(), "--atomic".into(), "--porcelain".into()];
    // Record-only pushes skip hooks (a plan record's tree holds PLAN.md,
    // which is data there, not a committed plan file). A push that also
    // carries the user's refspecs (`lead push`) runs the pre-push hook,
    // so the guards still check what goes to main.
    if extra_refspecs.is_empty() {
        args.push("--no-verify".into());
    }
    for u in updates {
        // A ref this push creates goes without a lease, as a plain
        // (unforced) update: git refuses it unless the remote's value is
        // absent, the same, or an ancestor of the new one (nothing is
        // lost), and the remote's ref transaction checks the value it
        // advertised. git matches every ref against every lease, so
        // 2,000 new message refs with a lease each took minutes of
        // `git push` alone.
        if u.expected.is_none() && u.new.is_some() {
            continue;
        }
        let expected = u.expected.clone().unwrap_or_default();
        args.push(format!("--force-with-lease={}:{}", u.refname, expected));
    }
    args.push(remote.into());
    for u in updates {
        match &u.new {
            Some(new) => args.push(format!("{new}:{}", u.refname)),
            None => args.push(format!(":{}", u.refname)),
        }
    }
    args.extend(extra_refspecs.iter().cloned());
    args
}
