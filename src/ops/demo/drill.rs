//! `git swarm demo --agents`: the method's drill with the real Claude Code
//! CLI, watched as it runs. A bare remote, two clones (alice, bob), a plan
//! of four tasks (t3 depends on t1), a pool of four accounts (two declared
//! on each clone), each talking to its own scripted model on 127.0.0.1, and
//! a `git swarm run --lead` runner on each clone. t1's agent hands off and a
//! successor on another account accepts the packet and finishes; t2's agent
//! is killed by SIGKILL and its lane resumed; alice's runner (the
//! coordinator's) is killed by SIGKILL and bob's takes over and finishes the
//! plan. No key is typed, no real model is called.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::{self, Model};
use super::Demo;
use crate::error::{Code, Error, Result};

const TASKS: [&str; 4] = ["t1", "t2", "t3", "t4"];

/// The Claude Code CLI: `GIT_SWARM_CLAUDE`, else `claude` on PATH.
pub fn claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GIT_SWARM_CLAUDE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("claude"))
        .find(|p| crate::integrations::capacity::source::is_executable(p))
}

/// The task a brief is about.
pub fn task_of(brief: &str) -> String {
    for pat in ["Your task is ", "taking over task "] {
        if let Some(rest) = brief.split(pat).nth(1) {
            return rest
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or("")
                .to_string();
        }
    }
    String::new()
}

/// Commit the task's work, land it on main (rebasing on the other lanes'
/// pushes) and mark the task done.
pub fn finish(task: &str) -> String {
    format!(
        "echo {task} > {task}.txt && git add {task}.txt && git commit -qm '{task}' && \
         for i in $(seq 30); do git pull -q --rebase origin main && git push -q origin HEAD:main && break; \
         git rebase --abort 2>/dev/null; sleep 0.5; done && git swarm task done"
    )
}

/// `pool add <name> --host claude` for an account whose Claude Code talks
/// to the Messages API at `url` with its own config dir `dir`: the drill's
/// and the live tests' accounts.
pub fn claude_account(name: &str, url: &str, dir: &std::path::Path) -> Vec<String> {
    [
        "pool",
        "add",
        name,
        "--host",
        "claude",
        "--env",
        &format!("ANTHROPIC_BASE_URL={url}"),
        "--env",
        &format!("CLAUDE_CONFIG_DIR={}", dir.display()),
    ]
    .map(String::from)
    .to_vec()
}

/// What the scripted model has an agent do: t1's first agent hands off,
/// t2's first agent hangs (to be killed; its pid in `marks/t2.pid`) until
/// `marks/t2.killed` exists, every other one finishes.
pub fn script(brief: &str, marks: &Path) -> String {
    let task = task_of(brief);
    if let Some(rest) = brief.split("First run `git swarm accept ").nth(1) {
        let id = rest.split('`').next().unwrap_or("");
        return format!("git swarm accept {id} && {}", finish(&task));
    }
    if brief.contains("Your task is t1:") {
        return "git swarm handoff --reason capacity_critical --next 'finish t1'".into();
    }
    if brief.contains("Your task is t2:") && !marks.join("t2.killed").exists() {
        return format!("echo $$ > {}/t2.pid && exec sleep 600", marks.display());
    }
    finish(&task)
}

/// A runner in the background, its output in a file of the demo root.
struct Runner {
    who: &'static str,
    child: Child,
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kill(pid: i32, signal: i32) {
    // SAFETY: a signal to a process this demo started (or one of its agents).
    unsafe {
        libc::kill(pid, signal);
    }
}

impl Demo<'_> {
    fn runner(&mut self, who: &'static str, env: &[(&str, String)]) -> Result<Runner> {
        let log = self.root.join(format!("run-{who}.log"));
        let out = std::fs::File::create(&log).map_err(|e| crate::fsutil::io_error(&log, e))?;
        let err = out
            .try_clone()
            .map_err(|e| crate::fsutil::io_error(&log, e))?;
        let args = ["run", "--plan", "drill", "--lead", "--max-lanes", "2"];
        let _ = writeln!(
            self.log,
            "[{who}]$ git-swarm {} > run-{who}.log 2>&1 &",
            args.join(" ")
        );
        let mut cmd = self.command("git-swarm");
        cmd.args(args)
            .current_dir(self.root.join(who))
            .env("GIT_SWARM_MACHINE", format!("{who}-box"))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot start the runner: {e}")))?;
        Ok(Runner { who, child })
    }

    /// The JSON a read-only command prints (not narrated).
    fn peek(&self, dir: &str, args: &[&str]) -> Value {
        self.command("git-swarm")
            .args(args)
            .current_dir(self.root.join(dir))
            .stdin(Stdio::null())
            .output()
            .ok()
            .and_then(|o| serde_json::from_slice(&o.stdout).ok())
            .unwrap_or(Value::Null)
    }

    /// Wait (narrating what the models chose meanwhile) until `done` holds.
    fn until(
        &mut self,
        what: &str,
        models: &[Model],
        mut done: impl FnMut(&Self) -> bool,
    ) -> Result<()> {
        let start = Instant::now();
        loop {
            for m in models {
                let new: Vec<String> = m
                    .said
                    .lock()
                    .map(|mut s| s.drain(..).collect())
                    .unwrap_or_default();
                for line in new {
                    let _ = writeln!(self.log, "    model {line}");
                    self.said.push(line);
                }
            }
            if done(self) {
                return Ok(());
            }
            if start.elapsed() > Duration::from_secs(240) {
                return Err(Error::new(
                    Code::DemoFailed,
                    format!("demo --agents: waited 240 s for {what}"),
                )
                .hint(format!(
                    "the runners' output is in {}/run-alice.log and run-bob.log",
                    self.root.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

pub(super) fn drill(d: &mut Demo<'_>) -> Result<()> {
    let Some(claude) = claude() else {
        return Err(Error::new(
            Code::AgentHostMissing,
            "demo --agents needs the Claude Code CLI: no `claude` on PATH and GIT_SWARM_CLAUDE is not set; nothing was run",
        )
        .hint("install it (npm install -g @anthropic-ai/claude-code) or name it with GIT_SWARM_CLAUDE=/path/to/claude; `git swarm demo` runs without it"));
    };
    let marks = d.root.join("marks");
    std::fs::create_dir_all(&marks).map_err(|e| crate::fsutil::io_error(&marks, e))?;

    d.say("A shared bare remote and two machines: alice's clone and bob's");
    d.remote_and_first_clone("alice", "drill")?;
    d.swarm("alice", &["init"])?;
    d.run(".", "git", &["clone", "--quiet", "remote.git", "bob"], 0)?;
    d.run("bob", "git", &["config", "swarm.as", "bob"], 0)?;
    d.swarm("bob", &["init"])?;

    d.say("A plan of four tasks, t3 after t1");
    d.swarm("alice", &["plan", "new", "drill", "--title", "The drill"])?;
    for t in TASKS {
        let mut args = vec!["task", "new", t, "--plan", "drill", "--title", t];
        if t == "t3" {
            args.extend(["--depends-on", "t1"]);
        }
        d.swarm("alice", &args)?;
    }

    let m = marks.clone();
    let models = model::serve(4, Arc::new(move |brief: &str| script(brief, &m)))?;
    d.say("The developer's pool: four Claude Code accounts, two declared on each machine, each with its own config dir (here each talks to a scripted model on 127.0.0.1)");
    let host = format!("{} --allowedTools Bash", claude.display());
    for (i, m) in models.iter().enumerate() {
        let name = format!("w{}", i + 1);
        let dir = d.root.join(format!("claude-{name}"));
        std::fs::create_dir_all(&dir).map_err(|e| crate::fsutil::io_error(&dir, e))?;
        let who = if i < 2 { "alice" } else { "bob" };
        let args = claude_account(&name, &m.url, &dir);
        d.swarm(who, &args.iter().map(String::as_str).collect::<Vec<_>>())?;
    }
    for who in ["alice", "bob"] {
        d.run(
            who,
            "git",
            &["config", "swarm.host.claude.command", &host],
            0,
        )?;
        d.run(
            who,
            "git",
            &["config", "swarm.protect", "refs/heads/release"],
            0,
        )?;
        for k in ["swarm.poolLease", "swarm.taskLease"] {
            d.run(who, "git", &["config", k, "15s"], 0)?;
        }
    }
    d.say("alice leads, bob is her successor");
    d.swarm(
        "alice",
        &[
            "lead",
            "claim",
            "--plan",
            "drill",
            "--succession",
            "bob",
            "--lease",
            "15s",
        ],
    )?;
    for who in ["alice", "bob"] {
        d.swarm(who, &["sync"])?;
    }

    d.say("A runner on each machine: each ready task gets an account and a Claude Code session in its lane's worktree");
    let env = [
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-demo-scripted-model".to_string(),
        ),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
        ("DISABLE_TELEMETRY", "1".to_string()),
        ("DISABLE_AUTOUPDATER", "1".to_string()),
        ("GIT_SWARM_RUN_TICK_MS", "300".to_string()),
    ];
    let mut alice = d.runner("alice", &env)?;
    let bob = d.runner("bob", &env)?;

    let t2 = marks.join("t2.pid");
    d.until("t2's agent to start", &models, |_| t2.exists())?;
    let shell: i32 = std::fs::read_to_string(&t2)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let pool = d.peek("bob", &["pool", "list", "--json"]);
    let agent = pool["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|x| x["lease"]["lane"] == "t2")
        .and_then(|x| x["lease"]["agent"]["pid"].as_i64())
        .unwrap_or(0) as i32;
    d.say(&format!(
        "t2's agent hangs: kill -9 {agent} (its Claude Code process) and {shell} (its Bash tool)"
    ));
    std::fs::write(marks.join("t2.killed"), "").map_err(|e| crate::fsutil::io_error(&marks, e))?;
    for pid in [agent, shell] {
        if pid > 0 {
            kill(pid, libc::SIGKILL);
        }
    }
    d.until("t2's lane to resume", &models, |d| {
        d.said.iter().any(|s| s.contains("t2.txt"))
    })?;
    d.say(&format!(
        "The coordinator's machine goes away: kill -9 {} (alice's runner)",
        alice.child.id()
    ));
    kill(alice.child.id() as i32, libc::SIGKILL);
    let _ = alice.child.wait();
    d.until("bob to take the lead", &models, |d| {
        d.peek("bob", &["lead", "status", "--plan", "drill", "--json"])["leader"] == "bob"
    })?;
    d.until("every task done", &models, |d| {
        TASKS.iter().all(|t| {
            d.peek("bob", &["task", "show", t, "--plan", "drill", "--json"])["task"]["status"]
                == "done"
        })
    })?;
    d.until("every account free", &models, |d| {
        d.peek("bob", &["pool", "list", "--json"])["accounts"]
            .as_array()
            // A lease that lapsed with its runner (alice's, killed) lists
            // the account free; the record keeps its last agent until reused.
            .is_some_and(|a| a.iter().all(|x| x["state"] != "leased"))
    })?;
    let mut bob = bob;
    d.say(&format!("{}'s runner stops cleanly on SIGTERM", bob.who));
    kill(bob.child.id() as i32, libc::SIGTERM);
    let _ = bob.child.wait();
    drop(alice);
    drop(bob);

    d.say("What the records say: every task done, bob leads at a higher epoch, t1's packet accepted once, every account free");
    d.swarm("bob", &["sync"])?;
    d.swarm("bob", &["task", "list", "--plan", "drill"])?;
    d.swarm("bob", &["lead", "status", "--plan", "drill"])?;
    d.swarm("bob", &["packets", "--plan", "t1"])?;
    d.swarm("bob", &["pool", "list"])?;
    Ok(())
}
