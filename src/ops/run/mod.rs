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
mod lead;
mod locks;
mod recover;
mod spend;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
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
use crate::integrations::hosts::{self, Event, Host, Summary};
use crate::records::pool::{self, Account, AgentRun, Lease, Op};
use crate::session::Ctx;
use crate::store::mirror;

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

    fn accounts(&self) -> Result<Vec<Account>> {
        mirror::fetch_refs_from(&self.ctx.store, self.ctx.remote(), &[pool::PREFIX])?;
        Ok(pool::known(&self.ctx.store, self.ctx.remote())?.0)
    }

    /// Lease a free account for `lane`, preferring another host than
    /// `avoid` and never the coordinator's own; None when none is free.
    fn lease(
        &mut self,
        task: &str,
        lane: &str,
        avoid: Option<&str>,
    ) -> Result<Option<(Account, u64)>> {
        let now = self.ctx.store.clock.now();
        let mut free: Vec<Account> = self
            .accounts()?
            .into_iter()
            .filter(|a| a.is_free(now))
            .filter(|a| Some(&a.account) != self.opts.account.as_ref())
            .filter(|a| Host::parse(a.host.as_str()).is_some())
            .collect();
        free.sort_by_key(|a| (avoid.is_some_and(|h| a.host == *h), a.account.clone()));
        for a in free {
            let lease = Lease {
                holder: self.holder.clone(),
                machine: self.machine.clone(),
                role: "lane".into(),
                plan: Some(self.opts.plan.clone()),
                task: Some(task.into()),
                lane: Some(lane.into()),
                ..Lease::default()
            };
            let op = Op::Lease {
                lease,
                ttl: self.ttl,
            };
            match pool::publish(
                &self.ctx.store,
                self.ctx.remote(),
                &a.account,
                &op,
                &self.actor,
            ) {
                Ok((Some(next), _)) => {
                    let epoch = next.epoch;
                    return Ok(Some((next, epoch)));
                }
                Ok((None, _)) => continue,
                // Another runner took it first: the next one.
                Err(e) if matches!(e.code, Code::LeaseHeld | Code::NotFound) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn free(&mut self, account: &str, epoch: u64) {
        let op = Op::Free {
            holder: self.holder.clone(),
            epoch,
        };
        let _ = pool::publish(
            &self.ctx.store,
            self.ctx.remote(),
            account,
            &op,
            &self.actor,
        );
    }

    /// Launch on every ready task there is room and an account for.
    fn fill(&mut self) -> Result<usize> {
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

    #[allow(clippy::too_many_arguments)]
    fn launch(
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
        match locks::clear_stale(worktree) {
            locks::Locks::None => {}
            locks::Locks::Cleared(names) => self.step(
                "cleared",
                Some(lane),
                Some(&account.account),
                format!(
                    "lane {lane}: removed stale {} left by a lost agent",
                    names.join(", ")
                ),
            ),
            locks::Locks::Locked(names, pid) => self.step(
                "locked",
                Some(lane),
                Some(&account.account),
                format!(
                    "lane {lane}: {} left in place: process {pid} still works in its worktree",
                    names.join(", ")
                ),
            ),
        }
        let log_dir = self.ctx.store.common_dir().join("swarm/run");
        let _ = std::fs::create_dir_all(&log_dir);
        let id = self.next_id;
        self.next_id += 1;
        let log = std::fs::File::create(log_dir.join(format!("{lane}-{id}.stderr")))
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
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
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                self.free(&account.account, epoch);
                return Err(Error::new(
                    Code::IoFailed,
                    format!("cannot launch {} for lane {lane}: {e}", argv[0]),
                )
                .hint(format!(
                    "set `git config {}` to the host's command line",
                    host.setting()
                )));
            }
        };
        let stdout = child.stdout.take().expect("piped");
        let tx = self.tx.clone();
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

    fn agent_run(a: &Agent) -> AgentRun {
        AgentRun {
            session: a.summary.session.clone(),
            pid: a.child.id(),
            started: a.started.clone(),
            last_event: a
                .summary
                .last_event
                .clone()
                .unwrap_or_else(|| "started".into()),
            last_event_at: String::new(),
            input_tokens: a.summary.usage.input_tokens,
            cache_read_tokens: a.summary.usage.cache_read_tokens,
            cache_write_tokens: a.summary.usage.cache_write_tokens,
            output_tokens: a.summary.usage.output_tokens,
            cost_usd: a.summary.usage.cost_usd,
        }
    }

    fn renew_one(&mut self, id: usize) {
        let Some(a) = self.agents.get_mut(&id) else {
            return;
        };
        a.renewed = Instant::now();
        let mut run = Self::agent_run(a);
        run.last_event_at = rfc3339(self.ctx.store.clock.now());
        let op = Op::Renew {
            holder: self.holder.clone(),
            epoch: a.epoch,
            ttl: self.ttl,
            agent: Some(run),
            lane: Some(a.lane.clone()),
        };
        let name = a.account.account.clone();
        let waiting = a.packet.is_some();
        let (task, address) = (a.task.clone(), a.account.address.clone());
        let _ = pool::publish(&self.ctx.store, self.ctx.remote(), &name, &op, &self.actor);
        if !waiting {
            // The task's claim lives as long as the account's lease: once
            // this runner is gone, both lapse together and any runner may
            // recover the lane. (A successor about to accept a packet gets
            // the claim with it.)
            let (plan, lease) = (self.opts.plan.clone(), format!("{}s", self.ttl.as_secs()));
            let _ = self.swarm(
                &self.root.clone(),
                Some(&address),
                &["task", "renew", &task, "--plan", &plan, "--lease", &lease],
            );
        }
    }

    /// Renew each live agent's lease at half of it (and once its session
    /// id is known), with its progress.
    fn renew_due(&mut self) {
        let half = Duration::from_secs_f64(self.ttl.as_secs_f64() / 2.0);
        let due: Vec<usize> = self
            .agents
            .iter()
            .filter(|(_, a)| !a.eof && a.renewed.elapsed() >= half)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.renew_one(id);
        }
    }

    /// A successor that accepted: its predecessor's account is freed.
    fn free_after_accept(&mut self) {
        let pending: Vec<(usize, String, String, u64, String)> = self
            .agents
            .iter()
            .filter_map(|(id, a)| {
                a.packet
                    .as_ref()
                    .map(|(p, acc, ep)| (*id, p.clone(), acc.clone(), *ep, a.lane.clone()))
            })
            .collect();
        for (id, packet, account, epoch, lane) in pending {
            let open = self
                .swarm(
                    &self.root.clone(),
                    None,
                    &["packets", "--plan", &lane, "--open"],
                )
                .ok()
                .and_then(|v| v["packets"].as_array().cloned())
                .unwrap_or_default();
            if open.iter().any(|p| p["id"] == packet.as_str()) {
                continue;
            }
            self.free(&account, epoch);
            if let Some(a) = self.agents.get_mut(&id) {
                a.packet = None;
            }
            self.step(
                "accepted",
                Some(&lane),
                Some(&account),
                format!("packet {packet} accepted: account {account} freed"),
            );
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
