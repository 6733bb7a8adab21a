//! `init`, `status`, `demo`, `sync`, `completions`, `man`.

use std::path::PathBuf;

use clap::{Args, CommandFactory};
use git_swarm::error::{Code, Error, Result};
use git_swarm::output::{count, Output};
use git_swarm::store::record::report_unreadable;
use git_swarm::workflow::status::{cut, PlanStatus, StatusView, TITLE_WIDTH};

use super::{Cli, Global};

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Use this remote as the shared remote (sets swarm.remote).
    #[arg(long, value_name = "R")]
    pub remote: Option<String>,
    /// Do not install the hook shims.
    #[arg(long)]
    pub no_hooks: bool,
    /// Do not add the base branch to swarm.protect (by default, with a
    /// remote, it is added, so only `lead push` moves it). Recorded as an
    /// empty swarm.protect, so later runs leave it alone.
    #[arg(long)]
    pub no_protect: bool,
    /// Also install the agent hooks for these hosts (claude, codex, gemini; comma-separated), as `git swarm agent install --host …` does.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    pub agents: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Show only this plan (and its children).
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the throwaway repositories and print where they are.
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Sync with this remote instead of swarm.remote / origin.
    #[arg(long, value_name = "R")]
    pub remote: Option<String>,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Only records whose last change is older than this (default swarm.gcAge, else 14d).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Only say what would be archived.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell (bash also completes plan, lane and packet names).
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Print the page of this command instead (e.g. `plan`, `lead claim`).
    #[arg(value_name = "COMMAND", conflicts_with = "install")]
    pub command: Vec<String>,
    /// Install every page (git-swarm.1, git-swarm-plan.1, git-swarm-plan-new.1, …)
    /// under ~/.local/share/man/man1 (or --dir) instead of printing one.
    #[arg(long)]
    pub install: bool,
    /// Directory to install into (a man1 directory).
    #[arg(long, value_name = "DIR", requires = "install")]
    pub dir: Option<PathBuf>,
}

pub fn init(g: &Global, a: InitArgs) -> Result<Output> {
    let ctx = g.ctx_with_remote(a.remote.as_deref())?;
    let hosts = a
        .agents
        .iter()
        .filter(|h| !h.trim().is_empty())
        .map(|h| {
            git_swarm::model::agent::Host::parse(h.trim()).ok_or_else(|| {
                git_swarm::error::Error::new(
                    git_swarm::error::Code::Usage,
                    format!("unknown agent host '{h}'"),
                )
                .hint("use claude, codex or gemini")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let done =
        git_swarm::workflow::init::init(&ctx, a.remote.as_deref(), a.no_hooks, a.no_protect)?;
    let mut text = String::new();
    let agents = if hosts.is_empty() {
        None
    } else {
        let opts = git_swarm::workflow::agent::install::Options {
            hosts,
            ..Default::default()
        };
        Some(git_swarm::workflow::agent::install::install(&ctx, &opts)?)
    };
    if done.actions.is_empty()
        && agents
            .as_ref()
            .is_none_or(|a| a.files.iter().all(|f| f.action == "unchanged"))
    {
        text.push_str("already swarm-ready: nothing to change\n");
    }
    for a in &done.actions {
        text.push_str(a);
        text.push('\n');
    }
    if let Some(hint) = done.trust_hint.as_deref().filter(|_| done.changed) {
        text.push_str(&format!("note: {hint}\n"));
    }
    let mut json = serde_json::to_value(&done).expect("serialisable");
    if let Some(ag) = &agents {
        for f in ag.files.iter().filter(|f| f.action != "unchanged") {
            text.push_str(&format!("agent hooks: {} {}\n", f.action, f.path));
        }
        json["agents"] = serde_json::to_value(ag).expect("serialisable");
    }
    Ok(Output::new(json, text))
}

pub fn status(g: &Global, a: StatusArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    git_swarm::workflow::status::status(&ctx, a.plan.as_deref()).map(status_output)
}

fn status_output(view: StatusView) -> Output {
    let mut text = String::new();
    if view.plans.is_empty() && view.unreadable.is_empty() {
        text.push_str("no plans yet: create one with `git swarm plan new <plan>`\n");
    }
    render_plans(&view.plans, 0, view.now, &mut text);
    let (open, blocked) = view.attention();
    if open + blocked > 0 {
        text.push_str(&format!(
            "needs attention: {}, {}\n",
            count(open, "open packet", "open packets"),
            count(blocked, "blocked lane", "blocked lanes")
        ));
    }
    if view.reservations > 0 {
        text.push_str(&format!(
            "{} live (`git swarm reservations`)\n",
            count(view.reservations, "reservation", "reservations")
        ));
    }
    if let Some(m) = &view.mirror {
        text.push_str(&m.text(view.now));
    }
    if view.unpublished > 0 {
        text.push_str(&format!(
            "{} not published: `git swarm sync` publishes {}\n",
            git_swarm::output::count(view.unpublished, "local change", "local changes"),
            if view.unpublished == 1 { "it" } else { "them" }
        ));
    }
    report_unreadable(Output::listing(&view, text), &view.unreadable)
}

/// A plan's last forecast: its count, age, and whether lanes moved since.
fn forecast_line(f: &git_swarm::ctx::forecast::Seen, now: jiff::Timestamp) -> String {
    let age =
        f.at.parse::<jiff::Timestamp>()
            .map(|t| git_swarm::store::mirror::ago(now, t))
            .unwrap_or_else(|_| f.at.clone());
    let mut line = format!("forecast: {}", count(f.conflicts, "conflict", "conflicts"));
    if f.reserved > 0 {
        line.push_str(&format!(
            ", {} reserved by others",
            count(f.reserved, "changed path", "changed paths")
        ));
    }
    line.push_str(&format!(" ({age} ago"));
    if f.moved {
        line.push_str("; lanes moved since: `git swarm forecast`");
    }
    line.push(')');
    line
}

/// The plan tree as `status` shows it, children indented under parents.
fn render_plans(nodes: &[PlanStatus], indent: usize, now: jiff::Timestamp, out: &mut String) {
    for n in nodes {
        let pad = "  ".repeat(indent);
        let lead = match (&n.leader, n.epoch) {
            (Some(l), Some(e)) => format!("lead {l} (epoch {e})"),
            (None, Some(e)) => format!("no leader (epoch {e})"),
            _ => "no leader".to_string(),
        };
        out.push_str(&format!(
            "{pad}{} [{}] — {} — {lead}\n",
            n.plan,
            n.status,
            cut(&n.title, TITLE_WIDTH)
        ));
        for lane in &n.lanes {
            out.push_str(&format!(
                "{pad}  lane {} on {} owner {}{}\n",
                lane.feature,
                lane.branch.as_deref().unwrap_or("?"),
                lane.owner.as_deref().unwrap_or("-"),
                lane.state
                    .as_deref()
                    .map(|s| format!(" ({s})"))
                    .unwrap_or_default()
            ));
            if let Some(r) = &lane.blocked {
                out.push_str(&format!(
                    "{pad}    {} (reported by {} at {})\n",
                    cut(&r.text, 72),
                    r.by,
                    r.at
                ));
            }
        }
        if let Some(t) = &n.tasks {
            render_tasks(t, &pad, out);
        }
        if n.reservations > 0 {
            out.push_str(&format!(
                "{pad}  {} held by its lane owners\n",
                count(n.reservations, "reservation", "reservations")
            ));
        }
        if let Some(f) = &n.forecast {
            out.push_str(&format!("{pad}  {}\n", forecast_line(f, now)));
        }
        for p in &n.open_packets {
            out.push_str(&format!(
                "{pad}  packet {} open: {} by {}{} — `git swarm accept {}`\n",
                p.id,
                p.reason,
                p.author,
                p.branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default(),
                p.id
            ));
        }
        render_plans(&n.children, indent + 1, now, out);
    }
}

pub fn demo(_g: &Global, a: DemoArgs) -> Result<Output> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot find the git-swarm binary: {e}"),
        )
    })?;
    let done = git_swarm::workflow::demo::run(&exe, a.keep, &mut std::io::stderr())?;
    let mut text = format!(
        "demo complete: {} ran as expected\n",
        count(done.steps.len(), "step", "steps")
    );
    if let Some(k) = &done.kept {
        text.push_str(&format!("the repositories are kept in {k}\n"));
    }
    Ok(Output::new(&done, text))
}

pub fn sync(g: &Global, a: SyncArgs) -> Result<Output> {
    if g.offline {
        return Err(Error::new(
            Code::Usage,
            "sync talks to the remote: it cannot run with --offline",
        ));
    }
    let ctx = g.ctx_with_remote(a.remote.as_deref())?;
    let actor = ctx.actor_opt()?.unwrap_or_else(|| "git-swarm".to_string());
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut progress = |step: &str| {
        if tty {
            say!("sync: {step}");
        }
    };
    let report = git_swarm::workflow::sync::sync(&ctx, &actor, &mut progress)?;
    eprint!("{}", super::sync::warnings_text(&report));
    if let Some(err) = super::sync::conflict_error(&report) {
        if !g.json {
            super::emit(
                &mut std::io::stdout().lock(),
                &super::sync::render(&report).text,
            );
        }
        return Err(err);
    }
    Ok(super::sync::render(&report))
}

pub fn gc(g: &Global, a: GcArgs) -> Result<Output> {
    let ctx = g.ctx()?;
    let age = match a.older_than {
        Some(text) => git_swarm::clock::parse_duration(&text)?,
        None => git_swarm::workflow::gc::configured_age(&ctx.store)?,
    };
    let actor = ctx.actor_opt()?.unwrap_or_else(|| "git-swarm".to_string());
    let report = git_swarm::workflow::gc::gc(&ctx.store, &actor, age, a.dry_run)?;
    Ok(super::gc::render(&report))
}

/// Which names a command line wants at its cursor, if any: `--plan`/`--parent`
/// values and plan positionals want plans, `--lane` and lane positionals
/// lanes, `packet show` / `accept` packets.
pub fn completion_kind(words: &[String]) -> Option<git_swarm::complete::Kind> {
    use git_swarm::complete::Kind;
    let (cur_index, _) = words.iter().enumerate().next_back()?;
    let prev = cur_index.checked_sub(1).map(|i| words[i].as_str());
    match prev {
        Some("--plan") | Some("--parent") => return Some(Kind::Plans),
        Some("--lane") => return Some(Kind::Lanes),
        _ => {}
    }
    if words[cur_index].starts_with('-') {
        return None;
    }
    // The subcommand path, and how many positionals precede the cursor.
    let cmd = Cli::command();
    let mut node = &cmd;
    let mut path: Vec<&str> = Vec::new();
    let mut positionals = 0;
    let mut skip = false;
    for w in &words[..cur_index] {
        if skip {
            skip = false;
            continue;
        }
        if let Some(flag) = w.strip_prefix("--") {
            // A long option that takes a value consumes the next word.
            let takes_value = node
                .get_arguments()
                .chain(cmd.get_arguments())
                .find(|a| a.get_long() == Some(flag))
                .is_some_and(|a| a.get_action().takes_values());
            skip = takes_value;
            continue;
        }
        if w.starts_with('-') {
            continue;
        }
        match node.find_subcommand(w) {
            Some(sub) if positionals == 0 => {
                path.push(sub.get_name());
                node = sub;
            }
            _ => positionals += 1,
        }
    }
    match (path.as_slice(), positionals) {
        (["plan", "show" | "log" | "close" | "reopen" | "save" | "checkout"], 0) => {
            Some(Kind::Plans)
        }
        (["lane", "rm"], 0) | (["verify", "lane"], 0) => Some(Kind::Lanes),
        (["packet", "show"], 0) | (["accept"], 0) => Some(Kind::Packets),
        (["report"], 1) if words.get(cur_index - 1).map(String::as_str) == Some("handoff") => {
            Some(Kind::Packets)
        }
        _ => None,
    }
}

/// `git swarm __complete -- <words…>` (handled before clap parses, so it
/// appears in no help, man page or completion list): the words after
/// `git swarm` up to the cursor, the last being completed. Never fails (a
/// completion must not print errors into the prompt); prints nothing when
/// no names fit.
pub fn complete(words: &[String]) -> String {
    let names = completion_kind(words)
        .and_then(|kind| {
            let cwd = std::env::current_dir().ok()?;
            let ctx = git_swarm::ctx::Ctx::open_without_remote(&cwd, None, true).ok()?;
            let remote = ctx.store.config("swarm.remote").or_else(|| {
                ctx.store
                    .config("remote.origin.url")
                    .map(|_| "origin".to_string())
            });
            let prefix = words.last().map(String::as_str).unwrap_or("");
            git_swarm::complete::names(&ctx.store, remote.as_deref(), kind, prefix).ok()
        })
        .unwrap_or_default();
    names.iter().map(|n| format!("{n}\n")).collect()
}

pub fn completions(a: CompletionsArgs) -> Result<Output> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    let text = if a.shell == clap_complete::Shell::Bash {
        // clap_complete rewrites the `-` of a bin name two different ways
        // in bash scripts, so nested completion would never match: generate
        // for `git_swarm`, then register the function for `git-swarm` and
        // bridge git's own call for `git swarm <TAB>` (`_git_swarm`).
        clap_complete::generate(a.shell, &mut cmd, "git_swarm", &mut buf);
        let generated = String::from_utf8_lossy(&buf)
            .replace("_git_swarm() {", "__git_swarm_static() {")
            .replace("complete -F _git_swarm ", "complete -F __git_swarm_clap ")
            .replace(" git_swarm\n", " git-swarm\n");
        format!(
            "{generated}\n{}",
            include_str!("../../templates/completion-bridge.bash")
        )
    } else {
        clap_complete::generate(a.shell, &mut cmd, "git-swarm", &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    };
    Ok(Output::new(
        serde_json::json!({ "shell": a.shell.to_string(), "script": text }),
        text,
    ))
}

/// The command tree as the man pages name it: `git-swarm`, with each
/// subcommand's display name `git-swarm-<sub>[-<subsub>]`.
fn man_command() -> clap::Command {
    let mut cmd = Cli::command()
        .name("git-swarm")
        .bin_name("git swarm")
        .disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// One page per command and subcommand, parents first: (file name, roff).
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
        let man = clap_mangen::Man::new(cmd.clone())
            .source(format!("git-swarm {}", env!("CARGO_PKG_VERSION")));
        let mut buf = Vec::new();
        man.render(&mut buf)
            .map_err(|e| Error::new(Code::IoFailed, format!("cannot render the man page: {e}")))?;
        out.push((man.get_filename(), buf));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&man_command(), &mut out)?;
    Ok(out)
}

/// The page name for a command path: `[]` → git-swarm, `[lead, claim]` →
/// git-swarm-lead-claim. Words that are not subcommands end the path.
pub fn page_for(words: &[String]) -> String {
    let mut cmd = man_command();
    let mut name = "git-swarm".to_string();
    for w in words {
        let Some(sub) = cmd.find_subcommand(w).cloned() else {
            break;
        };
        name = format!("{name}-{}", sub.get_name());
        cmd = sub;
    }
    name
}

pub fn man(_g: &Global, a: ManArgs) -> Result<Output> {
    let pages = man_pages()?;
    if !a.install {
        let wanted = format!("{}.1", page_for(&a.command));
        if wanted == "git-swarm.1" && !a.command.is_empty() {
            return Err(Error::new(
                Code::Usage,
                format!("'{}' is not a git swarm command", a.command.join(" ")),
            )
            .hint("see `git swarm -h` for the commands"));
        }
        let (_, buf) = pages
            .iter()
            .find(|(name, _)| *name == wanted)
            .expect("every command path has a page");
        let text = String::from_utf8_lossy(buf).into_owned();
        return Ok(Output::new(
            serde_json::json!({ "name": wanted, "page": text }),
            text,
        ));
    }
    let dir = match a.dir {
        Some(d) => d,
        None => {
            let home = std::env::var_os("HOME").ok_or_else(|| {
                Error::new(Code::IoFailed, "HOME is not set").hint("pass --dir <man1 directory>")
            })?;
            PathBuf::from(home).join(".local/share/man/man1")
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| git_swarm::ctx::plan::io_error(&dir, e))?;
    let mut installed = Vec::new();
    for (name, buf) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, buf).map_err(|e| git_swarm::ctx::plan::io_error(&path, e))?;
        installed.push(path.display().to_string());
    }
    let text = format!(
        "installed {} in {} (git-swarm.1, git-swarm-plan.1, git-swarm-lead-claim.1, …)\n`git swarm --help`, `git help swarm` and `man git-swarm-plan` now work if {} is on your MANPATH\n",
        git_swarm::output::count(installed.len(), "man page", "man pages"),
        dir.display(),
        dir.parent().unwrap_or(&dir).display()
    );
    Ok(Output::new(
        serde_json::json!({ "dir": dir.display().to_string(), "installed": installed }),
        text,
    ))
}

/// A plan's task lines in `status`.
fn render_tasks(t: &git_swarm::workflow::status::PlanTasks, pad: &str, out: &mut String) {
    let list = |l: &[String]| {
        if l.is_empty() {
            "-".to_string()
        } else {
            l.join(", ")
        }
    };
    let claims: Vec<String> = t
        .in_progress
        .iter()
        .map(|c| {
            let mut holder = c.holder.as_deref().unwrap_or("-").to_string();
            if let Some(l) = &c.lane {
                holder.push_str(&format!(", lane {l}"));
            }
            if c.expired {
                format!("{} ({holder}, lease EXPIRED)", c.id)
            } else {
                format!(
                    "{} ({holder}, {}m left)",
                    c.id,
                    c.lease_left_secs.div_euclid(60)
                )
            }
        })
        .collect();
    out.push_str(&format!(
        "{pad}  tasks: ready {}; in progress {}; blocked {}; done {}\n",
        list(&t.ready),
        list(&claims),
        list(&t.blocked),
        list(&t.done)
    ));
}
