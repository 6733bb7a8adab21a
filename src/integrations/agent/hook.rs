//! `git swarm agent hook <event> --host <host>`: one host event in, that
//! host's answer out. A hook never prompts and never fails the agent's
//! turn on our account: outside a swarm repository it says nothing, and an
//! error inside is a warning line on stderr with no answer (pre-tool-use:
//! the call is allowed; the commit guard still refuses the commit).
//!
//! - session-start: the agent's situation ([`super::context`]);
//! - pre-tool-use: deny a file-writing tool call on a path someone else
//!   reserved, from local state only (no network, no process);
//! - user-prompt-submit: messages addressed to this agent by name (and
//!   urgent ones to `all`) not shown before, each once;
//! - stop: [`super::stop`];
//! - post-tool-use: renew the agent's own claim and reservations once past
//!   half their lease.

use std::path::{Component, Path, PathBuf};

use crate::error::{Code, Error, Result};
use crate::records::agent::{Answer, Event, Input};
use crate::session::{Ctx, Network};

use super::inbox::{message_lines, unshown};

/// A hook's answer and the warning to print (stderr) when something failed.
pub struct Hooked {
    pub answer: Answer,
    pub warning: Option<String>,
}

/// Run one hook (the answer is host-neutral: [`crate::records::agent::render`] words it). `as_flag` is the global `--as`.
pub fn run(event: Event, input: &Input, as_flag: Option<String>) -> Hooked {
    let cwd = input
        .cwd
        .as_deref()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .or_else(|| std::env::current_dir().ok());
    let Some(cwd) = cwd else {
        return quiet();
    };
    // Pre-tool-use reads local state only: the guards' session (offline).
    let ctx = if event == Event::PreToolUse {
        Ctx::open_for_guards(&cwd, as_flag)
    } else {
        // The hook is a command of its own.
        let run = std::sync::Arc::default();
        Ctx::open(&cwd, as_flag.clone(), Network::Online, None, &run)
            .or_else(|_| Ctx::open_without_remote(&cwd, as_flag, Network::Online, &run))
    };
    let ctx = match ctx {
        Ok(ctx) => ctx,
        // A swarm setting or variable that cannot be used (a typo in
        // swarm.trust, say): every command here refuses, so say why rather
        // than answer as if this were not a swarm repository.
        Err(e) if matches!(e.code, Code::ConfigInvalid | Code::EnvInvalid) => {
            return failed(event, &e);
        }
        // Not a git repository (or not one we can open): not ours.
        Err(_) => return quiet(),
    };
    if !is_swarm_repo(&ctx) {
        return quiet();
    }
    let result = match event {
        Event::SessionStart => super::context::session_start_with(&ctx, |me, plan, in_lane| {
            capacity_lines(&ctx, input, me, plan, in_lane)
        })
        .map(Answer::Context),
        Event::PreToolUse => pre_tool_use(&ctx, &cwd, input),
        Event::UserPromptSubmit => user_prompt(&ctx),
        Event::Stop => super::stop::stop(&ctx, input),
        Event::PostToolUse => {
            super::renew::post_tool_use(&ctx).map(|_| after_long_step(&ctx, input))
        }
    };
    match result {
        Ok(Answer::Context(t)) if t.trim().is_empty() => quiet(),
        Ok(answer) => Hooked {
            answer,
            warning: None,
        },
        Err(e) => failed(event, &e),
    }
}

/// The capacity check of the session-start boundary (after the "You are"
/// line, so that a cut never drops it) and the plan's budget when it is
/// reached.
fn capacity_lines(ctx: &Ctx, input: &Input, me: &str, plan: Option<&str>, in_lane: bool) -> String {
    if !super::capacity::enabled(ctx) {
        return String::new();
    }
    let context = super::capacity::context_of(ctx, input.transcript_path.as_deref());
    let c = super::capacity::check_in(ctx, me, plan, in_lane, context);
    let mut add = c.line();
    if let Some(a) = &c.advice {
        add.push_str(a);
    }
    if let Some(note) = plan.and_then(|p| super::capacity::budget_note(ctx, me, p)) {
        add.push_str(&note);
    }
    add
}

/// Post-tool-use after a command that ran longer than
/// [`super::capacity::LONG_STEP_MS`]: a task boundary; the advice, if any.
fn after_long_step(ctx: &Ctx, input: &Input) -> Answer {
    if input
        .duration_ms
        .is_none_or(|d| d < super::capacity::LONG_STEP_MS)
    {
        return Answer::Nothing;
    }
    let Ok(Some(me)) = ctx.actor_opt() else {
        return Answer::Nothing;
    };
    if !super::capacity::enabled(ctx) {
        return Answer::Nothing;
    }
    let plan = super::context::plan_of(ctx, ctx.lane_here().as_ref());
    let context = super::capacity::context_of(ctx, input.transcript_path.as_deref());
    match super::capacity::check(ctx, &me, plan.as_deref(), context).advice {
        Some(a) => Answer::Context(a),
        None => Answer::Nothing,
    }
}

/// No answer, and one warning line saying what failed.
fn failed(event: Event, e: &Error) -> Hooked {
    Hooked {
        answer: Answer::Nothing,
        warning: Some(match event {
            Event::PreToolUse => format!(
                "git swarm agent hook {}: allowed, the reservation check failed: {} (the commit guard still checks)",
                event.as_str(),
                e.message
            ),
            _ => format!(
                "git swarm agent hook {}: skipped: {}",
                event.as_str(),
                e.message
            ),
        }),
    }
}

fn quiet() -> Hooked {
    Hooked {
        answer: Answer::Nothing,
        warning: None,
    }
}

/// A repository git-swarm works in: `init` ran here (the hooks, or a
/// remote or identity configured), or it holds swarm state. Cheap: config
/// and two paths, no process. A hook installed at user scope says nothing
/// anywhere else.
pub fn is_swarm_repo(ctx: &Ctx) -> bool {
    let store = &ctx.store;
    if ["swarm.remote", "swarm.as"]
        .iter()
        .any(|k| store.config(k).is_some())
    {
        return true;
    }
    let common = store.common_dir();
    common.join("swarm").is_dir()
        || std::fs::read_to_string(common.join("hooks").join("pre-commit"))
            .is_ok_and(|t| t.contains(crate::worktree::setup::BEGIN))
}

/// The repository-relative form of a path a tool got (absolute, or
/// relative to the agent's `cwd`); None outside the working tree.
pub fn relative(workdir: &Path, cwd: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let abs = normalize(&abs);
    let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    // The file may not exist yet: resolve its longest existing ancestor.
    let mut existing = abs.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        let name = existing.file_name()?.to_os_string();
        rest.push(name);
        existing = existing.parent()?.to_path_buf();
    }
    let mut real = std::fs::canonicalize(&existing).ok()?;
    for name in rest.iter().rev() {
        real.push(name);
    }
    let rel = real.strip_prefix(&root).ok()?;
    let text = rel.to_str()?.replace('\\', "/");
    (!text.is_empty()).then_some(text)
}

/// `a/./b/../c` → `a/c`, lexically.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Deny a file-writing tool call on a path someone else reserved.
fn pre_tool_use(ctx: &Ctx, cwd: &Path, input: &Input) -> Result<Answer> {
    let paths = input.written_paths();
    if paths.is_empty() {
        return Ok(Answer::Nothing);
    }
    let Some(workdir) = ctx.store.workdir() else {
        return Ok(Answer::Nothing);
    };
    let rel: Vec<String> = paths
        .iter()
        .filter_map(|p| relative(workdir, cwd, p))
        .collect();
    if rel.is_empty() {
        return Ok(Answer::Nothing);
    }
    let held = crate::guards::reserved::held_by_others(ctx, &rel)?;
    let Some((path, e)) = held.first() else {
        return Ok(Answer::Nothing);
    };
    let task = e
        .task
        .as_deref()
        .map(|t| format!(" for task {t}"))
        .unwrap_or_default();
    Ok(Answer::Deny(format!(
        "git swarm: {path} is reserved by {holder} ({id}{task}) until {until}; do not write it. Ask for it: `git swarm ask {holder} \"may I edit {path}? ({id})\"`, then `git swarm wait --for message`; or wait until the lease ends, or leave {path} out of your change. `git swarm reservations` lists who holds what.",
        holder = e.holder,
        id = e.id,
        until = e.lease_until,
    )))
}

/// New messages for this agent, each once, as context for its prompt.
fn user_prompt(ctx: &Ctx) -> Result<Answer> {
    let Some(me) = ctx.actor_opt()? else {
        return Ok(Answer::Nothing);
    };
    let fresh = unshown(ctx, &me)?;
    if fresh.is_empty() {
        return Ok(Answer::Nothing);
    }
    Ok(Answer::Context(format!(
        "git swarm: new for {me}:\n{}",
        message_lines(&fresh)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_relative_to_the_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src")).unwrap();
        let abs = root.join("src/new.rs");
        assert_eq!(
            relative(&root, &root, abs.to_str().unwrap()).as_deref(),
            Some("src/new.rs")
        );
        assert_eq!(
            relative(&root, &root.join("src"), "../a/./b.txt").as_deref(),
            Some("a/b.txt")
        );
        assert_eq!(relative(&root, &root, "/elsewhere/x"), None);
        assert_eq!(relative(&root, &root, "../outside"), None);
    }
}
