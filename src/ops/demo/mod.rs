//! `git swarm demo`: a complete swarm exercise on a throwaway repository with
//! a local bare remote and two clones, narrated step by step. Every step runs
//! the real `git swarm` binary, as a user would.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;

pub(super) struct Demo<'a> {
    exe: &'a Path,
    root: PathBuf,
    log: &'a mut dyn Write,
    steps: Vec<Step>,
    /// What the scripted models of `--agents` had the agents run, in order.
    said: Vec<String>,
}

/// One command the demo ran, as a user would type it.
#[derive(Debug, Serialize)]
pub struct Step {
    /// The directory it ran in, relative to the demo root.
    pub dir: String,
    /// The command line, quoted as a shell reads it back.
    pub command: String,
    pub args: Vec<String>,
    pub exit: i32,
}

/// What `demo` did: its `Serialize` is the JSON.
#[derive(Debug, Serialize)]
pub struct Demoed {
    pub ok: bool,
    pub steps: Vec<Step>,
    /// Where the throwaway repositories are, with `--keep`.
    pub kept: Option<String>,
}

impl Demo<'_> {
    pub(super) fn say(&mut self, text: &str) {
        let _ = writeln!(self.log, "\n== {text}");
    }

    /// `program` (this very binary for `git-swarm`) with the demo's
    /// environment: this binary first on PATH (hooks run `git swarm …`),
    /// the user's git config and identity kept out so signing or hooksPath
    /// cannot interfere.
    pub(super) fn command(&self, program: &str) -> Command {
        let mut cmd = if program == "git-swarm" {
            Command::new(self.exe)
        } else {
            Command::new(program)
        };
        let path = format!(
            "{}:{}",
            self.exe
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_SWARM_AS")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_AUTHOR_DATE")
            .env_remove("GIT_COMMITTER_DATE")
            .env("GIT_AUTHOR_NAME", "demo")
            .env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
            .env("GIT_COMMITTER_NAME", "demo")
            .env("GIT_COMMITTER_EMAIL", "demo@example.invalid");
        cmd
    }

    /// The shared bare remote `remote.git` and `who`'s clone of it, with a
    /// first commit (a README titled `title`) pushed to main, and
    /// `swarm.as` set to `who`.
    pub(super) fn remote_and_first_clone(&mut self, who: &str, title: &str) -> Result<()> {
        self.run(
            ".",
            "git",
            &[
                "init",
                "--quiet",
                "--bare",
                "--initial-branch=main",
                "remote.git",
            ],
            0,
        )?;
        self.run(".", "git", &["clone", "--quiet", "remote.git", who], 0)?;
        let first = format!("echo '# {title}' > README.md && git add README.md && git commit --quiet -m 'initial commit' && git push --quiet origin HEAD:main");
        self.run(who, "sh", &["-c", &first], 0)?;
        self.run(who, "git", &["config", "swarm.as", who], 0)?;
        Ok(())
    }

    /// Run a command in `dir` (relative to the demo root), show it and its output.
    pub(super) fn run(
        &mut self,
        dir: &str,
        program: &str,
        args: &[&str],
        expect: i32,
    ) -> Result<String> {
        let cwd = self.root.join(dir);
        // Quoted as a shell needs it, so a narrated line can be pasted as shown.
        let shown = std::iter::once(program)
            .chain(args.iter().copied())
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(self.log, "[{dir}]$ {shown}");
        let out = self
            .command(program)
            .args(args)
            .current_dir(&cwd)
            .output()
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot run {program}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for line in stdout.lines().chain(stderr.lines()) {
            let _ = writeln!(self.log, "    {line}");
        }
        let code = out.status.code().unwrap_or(-1);
        if code != expect {
            return Err(Error::new(
                Code::DemoFailed,
                format!("demo step `{shown}` in {dir} exited {code}, expected {expect}"),
            )
            .hint(format!(
                "the throwaway repository is kept at {}",
                self.root.display()
            )));
        }
        let mut argv = vec![program.to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        self.steps.push(Step {
            dir: dir.to_string(),
            command: shown,
            args: argv,
            exit: code,
        });
        Ok(stdout)
    }

    pub(super) fn swarm(&mut self, dir: &str, args: &[&str]) -> Result<String> {
        self.run(dir, "git-swarm", args, 0)
    }
}

mod agents;
pub mod drill;
mod forecast;
pub mod model;

pub use drill::claude;
mod later;
mod story;

/// The lanes' worktrees in alice's clone.
const API: &str = "alice/_swarm-worktrees/api";
const UI: &str = "alice/_swarm-worktrees/ui";
const DOCS: &str = "alice/_swarm-worktrees/docs";

/// `arg` as a POSIX shell reads it back: bare when it holds only characters
/// no shell treats specially, else in single quotes (a `'` inside becomes `'\''`).
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./_-".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The demo: the story of a swarm, or with `agents` the method's drill
/// with the real Claude Code CLI.
pub fn run(exe: &Path, keep: bool, agents: bool, log: &mut dyn Write) -> Result<Demoed> {
    let base = std::env::temp_dir().join(format!(
        "git-swarm-demo-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    ));
    std::fs::create_dir_all(&base).map_err(|e| io_error(&base, e))?;
    let mut demo = Demo {
        exe,
        root: base.clone(),
        log,
        steps: Vec::new(),
        said: Vec::new(),
    };
    let result = if agents {
        drill::drill(&mut demo)
    } else {
        script(&mut demo)
    };
    let steps = std::mem::take(&mut demo.steps);
    // A failure before the first step (demo --agents without its host)
    // leaves no empty directory behind.
    let empty = std::fs::read_dir(&base).is_ok_and(|mut d| d.next().is_none());
    if (result.is_ok() && !keep) || empty {
        let _ = std::fs::remove_dir_all(&base);
    }
    result?;
    Ok(Demoed {
        ok: true,
        steps,
        kept: keep.then(|| base.display().to_string()),
    })
}

/// The story, scene by scene, each one a user would run in this order.
fn script(d: &mut Demo<'_>) -> Result<()> {
    story::setup(d)?;
    story::guards(d)?;
    later::reservations(d)?;
    forecast::forecast(d)?;
    story::handoff(d)?;
    later::leadership(d)?;
    later::messages(d)?;
    later::tasks(d)?;
    agents::agents(d)
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoting_keeps_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("plan"), "plan");
        assert_eq!(shell_quote("HEAD:refs/heads/main"), "HEAD:refs/heads/main");
        assert_eq!(shell_quote("Online shop"), "'Online shop'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }
}
