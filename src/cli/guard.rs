//! `git swarm hook …` and `git swarm check …`

use std::io::{IsTerminal, Read};
use std::path::Path;

use clap::Args;
use git_swarm::error::{Error, Result};
use git_swarm::guard;
use git_swarm::output::Output;

use super::Global;

#[derive(Debug, Args)]
pub struct HookArgs {
    /// pre-commit, commit-msg or pre-push.
    pub hook: String,
    /// The arguments git passed to the hook.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["staged", "range"])))]
pub struct CheckArgs {
    /// Check what is staged in the index.
    #[arg(long)]
    pub staged: bool,
    /// Check every commit in BASE..HEAD.
    #[arg(long, value_name = "BASE..HEAD")]
    pub range: Option<String>,
}

pub fn hook(g: &Global, a: HookArgs) -> Result<Output> {
    let ctx = guard::open(g.as_.clone())?;
    let findings = match a.hook.as_str() {
        "pre-commit" => guard::pre_commit(&ctx)?,
        "commit-msg" => {
            let file = a.args.first().ok_or_else(|| {
                Error::usage("USAGE", "hook commit-msg needs the message file git passes")
            })?;
            guard::commit_msg(&ctx, Path::new(file))?
        }
        "pre-push" => {
            let remote = a.args.first().map(String::as_str).unwrap_or("");
            let input = pre_push_input()?;
            guard::pre_push(&ctx, remote, &input)?
        }
        other => {
            return Err(Error::usage("USAGE", format!("unknown hook '{other}'"))
                .hint("git swarm hook takes pre-commit, commit-msg or pre-push"))
        }
    };
    for note in &findings.notes {
        eprintln!("git swarm: {note}");
    }
    let refused = match a.hook.as_str() {
        "pre-push" => "push refused",
        _ => "commit refused",
    };
    // Hooks are quiet when all is well: git prints their stdout.
    findings.into_output(refused, String::new())
}

pub fn check(g: &Global, a: CheckArgs) -> Result<Output> {
    let ctx = guard::open(g.as_.clone())?;
    if let Some(range) = a.range.as_deref() {
        let (findings, range) = guard::check_range(&ctx, range)?;
        let text = format!(
            "ok: {} commit(s) in {}..{} pass {}\n",
            range.commits,
            range.base,
            range.head,
            findings.guards.join(", ")
        );
        let out = findings.into_output(&format!("{}..{}", range.base, range.head), text);
        return out.map(|mut o| {
            o.json["range"] = serde_json::to_value(&range).expect("serialisable");
            o
        });
    }
    let findings = guard::pre_commit(&ctx)?;
    let text = format!(
        "ok: the staged changes pass {}\n",
        findings.guards.join(", ")
    );
    findings.into_output("staged changes", text)
}

/// The pre-push ref lines: git writes them on stdin; the pre-commit
/// framework reads stdin itself and passes one update in PRE_COMMIT_* variables.
fn pre_push_input() -> Result<String> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let Some(to) = var("PRE_COMMIT_TO_REF") {
        let from = var("PRE_COMMIT_FROM_REF").unwrap_or_else(|| "0".repeat(40));
        let local = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_else(|| "HEAD".into());
        let remote = var("PRE_COMMIT_REMOTE_BRANCH").unwrap_or_else(|| "-".into());
        return Ok(format!("{local} {to} {remote} {from}\n"));
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(String::new());
    }
    let mut input = String::new();
    stdin
        .lock()
        .read_to_string(&mut input)
        .map_err(|e| guard::unreadable("fenced-publish", "the pre-push ref list on stdin", e))?;
    Ok(input)
}
