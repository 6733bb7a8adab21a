//! Settings from `git config swarm.*` resolved once per command, and the
//! identity rule of SPEC §2: `--as` > `GIT_SWARM_AS` > `swarm.as` > the owner
//! of the lane whose worktree we are in.

use crate::error::{Code, Error, Result};
use crate::names;
use crate::store::Store;

/// Every `swarm.*` key, its default and what it does; the README table and
/// `git swarm init --json` are generated from this list.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "swarm.as",
        "(unset)",
        "your address, used when --as and GIT_SWARM_AS are not given, outside a lane worktree (inside one, the lane's owner)",
    ),
    (
        "swarm.remote",
        "origin, when it exists",
        "the coordination remote that records (plans, lanes, tasks, reservations, messages, packets, snapshots, notes) sync through",
    ),
    (
        "swarm.codeRemote",
        "origin when it exists, else swarm.remote",
        "the code remote: lane branches are pushed to and fetched from it, and the base branch, forecast, task done and verify read it; another than swarm.remote keeps records off it (`init --coordination-remote`)",
    ),
    (
        "swarm.base",
        "the code remote's default branch, else main",
        "base branch for new lanes and for guards",
    ),
    (
        "swarm.worktreeRoot",
        "_swarm-worktrees",
        "where lane worktrees are created, relative to the main worktree (or absolute); it must lead inside the main worktree",
    ),
    (
        "swarm.worktreeRootAllowOutside",
        "false",
        "true allows a swarm.worktreeRoot outside the main worktree (never inside .git)",
    ),
    (
        "swarm.planFile",
        "PLAN.md",
        "the plan file kept untracked in each worktree: a relative path inside it (no .., no .git); never a symlink",
    ),
    (
        "swarm.changesetDir",
        ".changeset",
        "directory whose *.md files must have unique names",
    ),
    (
        "swarm.reservedChangesets",
        "pr-<N>-review.md",
        "comma-separated reserved changeset patterns; <N> is any number, * any text",
    ),
    (
        "swarm.attribution",
        "block",
        "AI attribution trailers in commit messages: block, strip or allow",
    ),
    (
        "swarm.gate",
        "(unset)",
        "the command `lead merge` runs in each merged tree before it lands a lane (e.g. `cargo test`); exit 0 with no test run fails",
    ),
    (
        "swarm.mergeStyle",
        "merge",
        "how `lead merge` puts a lane onto its base: merge (a merge commit), squash or rebase",
    ),
    (
        "swarm.protect",
        "(unset)",
        "refs that only `lead push` may move (multi-valued, e.g. refs/heads/main); `init` adds the base branch unless --no-protect",
    ),
    (
        "swarm.holdPattern",
        "Auto-merge withheld",
        "a PR comment matching this regex, newer than the head, holds the merge",
    ),
    (
        "swarm.lease",
        "30m",
        "default leader lease for lead claim/renew/takeover",
    ),
    (
        "swarm.gcAge",
        "14d",
        "gc archives finished records whose last change is older than this",
    ),
    (
        "swarm.gcThreshold",
        "2000",
        "sync runs gc first when there are more live swarm refs than this",
    ),
    (
        "swarm.pushBatch",
        "25",
        "the most refs one push of independent records carries (sync, gc): more go in several atomic pushes; one operation's refs always go together",
    ),
    (
        "swarm.pushBudget",
        "(unset: publish at once)",
        "e.g. 6/min: messages, reports, plan saves and lane snapshots are queued in this clone and go with its next push (every write that publishes at once, e.g. a claim, carries them), or with the first git-swarm command once the window (1/6 min) has passed since the oldest was queued; no daemon",
    ),
    (
        "swarm.waitCeiling",
        "60s",
        "the longest pause between two checks of `wait` (its backoff ceiling; --max-interval overrides); `serve` reaches the remote at most this often",
    ),
    (
        "swarm.agentIdleWait",
        "off",
        "how long an agent's stop hook waits, at zero tokens, for a message, a ready task or a packet before the agent stops (e.g. 10m; `agent install` sizes the hook timeout to it)",
    ),
    (
        "swarm.agentHosts",
        "(none)",
        "the agent hosts whose hooks `agent install` put in this clone's checkouts (claude, codex, gemini); lane new and accept write them into new worktrees",
    ),
    (
        "swarm.taskLease",
        "30m",
        "default lease of a task claim for task claim/renew/recover",
    ),
    (
        "swarm.snapshotLimit",
        "10485760",
        "handoff and lane snapshot refuse to snapshot more bytes of uncommitted work than this",
    ),
    (
        "swarm.reservations",
        "enforce",
        "how pre-commit, pre-push and check --range treat a change to a path reserved by someone else: enforce, warn or off",
    ),
    (
        "swarm.reservationLease",
        "2h",
        "default lease of git swarm reserve",
    ),
    (
        "swarm.trust",
        "off",
        "off, warn or require: whether records must be signed by a key .swarm/allowed_signers on the base branch lists for the actor they name (require: others are UNTRUSTED and never used; warn: used with a warning); see docs/trust.md",
    ),
    (
        "swarm.<address>.signingKey",
        "(unset)",
        "the ssh private key that signs the records <address> writes in this clone (`agent keygen` sets it); without it, when swarm.trust is warn or require, git's user.signingKey signs when commit.gpgSign is true (in gpg.format; under require only an ssh one)",
    ),
    (
        "swarm.recordCacheLimit",
        "64m",
        "the most bytes of parsed records the record cache keeps per record kind (k, m, g suffixes)",
    ),
];

/// A lease a kind's commands take: its `git config` key, the default, and
/// the kind's own parser (`parse(text, source)`, so each kind keeps its
/// error code). The session resolves it (`Ctx::lease`: the command's
/// `--lease`, else the key, else the default).
pub struct LeaseSetting {
    pub key: &'static str,
    pub default: &'static str,
    pub parse: fn(&str, &str) -> Result<jiff::SignedDuration>,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// The coordination remote (`swarm.remote`): records go through it.
    pub remote: Option<String>,
    /// The code remote (`swarm.codeRemote`, else origin when it exists,
    /// else the coordination remote): lane branches and the base live there.
    pub code_remote: Option<String>,
    pub base: Option<String>,
    pub worktree_root: String,
    /// `swarm.worktreeRootAllowOutside`: lane worktrees may live outside
    /// the main worktree.
    pub worktree_root_allow_outside: bool,
    pub plan_file: String,
    pub changeset_dir: String,
}

impl Settings {
    pub fn load(store: &Store, remote_override: Option<&str>) -> Result<Settings> {
        let settings = Self::read(store, remote_override);
        if let Some(r) = &settings.remote {
            if store.config(&format!("remote.{r}.url")).is_none() {
                return Err(Error::new(Code::RemoteMissing, format!("remote '{r}' does not exist"))
                    .hint(format!("add it with `git remote add {r} <url>`, or set swarm.remote to an existing remote")));
            }
        }
        if let Some(r) = store.config("swarm.codeRemote").filter(|r| !r.is_empty()) {
            if store.config(&format!("remote.{r}.url")).is_none() {
                return Err(Error::new(
                    Code::RemoteMissing,
                    format!("remote '{r}' (swarm.codeRemote) does not exist"),
                )
                .hint(format!("add it with `git remote add {r} <url>`, or set swarm.codeRemote to an existing remote (unset, it is origin when that exists, else swarm.remote)")));
            }
        }
        Ok(settings)
    }

    /// The settings for the hooks and `check`, without validating the
    /// remote: the guards never publish and only glob `refs/remotes/*/…`,
    /// and a guard must not block a commit over a setting it does not need
    /// (SPEC §5). A remote that does not exist simply has no refs here.
    pub fn load_for_guards(store: &Store) -> Settings {
        Self::read(store, None)
    }

    fn read(store: &Store, remote_override: Option<&str>) -> Settings {
        let remote = match remote_override {
            Some(r) => Some(r.to_string()),
            None => match store.config("swarm.remote") {
                Some(r) => Some(r),
                None => {
                    if store.config("remote.origin.url").is_some() {
                        Some("origin".to_string())
                    } else {
                        None
                    }
                }
            },
        };
        // The code remote: an explicit one, else origin (where a clone's
        // code comes from), else the one remote there is. One remote for
        // everything, as before, unless swarm.remote names another one.
        let code_remote = store
            .config("swarm.codeRemote")
            .filter(|r| !r.is_empty())
            .or_else(|| {
                store
                    .config("remote.origin.url")
                    .map(|_| "origin".to_string())
            })
            .or_else(|| remote.clone());
        Settings {
            remote,
            code_remote,
            base: store.config("swarm.base"),
            worktree_root: store
                .config("swarm.worktreeRoot")
                .unwrap_or_else(|| "_swarm-worktrees".to_string()),
            worktree_root_allow_outside: store
                .repo
                .config_snapshot()
                .boolean("swarm.worktreeRootAllowOutside")
                .unwrap_or(false),
            plan_file: store
                .config("swarm.planFile")
                .unwrap_or_else(|| "PLAN.md".to_string()),
            changeset_dir: store
                .config("swarm.changesetDir")
                .unwrap_or_else(|| ".changeset".to_string())
                .trim_end_matches('/')
                .to_string(),
        }
    }
}

/// Resolve who is acting: `--as`, else `GIT_SWARM_AS`, else (inside a lane
/// worktree) the lane's owner, else `swarm.as`. The lane owner comes before
/// `swarm.as` because that setting is repository-wide: it is shared by every
/// worktree, so above the owner it would journal every lane's reports as
/// whoever set it (the coordinator).
pub fn identity(
    store: &Store,
    flag: Option<&str>,
    lane_owner: impl FnOnce() -> Option<String>,
) -> Result<Option<String>> {
    let found = identity_source(store, flag, lane_owner).map(|(a, _)| a);
    if let Some(a) = &found {
        names::validate_address(a)?;
    }
    Ok(found)
}

/// [`identity`] unchecked, with where it came from: `--as`,
/// `GIT_SWARM_AS`, `lane owner` or `swarm.as` (for `whoami`).
pub fn identity_source(
    store: &Store,
    flag: Option<&str>,
    lane_owner: impl FnOnce() -> Option<String>,
) -> Option<(String, &'static str)> {
    if let Some(a) = flag {
        return Some((a.to_string(), "--as"));
    }
    if let Some(a) = std::env::var("GIT_SWARM_AS").ok().filter(|v| !v.is_empty()) {
        return Some((a, "GIT_SWARM_AS"));
    }
    if let Some(a) = lane_owner() {
        return Some((a, "lane owner"));
    }
    store.config("swarm.as").map(|a| (a, "swarm.as"))
}

pub fn identity_missing() -> Error {
    Error::new(Code::IdentityMissing, "this command needs to know who you are")
        .hint("pass --as <address> or set GIT_SWARM_AS (per process: right for an agent in a lane)")
        .hint("or `git config swarm.as <address>`: repository-wide, shared by every worktree; inside a lane worktree the lane's owner comes first")
}

/// The `git -c key=value` settings git hands to its subprocesses (and so to
/// us and to our hooks) in `GIT_CONFIG_PARAMETERS`, in order. gix reads the
/// config files and `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`, but not this,
/// so we apply it on top: `-c` wins over both, as in git. A value of `None`
/// is a bare key (`git -c swarm.x`), which git reads as boolean true.
pub fn command_line_parameters() -> Result<Vec<(String, Option<String>)>> {
    let Some(raw) = std::env::var_os("GIT_CONFIG_PARAMETERS") else {
        return Ok(Vec::new());
    };
    let raw = raw.to_string_lossy();
    parse_parameters(&raw).map_err(|why| {
        Error::new(
            Code::EnvInvalid,
            format!("GIT_CONFIG_PARAMETERS could not be parsed: {why}"),
        )
        .hint("it is set by `git -c key=value`; unset it if something else wrote it")
    })
}

/// Parse git's `GIT_CONFIG_PARAMETERS` format (git's `config.c`,
/// `parse_config_env_list` + `sq_dequote_step`): whitespace-separated
/// entries, each `'key'='value'` (git ≥ 2.31), `'key'=` (bare key) or the
/// older `'key=value'` / `'key'`, single-quoted with `'\''` and `'\!'` for
/// a literal quote or `!`.
pub fn parse_parameters(text: &str) -> std::result::Result<Vec<(String, Option<String>)>, String> {
    fn quoted(chars: &[char], pos: &mut usize) -> std::result::Result<String, String> {
        if chars.get(*pos) != Some(&'\'') {
            return Err(format!("expected a quote at offset {}", *pos));
        }
        *pos += 1;
        let mut out = String::new();
        loop {
            match chars.get(*pos) {
                None => return Err("unterminated quote".to_string()),
                Some('\'') => {
                    // `'\''` or `'\!'`: a literal quote or bang, then on.
                    if chars.get(*pos + 1) == Some(&'\\')
                        && matches!(chars.get(*pos + 2), Some('\'') | Some('!'))
                        && chars.get(*pos + 3) == Some(&'\'')
                    {
                        out.push(chars[*pos + 2]);
                        *pos += 4;
                    } else {
                        *pos += 1;
                        return Ok(out);
                    }
                }
                Some(c) => {
                    out.push(*c);
                    *pos += 1;
                }
            }
        }
    }
    let chars: Vec<char> = text.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while chars.get(pos).is_some_and(|c| c.is_whitespace()) {
            pos += 1;
        }
        if pos >= chars.len() {
            return Ok(out);
        }
        let first = quoted(&chars, &mut pos)?;
        if chars.get(pos) == Some(&'=') {
            // New style: 'key'='value' or 'key'= (no value).
            pos += 1;
            let value = match chars.get(pos) {
                Some('\'') => Some(quoted(&chars, &mut pos)?),
                None => None,
                Some(c) if c.is_whitespace() => None,
                Some(_) => return Err(format!("bogus value after '{first}='")),
            };
            out.push((first, value));
        } else {
            // Old style: 'key=value' or 'key'.
            match first.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), Some(v.to_string()))),
                None => out.push((first, None)),
            }
        }
        match chars.get(pos) {
            None => {}
            Some(c) if c.is_whitespace() => {}
            Some(_) => return Err(format!("garbage after an entry at offset {pos}")),
        }
    }
}

/// `swarm.gcAge`: how old a finished record must be before `gc` archives
/// it; default 14 days.
pub fn gc_age(store: &Store) -> Result<jiff::SignedDuration> {
    match store.config("swarm.gcAge") {
        Some(text) => {
            crate::clock::parse_duration(&text).map_err(|e| e.hint("fix `git config swarm.gcAge`"))
        }
        None => Ok(jiff::SignedDuration::from_hours(14 * 24)),
    }
}

/// `swarm.pushBudget` (`<n>/<s|min|h>`, e.g. `6/min`): the window a write
/// nobody races for may wait in this clone's queue (the unit divided by
/// n: 10 s for `6/min`); None when unset or `off` (publish at once).
pub fn push_budget(store: &Store) -> Result<Option<(String, jiff::SignedDuration)>> {
    let Some(text) = store.config("swarm.pushBudget") else {
        return Ok(None);
    };
    parse_push_budget(&text).map_err(|why| {
        Error::new(
            Code::ConfigInvalid,
            format!("swarm.pushBudget = '{}' {why}", text.escape_debug()),
        )
        .hint("set it like `git config swarm.pushBudget 6/min` (or 1/s, 30/h), or unset it to publish at once")
    })
}

fn parse_push_budget(
    text: &str,
) -> std::result::Result<Option<(String, jiff::SignedDuration)>, String> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (n, unit) = t
        .split_once('/')
        .ok_or_else(|| "is not a rate: write <pushes>/<unit>".to_string())?;
    const TOO_MANY: &str = "allows more than 1000 pushes a second: that is no budget";
    let n: u32 = match n.trim().parse::<u32>() {
        Ok(n) if n > 0 => n,
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return Err(TOO_MANY.into()),
        _ => return Err("needs a whole number of pushes above 0 before the '/'".into()),
    };
    let secs: i64 = match unit.trim() {
        "s" | "sec" | "second" => 1,
        "m" | "min" | "minute" => 60,
        "h" | "hour" => 3600,
        _ => return Err("has an unknown unit after the '/' (use s, min or h)".into()),
    };
    let window = jiff::SignedDuration::from_millis(secs * 1000 / i64::from(n));
    if window.is_zero() {
        return Err(TOO_MANY.into());
    }
    Ok(Some((format!("{n}/{}", unit.trim()), window)))
}

/// `swarm.gcThreshold`: past this many live swarm refs `sync` runs `gc`
/// first; default 2000.
pub fn gc_threshold(store: &Store) -> usize {
    store
        .config("swarm.gcThreshold")
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

#[cfg(test)]
mod tests {
    use super::parse_parameters;

    #[test]
    fn a_push_budget_is_a_rate_and_its_window_the_unit_over_the_count() {
        use super::parse_push_budget as p;
        let window = |t: &str| p(t).unwrap().map(|(_, w)| w.as_millis());
        assert_eq!(window("6/min"), Some(10_000));
        assert_eq!(window(" 30/h "), Some(120_000));
        assert_eq!(window("2/s"), Some(500));
        assert_eq!(window("off"), None);
        assert_eq!(window(""), None);
        assert_eq!(p("6/min").unwrap().unwrap().0, "6/min");
        for bad in ["6", "0/min", "-1/min", "six/min", "6/day", "2000/s"] {
            assert!(p(bad).is_err(), "{bad}");
        }
        // A count too large for a number is too many pushes, not "no
        // whole number".
        let huge = p("99999999999999999999/min").unwrap_err();
        assert!(huge.contains("more than 1000 pushes a second"), "{huge}");
    }

    fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.to_string(), v.map(str::to_string))
    }

    #[test]
    fn parameters_new_and_old_style() {
        assert_eq!(parse_parameters("").unwrap(), vec![]);
        assert_eq!(
            parse_parameters("'swarm.as'='zed' 'swarm.planFile'='../x'").unwrap(),
            vec![
                kv("swarm.as", Some("zed")),
                kv("swarm.planFile", Some("../x"))
            ]
        );
        assert_eq!(
            parse_parameters(" 'swarm.as=zed'  'core.bare' ").unwrap(),
            vec![kv("swarm.as", Some("zed")), kv("core.bare", None)]
        );
        assert_eq!(
            parse_parameters("'swarm.flag'= 'swarm.empty'=''").unwrap(),
            vec![kv("swarm.flag", None), kv("swarm.empty", Some(""))]
        );
    }

    #[test]
    fn parameters_quoting() {
        // git -c "swarm.holdPattern=it's held!" quotes as below.
        assert_eq!(
            parse_parameters(r"'swarm.holdPattern'='it'\''s held'\!''").unwrap(),
            vec![kv("swarm.holdPattern", Some("it's held!"))]
        );
        assert_eq!(
            parse_parameters("'url.a b.insteadOf'='x = y'").unwrap(),
            vec![kv("url.a b.insteadOf", Some("x = y"))]
        );
        assert!(parse_parameters("'unterminated").is_err());
        assert!(parse_parameters("bare").is_err());
        assert!(parse_parameters("'a.b'=x").is_err());
        assert!(parse_parameters("'a.b''c.d'").is_err());
    }
}
