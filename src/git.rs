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
mod remote_reads;
mod revs;
pub mod sign;
mod status;
mod three_way;
pub mod version;
mod worktrees;
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
