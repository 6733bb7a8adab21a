//! `git swarm agent install`: make the hooks active for the agents of a
//! host, without a commit nobody asked for.
//!
//! Where. A host reads its project settings from the checkout the agent
//! runs in, and a lane worktree (`_swarm-worktrees/<f>`) is a checkout of
//! its own: settings in the main checkout are not seen there. So project
//! scope writes the host's personal, untracked settings file into the main
//! checkout and into every lane worktree of this clone, and records the
//! hosts in `git config swarm.agentHosts`, so `lane new` and `accept` write
//! it into the worktrees they make later (`accept` on another machine:
//! once `agent install` ran in that clone). The files are named in
//! `.git/info/exclude`, so they never show as uncommitted work. `--user`
//! writes the host's user settings instead (one file for every repository;
//! outside a swarm repository the hooks exit at once and print nothing).
//!
//! | host   | project file (per checkout)    | user file                 |
//! |--------|--------------------------------|---------------------------|
//! | claude | `.claude/settings.local.json`  | `~/.claude/settings.json` |
//! | codex  | `.codex/hooks.json`            | `~/.codex/hooks.json`     |
//! | gemini | `.gemini/settings.json`        | `~/.gemini/settings.json` |
//!
//! Claude Code also gets the guide as a skill (`.claude/skills/git-swarm/
//! SKILL.md`), and the main checkout's `AGENTS.md` gets it as a managed
//! block (Codex and Gemini CLI read AGENTS.md; Claude through `@AGENTS.md`).
//!
//! How. Settings are merged as JSON keeping the order of every key and
//! hook already there (serde_json's `preserve_order`); our hooks are the
//! entries whose command runs `git-swarm agent hook`, refreshed in place
//! when present. Before a file is first changed its bytes (or its absence)
//! are kept under `<git common dir>/swarm/agent/backup/` (user scope:
//! `~/.local/state/git-swarm/agent-backup/`), with the bytes we wrote;
//! `--uninstall` puts the original bytes back when the file is still as we
//! left it, else removes only our entries.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::records::agent::{Event, Host, EVENTS};
use crate::session::Ctx;

pub use super::backup::Touched;
use super::backup::{check_target, put, read_opt, restore, write_file};
use super::guide;
use super::json::Json;

/// The git config key naming the hosts installed at project scope.
pub const HOSTS_KEY: &str = "swarm.agentHosts";
/// What marks a hook entry as ours.
pub const MARK: &str = "git-swarm agent hook";

#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub hosts: Vec<&'static str>,
    pub scope: &'static str,
    pub dry_run: bool,
    pub uninstall: bool,
    pub files: Vec<Touched>,
    /// The stop hook's timeout (seconds), sized for `swarm.agentIdleWait`.
    pub stop_timeout_secs: u64,
}

/// The command a host runs for `event`.
pub fn command(event: Event, host: Host) -> String {
    format!("{MARK} {} --host {}", event.as_str(), host.as_str())
}

/// Seconds a host gives each hook: the stop hook waits in idle mode.
pub fn timeout_secs(event: Event, idle: Option<std::time::Duration>) -> u64 {
    match event {
        Event::Stop => idle.map_or(60, |d| d.as_secs() + 60),
        Event::PreToolUse => 10,
        _ => 30,
    }
}

/// The settings file of `host` under `root` (a checkout, or the home
/// directory at user scope).
pub fn settings_path(root: &Path, host: Host, user: bool) -> PathBuf {
    match (host, user) {
        (Host::Claude, false) => root.join(".claude/settings.local.json"),
        (Host::Claude, true) => root.join(".claude/settings.json"),
        (Host::Codex, _) => root.join(".codex/hooks.json"),
        (Host::Gemini, _) => root.join(".gemini/settings.json"),
    }
}

pub const SKILL_PATH: &str = ".claude/skills/git-swarm/SKILL.md";

/// The paths (relative to a checkout) project scope writes, for
/// `.git/info/exclude`.
pub fn excluded(host: Host) -> Vec<&'static str> {
    match host {
        Host::Claude => vec![".claude/settings.local.json", SKILL_PATH],
        Host::Codex => vec![".codex/hooks.json"],
        Host::Gemini => vec![".gemini/settings.json"],
    }
}

/// `settings` with our hooks for `host` merged in (refreshed in place when
/// there): every other key and hook keeps its place.
pub fn merge(settings: &mut Json, host: Host, idle: Option<std::time::Duration>) -> Result<()> {
    let bad = |what: &str| {
        Error::new(
            Code::Usage,
            format!("the settings file's {what}; nothing was written"),
        )
        .hint("fix the file, then run `git swarm agent install` again")
    };
    let hooks = settings
        .entry("hooks", Json::obj)
        .ok_or_else(|| bad("content is no JSON object"))?;
    if !hooks.is_obj() {
        return Err(bad("\"hooks\" is not an object"));
    }
    for &event in EVENTS {
        let name = host.event_name(event);
        let ours = Json::Obj(vec![
            ("type".into(), Json::str("command")),
            ("command".into(), Json::str(command(event, host))),
            (
                "timeout".into(),
                Json::num(host.timeout_value(timeout_secs(event, idle))),
            ),
        ]);
        let groups = hooks
            .entry(name, || Json::Arr(Vec::new()))
            .and_then(Json::as_array_mut)
            .ok_or_else(|| bad(&format!("hooks.{name} is not a list")))?;
        let mut found = false;
        for g in groups.iter_mut() {
            if let Some(list) = g.get_mut("hooks").and_then(Json::as_array_mut) {
                for h in list.iter_mut().filter(|h| is_ours(h)) {
                    if !found {
                        found = true;
                        *h = ours.clone();
                    }
                }
            }
        }
        if !found {
            let mut group = Vec::new();
            if event == Event::PreToolUse {
                group.push(("matcher".to_string(), Json::str(host.write_matcher())));
            }
            group.push(("hooks".to_string(), Json::Arr(vec![ours])));
            groups.push(Json::Obj(group));
        }
    }
    Ok(())
}

/// Claude Code's status line command that records the capacity reading.
pub const STATUS_LINE: &str = "git-swarm capacity statusline";

/// `'…'` for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The inverse of [`sh_quote`] (None for anything else).
fn sh_unquote(s: &str) -> Option<String> {
    let body = s.strip_prefix('\'')?.strip_suffix('\'')?;
    let text = body.replace("'\\''", "\u{0}");
    (!text.contains('\'')).then(|| text.replace('\u{0}', "'"))
}

/// Claude Code's `statusLine`: ours, which records the rate limits and
/// context fill it receives and then prints what the user's previous
/// status line command printed (`--then '<command>'`), if there was one.
/// A second install keeps it as it is.
pub fn merge_status_line(settings: &mut Json) {
    let previous = match settings.get("statusLine") {
        Some(sl) => match sl.get("command").and_then(Json::as_str) {
            Some(c) if c.contains(STATUS_LINE) => return,
            Some(c) => Some(c.to_string()),
            None => return, // a status line of another type: left alone
        },
        None => None,
    };
    let command = match &previous {
        Some(c) => format!("{STATUS_LINE} --then {}", sh_quote(c)),
        None => STATUS_LINE.to_string(),
    };
    match settings.get_mut("statusLine").and_then(Json::as_obj_mut) {
        Some(m) => {
            for (k, v) in m.iter_mut() {
                if k == "command" {
                    *v = Json::str(command.clone());
                }
            }
        }
        None => {
            if let Some(sl) = settings.entry("statusLine", Json::obj) {
                *sl = Json::Obj(vec![
                    ("type".into(), Json::str("command")),
                    ("command".into(), Json::str(command)),
                ]);
            }
        }
    }
}

/// Undo [`merge_status_line`]: the user's command back, or no status line.
pub fn strip_status_line(settings: &mut Json) {
    let Some(c) = settings
        .get("statusLine")
        .and_then(|sl| sl.get("command"))
        .and_then(Json::as_str)
        .filter(|c| c.contains(STATUS_LINE))
        .map(str::to_string)
    else {
        return;
    };
    let previous = c
        .split_once(" --then ")
        .and_then(|(_, q)| sh_unquote(q.trim()));
    match previous {
        Some(p) => {
            if let Some(m) = settings.get_mut("statusLine").and_then(Json::as_obj_mut) {
                for (k, v) in m.iter_mut() {
                    if k == "command" {
                        *v = Json::str(p.clone());
                    }
                }
            }
        }
        None => settings.remove("statusLine"),
    }
}

fn is_ours(h: &Json) -> bool {
    h.get("command")
        .and_then(Json::as_str)
        .is_some_and(|c| c.contains(MARK))
}

/// `settings` without our hooks (and without the lists and the `hooks`
/// object that held only ours).
pub fn strip(settings: &mut Json) {
    let Some(hooks) = settings.get_mut("hooks").and_then(Json::as_obj_mut) else {
        return;
    };
    let mut emptied = Vec::new();
    for (name, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let before = groups.len();
        groups.retain_mut(|g| {
            let Some(list) = g.get_mut("hooks").and_then(Json::as_array_mut) else {
                return true;
            };
            let had = list.len();
            list.retain(|h| !is_ours(h));
            !(list.is_empty() && had > 0)
        });
        if groups.is_empty() && before > 0 {
            emptied.push(name.clone());
        }
    }
    hooks.retain(|(name, _)| !emptied.contains(name));
    if hooks.is_empty() {
        settings.remove("hooks");
    }
}

/// The hosts installed at project scope in this clone.
pub fn installed_hosts(ctx: &Ctx) -> Vec<Host> {
    ctx.store
        .config(HOSTS_KEY)
        .unwrap_or_default()
        .split(',')
        .filter_map(|h| Host::parse(h.trim()))
        .collect()
}

/// The files of `host` in one checkout (or the home directory): settings
/// and, for Claude Code, the skill.
fn host_files(
    root: &Path,
    host: Host,
    user: bool,
    idle: Option<std::time::Duration>,
    backups: &Path,
    dry: bool,
) -> Result<Vec<Touched>> {
    let path = settings_path(root, host, user);
    let mut settings: Json = match read_opt(&path)? {
        Some(b) if !b.iter().all(u8::is_ascii_whitespace) => {
            serde_json::from_slice(&b).map_err(|e| {
                Error::new(
                    Code::Usage,
                    format!(
                        "{} is not valid JSON ({e}); nothing was written",
                        path.display()
                    ),
                )
                .hint("fix the file, then run `git swarm agent install` again")
            })?
        }
        _ => Json::obj(),
    };
    merge(&mut settings, host, idle)
        .map_err(|e| Error::new(e.code, format!("{}: {}", path.display(), e.message)))?;
    if host == Host::Claude {
        merge_status_line(&mut settings);
    }
    let mut out = vec![put(backups, &path, settings.render().as_bytes(), dry)?];
    if host == Host::Claude {
        let skill = root.join(SKILL_PATH);
        out.push(put(backups, &skill, guide::skill().as_bytes(), dry)?);
    }
    Ok(out)
}

fn undo_host_files(
    root: &Path,
    host: Host,
    user: bool,
    backups: &Path,
    dry: bool,
) -> Result<Vec<Touched>> {
    let path = settings_path(root, host, user);
    let mut out: Vec<Touched> = restore(backups, &path, dry, |now| {
        let mut v: Json = serde_json::from_slice(now).ok()?;
        strip(&mut v);
        strip_status_line(&mut v);
        if v.is_empty_obj() {
            return None;
        }
        Some(v.render().into_bytes())
    })?
    .into_iter()
    .collect();
    if host == Host::Claude {
        let skill = root.join(SKILL_PATH);
        let ours = guide::skill();
        out.extend(restore(backups, &skill, dry, |now| {
            (now != ours.as_bytes()).then(|| now.to_vec())
        })?);
    }
    Ok(out)
}

fn project_backups(ctx: &Ctx) -> PathBuf {
    ctx.store
        .common_dir()
        .join("swarm")
        .join("agent")
        .join("backup")
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Error::new(
                Code::Usage,
                "HOME is not set: --user has no home to write to",
            )
        })
}

fn user_backups() -> Result<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .map_or_else(|| home().map(|h| h.join(".local/state")), Ok)?;
    Ok(state.join("git-swarm").join("agent-backup"))
}

/// The checkouts of this clone hooks go into: the main one and every lane
/// worktree (`git worktree list`).
fn checkouts(ctx: &Ctx) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in ctx.store.git.worktree_paths()? {
        if p.is_dir() && !out.iter().any(|o| crate::fsutil::same_path(o, &p)) {
            out.push(p);
        }
    }
    if out.is_empty() {
        if let Some(w) = ctx.store.workdir() {
            out.push(w.to_path_buf());
        }
    }
    Ok(out)
}

/// Options of `agent install`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub hosts: Vec<Host>,
    pub user: bool,
    pub dry_run: bool,
    pub uninstall: bool,
}

/// The hosts `install` means: those given, else (uninstalling from the
/// project) those installed, else Claude Code.
fn hosts_meant(ctx: &Ctx, o: &Options) -> Vec<Host> {
    if !o.hosts.is_empty() {
        return o.hosts.clone();
    }
    if o.uninstall && !o.user {
        let h = installed_hosts(ctx);
        if !h.is_empty() {
            return h;
        }
    }
    vec![Host::Claude]
}

/// The main checkout's AGENTS.md: the swarm's section merged in, or, when
/// the last host is uninstalled, taken out again (the file restored).
fn agents_md(
    ctx: &Ctx,
    o: &Options,
    hosts: &[Host],
    agents: &Path,
    backups: &Path,
) -> Result<Vec<Touched>> {
    if !o.uninstall {
        let old = read_opt(agents)?.map(|b| String::from_utf8_lossy(&b).into_owned());
        let new = guide::merge_agents_md(old.as_deref());
        return Ok(vec![put(backups, agents, new.as_bytes(), o.dry_run)?]);
    }
    let remaining = installed_hosts(ctx)
        .into_iter()
        .any(|h| !hosts.contains(&h));
    if remaining {
        return Ok(Vec::new());
    }
    Ok(restore(backups, agents, o.dry_run, |now| {
        let text = String::from_utf8_lossy(now);
        let stripped = guide::strip_agents_md(&text)?;
        (!stripped.is_empty()).then(|| stripped.into_bytes())
    })?
    .into_iter()
    .collect())
}

pub fn install(ctx: &Ctx, o: &Options) -> Result<Installed> {
    let hosts = hosts_meant(ctx, o);
    let idle = super::stop::idle_wait(ctx)?;
    check_targets(ctx, o, &hosts)?;
    let mut files = Vec::new();
    if o.user {
        let home = home()?;
        let backups = user_backups()?;
        for &h in &hosts {
            files.extend(if o.uninstall {
                undo_host_files(&home, h, true, &backups, o.dry_run)?
            } else {
                host_files(&home, h, true, idle, &backups, o.dry_run)?
            });
        }
    } else {
        if ctx.store.workdir().is_none() {
            return Err(crate::error::Error::new(
                Code::BareRepo,
                "this is a bare repository: agent install writes into checkouts",
            )
            .hint("run it in a clone, or use --user"));
        }
        let backups = project_backups(ctx);
        for root in checkouts(ctx)? {
            for &h in &hosts {
                files.extend(if o.uninstall {
                    undo_host_files(&root, h, false, &backups, o.dry_run)?
                } else {
                    host_files(&root, h, false, idle, &backups, o.dry_run)?
                });
            }
        }
        if let Ok(main) = crate::session::lane::main_worktree(&ctx.store) {
            files.extend(agents_md(
                ctx,
                o,
                &hosts,
                &main.join("AGENTS.md"),
                &backups,
            )?);
        }
        if !o.dry_run {
            record_hosts(ctx, &hosts, o.uninstall)?;
            if !o.uninstall {
                exclude(ctx, &hosts)?;
            }
        }
    }
    Ok(Installed {
        hosts: hosts.iter().map(|h| h.as_str()).collect(),
        scope: if o.user { "user" } else { "project" },
        dry_run: o.dry_run,
        uninstall: o.uninstall,
        files,
        stop_timeout_secs: timeout_secs(Event::Stop, idle),
    })
}

/// Every file install would read or write, checked before any is
/// ([`check_target`]): refused, nothing was written.
fn check_targets(ctx: &Ctx, o: &Options, hosts: &[Host]) -> Result<()> {
    let roots = if o.user {
        vec![home()?]
    } else {
        checkouts(ctx)?
    };
    for root in &roots {
        let within = (!o.user).then_some(root.as_path());
        for &h in hosts {
            check_target(&settings_path(root, h, o.user), within)?;
            if h == Host::Claude {
                check_target(&root.join(SKILL_PATH), within)?;
            }
        }
    }
    if !o.user {
        if let Ok(main) = crate::session::lane::main_worktree(&ctx.store) {
            check_target(&main.join("AGENTS.md"), Some(&main))?;
        }
    }
    Ok(())
}

fn record_hosts(ctx: &Ctx, hosts: &[Host], uninstall: bool) -> Result<()> {
    let mut now = installed_hosts(ctx);
    if uninstall {
        now.retain(|h| !hosts.contains(h));
    } else {
        now.extend(hosts.iter().copied());
    }
    now.sort();
    now.dedup();
    if now.is_empty() {
        let _ = ctx.store.git.run(["config", "--unset", HOSTS_KEY]);
        return Ok(());
    }
    let list: Vec<&str> = now.iter().map(|h| h.as_str()).collect();
    ctx.store.git.run(["config", HOSTS_KEY, &list.join(",")])?;
    Ok(())
}

/// Name the per-checkout files in `.git/info/exclude` (shared by every
/// worktree), so they never count as uncommitted work.
fn exclude(ctx: &Ctx, hosts: &[Host]) -> Result<()> {
    let path = ctx.store.common_dir().join("info").join("exclude");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let mut text = existing.clone();
    for h in hosts {
        for line in excluded(*h) {
            let line = format!("/{line}");
            if !existing.lines().any(|l| l.trim() == line) {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&line);
                text.push('\n');
            }
        }
    }
    if text != existing {
        write_file(&path, text.as_bytes())?;
    }
    Ok(())
}

/// Write the installed hosts' files into a checkout `lane new` or `accept`
/// just made. Best effort: a failure is a warning, never the command's.
pub fn into_worktree(ctx: &Ctx, path: &Path) -> Option<String> {
    let hosts = installed_hosts(ctx);
    if hosts.is_empty() {
        return None;
    }
    let idle = super::stop::idle_wait(ctx).ok().flatten();
    let backups = project_backups(ctx);
    for h in hosts {
        let checked =
            check_target(&settings_path(path, h, false), Some(path)).and_then(|()| match h {
                Host::Claude => check_target(&path.join(SKILL_PATH), Some(path)),
                _ => Ok(()),
            });
        if let Err(e) = checked.and_then(|()| host_files(path, h, false, idle, &backups, false)) {
            return Some(format!(
                "the {} agent hooks were not written into {}: {} (run `git swarm agent install` there)",
                h.as_str(),
                path.display(),
                e.message
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(t: &str) -> Json {
        serde_json::from_str(t).unwrap()
    }

    #[test]
    fn merge_keeps_user_hooks_and_keys_in_order_and_strip_undoes_it() {
        let text = r#"{"permissions":{"allow":["Bash(ls)"]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./mine.sh"}]}],"Stop":[{"hooks":[{"type":"command","command":"./stop.sh"}]}]},"zeta":1,"alpha":2}"#;
        let original = parse(text);
        let mut v = original.clone();
        merge(&mut v, Host::Claude, None).unwrap();
        let Json::Obj(top) = &v else { panic!() };
        let keys: Vec<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["permissions", "hooks", "zeta", "alpha"]);
        let pre = serde_json::to_value(v.get("hooks").unwrap().get("PreToolUse").unwrap()).unwrap();
        assert_eq!(
            pre[0]["hooks"][0]["command"], "./mine.sh",
            "the user's hook stays first"
        );
        assert_eq!(pre[1]["matcher"], "Write|Edit|MultiEdit|NotebookEdit");
        let once = v.clone();
        merge(&mut v, Host::Claude, None).unwrap();
        assert_eq!(v.render(), once.render(), "idempotent");
        // Idle mode raises the stop timeout in place.
        merge(
            &mut v,
            Host::Claude,
            Some(std::time::Duration::from_secs(600)),
        )
        .unwrap();
        let stop = serde_json::to_value(v.get("hooks").unwrap().get("Stop").unwrap()).unwrap();
        assert_eq!(stop[1]["hooks"][0]["timeout"], 660);
        strip(&mut v);
        assert_eq!(v.render(), original.render());
    }

    #[test]
    fn the_status_line_keeps_the_users_command_and_strip_puts_it_back() {
        let text = r#"{"statusLine":{"type":"command","command":"echo 'it''s' $PWD","padding":0}}"#;
        let original = parse(text);
        let mut v = original.clone();
        merge_status_line(&mut v);
        let sl = serde_json::to_value(v.get("statusLine").unwrap()).unwrap();
        let cmd = sl["command"].as_str().unwrap();
        assert!(
            cmd.starts_with("git-swarm capacity statusline --then '"),
            "{cmd}"
        );
        assert_eq!(sl["padding"], 0);
        let once = v.clone();
        merge_status_line(&mut v);
        assert_eq!(v.render(), once.render(), "idempotent");
        strip_status_line(&mut v);
        assert_eq!(v.render(), original.render());
        let mut none = parse("{}");
        merge_status_line(&mut none);
        assert_eq!(
            serde_json::to_value(&none).unwrap()["statusLine"]["command"],
            "git-swarm capacity statusline"
        );
        strip_status_line(&mut none);
        assert!(none.is_empty_obj());
    }

    #[test]
    fn gemini_gets_its_event_names_and_milliseconds() {
        let mut v = Json::obj();
        merge(&mut v, Host::Gemini, None).unwrap();
        let hooks = serde_json::to_value(v.get("hooks").unwrap()).unwrap();
        let Json::Obj(h) = v.get("hooks").unwrap() else {
            panic!()
        };
        let names: Vec<&str> = h.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "SessionStart",
                "BeforeTool",
                "BeforeAgent",
                "AfterAgent",
                "AfterTool"
            ]
        );
        assert_eq!(hooks["BeforeTool"][0]["matcher"], "write_file|replace");
        assert_eq!(hooks["AfterAgent"][0]["hooks"][0]["timeout"], 60_000);
        strip(&mut v);
        assert!(v.is_empty_obj());
    }

    #[test]
    fn a_settings_file_that_is_no_object_is_refused() {
        let mut v = parse("[1]");
        assert!(merge(&mut v, Host::Claude, None).is_err());
        let mut v = parse(r#"{"hooks": []}"#);
        assert!(merge(&mut v, Host::Claude, None).is_err());
    }
}
