//! `git swarm demo`: a complete swarm exercise on a throwaway repository with
//! a local bare remote and two clones, narrated step by step. Every step runs
//! the real `git swarm` binary, as a user would.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::output::Output;

struct Demo<'a> {
    exe: &'a Path,
    root: PathBuf,
    log: &'a mut dyn Write,
    steps: Vec<serde_json::Value>,
}

impl Demo<'_> {
    fn say(&mut self, text: &str) {
        let _ = writeln!(self.log, "\n== {text}");
    }

    /// Run a command in `dir` (relative to the demo root), show it and its output.
    fn run(&mut self, dir: &str, program: &str, args: &[&str], expect: i32) -> Result<String> {
        let cwd = self.root.join(dir);
        let shown = format!("{program} {}", args.join(" "));
        let _ = writeln!(self.log, "[{dir}]$ {shown}");
        let mut cmd = if program == "git-swarm" {
            Command::new(self.exe)
        } else {
            Command::new(program)
        };
        let out = cmd
            .args(args)
            .current_dir(&cwd)
            .env("GIT_AUTHOR_NAME", "demo")
            .env("GIT_AUTHOR_EMAIL", "demo@example.invalid")
            .env("GIT_COMMITTER_NAME", "demo")
            .env("GIT_COMMITTER_EMAIL", "demo@example.invalid")
            .output()
            .map_err(|e| Error::env("IO_FAILED", format!("cannot run {program}: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for line in stdout.lines().chain(stderr.lines()) {
            let _ = writeln!(self.log, "    {line}");
        }
        let code = out.status.code().unwrap_or(-1);
        if code != expect {
            return Err(Error::env(
                "DEMO_FAILED",
                format!("demo step `{shown}` in {dir} exited {code}, expected {expect}"),
            )
            .hint(format!(
                "the throwaway repository is kept at {}",
                self.root.display()
            )));
        }
        self.steps
            .push(serde_json::json!({ "dir": dir, "command": shown, "exit": code }));
        Ok(stdout)
    }

    fn swarm(&mut self, dir: &str, args: &[&str]) -> Result<String> {
        self.run(dir, "git-swarm", args, 0)
    }
}

pub fn run(exe: &Path, keep: bool, log: &mut dyn Write) -> Result<Output> {
    let base = std::env::temp_dir().join(format!(
        "git-swarm-demo-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    ));
    std::fs::create_dir_all(&base).map_err(|e| crate::plan::io_error(&base, e))?;
    let mut demo = Demo {
        exe,
        root: base.clone(),
        log,
        steps: Vec::new(),
    };
    let result = script(&mut demo);
    let steps = std::mem::take(&mut demo.steps);
    if result.is_ok() && !keep {
        let _ = std::fs::remove_dir_all(&base);
    }
    result?;
    let kept = if keep {
        Some(base.display().to_string())
    } else {
        None
    };
    let mut text = format!("demo complete: {} steps ran as expected\n", steps.len());
    if let Some(k) = &kept {
        text.push_str(&format!("the repositories are kept in {k}\n"));
    }
    Ok(Output::new(
        serde_json::json!({ "ok": true, "steps": steps, "kept": kept }),
        text,
    ))
}

fn script(d: &mut Demo<'_>) -> Result<()> {
    d.say("A shared bare remote and a first clone (machine A)");
    d.run(
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
    d.run(".", "git", &["clone", "--quiet", "remote.git", "alice"], 0)?;
    d.run(
        "alice",
        "git",
        &["commit", "--quiet", "--allow-empty", "-m", "initial commit"],
        0,
    )?;
    d.run(
        "alice",
        "git",
        &["push", "--quiet", "origin", "HEAD:main"],
        0,
    )?;
    d.run("alice", "git", &["config", "swarm.as", "alice"], 0)?;
    d.swarm("alice", &["init"])?;
    d.say("init is idempotent: a second run changes nothing");
    d.swarm("alice", &["init"])?;

    d.say("The plan lives in refs, not in a branch");
    d.swarm(
        "alice",
        &["plan", "new", "auth", "--title", "Token auth for the API"],
    )?;
    d.swarm(
        "alice",
        &[
            "plan",
            "new",
            "auth-tests",
            "--parent",
            "auth",
            "--title",
            "Tests for token auth",
        ],
    )?;
    d.swarm("alice", &["plan", "checkout", "auth"])?;
    d.run(
        "alice",
        "sh",
        &[
            "-c",
            "printf '\\n## Progress\\n- [x] design agreed\\n' >> PLAN.md",
        ],
        0,
    )?;
    d.swarm("alice", &["plan", "save", "auth", "-m", "design agreed"])?;
    d.run("alice", "git", &["status", "--short"], 0)?;
    d.run("alice", "git", &["for-each-ref", "refs/swarm"], 0)?;
    d.swarm("alice", &["sync"])?;

    d.say("Machine B clones the remote and picks up the plan");
    d.run(".", "git", &["clone", "--quiet", "remote.git", "bob"], 0)?;
    d.run("bob", "git", &["config", "swarm.as", "bob"], 0)?;
    d.swarm("bob", &["init"])?;
    d.swarm("bob", &["sync"])?;
    d.swarm("bob", &["plan", "checkout", "auth"])?;
    d.run("bob", "grep", &["design agreed", "PLAN.md"], 0)?;
    d.swarm("bob", &["status"])?;
    d.swarm("bob", &["plan", "log", "auth"])?;

    d.say("Names are checked before anything is written");
    d.run("bob", "git-swarm", &["plan", "new", "Bad/Name"], 2)?;
    Ok(())
}
