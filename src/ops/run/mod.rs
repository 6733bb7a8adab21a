//! `git swarm run`: one foreground process per machine that launches an
//! agent on each ready task of a plan, within `--max-lanes` and the free
//! accounts of the pool, and acts when a session ends (see docs/run.md).
//!
//! The runner decides; the swarm's own commands act. It leases accounts
//! through the pool's rule (`records::pool`), and starts lanes, reads tasks
//! and packets, snapshots and reports by running this binary's own
//! commands (`lane new --task`, `task ready`, `task show`, `packets`,
//! `lane snapshot`, `report`), under the account's address: every record
//! is written by the same code, with the same arbitration, as when a
//! person types it. Between events it sleeps: on its agents' output (a
//! line of their stream, their exit), and on a tick for the remote's
//! records and its leases' renewal; it never polls a host.

mod brief;
mod ended;
mod launch;
mod lead;
mod leases;
mod locks;
mod recover;
mod spend;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::SignedDuration;
use serde::Serialize;
use serde_json::Value;

use crate::clock::rfc3339;
use crate::error::{Code, Error, Result};
use crate::integrations::hosts::{Event, Host, Summary};
use crate::records::pool::{self, Account, Op};
use crate::session::Ctx;

/// What `run` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    pub plan: String,
    pub max_lanes: usize,
    pub once: bool,
    pub lead: bool,
    /// The coordinator's own account: never given to a lane.
    pub account: Option<String>,
    /// Set (by the CLI's SIGINT/SIGTERM handler) to stop: launch nothing
    /// more, let the agents finish.
    pub stop: Arc<AtomicBool>,
}

/// One thing the runner did, as it happens (the CLI prints it).
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub at: String,
    pub what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub text: String,
}

/// What a run did, when it stopped.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Ran {
    pub plan: String,
    pub holder: String,
    pub steps: Vec<Step>,
    pub launched: usize,
    pub stopped_by_signal: bool,
}

/// An agent this runner started.
struct Agent {
    account: Account,
    host: Host,
    epoch: u64,
    task: String,
    lane: String,
    worktree: PathBuf,
    child: Child,
    summary: Summary,
    started: String,
    renewed: Instant,
    /// Its stream ended (the process exits or has exited).
    eof: bool,
    /// A successor's packet, and the predecessor's account to free once
    /// the packet is accepted.
    packet: Option<(String, String, u64)>,
}

enum Msg {
    Event(usize, Event),
    Eof(usize),
}

/// The runner's machine name.
fn machine() -> String {
    std::env::var("GIT_SWARM_MACHINE")
        .ok()
        .filter(|m| !m.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

struct Runner<'c> {
    ctx: &'c Ctx,
    opts: Options,
    actor: String,
    holder: String,
    machine: String,
    exe: PathBuf,
    root: PathBuf,
    ttl: SignedDuration,
    tick: Duration,
    agents: BTreeMap<usize, Agent>,
    next_id: usize,
    /// Lanes reported blocked (a wait for a person, too many losses): not relaunched.
    blocked: BTreeSet<String>,
    /// The plan's budget was found reached (said once, until it is raised).
    over_budget: Option<String>,
    /// Agents lost per lane (a successor is launched up to [`recover::MAX_LOSSES`]).
    losses: BTreeMap<String, usize>,
    leading: lead::Leading,
    ran: Ran,
    tx: mpsc::Sender<Msg>,
    on_step: &'c mut dyn FnMut(&Step),
}

pub fn run(ctx: &Ctx, opts: Options, on_step: &mut dyn FnMut(&Step)) -> Result<Ran> {
    crate::names::validate_name("plan", &opts.plan)?;
    let actor = ctx.actor()?;
    let machine = machine();
    let holder = format!("{actor}@{machine}#{}", std::process::id());
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(Code::IoFailed, format!("cannot find git-swarm itself: {e}")))?;
    let root = ctx
        .store
        .workdir()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::new(Code::BareRepo, "git swarm run needs a working tree"))?;
    let ttl = ctx.lease(None, &pool::LEASE)?;
    let tick = std::env::var("GIT_SWARM_RUN_TICK_MS")
        .ok()
        .and_then(|t| t.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(2));
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut r = Runner {
        tx,
        ctx,
        ran: Ran {
            plan: opts.plan.clone(),
            holder: holder.clone(),
            ..Ran::default()
        },
        opts,
        actor,
        holder,
        machine,
        exe,
        root,
        ttl,
        tick,
        agents: BTreeMap::new(),
        next_id: 0,
        blocked: BTreeSet::new(),
        over_budget: None,
        losses: BTreeMap::new(),
        leading: lead::Leading::default(),
        on_step,
    };
    r.main_loop(rx)?;
    Ok(r.ran)
}

impl Runner<'_> {
    fn step(&mut self, what: &str, lane: Option<&str>, account: Option<&str>, text: String) {
        let s = Step {
            at: rfc3339(self.ctx.store.clock.now()),
            what: what.into(),
            lane: lane.map(String::from),
            account: account.map(String::from),
            text,
        };
        (self.on_step)(&s);
        self.ran.steps.push(s);
    }

    fn main_loop(&mut self, rx: mpsc::Receiver<Msg>) -> Result<()> {
        if self.opts.lead {
            self.lead_start();
        }
        loop {
            // Take every message there is, then act.
            while let Ok(m) = rx.try_recv() {
                self.take(m);
            }
            self.reap()?;
            self.free_after_accept();
            self.renew_due();
            self.lead_tick();
            let stopping = self.opts.stop.load(Ordering::SeqCst);
            if stopping && !self.ran.stopped_by_signal {
                self.ran.stopped_by_signal = true;
                self.step(
                    "stop",
                    None,
                    None,
                    format!(
                        "stopping: no new launch; waiting for {} agent(s) to finish",
                        self.agents.len()
                    ),
                );
            }
            let launched = if stopping { 0 } else { self.fill()? };
            if self.agents.is_empty() && (stopping || (self.opts.once && launched == 0)) {
                if !stopping {
                    let text = match &self.over_budget {
                        Some(_) => format!(
                            "plan {}: its budget is reached and no agent is working",
                            self.opts.plan
                        ),
                        None => format!(
                            "plan {}: no task ready and no agent working",
                            self.opts.plan
                        ),
                    };
                    self.step("idle", None, None, text);
                }
                return Ok(());
            }
            match rx.recv_timeout(self.tick) {
                Ok(m) => self.take(m),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {}
            }
        }
    }

    fn take(&mut self, m: Msg) {
        match m {
            Msg::Event(id, e) => {
                if let Some(a) = self.agents.get_mut(&id) {
                    let first_session =
                        matches!(&e, Event::Session { .. }) && a.summary.session.is_none();
                    a.summary.apply(&e);
                    if first_session {
                        // Record the session id at once.
                        a.renewed = Instant::now() - Duration::from_secs(3600);
                    }
                }
                if let Some(a) = self.agents.get(&id) {
                    match &e {
                        Event::Usage(_) => self.record_spend(a),
                        Event::RateLimit {
                            status, resets_at, ..
                        } => self.note_rate_limit(a, status, *resets_at),
                        _ => {}
                    }
                }
            }
            Msg::Eof(id) => {
                if let Some(a) = self.agents.get_mut(&id) {
                    a.eof = true;
                }
            }
        }
    }

    /// Run one of this binary's commands with `--json`, as `address`.
    fn swarm(&self, dir: &Path, address: Option<&str>, args: &[&str]) -> Result<Value> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args)
            .arg("--json")
            .current_dir(dir)
            .stdin(Stdio::null());
        if let Some(a) = address {
            cmd.env("GIT_SWARM_AS", a);
        }
        let out = cmd
            .output()
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot run git-swarm: {e}")))?;
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if out.status.success() {
            Ok(v)
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let code = v["error"]["code"].as_str().unwrap_or("FAILED").to_string();
            Err(Error::new(
                Code::from_name(&code).unwrap_or(Code::IoFailed),
                format!(
                    "git swarm {}: {}",
                    args.join(" "),
                    err.lines().next().unwrap_or("failed")
                ),
            ))
        }
    }

    /// Act on every agent whose process ended.
    fn reap(&mut self) -> Result<()> {
        let ended: Vec<usize> = self
            .agents
            .iter_mut()
            .filter_map(|(id, a)| match a.child.try_wait() {
                Ok(Some(_)) if a.eof => Some(*id),
                _ => None,
            })
            .collect();
        for id in ended {
            let mut a = self.agents.remove(&id).expect("listed");
            let status = a.child.wait().ok();
            self.ended(&mut a, status)?;
        }
        Ok(())
    }
}
