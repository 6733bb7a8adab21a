//! `git swarm verify`: ask GitHub about a PR, re-derive from git what GitHub
//! claims (the merge commit is on the remote's base branch; a reported
//! conflict is real), judge, optionally poll until the required verdict
//! holds, and record the verdict as a note on the head commit.

use std::time::Duration;

use regex::Regex;

use super::client::{parse_pr_arg, GitHub, RepoId};
use super::model::{PullRequest, RequiredChecks};
use super::verdict::{
    api_merged, is_open, mergeability_unknown, needs_conflict_check, BaseCheck, ConflictCheck,
    Judge, LocalFacts, OpenFacts, Require, Snapshot, State, Verdict,
};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::git::MergeTree;
use crate::output::Output;
use crate::store::Event;

pub const DEFAULT_HOLD_PATTERN: &str = "Auto-merge withheld";

/// Which PR to verify.
#[derive(Debug, Clone)]
pub enum Target {
    /// A number or a PR URL.
    Pr(String),
    /// A lane: the newest PR whose head is `feat/<feature>`.
    Lane(String),
}

#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    pub repo: Option<String>,
    pub require: Option<Require>,
    /// Poll until `require` holds or cannot hold any more, or `timeout`.
    pub wait: bool,
    pub timeout: Duration,
}

/// How long to back off while GitHub computes mergeability, and how often
/// to poll with `--wait`. Env overrides exist so tests run in milliseconds.
#[derive(Debug, Clone)]
pub struct Timing {
    pub backoff: Duration,
    pub retries: u32,
    pub poll: Duration,
}

impl Timing {
    /// `GIT_SWARM_VERIFY_BACKOFF_MS` (default 1000: waits 1, 2, 4, 8 s) and
    /// `GIT_SWARM_VERIFY_POLL_MS` (default 30000).
    pub fn from_env() -> Timing {
        let ms = |var: &str, default: u64| {
            Duration::from_millis(
                std::env::var(var)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(default),
            )
        };
        Timing {
            backoff: ms("GIT_SWARM_VERIFY_BACKOFF_MS", 1000),
            retries: 4,
            poll: ms("GIT_SWARM_VERIFY_POLL_MS", 30_000),
        }
    }
}

/// `verify lane` of a feature this repository knows nothing of is a usage
/// error, found before GitHub is asked anything: known means a lane record
/// (live, published or archived) or a branch `feat/<feature>` here or on a
/// remote-tracking ref.
fn require_known_lane(ctx: &Ctx, feature: &str) -> Result<()> {
    let store = &ctx.store;
    let record = crate::lane::lane_ref(feature);
    if crate::gc::find_record(store, &record)?.is_some() {
        return Ok(());
    }
    if let Some(r) = ctx.settings.remote.as_deref() {
        if store
            .ref_target(&crate::sync::mirror_ref(r, &record))?
            .is_some()
        {
            return Ok(());
        }
    }
    let branch = crate::lane::branch_of(feature);
    if store.ref_target(&format!("refs/heads/{branch}"))?.is_some() {
        return Ok(());
    }
    let suffix = format!("/{branch}");
    if store
        .list_refs("refs/remotes/")?
        .iter()
        .any(|(name, _)| name.ends_with(&suffix))
    {
        return Ok(());
    }
    let known: Vec<String> = crate::lane::all(store)?
        .0
        .into_iter()
        .map(|l| l.feature)
        .collect();
    let mut err = Error::usage(
        "NOT_FOUND",
        format!("there is no lane '{feature}' here: no lane record and no branch {branch}"),
    );
    err = if known.is_empty() {
        err.hint("no lanes are known here: `git swarm sync` fetches the shared lane records")
    } else {
        err.hint(format!("known lanes: {}", known.join(", ")))
    };
    Err(err
        .hint(format!(
            "if {branch} exists only on the remote, `git fetch` it first, or verify the PR by number: `git swarm verify pr <N>`"
        )))
}

/// Where warnings (always) and progress (the CLI shows it on a TTY) go.
pub trait Report {
    fn warn(&mut self, message: &str);
    fn progress(&mut self, message: &str);
}

/// A URL safe to show: any `user:password@` removed.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let slash = if rest.contains('/') { "/" } else { "" };
        return format!("{scheme}://{host}{slash}{path}");
    }
    url.to_string()
}

fn is_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Branch names from the API go into refspecs: refuse anything git would
/// not accept as a branch, or that could be read as an option.
fn is_safe_branch(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.starts_with('/')
        && !s.ends_with('/')
        && !s.ends_with(".lock")
        && !s.contains("..")
        && !s.contains("@{")
        && !s.chars().any(|c| c.is_control() || " ~^:?*[\\".contains(c))
}

/// Which repository to ask: `--repo`, else the one a PR URL names, else the
/// remote's URL.
fn resolve_repo(ctx: &Ctx, explicit: Option<&str>, from_url: Option<RepoId>) -> Result<RepoId> {
    let explicit = explicit.map(RepoId::parse).transpose()?;
    match (explicit, from_url) {
        (Some(e), Some(u))
            if !(e.owner.eq_ignore_ascii_case(&u.owner)
                && e.name.eq_ignore_ascii_case(&u.name)) =>
        {
            Err(Error::usage(
                "USAGE",
                format!("--repo {e} disagrees with the PR URL, which names {u}"),
            )
            .hint("drop --repo, or pass the PR number instead of the URL"))
        }
        (Some(e), _) => Ok(e),
        (None, Some(u)) => Ok(u),
        (None, None) => {
            let Some(remote) = ctx.settings.remote.as_deref() else {
                return Err(Error::usage(
                    "REPO_UNKNOWN",
                    "cannot tell which GitHub repository to ask: this repository has no remote",
                )
                .hint("pass --repo OWNER/NAME, or a PR URL"));
            };
            let url = ctx
                .store
                .config(&format!("remote.{remote}.url"))
                .unwrap_or_default();
            RepoId::from_remote_url(&url).ok_or_else(|| {
                Error::usage(
                    "REPO_UNKNOWN",
                    format!(
                        "cannot tell which GitHub repository to ask: the URL of remote '{remote}' ({}) names none",
                        redact_url(&url)
                    ),
                )
                .hint("pass --repo OWNER/NAME, or a PR URL")
            })
        }
    }
}

/// The newest PR (by creation, then number) whose head is `feat/<feature>`.
fn lane_pr(gh: &mut dyn GitHub, repo: &RepoId, feature: &str) -> Result<u64> {
    crate::names::validate_name("feature", feature)?;
    let branch = format!("feat/{feature}");
    let pulls = gh.pulls_with_head(repo, &branch)?;
    pulls
        .iter()
        .filter(|p| {
            p.head
                .as_ref()
                .and_then(|h| h.ref_.as_deref())
                .is_none_or(|r| r == branch)
        })
        .filter_map(|p| {
            let created: Option<jiff::Timestamp> =
                p.created_at.as_deref().and_then(|c| c.parse().ok());
            p.number
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(|n| ((created, n), n))
        })
        .max()
        .map(|(_, n)| n)
        .ok_or_else(|| {
            Error::usage(
                "PR_NOT_FOUND",
                format!("{repo} has no pull request whose head is {}:{branch}", repo.owner),
            )
            .hint(format!(
                "push the lane and open one: git push -u origin {branch} && gh pr create --head {branch}"
            ))
            .with_detail(serde_json::json!({"requests": gh.stats().requests}))
        })
}

/// Everything GitHub says about the PR, waiting (bounded) while GitHub is
/// still computing mergeability.
fn snapshot(
    gh: &mut dyn GitHub,
    repo: &RepoId,
    number: u64,
    timing: &Timing,
    report: &mut dyn Report,
) -> Result<Snapshot> {
    let mut pr = gh.pull(repo, number)?;
    let mut attempt = 0;
    while mergeability_unknown(&pr) && attempt < timing.retries {
        let wait = timing.backoff * 2u32.pow(attempt);
        report.progress(&format!(
            "{repo}#{number}: GitHub has not computed mergeability yet; asking again in {} ms",
            wait.as_millis()
        ));
        super::wait::sleep(wait, "mergeable-unknown");
        attempt += 1;
        pr = gh.pull(repo, number)?;
    }
    let open = if is_open(&pr) {
        let sha = head_sha(&pr).ok_or_else(|| {
            Error::env(
                "GITHUB_BAD_RESPONSE",
                format!(
                    "GitHub's answer for {repo}#{number} is unusable: field `head.sha` is not a commit SHA"
                ),
            )
        })?;
        let status = gh.combined_status(repo, &sha)?;
        let check_runs = gh.check_runs(repo, &sha)?;
        let reviews = gh.reviews(repo, number)?;
        let comments = gh.comments(repo, number)?;
        let base = pr.base.as_ref().and_then(|b| b.ref_.clone());
        let required = match base.filter(|b| is_safe_branch(b)) {
            Some(base) => gh.required_checks(repo, &base)?,
            None => RequiredChecks {
                contexts: Vec::new(),
                unreadable: true,
            },
        };
        Some(OpenFacts {
            status,
            check_runs,
            reviews,
            comments,
            required,
        })
    } else {
        None
    };
    Ok(Snapshot { pr, open })
}

fn head_sha(pr: &PullRequest) -> Option<String> {
    pr.head
        .as_ref()
        .and_then(|h| h.sha.clone())
        .filter(|s| is_sha(s))
}

/// What git says: the merge commit on the remote's base branch, a local
/// merge of base and head, the head's commit time. Fetches what it needs
/// unless `--offline`.
struct Local<'a> {
    ctx: &'a Ctx,
    repo: &'a RepoId,
    number: u64,
    /// The remote-tracking base ref, once fetched (or found, offline).
    base_ref: Option<Option<String>>,
}

impl Local<'_> {
    fn base_ref(&mut self, pr: &PullRequest) -> Result<Option<String>> {
        if let Some(known) = &self.base_ref {
            return Ok(known.clone());
        }
        let found = match (
            self.ctx.settings.remote.as_deref(),
            pr.base.as_ref().and_then(|b| b.ref_.as_deref()),
        ) {
            (Some(remote), Some(base)) if is_safe_branch(base) => {
                let tracking = format!("refs/remotes/{remote}/{base}");
                if !self.ctx.offline {
                    self.ctx
                        .store
                        .git
                        .fetch(remote, &[format!("+refs/heads/{base}:{tracking}")])?;
                }
                self.ctx
                    .store
                    .git
                    .has_commit(&tracking)?
                    .then_some(tracking)
            }
            _ => None,
        };
        self.base_ref = Some(found.clone());
        Ok(found)
    }

    /// Make the head commit available locally if we can; true if it is.
    fn ensure_head(&mut self, pr: &PullRequest, sha: &str) -> Result<bool> {
        let git = &self.ctx.store.git;
        if git.has_commit(sha)? {
            return Ok(true);
        }
        let Some(remote) = self.ctx.remote() else {
            return Ok(false);
        };
        let head = pr.head.as_ref();
        let same_repo = head
            .and_then(|h| h.repo.as_ref())
            .and_then(|r| r.full_name.as_deref())
            .is_some_and(|f| f.eq_ignore_ascii_case(&self.repo.to_string()));
        if let Some(branch) = head.and_then(|h| h.ref_.as_deref()) {
            if same_repo && is_safe_branch(branch) {
                let spec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
                // The branch may be gone after a merge; that is not an error.
                let _ = git.fetch(remote, &[spec]);
                if git.has_commit(sha)? {
                    return Ok(true);
                }
            }
        }
        let _ = git.fetch(remote, &[format!("refs/pull/{}/head", self.number)]);
        git.has_commit(sha)
    }

    fn facts(&mut self, pr: &PullRequest, report: &mut dyn Report) -> Result<(LocalFacts, bool)> {
        let mut facts = LocalFacts::default();
        let head = head_sha(pr);
        let head_local = match &head {
            Some(sha) => self.ensure_head(pr, sha)?,
            None => false,
        };
        if api_merged(pr) {
            facts.merge = Some(match pr.merge_commit_sha.as_deref() {
                None => BaseCheck::NoMergeCommit,
                Some(m) if !is_sha(m) => BaseCheck::NoMergeCommit,
                Some(m) => match self.base_ref(pr)? {
                    None => BaseCheck::Unavailable(self.no_base_reason(pr)),
                    Some(base_ref) => {
                        let git = &self.ctx.store.git;
                        if git.has_commit(m)? && git.is_ancestor(m, &base_ref)? {
                            BaseCheck::Confirmed { base_ref }
                        } else {
                            BaseCheck::NotOnBase { base_ref }
                        }
                    }
                },
            });
        }
        if needs_conflict_check(pr) {
            let base_ref = self.base_ref(pr)?;
            facts.conflict = Some(match (base_ref, &head, head_local) {
                (Some(base_ref), Some(sha), true) => {
                    match self.ctx.store.git.merge_tree(&base_ref, sha)? {
                        MergeTree::Clean { .. } => ConflictCheck::Clean,
                        MergeTree::Conflicts(paths) => ConflictCheck::Conflicts(paths),
                    }
                }
                (None, _, _) => ConflictCheck::Unavailable(self.no_base_reason(pr)),
                _ => ConflictCheck::Unavailable(
                    "the head commit is not available locally".to_string(),
                ),
            });
            if let Some(ConflictCheck::Unavailable(why)) = &facts.conflict {
                report.warn(&format!(
                    "GitHub reports a conflict that git could not check locally: {why}"
                ));
            }
        }
        if let (Some(sha), true) = (&head, head_local) {
            facts.head_time = self
                .ctx
                .store
                .git
                .committer_time(sha)?
                .and_then(|t| jiff::Timestamp::from_second(t).ok());
        }
        Ok((facts, head_local))
    }

    fn no_base_reason(&self, pr: &PullRequest) -> String {
        let base = pr
            .base
            .as_ref()
            .and_then(|b| b.ref_.clone())
            .unwrap_or_else(|| "(unknown)".into());
        match self.ctx.settings.remote.as_deref() {
            None => format!("this repository has no remote to find the base branch '{base}' on"),
            Some(r) if self.ctx.offline => {
                format!("--offline and refs/remotes/{r}/{base} is not here")
            }
            Some(r) => format!("the base branch '{base}' is not on remote '{r}'"),
        }
    }
}

/// Run `verify` to its verdict (after waiting, with `--wait`), record the
/// note, and return the output with exit 1 when `--require` does not hold.
pub fn verify(
    ctx: &Ctx,
    gh: &mut dyn GitHub,
    req: &Request,
    timing: &Timing,
    report: &mut dyn Report,
) -> Result<Output> {
    if req.wait && req.require.is_none() {
        return Err(Error::usage("USAGE", "--wait needs --require merged|ready")
            .hint("say what to wait for, e.g. --wait --require merged"));
    }
    let hold_source = ctx
        .store
        .config("swarm.holdPattern")
        .unwrap_or_else(|| DEFAULT_HOLD_PATTERN.to_string());
    let hold_pattern = Regex::new(&hold_source).map_err(|e| {
        Error::usage(
            "USAGE",
            format!("swarm.holdPattern is not a valid regular expression: {e}"),
        )
        .hint("fix it with `git config swarm.holdPattern '<regex>'`")
    })?;
    let start = super::wait::now();
    let deadline = req.wait.then(|| start + req.timeout);
    gh.set_wait_deadline(deadline);

    let (repo, number) = match &req.target {
        Target::Pr(arg) => {
            let (from_url, number) = parse_pr_arg(arg)?;
            (
                resolve_repo(ctx, req.repo.as_deref(), from_url)?,
                Ok(number),
            )
        }
        Target::Lane(feature) => {
            crate::names::validate_name("feature", feature)?;
            require_known_lane(ctx, feature)?;
            (resolve_repo(ctx, req.repo.as_deref(), None)?, Err(feature))
        }
    };
    if !gh.authenticated() {
        report.warn("no GitHub token (GITHUB_TOKEN / GH_TOKEN for github.com, GH_ENTERPRISE_TOKEN / GITHUB_ENTERPRISE_TOKEN for an Enterprise host, or `gh auth token`): asking unauthenticated, with a small rate limit and no private repositories");
    }
    // A PR target has its number; a lane's is looked up (Err holds the feature).
    let number = match number {
        Ok(n) => n,
        Err(feature) => lane_pr(gh, &repo, feature)?,
    };
    let repo_name = repo.to_string();
    let judge = Judge {
        repo: &repo_name,
        number,
        hold_pattern: &hold_pattern,
    };
    let mut local = Local {
        ctx,
        repo: &repo,
        number,
        base_ref: None,
    };
    let mut polls = 0u64;
    let mut timed_out = false;
    let (verdict, head_local) = loop {
        polls += 1;
        local.base_ref = None; // fetch the base afresh on every poll
        let snap = snapshot(gh, &repo, number, timing, report)?;
        let (facts, head_local) = local.facts(&snap.pr, report)?;
        let mut v = judge.verdict(&snap, &facts);
        let stats = gh.stats();
        v.requests = stats.requests;
        v.not_modified = stats.not_modified;
        v.rate_limit_remaining = stats.rate_limit_remaining;
        let (Some(require), Some(deadline)) = (req.require, deadline) else {
            break (v, head_local);
        };
        if require.holds(v.state) || require.is_terminal(v.state) {
            break (v, head_local);
        }
        let now = super::wait::now();
        if now >= deadline {
            timed_out = true;
            v.reasons.push("timeout".into());
            break (v, head_local);
        }
        // What decided the wait is recorded with it (see `wait`).
        let (mut interval, mut decided_by) = (timing.poll, "poll");
        if let Some(p) = stats.poll_interval.filter(|p| *p > interval) {
            (interval, decided_by) = (p, "x-poll-interval");
        }
        if stats.rate_limit_remaining == Some(0) {
            if let Some(reset) = stats.rate_limit_reset {
                let now_epoch = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let until_reset = Duration::from_secs(reset.saturating_sub(now_epoch));
                if until_reset > interval {
                    (interval, decided_by) = (until_reset, "x-ratelimit-reset");
                }
            }
        }
        let sleep = if deadline - now < interval {
            decided_by = "timeout";
            deadline - now
        } else {
            interval
        };
        let why = if v.reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.reasons.join(", "))
        };
        report.progress(&format!(
            "{repo}#{number}: {}{why}; waiting for {}, checking again in {:.1} s",
            v.state.as_str(),
            require.as_str(),
            sleep.as_secs_f64()
        ));
        super::wait::sleep(sleep, decided_by);
    };

    let noted = if head_local {
        record_note(ctx, &verdict, report)
    } else {
        if verdict.head_sha.is_some() {
            report.warn(
                "the head commit is not available locally; the verdict was not recorded as a note",
            );
        }
        false
    };
    let satisfied = req.require.map(|r| r.holds(verdict.state));
    let mut json = serde_json::to_value(&verdict).expect("a verdict always serialises");
    json["required"] = req.require.map(Require::as_str).into();
    json["satisfied"] = satisfied.into();
    json["noted"] = noted.into();
    json["polls"] = polls.into();
    json["timed_out"] = timed_out.into();
    json["waits"] = serde_json::to_value(super::wait::taken()).expect("waits serialise");
    let text = render(&verdict, req.require, satisfied, timed_out);
    let exit = if satisfied == Some(false) { 1 } else { 0 };
    Ok(Output {
        json,
        text,
        exit,
        warnings: Vec::new(),
    })
}

fn record_note(ctx: &Ctx, v: &Verdict, report: &mut dyn Report) -> bool {
    let Some(sha) = v.head_sha.as_deref() else {
        return false;
    };
    let Ok(target) = gix::ObjectId::from_hex(sha.as_bytes()) else {
        return false;
    };
    let actor = ctx
        .actor_opt()
        .ok()
        .flatten()
        .unwrap_or_else(|| "git-swarm".to_string());
    let line = serde_json::json!({
        "kind": "verdict",
        "state": v.state.as_str(),
        "repo": v.repo,
        "number": v.number,
        "head_sha": v.head_sha,
        "merge_commit": v.merge_commit,
        "confirmed_on_base": v.confirmed_on_base,
        "at": crate::clock::rfc3339(ctx.store.clock.now()),
    });
    let event = Event::new(
        "verdict",
        &actor,
        format!("verify {}#{}: {}", v.repo, v.number, v.state.as_str()),
    );
    match ctx.store.note_append(target, &line, &event) {
        Ok(()) => true,
        Err(e) => {
            report.warn(&format!(
                "the verdict was not recorded as a note: {}",
                e.message
            ));
            false
        }
    }
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The human verdict: one headline, then only what explains it.
pub fn render(
    v: &Verdict,
    require: Option<Require>,
    satisfied: Option<bool>,
    timed_out: bool,
) -> String {
    let mut out = format!("{}#{}: {}", v.repo, v.number, v.state.as_str());
    if !v.reasons.is_empty() && v.state != State::Merged {
        out.push_str(&format!(" ({})", v.reasons.join(", ")));
    }
    out.push('\n');
    let head = v.head_sha.as_deref().map(short).unwrap_or("?");
    let head_ref = v.head_ref.as_deref().unwrap_or("?");
    let base = v.base.as_deref().unwrap_or("?");
    out.push_str(&format!("  head {head} ({head_ref}) into {base}\n"));
    match v.state {
        State::Merged => out.push_str(&format!(
            "  merge commit {} is on the remote's {base}\n",
            v.merge_commit.as_deref().map(short).unwrap_or("?")
        )),
        State::MergedUnconfirmed => out.push_str(&format!(
            "  GitHub says merged, but git cannot confirm merge commit {} on the remote's {base}\n",
            v.merge_commit.as_deref().map(short).unwrap_or("(none)")
        )),
        _ => {}
    }
    if let Some(ms) = &v.mergeable_state {
        if !matches!(
            v.state,
            State::Merged | State::MergedUnconfirmed | State::Closed
        ) {
            out.push_str(&format!(
                "  mergeable: {} ({ms})\n",
                v.mergeable
                    .map_or("not computed".to_string(), |m| m.to_string())
            ));
        }
    }
    if !v.conflicts.is_empty() {
        out.push_str(&format!("  conflicts: {}\n", v.conflicts.join(", ")));
    }
    if let Some(c) = &v.checks {
        out.push_str(&format!(
            "  checks: {} passed, {} failed, {} pending\n",
            c.passed, c.failed, c.pending
        ));
        for d in c.details.iter().filter(|d| d.result != "passed") {
            out.push_str(&format!("    {} {} ({})\n", d.result, d.name, d.state));
        }
    }
    if let Some(r) = &v.review_decision {
        out.push_str(&format!("  review: {r}\n"));
    }
    for h in &v.holds {
        out.push_str(&format!(
            "  held by {} at {}: {}\n",
            h.author.as_deref().unwrap_or("(unknown)"),
            h.created_at.as_deref().unwrap_or("?"),
            h.excerpt
        ));
    }
    if let (Some(r), Some(false)) = (require, satisfied) {
        if timed_out {
            out.push_str(&format!(
                "required {}: not reached before the timeout\n",
                r.as_str()
            ));
        } else {
            out.push_str(&format!("required {}: does not hold\n", r.as_str()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_never_shown() {
        assert_eq!(
            redact_url("https://x-access-token:ghp_abc@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            redact_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
    }

    #[test]
    fn branch_names_that_could_be_options_are_refused() {
        assert!(is_safe_branch("feat/x"));
        assert!(!is_safe_branch("--upload-pack=evil"));
        assert!(!is_safe_branch("a..b"));
        assert!(!is_safe_branch("a:b"));
    }
}
