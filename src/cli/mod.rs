//! The command line: clap definitions (the `///` comments are the `--help`
//! text), one module per command group (`commands/`), and the rendering of results and
//! errors (SPEC §3, §4). Domain logic lives in the library.

/// A line on stderr, its control characters made visible (it may quote a
/// path or record from anyone's push), never a panic when stderr is gone.
/// Every command's stderr goes through it.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::error::say(&git_swarm::text::clean_block(&format!($($arg)*)))
    };
}

mod budget;
pub mod commands;
pub mod error;
pub mod output;
mod publish;
pub mod spec;

use commands::{
    agent, capacity, completions, demo, finish, forecast, gc, guard, handoff, init, lane, lead,
    man, message, plan, pool, renew, reserve, run, serve, status, sync, task, verify, whoami,
};

use std::io::Write;

use crate::cli::output::Output;
pub use crate::cli::spec::{Access, Facts};
use clap::{Parser, Subcommand};
use git_swarm::error::{Code, Error, Result};
use git_swarm::records::message::Kind;
use git_swarm::session::{Ctx, Network};
use git_swarm::store::CommandState;
use std::sync::Arc;

/// Coordinate a coordinator and many parallel coding agents ("lanes") on one
/// repository: plans, handoff packets and leader records live in git refs and
/// notes, and sync through any git remote.
#[derive(Debug, Parser)]
#[command(name = "git-swarm", version, propagate_version = true)]
#[command(
    after_help = "Exit codes: 0 ok, 1 check failed, 2 bad input, 3 lost a race or fenced, 4 environment failed.\nDocs: README.md and docs/*.md; `git swarm man --install` makes `git help swarm` work."
)]
pub struct Cli {
    /// Print one JSON document on stdout instead of human text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Act as this address (overrides GIT_SWARM_AS, the lane owner and swarm.as): [A-Za-z0-9][A-Za-z0-9._@-]{0,63}, no '..', not ending in '.lock' or '.'.
    #[arg(long = "as", global = true, value_name = "ADDRESS")]
    pub as_: Option<String>,
    /// Do not fetch from or push to the shared remote.
    #[arg(long, global = true)]
    pub offline: bool,
    /// Read every record from its objects, neither reading nor writing the record cache (as GIT_SWARM_NO_CACHE=1 does); the output is the same.
    #[arg(long, global = true)]
    pub no_cache: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make this repository swarm-ready (hooks, excludes, fetch refspecs); idempotent.
    Init(init::InitArgs),
    /// Show plans as a tree with their leaders, active lanes, blocked reports and open packets (local plus the last fetched mirror; unreadable records are named, with a warning; exit 0).
    Status(status::StatusArgs),
    /// Run a complete swarm exercise on a throwaway repository, narrated.
    Demo(demo::DemoArgs),
    /// Create, show, save, check out and close plans (refs/swarm/plans/<plan>).
    #[command(subcommand)]
    Plan(plan::PlanCmd),
    /// Lanes: one worktree and branch feat/<feature> per feature.
    #[command(subcommand)]
    Lane(lane::LaneCmd),
    /// Append a lane report to the plan's journal (fixed vocabulary).
    Report(lane::ReportArgs),
    /// Write a dwp-handoff/v1 packet so a successor can take over this work (published with the lane record).
    Handoff(handoff::HandoffArgs),
    /// List live handoff packets (archived ones are still found by id).
    Packets(handoff::PacketsArgs),
    /// Inspect one handoff packet, or withdraw one you wrote.
    #[command(subcommand)]
    Packet(handoff::PacketCmd),
    /// Accept a handoff packet after re-deriving that the work is where it says (branch, head, uncommitted paths and their content); its lane passes to you, in the same push.
    Accept(handoff::AcceptArgs),
    /// Leadership of a plan: one leader per epoch, fenced across machines.
    #[command(subcommand)]
    Lead(lead::LeadCmd),
    /// End a plan (leader only, fenced): refuses naming each open task, lane or packet; closes the merged lanes, child plans, reservations and the plan, releases the leadership, writes the completion report (markdown; --out FILE).
    Finish(finish::FinishArgs),
    /// Reconcile swarm refs and notes with the shared remote in one atomic push: this clone's unpublished writes are replayed on the published records, and one that cannot be kept exits 3 naming it (kept under refs/swarm-lost/).
    Sync(sync::SyncArgs),
    /// Fold finished records (accepted packets, removed lanes, closed plans) into archive refs.
    Gc(gc::GcArgs),
    /// Run a guard hook (called by the installed hook shims).
    Hook(guard::HookArgs),
    /// Run the guards for CI on the staged changes or a commit range.
    Check(guard::CheckArgs),
    /// Re-derive a PR's merge state from the GitHub API and from git.
    #[command(subcommand)]
    Verify(verify::VerifyCmd),
    /// Print a shell completion script.
    Completions(completions::CompletionsArgs),
    /// Print (or install) the man pages, so `git help swarm` works.
    Man(man::ManArgs),
    /// Post a message to an address, `lead` (the plan's leader) or `all` (refs/swarm/messages/<plan>/<id>).
    Notify(message::NotifyArgs),
    /// Post a question that expects an answer (`reply`).
    Ask(message::NotifyArgs),
    /// Answer a message, to its sender.
    Reply(message::ReplyArgs),
    /// Show the messages new for you; marks them read unless --peek.
    Inbox(message::InboxArgs),
    /// Block until a message, packet, leader change, task or verdict arrives (exit 1 at --timeout); sleeps between cheap checks.
    Wait(message::WaitArgs),
    /// Record a decision in the plan's messages (shown by `state`).
    Decide(message::DecideArgs),
    /// Escalate: ask the leader (or everyone) for what blocks you; recorded once.
    Escalate(message::EscalateArgs),
    /// A deterministic summary derived only from the refs (--write: state.md).
    State(message::StateArgs),
    /// Tasks with dependencies and leased claims the shared remote arbitrates (refs/swarm/tasks/<plan>/<id>).
    #[command(subcommand)]
    Task(task::TaskCmd),
    /// The accounts agents may run on, each leased to one session at a time (refs/swarm/pool/<account>).
    #[command(subcommand)]
    Pool(pool::PoolCmd),
    /// Launch an agent on each ready task of a plan, within --max-lanes and the pool's free accounts; replace one that hands off; report one that is lost or waits for a person (foreground; stops cleanly on SIGINT/SIGTERM).
    Run(run::RunArgs),
    /// Forecast conflicts between live lanes (local and other machines' pushed branches) and against their bases, by merging in memory; cached.
    Forecast(forecast::ForecastArgs),
    /// Agents in Claude Code, Codex and Gemini CLI: the guide, the hooks the hosts call, installing them.
    #[command(subcommand)]
    Agent(agent::AgentCmd),
    /// Your capacity reading (cached 300 s) and what to do at this task boundary; record a host's figures (note, statusline); the plan's spend against swarm.budget (budget).
    Capacity(capacity::CapacityArgs),
    /// Reserve paths (files, dir/, globs) for yourself, arbitrated by the remote; --check, --recover.
    Reserve(reserve::ReserveCmdArgs),
    /// Release reservations by id or path.
    Release(reserve::ReleaseArgs),
    /// List live reservations: holder, paths, lease left, task.
    Reservations(reserve::ReservationsArgs),
    /// Renew every task claim and reservation you hold, in one push (the agent hook does this once one is past half its lease).
    Renew(renew::RenewArgs),
    /// Who you act as here and why (--as, GIT_SWARM_AS, lane owner, swarm.as), your lane and plan, its leader, your signing key, the remote.
    Whoami(whoami::WhoamiArgs),
    /// Serve a live, read-only dashboard of the swarm on 127.0.0.1 (plans, task board and graph, lanes, reservations, forecast matrix, messages, verdicts).
    Serve(serve::ServeArgs),
}

/// Every command's spec, one line per group (see [`spec`]).
pub const SPECS: &[&[spec::Spec]] = &[
    init::SPECS,
    status::SPECS,
    demo::SPECS,
    plan::SPECS,
    lane::SPECS,
    handoff::SPECS,
    lead::SPECS,
    finish::SPECS,
    sync::SPECS,
    gc::SPECS,
    guard::SPECS,
    verify::SPECS,
    completions::SPECS,
    man::SPECS,
    message::SPECS,
    task::SPECS,
    pool::SPECS,
    run::SPECS,
    forecast::SPECS,
    agent::SPECS,
    capacity::SPECS,
    reserve::SPECS,
    renew::SPECS,
    whoami::SPECS,
    serve::SPECS,
];

/// What was parsed: the arguments, and the facts of the command they name.
#[derive(Debug)]
pub struct Invocation {
    pub cli: Cli,
    pub facts: Facts,
}

/// Global options every command sees.
pub struct Global {
    pub json: bool,
    pub as_: Option<String>,
    pub offline: bool,
    /// A write the push budget holds (kept here and queued, see
    /// [`budget::Session`]): its sessions reach no remote.
    pub held: bool,
    pub no_cache: bool,
    pub access: Access,
    /// The command's state shared by every session it opens (its remote
    /// operations, what it does when the remote cannot be reached, its
    /// trust notices): one per command.
    pub run: Arc<CommandState>,
}

impl Global {
    /// Whether this command's sessions reach the remote.
    pub fn network(&self) -> Network {
        match (self.offline, self.held) {
            (true, _) => Network::Offline,
            (false, true) => Network::Held,
            (false, false) => Network::Online,
        }
    }

    /// Open the repository of the current directory.
    pub fn ctx(&self) -> Result<Ctx> {
        self.ctx_with_remote(None)
    }

    pub fn ctx_with_remote(&self, remote: Option<&str>) -> Result<Ctx> {
        let cwd = std::env::current_dir().map_err(|e| {
            Error::new(
                Code::IoFailed,
                format!("cannot read the current directory: {e}"),
            )
        })?;
        let mut ctx = match Ctx::open(&cwd, self.as_.clone(), self.network(), remote, &self.run) {
            // A mistyped swarm.remote must not hide the local records.
            Err(e) if e.code == Code::RemoteMissing && self.access == Access::Read => {
                let ctx =
                    Ctx::open_without_remote(&cwd, self.as_.clone(), self.network(), &self.run)?;
                say!(
                    "warning: {}; showing this repository's records only (nothing fetched or published)",
                    e.message
                );
                for h in &e.hints {
                    say!("hint: {h}");
                }
                ctx
            }
            other => other?,
        };
        if self.no_cache {
            ctx.store.cache.bypass();
            ctx.store.trust.bypass_cache();
        }
        if self.access == Access::Write && ctx.store.workdir().is_none() {
            return Err(bare_repo());
        }
        Ok(ctx)
    }
}

/// A writing command run in a bare repository (as `init` refuses one).
pub fn bare_repo() -> Error {
    Error::new(
        Code::BareRepo,
        "this is a bare repository: git swarm writes plans, lanes and packets only from a working tree",
    )
    .hint("run it in a clone (`git clone <this repository>`); reading works here: `git swarm status`, `plan list`, `packets`, `lane list`")
}

/// Parse the command line. Help and errors say `git swarm …`, as users type
/// it; the bin name is set here rather than in the derive, because a space in
/// it would leak into every subcommand's name (and break completions).
/// `hook pre-commit` exactly as the hook shim runs it (no options, no
/// arguments): what clap would parse, without first building the whole
/// command tree, which costs about a million instructions on every commit.
pub fn parse_hook_pre_commit(args: &[String]) -> Option<Invocation> {
    (args == ["hook", "pre-commit"]).then(|| Invocation {
        cli: Cli {
            json: false,
            as_: None,
            offline: false,
            no_cache: false,
            command: Command::Hook(guard::HookArgs {
                hook: "pre-commit".into(),
                args: Vec::new(),
            }),
        },
        facts: spec::facts_of(&["hook"], &|arg| {
            (arg == "hook").then(|| "pre-commit".into())
        }),
    })
}

pub fn parse() -> std::result::Result<Invocation, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().bin_name("git swarm").try_get_matches()?;
    Ok(Invocation {
        cli: Cli::from_arg_matches(&matches)?,
        facts: spec::facts_of_matches(&matches),
    })
}

/// Run one command; `run` is its shared state (the caller reads its remote
/// operations after, whether the command succeeded or not).
pub fn run(invocation: Invocation, run: &Arc<CommandState>) -> Result<Output> {
    let Invocation { cli, facts } = invocation;
    let mut g = Global {
        json: cli.json,
        as_: cli.as_,
        offline: cli.offline,
        held: false,
        no_cache: cli.no_cache,
        access: facts.access(),
        run: run.clone(),
    };
    let listing = facts.listing();
    if listing {
        g.run.reach.tolerate_unreachable();
    }
    if facts.keeps_when_unreachable() {
        g.run.reach.keep_writes_when_unreachable();
    }
    let mut publishes_after = facts.publishes_after();
    // The push budget's session, opened once for the whole command.
    let (budgeted, flushes_first) = (facts.budgeted(), facts.flushes_first());
    // An invalid budget refuses a write it would queue (nothing written);
    // a command that only flushes first leaves the queue where it is.
    let session = match (budgeted || flushes_first).then(|| budget::Session::open(&g)) {
        Some(Ok(session)) => session,
        Some(Err(e)) if budgeted => return Err(e),
        _ => None,
    };
    // Under a push budget a write nobody races for stays here, queued.
    let queued = session.as_ref().filter(|_| budgeted);
    if queued.is_some() {
        g.held = true;
        publishes_after = false;
    }
    let flushed = session
        .as_ref()
        .filter(|_| flushes_first)
        .and_then(budget::Session::flush_first);
    let out = dispatch(&g, facts, cli.command)
        .map_err(|e| error::unreachable_hint(e, facts.arbitration()));
    let out = with_announcements(&g, facts, out);
    // Records that could not be checked at all (no ssh-keygen) were judged
    // by nobody: the command fails with why, even if it listed them.
    if let Some(e) = g.run.trust.take_tool_failure() {
        return Err(e);
    }
    let mut out = out?;
    if facts.boundary() && out.exit == 0 {
        out = capacity::at_boundary(&g, out);
    }
    for notice in g.run.trust.take_warnings() {
        out = out.warn(notice);
    }
    if let Some((remote, f)) = flushed {
        out = budget::said(out, &remote, f);
    }
    if let Some(session) = queued {
        out = session.queued_after(out);
    }
    if listing {
        if let Some(warning) = g.run.reach.unreached_warning() {
            out = out.warn(warning);
        }
    }
    // Under the budget a command that pushed nothing of its own leaves the
    // queue to its window.
    if publishes_after && !out.leaves_queue {
        out = publish::publish_after(&g, out);
    }
    Ok(out)
}

/// A change of leader made by someone else that concerns this actor (a
/// takeover from them, a handover to them): once, at their next command
/// (a warning line; on a refusal, a hint). And the worktrees of lanes
/// closed since go, their uncommitted work kept as a snapshot first (said
/// in the same way).
fn with_announcements(g: &Global, facts: Facts, out: Result<Output>) -> Result<Output> {
    let notices = match facts.shows_announcements() {
        true => g
            .ctx()
            .map(|ctx| {
                let mut n = git_swarm::ops::message::announce::notices(&ctx);
                // Not after a command that sweeps its own way
                // ([`Facts::NO_SWEEP`]: the `lane` commands).
                if !ctx.store.repo.is_bare() && facts.sweeps() {
                    n.extend(git_swarm::ops::lane::sweep::sweep_closed(&ctx));
                }
                n
            })
            .unwrap_or_default(),
        false => Vec::new(),
    };
    match out {
        Err(e) => Err(notices.into_iter().fold(e, |e, n| e.hint(n))),
        Ok(mut o) => {
            for n in notices {
                o = o.warn(n);
            }
            Ok(o)
        }
    }
}

fn dispatch(g: &Global, facts: Facts, command: Command) -> Result<Output> {
    if facts.writes_in_a_lane() {
        g.ctx()?.refuse_if_moved()?;
    }
    match command {
        Command::Init(a) => init::init(g, a),
        Command::Status(a) => status::status(g, a),
        Command::Demo(a) => demo::demo(g, a),
        Command::Plan(c) => plan::run(g, c),
        Command::Lane(c) => lane::run(g, c),
        Command::Report(a) => lane::report(g, a),
        Command::Handoff(a) => handoff::handoff(g, a),
        Command::Packets(a) => handoff::packets(g, a),
        Command::Packet(c) => handoff::packet(g, c),
        Command::Accept(a) => handoff::accept(g, a),
        Command::Lead(c) => lead::run(g, c),
        Command::Sync(a) => sync::sync(g, a),
        Command::Finish(a) => finish::finish(g, a),
        Command::Gc(a) => gc::gc(g, a),
        Command::Hook(a) => guard::hook(g, a),
        Command::Check(a) => guard::check(g, a),
        Command::Verify(c) => verify::run(g, c),
        Command::Completions(a) => completions::completions(a),
        Command::Man(a) => man::man(g, a),
        Command::Notify(a) => message::notify(g, a, Kind::Notify),
        Command::Ask(a) => message::notify(g, a, Kind::Ask),
        Command::Reply(a) => message::reply(g, a),
        Command::Inbox(a) => message::inbox(g, a),
        Command::Wait(a) => message::wait_for(g, a),
        Command::Decide(a) => message::decide(g, a),
        Command::Escalate(a) => message::escalate(g, a),
        Command::State(a) => message::state(g, a),
        Command::Task(c) => task::run(g, c),
        Command::Pool(c) => pool::run(g, c),
        Command::Run(a) => run::run(g, a),
        Command::Forecast(a) => forecast::forecast(g, a),
        Command::Agent(c) => agent::run(g, c),
        Command::Capacity(a) => capacity::capacity(g, a),
        Command::Reserve(a) => reserve::reserve(g, a),
        Command::Release(a) => reserve::release(g, a),
        Command::Reservations(a) => reserve::reservations(g, a),
        Command::Renew(a) => renew::renew(g, a),
        Command::Serve(a) => serve::serve(g, a),
        Command::Whoami(a) => whoami::whoami(g, a),
    }
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
pub fn emit(out: &mut impl Write, text: &str) {
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            say!("error[IO_FAILED]: cannot write output: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// Every argument of every subcommand, as `-h` shows it, has help
    /// text: (command path, argument id) of those that have none.
    fn undescribed(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_hide_set() || id == "help" || id == "version" {
                continue;
            }
            let text = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            if text.trim().is_empty() {
                out.push(format!("{path}: {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() {
                continue;
            }
            if sub.get_about().is_none() {
                out.push(format!("{path} {}: (no about)", sub.get_name()));
            }
            undescribed(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_argument_of_every_subcommand_is_described_in_its_help() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        cmd.build();
        let mut missing = Vec::new();
        undescribed(&cmd, "git swarm", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help text:\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn the_hook_shortcut_parses_what_clap_parses() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let fast = parse_hook_pre_commit(&args(&["hook", "pre-commit"])).unwrap();
        let clap = Cli::try_parse_from(["git-swarm", "hook", "pre-commit"]).unwrap();
        assert_eq!(format!("{:?}", fast.cli), format!("{clap:?}"));
        let matches = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(["git-swarm", "hook", "pre-commit"])
            .unwrap();
        assert_eq!(fast.facts, spec::facts_of_matches(&matches));
        for other in [
            &["hook", "pre-commit", "--json"][..],
            &["--as", "x", "hook", "pre-commit"],
            &["hook", "pre-push"],
            &["hook"],
        ] {
            assert!(parse_hook_pre_commit(&args(other)).is_none(), "{other:?}");
        }
    }
}
