//! `git swarm completions` and the hidden `__complete` that bash calls.

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::{Args, CommandFactory};
use git_swarm::error::Result;

use crate::cli::Cli;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[Spec::new("completions", Facts::APART)];

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell (bash also completes plan, lane and packet names).
    pub shell: clap_complete::Shell,
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
            let ctx = git_swarm::session::Ctx::open_without_remote(
                &cwd,
                None,
                git_swarm::session::Network::Offline,
                &Default::default(),
            )
            .ok()?;
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
            include_str!("../../../templates/completion-bridge.bash")
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
