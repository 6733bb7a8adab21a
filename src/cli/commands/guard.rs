//! `git swarm hook …` and `git swarm check …`

use std::io::{IsTerminal, Read};
use std::path::Path;

use crate::cli::output::Output;
use crate::cli::spec::{Facts, Spec};
use clap::Args;
use git_swarm::error::{Code, Error, Result};
use git_swarm::guards::{self, Findings};

use crate::cli::Global;

/// What each command of this group is (see [`crate::cli::spec`]).
pub const SPECS: &[Spec] = &[
    Spec::new("hook", Facts::APART),
    Spec::new("check", Facts::READ.and(Facts::QUIET).and(Facts::NO_FLUSH)),
];

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
    let ctx = guards::open(g.as_.clone())?;
    let findings = match a.hook.as_str() {
        "pre-commit" => guards::pre_commit(&ctx)?,
        "commit-msg" => {
            let file = a.args.first().ok_or_else(|| {
                Error::new(
                    Code::Usage,
                    "hook commit-msg needs the message file git passes",
                )
            })?;
            guards::commit_msg(&ctx, Path::new(file))?
        }
        "pre-push" => {
            // The framework passes no arguments, only PRE_COMMIT_REMOTE_NAME.
            let remote = a
                .args
                .first()
                .cloned()
                .or_else(|| std::env::var("PRE_COMMIT_REMOTE_NAME").ok())
                .unwrap_or_default();
            let input = match framework_pre_push_input(&ctx)? {
                Some(input) => {
                    if ctx
                        .store
                        .config_all("swarm.protect")
                        .iter()
                        .any(|p| !p.trim().is_empty())
                    {
                        say!("git swarm: warning: {FRAMEWORK_WARNING}");
                    }
                    input
                }
                None => pre_push_input()?,
            };
            let findings = guards::pre_push(&ctx, &remote, &input)?;
            if findings.violations.is_empty() {
                super::forecast::warn_pre_push(&ctx, &input);
            }
            findings
        }
        other => {
            return Err(Error::new(Code::Usage, format!("unknown hook '{other}'"))
                .hint("git swarm hook takes pre-commit, commit-msg or pre-push"))
        }
    };
    print_notes(&findings);
    let refused = match a.hook.as_str() {
        "pre-push" => "push refused",
        _ => "commit refused",
    };
    // Hooks are quiet when all is well: git prints their stdout.
    into_output(findings, refused, String::new())
}

pub fn check(g: &Global, a: CheckArgs) -> Result<Output> {
    let ctx = guards::open(g.as_.clone())?;
    if let Some(range) = a.range.as_deref() {
        let (findings, range) = guards::check_range(&ctx, range)?;
        print_notes(&findings);
        let text = format!(
            "ok: {} in {}..{} pass {}\n",
            crate::cli::output::count(range.commits, "commit", "commits"),
            range.base,
            range.head,
            findings.guards.join(", ")
        );
        let out = into_output(findings, &format!("{}..{}", range.base, range.head), text);
        return out.map(|mut o| {
            o.json["range"] = serde_json::to_value(&range).expect("serialisable");
            o
        });
    }
    let findings = guards::pre_commit(&ctx)?;
    print_notes(&findings);
    let text = format!(
        "ok: the staged changes pass {}\n",
        findings.guards.join(", ")
    );
    into_output(findings, "staged changes", text)
}

/// Notes (warn-mode reservations, expired ones) go to stderr, as every
/// warning does (also under `--json`, which carries them too).
fn print_notes(findings: &Findings) {
    for note in &findings.notes {
        say!("git swarm: {note}");
    }
}

/// Exit 0 with a summary, or `GUARD_FAILED` (exit 1) listing every violation.
fn into_output(findings: Findings, refused: &str, text_ok: String) -> Result<Output> {
    if findings.violations.is_empty() {
        let json = serde_json::json!({
            "ok": true,
            "guards": findings.guards,
            "notes": findings.notes,
        });
        return Ok(Output::new(json, text_ok));
    }
    Err(
        Error::new(Code::GuardFailed, violations_text(&findings, refused))
            .hint("the guards are described in docs/hooks.md (\"Hooks and guards\")")
            .with_detail(serde_json::json!({
                "guards": findings.guards,
                "violations": findings.violations,
                "notes": findings.notes,
            })),
    )
}

/// The message of a refusal: how many violations, then each with its fix.
fn violations_text(findings: &Findings, refused: &str) -> String {
    let n = findings.violations.len();
    let mut msg = format!(
        "{refused}: {n} guard violation{}",
        if n == 1 { "" } else { "s" }
    );
    for v in &findings.violations {
        let at = v
            .commit
            .as_deref()
            .map(|c| format!(" (commit {})", &c[..c.len().min(12)]))
            .unwrap_or_default();
        msg.push_str(&format!(
            "\n  [{}] {}{at}: {}\n    fix: {}",
            v.guard, v.subject, v.problem, v.fix
        ));
    }
    msg
}

/// Said on stderr when fenced-publish runs under the pre-commit framework
/// with `swarm.protect` set (see `framework_pre_push_input`).
const FRAMEWORK_WARNING: &str = "the pre-commit framework does not pass every pushed ref; install the native hook with `git swarm init`";

/// Under the pre-commit framework (`PRE_COMMIT_REMOTE_BRANCH` or
/// `PRE_COMMIT_TO_REF` set), the one ref update it passes, as a git
/// pre-push line. The framework reads git's ref list itself and passes only
/// the first update that is not a deletion and has commits the remote lacks;
/// it skips deletions, and does not run the hook at all when the pushed
/// commits are already on the remote. So `git push origin :main`,
/// `git push origin feat/x:main` of merged work and the other refs of a
/// multi-ref push never reach us: fenced-publish needs the native hook. We
/// check what we are given rather than fail closed (which would refuse every
/// push of a framework user) and warn when `swarm.protect` is set.
fn framework_pre_push_input(ctx: &git_swarm::session::Ctx) -> Result<Option<String>> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let to = var("PRE_COMMIT_TO_REF");
    let Some(remote) = var("PRE_COMMIT_REMOTE_BRANCH") else {
        // Without the remote branch there is nothing to check the fence on.
        return Ok(to.map(|to| {
            let from = var("PRE_COMMIT_FROM_REF").unwrap_or_else(|| "0".repeat(40));
            let local = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_else(|| "HEAD".into());
            format!("{local} {to} - {from}\n")
        }));
    };
    let local = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_else(|| "HEAD".into());
    let to = match to {
        Some(to) => to,
        // A push of history with a root commit: the framework passes no
        // commits ("all files"), only the branches.
        None => ctx
            .store
            .git
            .rev_parse(&local)
            .map_err(|e| {
                guards::unreadable(
                    "fenced-publish",
                    format!("the pushed ref {local}"),
                    e.message,
                )
            })?
            .ok_or_else(|| {
                guards::unreadable(
                    "fenced-publish",
                    format!("the pushed ref {local}"),
                    "it names no commit",
                )
            })?,
    };
    let from = var("PRE_COMMIT_FROM_REF").unwrap_or_else(|| "0".repeat(40));
    Ok(Some(format!("{local} {to} {remote} {from}\n")))
}

/// The pre-push ref lines git writes on stdin (the native hook).
fn pre_push_input() -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(String::new());
    }
    let mut input = String::new();
    stdin
        .lock()
        .read_to_string(&mut input)
        .map_err(|e| guards::unreadable("fenced-publish", "the pre-push ref list on stdin", e))?;
    Ok(input)
}
