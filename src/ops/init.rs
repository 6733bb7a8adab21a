//! `git swarm init`: make a repository swarm-ready, idempotently. Hook shims
//! go between marker lines into the hooks directory git really uses, so a
//! user's own hook content survives and a second run changes nothing.

use std::path::Path;

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;
use crate::session::Ctx;
use crate::store::mirror::mirror_refspecs;
use crate::store::trust::Policy;
use crate::store::Store;
use crate::worktree::setup::{ensure_excludes, hooks_dir, merge_hook, HOOKS};

fn install_hook(dir: &Path, hook: &str) -> Result<bool> {
    let path = dir.join(hook);
    let existing = match std::fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(&path, e)),
    };
    let merged = merge_hook(existing.as_deref(), hook);
    let changed = existing.as_deref() != Some(merged.as_str());
    if changed {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        std::fs::write(&path, &merged).map_err(|e| io_error(&path, e))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&path).map_err(|e| io_error(&path, e))?;
        if meta.permissions().mode() & 0o111 != 0o111 {
            let mut perms = meta.permissions();
            perms.set_mode(perms.mode() | 0o755);
            std::fs::set_permissions(&path, perms).map_err(|e| io_error(&path, e))?;
            return Ok(true);
        }
    }
    Ok(changed)
}

fn ensure_refspecs(ctx: &Ctx, remote: &str) -> Result<Vec<String>> {
    let key = format!("remote.{remote}.fetch");
    let existing = ctx.store.git.config_get_all(&key)?;
    let mut added = Vec::new();
    for spec in mirror_refspecs(remote) {
        if !existing.contains(&spec) {
            ctx.store.git.run(["config", "--add", &key, &spec])?;
            added.push(spec);
        }
    }
    Ok(added)
}

/// The base branch as a ref name to protect: `swarm.base`, else the
/// remote's default branch, without the remote's prefix; None when the
/// base is no plain branch name (a tag, a commit, an expression).
fn base_branch_ref(ctx: &Ctx, remote: &str) -> Option<String> {
    let base = crate::session::lane::default_base(ctx);
    // A clone of a still-empty remote: `default_base` falls back to a local
    // branch for now, but once the remote has its main, lanes base on
    // `<remote>/main` (the same rule), so that is the branch to fence.
    let base = if ctx.settings.base.is_none() && !base.starts_with(&format!("{remote}/")) {
        format!("{remote}/main")
    } else {
        base
    };
    let name = base
        .strip_prefix(&format!("{remote}/"))
        .unwrap_or(&base)
        .to_string();
    let full = format!("refs/heads/{name}");
    let plain = !name.contains(['~', '^', ':', '@', '*', '?', '[', ' '])
        && gix::refs::FullName::try_from(full.as_str()).is_ok();
    plain.then_some(full)
}

/// Fencing binds only what the remote checks: without a protected base, a
/// stale leader's plain `git push origin HEAD:main` would go through. So the
/// base branch goes into `swarm.protect` unless the user chose otherwise:
/// any existing value (an empty one included, as `--no-protect` leaves) is
/// their choice and stays.
fn ensure_protect(ctx: &Ctx, no_protect: bool) -> Result<Option<String>> {
    // The base lives on the code remote (with a coordination remote of its
    // own, that one holds records only).
    let Some(remote) = ctx.settings.code_remote.as_deref() else {
        return Ok(None);
    };
    let existing = ctx.store.git.config_get_all("swarm.protect")?;
    if !existing.is_empty() {
        return Ok(None);
    }
    if no_protect {
        ctx.store.git.run(["config", "swarm.protect", ""])?;
        return Ok(Some(
            "left the base branch unprotected (--no-protect; recorded as an empty swarm.protect): plain pushes to it are not fenced".to_string(),
        ));
    }
    let Some(full) = base_branch_ref(ctx, remote) else {
        return Ok(None);
    };
    ctx.store
        .git
        .run(["config", "--add", "swarm.protect", &full])?;
    let empty_remote = ctx.settings.base.is_none()
        && !crate::session::lane::default_base(ctx).starts_with(&format!("{remote}/"));
    let why = if empty_remote {
        format!("; {remote} has no default branch yet, so this is the branch lanes will base on ({remote}/main) once it is pushed: set swarm.base and swarm.protect if yours is another")
    } else {
        String::new()
    };
    Ok(Some(format!(
        "protected {full} (swarm.protect): a plain push to it is refused, only `git swarm lead push` moves it (opt out: init --no-protect){why}"
    )))
}

fn refuse_bare(store: &Store) -> Result<()> {
    if store.workdir().is_none() {
        return Err(Error::new(
            Code::BareRepo,
            "this is a bare repository: git swarm init needs a working tree",
        )
        .hint("run it in a clone (`git clone <this repository>`)"));
    }
    Ok(())
}

/// The name `init --coordination-remote URL` gives the remote it adds.
pub const COORDINATION_REMOTE: &str = "swarm";

/// `init --coordination-remote URL`, before the rest of `init` (which then
/// adds the mirror refspecs to it): add the remote `swarm` at `url`, make
/// it `swarm.remote`, so that records go to the coordination remote and the
/// code stays where it is (`swarm.codeRemote`, else origin: not pinned).
/// Idempotent: a second run with the same URL changes nothing; a `swarm`
/// remote at another URL is refused, nothing changed. Its default fetch
/// refspec is dropped: a coordination remote holds no branches to track.
/// Returns what it changed and what to warn of.
pub fn coordination_remote(store: &Store, url: &str) -> Result<(Vec<String>, Vec<String>)> {
    refuse_bare(store)?;
    let name = COORDINATION_REMOTE;
    let git = &store.git;
    let url = url.trim();
    if url.is_empty() || url.starts_with('-') {
        return Err(Error::new(
            Code::Usage,
            "--coordination-remote needs the URL of a git repository",
        )
        .hint("e.g. git swarm init --coordination-remote git@host:team/swarm.git"));
    }
    // git would store a newline or an escape in the config as given, and
    // print it back into terminals and hooks.
    if url.chars().any(char::is_control) {
        return Err(Error::new(
            Code::Usage,
            format!(
                "--coordination-remote '{}' holds a control character (a newline, tab or escape): no git URL does",
                url.escape_debug()
            ),
        )
        .hint("pass the URL alone, e.g. git swarm init --coordination-remote git@host:team/swarm.git"));
    }
    // A local path is kept absolute: git reads a relative one from the
    // directory it runs in, and lanes run in their own worktrees.
    let local = std::path::Path::new(url);
    let absolute = (!url.contains("://") && local.exists())
        .then(|| std::fs::canonicalize(local).ok())
        .flatten()
        .map(|p| p.display().to_string());
    let url = absolute.as_deref().unwrap_or(url);
    let mut actions = Vec::new();
    match git.config_get(&format!("remote.{name}.url"))? {
        Some(existing) if existing == url => {}
        Some(existing) => {
            return Err(Error::new(
                Code::RemoteTaken,
                format!(
                    "remote '{name}' already exists at {}; nothing was changed",
                    crate::records::packet::clean_url(&existing)
                ),
            )
            .hint(format!(
                "to move it: `git remote set-url {name} <url>`, then run init again"
            )))
        }
        None => {
            git.run(["remote", "add", "--no-tags", name, url])?;
            // Branches are the code remote's: fetch only the swarm refs
            // (init adds those refspecs below).
            let _ = git.run(["config", "--unset-all", &format!("remote.{name}.fetch")]);
            actions.push(format!(
                "added remote {name} at {}",
                crate::records::packet::clean_url(url)
            ));
        }
    }
    if git.config_get("swarm.remote")?.as_deref() != Some(name) {
        git.run(["config", "swarm.remote", name])?;
        actions.push(format!(
            "set swarm.remote = {name} (records: plans, lanes, tasks, reservations, messages, packets, notes)"
        ));
    }
    // The code stays where it is: swarm.codeRemote when set, else origin,
    // which is the default and so is not pinned (a pinned name fails every
    // command once origin is renamed). Without either it goes to the
    // coordination remote, which is worth a warning on each run.
    let code_set = git
        .config_get("swarm.codeRemote")?
        .is_some_and(|c| !c.is_empty());
    if !code_set && git.config_get("remote.origin.url")?.is_none() {
        return Ok((actions, vec![format!(
            "there is no remote 'origin' for the code: lane branches go to {name} until you add one (`git remote add origin <url>`) or set swarm.codeRemote"
        )]));
    }
    Ok((actions, Vec::new()))
}

/// What `init` did: its `Serialize` is the JSON.
#[derive(Debug, Serialize)]
pub struct Initialized {
    pub changed: bool,
    /// One line per change, in the order made.
    pub actions: Vec<String>,
    /// The hook files that hold the git-swarm block.
    pub hooks: Vec<String>,
    pub remote: Option<String>,
    /// Where the code lives (swarm.codeRemote, else origin, else `remote`).
    pub code_remote: Option<String>,
    pub protect: Vec<String>,
    /// `swarm.trust` (off, warn, require) and, while off, how to turn it on.
    pub trust: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_hint: Option<String>,
}

/// How `init` says to turn signed records on.
pub const TRUST_HINT: &str = "records are not signature-checked (swarm.trust=off); to prove who wrote each one: `git swarm agent keygen --as <address>` per agent, add the printed lines to .swarm/allowed_signers on the base branch, then `git config swarm.trust require` (docs/trust.md)";

/// Without a shared remote (`swarm.remote` unset, no `origin`) every
/// record stays in this clone. That is right for a repository with no
/// remote at all; in a clone whose remote has another name (`git clone -o
/// upstream`), it is a surprise: the warning names the remotes and the
/// command that shares the records through one.
pub fn unshared_warning(ctx: &Ctx) -> Result<Option<String>> {
    if ctx.settings.remote.is_some() {
        return Ok(None);
    }
    let listed = ctx.store.git.run(["remote"])?;
    let remotes: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    let Some(first) = remotes.first() else {
        return Ok(None);
    };
    Ok(Some(format!(
        "no shared remote: this clone has {} but none named origin, so records stay in this clone (every write says `not published`); share them through one: `git swarm init --remote {first}`",
        match remotes.as_slice() {
            [one] => format!("the remote {one}"),
            many => format!("the remotes {}", many.join(", ")),
        }
    )))
}

pub fn init(
    ctx: &Ctx,
    remote_flag: Option<&str>,
    no_hooks: bool,
    no_protect: bool,
) -> Result<Initialized> {
    refuse_bare(&ctx.store)?;
    let mut actions = Vec::new();
    if let Some(r) = remote_flag {
        if ctx.store.git.config_get("swarm.remote")?.as_deref() != Some(r) {
            ctx.store.git.run(["config", "swarm.remote", r])?;
            actions.push(format!("set swarm.remote = {r}"));
        }
    }
    let mut hooks = Vec::new();
    if !no_hooks {
        let dir = hooks_dir(&ctx.store)?;
        for hook in HOOKS {
            if install_hook(&dir, hook)? {
                actions.push(format!("installed the {hook} hook in {}", dir.display()));
            }
            hooks.push(dir.join(hook).display().to_string());
        }
    }
    for line in ensure_excludes(
        &ctx.store,
        &ctx.settings.plan_file,
        &ctx.settings.worktree_root,
    )? {
        actions.push(format!("added '{line}' to .git/info/exclude"));
    }
    if let Some(remote) = ctx.settings.remote.as_deref() {
        for spec in ensure_refspecs(ctx, remote)? {
            actions.push(format!("added fetch refspec {spec}"));
        }
    }
    actions.extend(ensure_protect(ctx, no_protect)?);
    Ok(Initialized {
        changed: !actions.is_empty(),
        actions,
        hooks,
        remote: ctx.settings.remote.clone(),
        code_remote: ctx.settings.code_remote.clone(),
        // Read again through git: the session's config snapshot predates
        // what `ensure_protect` just wrote.
        protect: ctx.store.git.config_get_all("swarm.protect")?,
        trust: match ctx.store.trust.policy() {
            Policy::Off => "off",
            Policy::Warn => "warn",
            Policy::Require => "require",
        }
        .to_string(),
        trust_hint: (ctx.store.trust.policy() == Policy::Off).then(|| TRUST_HINT.to_string()),
    })
}
