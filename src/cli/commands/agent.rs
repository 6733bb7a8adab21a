//! `git swarm agent guide|hook|install`

use std::io::Read;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec, When};
use clap::{Args, Subcommand};
use git_swarm::error::{Code, Error, Result};
use git_swarm::integrations::agent::{guide, hook, install};
use git_swarm::records::agent::{self, Event, Host, Input};

use crate::cli::{Cli, Command, Global, Invocation};

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new(
        "agent guide",
        Facts::READ.and(Facts::QUIET).and(Facts::NO_FLUSH),
    ),
    Spec::when(
        "agent hook",
        Facts::READ.and(Facts::QUIET),
        &[(When::Value("event", "pre-tool-use"), Facts::NO_FLUSH)],
    ),
    Spec::new(
        "agent install",
        Facts::WRITE.and(Facts::QUIET).and(Facts::NO_FLUSH),
    ),
    Spec::new("agent keygen", Facts::WRITE.and(Facts::QUIET)),
];

#[derive(Debug, Subcommand)]
pub enum AgentCmd {
    /// Print the protocol an agent follows here (claim, reserve, commit, report, ask, wait, hand off, done); the same text is the Claude Code skill and the AGENTS.md block `agent install` writes.
    Guide,
    /// Answer one event of an agent host (called by the host, not by hand): the host's JSON on stdin, its answer on stdout; never prompts; outside a swarm repository prints nothing.
    Hook(HookArgs),
    /// Make the hooks active for a host's agents in the main checkout and every lane worktree of this clone (later ones too), or with --user in the host's user settings; merges into existing settings; --uninstall restores them.
    Install(InstallArgs),
    /// Make an ssh signing key for --as <address> in this clone (kept in .git/swarm/keys, named by swarm.<address>.signingKey) and print the line that lists it in .swarm/allowed_signers; an address that has a key keeps it.
    Keygen,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// session-start, pre-tool-use, user-prompt-submit, stop or post-tool-use.
    pub event: String,
    /// claude, codex or gemini.
    #[arg(long, value_name = "HOST")]
    pub host: String,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// claude, codex or gemini (repeatable or comma-separated; default claude).
    #[arg(long, value_name = "HOST", value_delimiter = ',')]
    pub host: Vec<String>,
    /// Write the host's user settings (~/.claude/settings.json, ~/.codex/hooks.json, ~/.gemini/settings.json) instead of this clone's checkouts.
    #[arg(long)]
    pub user: bool,
    /// Say what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take the hooks out again: files as they were before (byte for byte when untouched since).
    #[arg(long)]
    pub uninstall: bool,
}

/// `agent hook <event> --host <host>` exactly as installed: what clap would
/// parse, without building the whole command tree (the pre-tool-use hook
/// runs before every file write of every agent).
pub fn parse_fast(args: &[String]) -> Option<Invocation> {
    match args {
        [a, h, event, flag, host] if a == "agent" && h == "hook" && flag == "--host" => {
            if event.starts_with('-') || host.starts_with('-') {
                return None;
            }
            let given = |arg: &str| match arg {
                "event" => Some(event.clone()),
                "host" => Some(host.clone()),
                _ => None,
            };
            Some(Invocation {
                cli: Cli {
                    json: false,
                    as_: None,
                    offline: false,
                    no_cache: false,
                    command: Command::Agent(AgentCmd::Hook(HookArgs {
                        event: event.clone(),
                        host: host.clone(),
                    })),
                },
                facts: crate::cli::spec::facts_of(&["agent", "hook"], &given),
            })
        }
        _ => None,
    }
}

pub fn run(g: &Global, c: AgentCmd) -> Result<Output> {
    match c {
        AgentCmd::Guide => {
            let json = serde_json::json!({ "guide": guide::GUIDE });
            Ok(Output::new(json, guide::GUIDE.to_string()))
        }
        AgentCmd::Hook(a) => run_hook(g, a),
        AgentCmd::Install(a) => run_install(g, a),
        AgentCmd::Keygen => {
            let ctx = g.ctx()?;
            let done = git_swarm::integrations::agent::keygen::keygen(&ctx)?;
            let json = serde_json::to_value(&done).unwrap_or_default();
            Ok(Output::new(json, done.text()))
        }
    }
}

fn parse_host(h: &str) -> Result<Host> {
    Host::parse(h).ok_or_else(|| {
        Error::new(Code::Usage, format!("unknown agent host '{h}'"))
            .hint("use claude, codex or gemini")
    })
}

fn run_hook(g: &Global, a: HookArgs) -> Result<Output> {
    let host = parse_host(&a.host)?;
    let event = Event::parse(&a.event).ok_or_else(|| {
        Error::new(Code::Usage, format!("unknown hook event '{}'", a.event))
            .hint("use session-start, pre-tool-use, user-prompt-submit, stop or post-tool-use")
    })?;
    let mut text = String::new();
    // A host that sends nothing (or something unreadable) gets an answer
    // to an empty input.
    let _ = std::io::stdin()
        .lock()
        .take(4 << 20)
        .read_to_string(&mut text);
    let input = Input::parse(&text);
    let hooked = hook::run(event, &input, g.as_.clone());
    let out = agent::render(host, event, &hooked.answer);
    if let Some(w) = hooked.warning {
        // Gemini CLI reads stdout as JSON only: warnings go to stderr.
        say!("warning: {w}");
    }
    // The answer is JSON already (or nothing); --json prints the same
    // document.
    let json = serde_json::from_str(&out).unwrap_or(serde_json::Value::Object(Default::default()));
    Ok(Output::new(json, out))
}

fn run_install(g: &Global, a: InstallArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let hosts = a
        .host
        .iter()
        .filter(|h| !h.trim().is_empty())
        .map(|h| parse_host(h.trim()))
        .collect::<Result<Vec<_>>>()?;
    let done = install::install(
        &ctx,
        &install::Options {
            hosts,
            user: a.user,
            dry_run: a.dry_run,
            uninstall: a.uninstall,
        },
    )?;
    let mut text = String::new();
    let verb = if a.dry_run { "would be " } else { "" };
    for f in &done.files {
        if f.action != "unchanged" {
            text.push_str(&format!("{verb}{}: {}\n", f.action, f.path));
        }
    }
    if text.is_empty() {
        text.push_str("nothing to change\n");
    }
    if !a.uninstall && !a.dry_run {
        text.push_str(&format!(
            "the {} hooks are active for agents started from now on ({} scope); the stop hook may take {}s (swarm.agentIdleWait; run install again after changing it)\n",
            done.hosts.join(", "),
            done.scope,
            done.stop_timeout_secs
        ));
        if !a.user {
            for h in &done.hosts {
                if let Some(note) = Host::parse(h).and_then(Host::activation_note) {
                    text.push_str(&format!("note: {note}\n"));
                }
            }
        }
    }
    Ok(Output::new(&done, text))
}
