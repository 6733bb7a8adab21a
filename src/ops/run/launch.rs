//! Starting agents: a lane (`lane new --task`) on each ready task there is
//! room and an account for, after the orphans' recovery, and the host
//! launched in the lane's worktree in a process group of its own, killed
//! with its runner, its stream read on a thread of its own.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use serde_json::Value;

use super::{brief, locks, Agent, Msg, Runner};
use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::integrations::hosts::{self, Host, Summary};
use crate::records::pool::Account;

impl Runner<'_> {
    /// Launch on every ready task there is room and an account for.
    pub(super) fn fill(&mut self) -> Result<usize> {
        if self.agents.len() >= self.opts.max_lanes {
            return Ok(0);
        }
        if self.budget_refuses().is_some() {
            return Ok(0);
        }
        let mut launched = self.recover_orphans()?;
        if self.agents.len() >= self.opts.max_lanes {
            return Ok(launched);
        }
        let plan = self.opts.plan.clone();
        let ready = self.swarm(
            &self.root.clone(),
            None,
            &["task", "ready", "--plan", &plan],
        )?;
        let tasks: Vec<Value> = ready["tasks"].as_array().cloned().unwrap_or_default();
        for t in tasks {
            if self.agents.len() >= self.opts.max_lanes {
                break;
            }
            let id = t["id"].as_str().unwrap_or("").to_string();
            if id.is_empty() || !t["holder"].is_null() || self.blocked.contains(&id) {
                continue;
            }
            if self.agents.values().any(|a| a.task == id) {
                continue;
            }
            let lane = id.clone();
            let Some((account, epoch)) = self.lease(&id, &lane, None)? else {
                self.step(
                    "wait",
                    None,
                    None,
                    "no free account in the pool: waiting for one".into(),
                );
                break;
            };
            let started = self.swarm(
                &self.root.clone(),
                Some(&account.address),
                &["lane", "new", &lane, "--task", &id, "--plan", &plan],
            );
            let lane_json = match started {
                Ok(v) => v,
                Err(e) => {
                    // Claimed by someone else meanwhile, or refused: give the account back.
                    self.free(&account.account, epoch);
                    self.step(
                        "skip",
                        Some(&lane),
                        Some(&account.account),
                        format!("task {id} not started: {e}"),
                    );
                    continue;
                }
            };
            let worktree = PathBuf::from(lane_json["path"].as_str().unwrap_or(""));
            let text = brief::fresh(&plan, &t, &lane, &account.address);
            self.launch(account, epoch, &id, &lane, &worktree, &text, None, None)?;
            launched += 1;
        }
        Ok(launched)
    }

    /// Launches the host on account `account` in the lane's worktree (for
    /// `task`, or as a successor to accept `packet`): stale locks cleared,
    /// the process started in a group of its own, its stream read on a
    /// thread, the agent kept and its pid recorded at once.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch(
        &mut self,
        account: Account,
        epoch: u64,
        task: &str,
        lane: &str,
        worktree: &Path,
        brief: &str,
        packet: Option<(String, String, u64)>,
        resume: Option<&str>,
    ) -> Result<()> {
        let host = Host::parse(account.host.as_str()).expect("a launchable host");
        let base = self
            .ctx
            .store
            .config(&host.setting())
            .unwrap_or_else(|| host.as_str().to_string());
        let argv = hosts::command(host, &base, brief, resume)?;
        self.clear_locks(worktree, lane, &account.account);
        let (id, log) = self.stderr_log(lane);
        let mut cmd = agent_command(&argv, worktree, &account, log);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                self.free(&account.account, epoch);
                return Err(cannot_launch(host, &argv[0], lane, e));
            }
        };
        read_stream(
            self.tx.clone(),
            host,
            id,
            child.stdout.take().expect("piped"),
        );
        let how = match &packet {
            Some((p, _, _)) => format!("successor to accept packet {p}"),
            None => format!("task {task}"),
        };
        self.step(
            "launch",
            Some(lane),
            Some(&account.account),
            format!(
                "launched {} on account {} (as {}) for {how}, pid {}",
                host.as_str(),
                account.account,
                account.address,
                child.id()
            ),
        );
        self.ran.launched += 1;
        self.agents.insert(
            id,
            Agent {
                host,
                epoch,
                task: task.into(),
                lane: lane.into(),
                worktree: worktree.to_path_buf(),
                started: rfc3339(self.ctx.store.clock.now()),
                child,
                summary: Summary::default(),
                renewed: Instant::now(),
                eof: false,
                packet,
                account,
            },
        );
        // Record the pid at once.
        self.renew_one(id);
        Ok(())
    }

    /// Clears the stale locks a lost agent left in the worktree, and says
    /// what it cleared or left in place for a process still working there.
    fn clear_locks(&mut self, worktree: &Path, lane: &str, account: &str) {
        match locks::clear_stale(worktree) {
            locks::Locks::None => {}
            locks::Locks::Cleared(names) => self.step(
                "cleared",
                Some(lane),
                Some(account),
                format!(
                    "lane {lane}: removed stale {} left by a lost agent",
                    names.join(", ")
                ),
            ),
            locks::Locks::Locked(names, pid) => self.step(
                "locked",
                Some(lane),
                Some(account),
                format!(
                    "lane {lane}: {} left in place: process {pid} still works in its worktree",
                    names.join(", ")
                ),
            ),
        }
    }

    /// The next agent's id, and its stderr log under `swarm/run/` (or
    /// nowhere when the file cannot be created).
    fn stderr_log(&mut self, lane: &str) -> (usize, Stdio) {
        let log_dir = self.ctx.store.common_dir().join("swarm/run");
        let _ = std::fs::create_dir_all(&log_dir);
        let id = self.next_id;
        self.next_id += 1;
        let log = std::fs::File::create(log_dir.join(format!("{lane}-{id}.stderr")))
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
        (id, log)
    }
}

/// The host's command in the worktree under the account's environment and
/// address, its stdout piped, in its own process group, killed with the
/// runner.
fn agent_command(argv: &[String], worktree: &Path, account: &Account, log: Stdio) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(worktree)
        .envs(&account.env)
        .env("GIT_SWARM_AS", &account.address)
        .env("GIT_SWARM_ACCOUNT", &account.account)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    let runner = std::process::id() as libc::pid_t;
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            // Its own process group (the runner stops the whole agent),
            // and killed with the runner: an agent never outlives the
            // lease its runner keeps alive.
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != runner {
                libc::_exit(137);
            }
            Ok(())
        });
    }
    cmd
}

/// The error of a host that cannot be started, with the setting to fix.
fn cannot_launch(host: Host, program: &str, lane: &str, e: std::io::Error) -> Error {
    Error::new(
        Code::IoFailed,
        format!("cannot launch {program} for lane {lane}: {e}"),
    )
    .hint(format!(
        "set `git config {}` to the host's command line",
        host.setting()
    ))
}

/// Reads the agent's stream on a thread of its own: each parsed event, then
/// its end, sent to the runner as agent `id`'s.
fn read_stream(tx: mpsc::Sender<Msg>, host: Host, id: usize, stdout: std::process::ChildStdout) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            for e in hosts::parse_line(host, &line) {
                if tx.send(Msg::Event(id, e)).is_err() {
                    return;
                }
            }
        }
        let _ = tx.send(Msg::Eof(id));
    });
}
