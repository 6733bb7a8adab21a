//! The one error type of git-swarm: a stable UPPER_SNAKE code, a message that
//! says what happened, hints that say what to do, and the exit code the
//! contract assigns to the code's class (SPEC §4).

use std::fmt;

/// What kind of failure this is; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A check failed or a required verdict does not hold (exit 1).
    Check,
    /// Bad usage or bad input (exit 2).
    Usage,
    /// Lost a race or fenced (exit 3).
    Race,
    /// The environment failed: git, network, API, not a repository (exit 4).
    Env,
}

impl Class {
    pub fn exit_code(self) -> u8 {
        match self {
            Class::Check => 1,
            Class::Usage => 2,
            Class::Race => 3,
            Class::Env => 4,
        }
    }
}

/// An error as the user sees it: `error[CODE]: message` plus `hint:` lines.
#[derive(Debug, Clone)]
pub struct Error {
    pub code: &'static str,
    pub class: Class,
    pub message: String,
    pub hints: Vec<String>,
    /// Structured detail for `--json` (mismatches, conflicting paths, …).
    pub detail: Option<serde_json::Value>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: &'static str, class: Class, message: impl Into<String>) -> Self {
        Error {
            code,
            class,
            message: message.into(),
            hints: Vec::new(),
            detail: None,
        }
    }
    pub fn check(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Class::Check, message)
    }
    pub fn usage(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Class::Usage, message)
    }
    pub fn race(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Class::Race, message)
    }
    pub fn env(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, Class::Env, message)
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }
    pub fn exit_code(&self) -> u8 {
        self.class.exit_code()
    }

    /// Wrap a failure of gix (object database, refs, config) as an environment error.
    pub fn gix(context: impl fmt::Display, err: impl fmt::Display) -> Self {
        Self::env("GIT_FAILED", format!("{context}: {err}"))
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut inner = serde_json::json!({
            "code": self.code,
            "message": self.message,
            "hints": self.hints,
            "exit": self.exit_code(),
        });
        if let Some(detail) = &self.detail {
            inner["detail"] = detail.clone();
        }
        serde_json::json!({ "error": inner })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)?;
        for hint in &self.hints {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Every error code git-swarm emits, with its class; the README's table is
/// generated from the same list by a test so the two cannot drift.
pub const CODES: &[(&str, Class, &str)] = &[
    (
        "USAGE",
        Class::Usage,
        "unknown flag, missing argument or conflicting options",
    ),
    (
        "NAME_INVALID",
        Class::Usage,
        "a plan, feature or address name does not match the naming rules",
    ),
    (
        "YAML_INVALID",
        Class::Usage,
        "a record or input file is not valid YAML for its schema",
    ),
    (
        "SCHEMA_UNSUPPORTED",
        Class::Usage,
        "a record has a newer major schema than this git-swarm understands",
    ),
    (
        "IDENTITY_MISSING",
        Class::Usage,
        "the command needs an actor and none was found",
    ),
    (
        "NOT_FOUND",
        Class::Usage,
        "the named plan, lane, packet or file does not exist",
    ),
    (
        "PLAN_EXISTS",
        Class::Usage,
        "plan new: a plan of that name already exists",
    ),
    (
        "PLAN_DIRTY",
        Class::Check,
        "plan checkout: the local PLAN.md has edits that the plan ref does not have",
    ),
    (
        "PLAN_BUSY",
        Class::Check,
        "plan close: the plan still has an active lane or open child plans (--force closes anyway)",
    ),
    (
        "PLAN_FILE_MISMATCH",
        Class::Usage,
        "plan save: the plan file was checked out from another plan",
    ),
    (
        "PLAN_SAVE_CONFLICT",
        Class::Race,
        "plan save: the plan moved on since the file was checked out and both changed the same lines; names the newer version, nothing saved",
    ),
    (
        "PLAN_AMBIGUOUS",
        Class::Usage,
        "a command that takes a plan was given none, outside a lane, with several plans: it lists them",
    ),
    (
        "CAS_FAILED",
        Class::Race,
        "a ref changed under us between read and write; nothing was overwritten",
    ),
    (
        "PLAN_CONFLICT",
        Class::Race,
        "sync: the same record name was created independently on two sides",
    ),
    (
        "PUSH_REJECTED",
        Class::Race,
        "the remote refused the atomic push (someone else moved a ref first)",
    ),
    (
        "RECORD_INVALID",
        Class::Usage,
        "a record is too large or nested too deeply to be read (limits: 64 KiB, depth 32), holds a control character, or a name or address field breaks the name rules; listings skip it with a warning",
    ),
    (
        "PLAN_FILE_UNSAFE",
        Class::Usage,
        "the plan file is a symbolic link or not a regular file; git-swarm neither reads nor writes through it",
    ),
    (
        "FILE_NOT_REGULAR",
        Class::Usage,
        "an input file (--from, --file) is a FIFO, device or directory, not a regular file",
    ),
    (
        "FILE_TOO_LARGE",
        Class::Usage,
        "an input or plan file is larger than git-swarm reads (1 MiB of text, 64 KiB of YAML)",
    ),
    (
        "CONFIG_INVALID",
        Class::Usage,
        "a swarm.* setting is unusable: swarm.planFile outside the worktree, swarm.worktreeRoot outside the main worktree",
    ),
    (
        "ENV_INVALID",
        Class::Usage,
        "an environment variable git-swarm reads has an invalid value (GIT_SWARM_NOW)",
    ),
    // handoff, accept and leadership
    (
        "PACKET_SECRET",
        Class::Usage,
        "handoff: a packet field looks like a credential (named, never echoed); nothing was written",
    ),
    (
        "PLAN_SECRET",
        Class::Usage,
        "plan new/save: the plan text (line named), a record field or the message looks like a credential; nothing was written",
    ),
    (
        "TEXT_INVALID",
        Class::Usage,
        "handoff, report, plan new/save, lead takeover/push, lane new: a text field holds a control character, escape, bidi control or (outside plan text and contract) a newline (field named); nothing was written",
    ),
    (
        "SECRET_IN_TEXT",
        Class::Usage,
        "report, lead takeover --reason, lead push, lane new --base: the text looks like a credential (field and kind named, never the value); nothing was written",
    ),
    (
        "PACKET_MISMATCH",
        Class::Check,
        "accept: plan, contract, branch, head or uncommitted paths differ from the packet; nothing was recorded",
    ),
    (
        "PACKET_ALREADY_ACCEPTED",
        Class::Race,
        "accept: the packet was already accepted (a packet is accepted once); packet withdraw: too late to withdraw",
    ),
    (
        "PACKET_WITHDRAWN",
        Class::Check,
        "accept: the packet was withdrawn by its author; nothing was recorded",
    ),
    (
        "PACKET_NOT_AUTHOR",
        Class::Check,
        "packet withdraw: only the packet's author withdraws it",
    ),
    (
        "PACKET_LANE_MISSING",
        Class::Check,
        "accept: the packet hands over a lane whose record has not reached this clone; nothing was recorded",
    ),
    (
        "SUCCESSOR_UNKNOWN",
        Class::Usage,
        "lead handover: the address is not in the plan's succession (--force adds it)",
    ),
    (
        "LEAD_HELD",
        Class::Race,
        "lead claim: someone already leads the plan",
    ),
    (
        "LEAD_RACE_LOST",
        Class::Race,
        "lead claim/takeover: another contender won at the remote's compare-and-swap",
    ),
    (
        "LEAD_FENCED",
        Class::Race,
        "a leader-only command by a leader whose epoch is no longer current",
    ),
    (
        "NOT_LEADER",
        Class::Race,
        "a leader-only command by someone who does not lead the plan",
    ),
    (
        "NOT_IN_SUCCESSION",
        Class::Race,
        "lead takeover: you are not in the plan's succession list",
    ),
    (
        "LEASE_LIVE",
        Class::Race,
        "lead takeover: the leader's lease has not expired (wait, or pass --force with a reason)",
    ),
    (
        "PUSH_DENIED",
        Class::Env,
        "the remote refused a push on its own policy (a hook, branch protection); retrying cannot help",
    ),
    (
        "REMOTE_MISSING",
        Class::Usage,
        "the configured remote does not exist",
    ),
    (
        "REFTABLE_UNSUPPORTED",
        Class::Env,
        "the repository uses the reftable ref backend",
    ),
    ("NOT_A_REPO", Class::Env, "not inside a git repository"),
    (
        "BARE_REPO",
        Class::Env,
        "a command that writes ran in a bare repository (reading commands work there)",
    ),
    (
        "GIT_FAILED",
        Class::Env,
        "git (or the object database) failed",
    ),
    (
        "IO_FAILED",
        Class::Env,
        "a file could not be read or written",
    ),
    (
        "INTERNAL",
        Class::Env,
        "git-swarm could not serialise its own data: a bug, please report it",
    ),
    (
        "DEMO_FAILED",
        Class::Env,
        "a step of `git swarm demo` did not behave as expected",
    ),
    // verify
    (
        "REPO_UNKNOWN",
        Class::Usage,
        "verify: the GitHub repository cannot be inferred from the remote URL; pass --repo",
    ),
    (
        "PR_NOT_FOUND",
        Class::Usage,
        "verify: no such pull request (or the token cannot see it), or no PR for the lane's branch",
    ),
    (
        "GITHUB_API",
        Class::Env,
        "verify: the GitHub API answered with an error status (e.g. HTTP 500)",
    ),
    (
        "GITHUB_AUTH",
        Class::Env,
        "verify: GitHub refused the token (HTTP 401), or the token cannot be sent",
    ),
    (
        "GITHUB_RATE_LIMITED",
        Class::Env,
        "verify: GitHub's rate limit is exhausted (and --wait could not wait it out)",
    ),
    (
        "GITHUB_UNREACHABLE",
        Class::Env,
        "verify: GitHub could not be reached or did not answer in time",
    ),
    (
        "GITHUB_BAD_RESPONSE",
        Class::Env,
        "verify: GitHub's answer was unusable (malformed JSON, a field the verdict reads of the wrong type, named in the message, a head SHA that is not one, endless pages)",
    ),
    // lanes, reports and guards
    (
        "PLAN_HAS_EXECUTOR",
        Class::Check,
        "lane new: the plan already has an active lane (one executor per plan)",
    ),
    (
        "LANE_EXISTS",
        Class::Usage,
        "lane new: the lane, its branch feat/<feature> or its worktree directory already exists",
    ),
    (
        "LANE_DIRTY",
        Class::Check,
        "lane rm: the lane's worktree has uncommitted changes or unsaved plan edits (--force discards them)",
    ),
    (
        "LANE_UNMERGED",
        Class::Check,
        "lane rm: the lane's branch has commits not merged into its base (--keep-branch or --force)",
    ),
    (
        "LANE_ELSEWHERE",
        Class::Check,
        "lane rm: the lane's worktree is in another clone (--force marks the record removed)",
    ),
    (
        "LANE_MOVED",
        Class::Check,
        "report: this is the old worktree of a lane handed over since; says who owns it now and where",
    ),
    (
        "GUARD_FAILED",
        Class::Check,
        "a hook or check found guard violations; each names its guard, the path, line or ref, and the fix",
    ),
    (
        "GUARD_ERROR",
        Class::Env,
        "a guard could not read what it needs, so it failed closed (nothing passes unchecked)",
    ),
];
