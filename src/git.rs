//! The one place that runs the `git` binary: pushes and fetches (gix has no
//! push), worktree add/remove, `merge-tree`, and the few porcelain queries
//! whose exact semantics we want to be git's own. Every call goes through
//! [`Git::run`], which keeps stderr and turns a non-zero exit into an error
//! (exit 4) naming the command.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{Code, Error, Result};

pub mod failure;
mod merge;
pub mod net;
mod push;
pub mod sign;
pub mod version;
pub use failure::NetFailure;
pub use merge::MergeReport;
pub use net::{NetTally, RemoteOps};
pub use push::{PushOutcome, PushUpdate};
pub use version::parse_version;

/// `git`, as every run of it starts: in the C locale, so that its messages
/// are the English ones [`failure::TABLE`] reads, whatever the user's
/// language (git's output that is data, refs and paths, does not change).
pub(crate) fn git_command() -> Command {
    let mut cmd = Command::new("git");
    cmd.env("LC_ALL", "C")
        .env("LANG", "C")
        .env_remove("LANGUAGE");
    cmd
}

#[derive(Debug, Clone)]
pub struct Git {
    cwd: PathBuf,
    /// The command's remote operations, shared by every `Git` derived with
    /// [`Git::at`].
    net: std::sync::Arc<net::NetTally>,
}

/// The outcome of an in-memory merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeTree {
    Clean {
        tree: String,
    },
    /// The conflicting paths, sorted.
    Conflicts(Vec<String>),
}

impl Git {
    /// Git in `cwd`, with a tally of its own.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Git::counted(cwd, std::sync::Arc::default())
    }

    /// Git in `cwd` that counts its remote operations in `net`.
    pub fn counted(cwd: impl Into<PathBuf>, net: std::sync::Arc<net::NetTally>) -> Self {
        Git {
            cwd: cwd.into(),
            net,
        }
    }

    /// Git in another directory (a worktree, a clone) of the same command:
    /// its remote operations count in this one's tally.
    pub fn at(&self, cwd: impl Into<PathBuf>) -> Self {
        Git::counted(cwd, self.net.clone())
    }

    /// The command's remote operations so far (this `Git` and those it
    /// derived).
    pub fn net(&self) -> &net::NetTally {
        &self.net
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = git_command();
        cmd.current_dir(&self.cwd).args(args);
        cmd
    }

    /// Run git and return its output whatever the exit status.
    pub fn output<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.output_env(args, &[])
    }

    /// [`Git::output`] with extra environment variables.
    fn output_env<I, S>(&self, args: I, env: &[(&str, &OsStr)]) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().map_err(|e| {
            Error::new(Code::GitFailed, format!("could not run git: {e}"))
                .hint("is git installed and on PATH?")
        })
    }

    /// Run git; a non-zero exit is an error carrying git's stderr.
    pub fn run<I, S>(&self, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_env(args, &[])
    }

    /// Run git with extra environment variables (e.g. `GIT_INDEX_FILE`, so
    /// that a snapshot is staged in a temporary index, never the real one).
    pub fn run_env<I, S>(&self, args: I, env: &[(&str, &OsStr)]) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run_raw(args, env)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The bytes git prints (e.g. `cat-file blob`), exactly; a non-zero exit is an error.
    pub fn run_bytes<I, S>(&self, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_raw(args, &[])
    }

    /// The `run*` helpers: a non-zero exit is an error carrying git's
    /// stderr; stdout as bytes.
    fn run_raw<I, S>(&self, args: I, env: &[(&str, &OsStr)]) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let out = self.output_env(&args, env)?;
        if !out.status.success() {
            return Err(failed(&args, &out));
        }
        Ok(out.stdout)
    }

    /// Run git with `input` on stdin.
    pub fn run_with_input<I, S>(&self, args: I, input: &[u8]) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_env_input(args, &[], input)
    }

    /// Run git with `env` set and `input` on stdin.
    pub fn run_env_input<I, S>(
        &self,
        args: I,
        env: &[(&str, &OsStr)],
        input: &[u8],
    ) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::io::Write;
        let args: Vec<std::ffi::OsString> =
            args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut child = self
            .command(&args)
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::new(Code::GitFailed, format!("could not run git: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input)
                .map_err(|e| Error::new(Code::GitFailed, format!("could not write to git: {e}")))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::new(Code::GitFailed, format!("git did not finish: {e}")))?;
        if !out.status.success() {
            return Err(failed(&args, &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `git config --get KEY`, None when unset.
    pub fn config_get(&self, key: &str) -> Result<Option<String>> {
        let out = self.output(["config", "--get", key])?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(failed(&["config", "--get", key], &out)),
        }
    }

    pub fn config_get_all(&self, key: &str) -> Result<Vec<String>> {
        let out = self.output(["config", "--get-all", key])?;
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect()),
            Some(1) => Ok(Vec::new()),
            _ => Err(failed(&["config", "--get-all", key], &out)),
        }
    }

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

/// One entry of `git status --porcelain=v1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// The index and worktree status letters (`??` untracked).
    pub xy: String,
    pub path: String,
    /// The source path of a rename or copy.
    pub from: Option<String>,
}

fn failed<S: AsRef<OsStr>>(args: &[S], out: &Output) -> Error {
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let err = Error::new(
        Code::GitFailed,
        format!(
            "`git {}` failed ({}): {}",
            shown.join(" "),
            out.status
                .code()
                .map_or("killed".to_string(), |c| format!("exit {c}")),
            stderr.trim()
        ),
    );
    // A git killed by a signal may leave children still finishing what it
    // began (`worktree add -b` runs `git branch`): say so, for the callers
    // that must not judge what it made until those are gone.
    match std::os::unix::process::ExitStatusExt::signal(&out.status) {
        Some(sig) => err.with_detail(serde_json::json!({ "killed_by_signal": sig })),
        None => err,
    }
}

/// Whether `err` is a git run that a signal ended (see [`failed`]).
pub fn killed_by_signal(err: &Error) -> bool {
    err.code == Code::GitFailed
        && err
            .detail
            .as_ref()
            .is_some_and(|d| d.get("killed_by_signal").is_some())
}
