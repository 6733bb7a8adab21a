//! The one error type of git-swarm: a stable UPPER_SNAKE [`Code`], a message
//! that says what happened, hints that say what to do, and the exit code the
//! contract assigns to the code's class (SPEC §4).
//!
//! Every code is one line of the `codes!` table below: its variant, the
//! string users see (`error[NAME_INVALID]`, `"code": "NAME_INVALID"`), its
//! class (so its exit code) and the README's description of it. The README
//! table is generated from [`Code::ALL`] (see `tests/it/cli/docs.rs`), so the
//! string, the exit code and the documentation cannot drift apart.

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

/// Declares [`Code`] from one table: `Variant("STRING", Class): "description",`.
macro_rules! codes {
    ($($variant:ident($name:literal, $class:ident): $meaning:literal,)*) => {
        /// Every error code git-swarm emits. Serialises (and displays) as its
        /// UPPER_SNAKE string; the class decides the exit code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $(#[doc = $meaning] $variant,)*
        }

        impl Code {
            /// Every code, in the README's order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable string users and scripts see: `NAME_INVALID`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The class, which decides the exit code.
            pub const fn class(self) -> Class {
                match self {
                    $(Code::$variant => Class::$class,)*
                }
            }

            /// What the code means, as the README's error table says it.
            pub const fn description(self) -> &'static str {
                match self {
                    $(Code::$variant => $meaning,)*
                }
            }

            /// The code whose string is `name`.
            pub fn from_name(name: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.as_str() == name)
            }
        }
    };
}

codes! {
    Usage("USAGE", Usage): "unknown flag, missing argument or conflicting options",
    NameInvalid("NAME_INVALID", Usage): "a plan, feature or address name does not match the naming rules",
    YamlInvalid("YAML_INVALID", Usage): "a record or input file is not valid YAML for its schema",
    SchemaUnsupported("SCHEMA_UNSUPPORTED", Usage): "a record has a newer major schema than this git-swarm understands",
    IdentityMissing("IDENTITY_MISSING", Usage): "the command needs an actor and none was found",
    NotFound("NOT_FOUND", Usage): "the named plan, lane, packet or file does not exist",
    PlanExists("PLAN_EXISTS", Usage): "plan new: a plan of that name already exists",
    PlanDirty("PLAN_DIRTY", Check): "plan checkout: the local PLAN.md has edits that the plan ref does not have",
    PlanBusy("PLAN_BUSY", Check): "plan close: the plan still has an active lane or open child plans (--force closes anyway)",
    PlanNotFinished("PLAN_NOT_FINISHED", Check): "finish: a task of the plan is not done or cancelled, a lane is active and not merged, or a handoff packet is open; each is named, nothing was written",
    PlanClosed("PLAN_CLOSED", Check): "lane new, plan save: the plan is closed (reopen it first)",
    PlanFileMismatch("PLAN_FILE_MISMATCH", Usage): "plan save: the plan file was checked out from another plan",
    PlanSaveConflict("PLAN_SAVE_CONFLICT", Race): "plan save: the plan moved on since the file was checked out and both changed the same lines; names the newer version, nothing saved",
    PlanAmbiguous("PLAN_AMBIGUOUS", Usage): "a command that takes a plan was given none, outside a lane, with several plans: it lists them",
    CasFailed("CAS_FAILED", Race): "a ref changed under us between read and write; nothing was overwritten",
    PlanConflict("PLAN_CONFLICT", Race): "sync: the same record name was created independently on two sides",
    WriteLost("WRITE_LOST", Race): "sync: a write this clone kept (its command exited 0) could not be replayed on the published version; each is named with what the remote holds instead, and kept under refs/swarm-lost/",
    PushRejected("PUSH_REJECTED", Race): "the remote refused the atomic push (someone else moved a ref first)",
    RecordInvalid("RECORD_INVALID", Usage): "a record is too large or nested too deeply to be read (limits: 64 KiB, depth 32), holds a control character, or a name or address field breaks the name rules; listings skip it with a warning",
    PlanFileUnsafe("PLAN_FILE_UNSAFE", Usage): "the plan file is a symbolic link or not a regular file; git-swarm neither reads nor writes through it",
    FileNotRegular("FILE_NOT_REGULAR", Usage): "an input file (--from, --file) is a FIFO, device or directory, not a regular file; agent install: a file it would write is one, or leads out of the checkout through a symbolic link (nothing written)",
    FileTooLarge("FILE_TOO_LARGE", Usage): "an input or plan file is larger than git-swarm reads (1 MiB of text, 64 KiB of YAML)",
    ConfigInvalid("CONFIG_INVALID", Usage): "a swarm.* setting is unusable: swarm.planFile outside the worktree, swarm.worktreeRoot outside the main worktree, or swarm.pushBudget / swarm.trust set to a value it cannot parse",
    EnvInvalid("ENV_INVALID", Usage): "an environment variable git-swarm reads has an invalid value (GIT_SWARM_NOW, GIT_CONFIG_PARAMETERS)",
    RecordUntrusted("RECORD_UNTRUSTED", Check): "under swarm.trust=require, a record is unsigned, badly signed, or signed by a key that .swarm/allowed_signers on the base branch does not list for the actor it names: listings show it as UNTRUSTED with the reason, decisions skip it",
    SigningKeyMissing("SIGNING_KEY_MISSING", Usage): "under swarm.trust=require, a command would write a record for an actor with no signing key (swarm.<address>.signingKey, or an ssh user.signingKey with commit.gpgSign); nothing was written",
    SigningFailed("SIGNING_FAILED", Env): "a signing key is configured (swarm.<address>.signingKey, user.signingKey) but the signing program could not sign with it, or could not make a key (agent keygen); nothing was written",
    SigningToolMissing("SIGNING_TOOL_MISSING", Env): "the program that signs and checks records (ssh-keygen, or gpg.ssh.program / gpg.program) is missing or too old for `ssh-keygen -Y` (OpenSSH 8.2p1 or later): nothing was written, no record was judged and no verdict kept; under swarm.trust=warn records are used unchecked, with a warning",
    // handoff, accept and leadership
    PacketSecret("PACKET_SECRET", Usage): "handoff: a packet field looks like a credential (named, never echoed); nothing was written",
    PlanSecret("PLAN_SECRET", Usage): "plan new/save: the plan text (line named), a record field or the message looks like a credential; nothing was written",
    TextInvalid("TEXT_INVALID", Usage): "handoff, report, plan new/save, lead takeover/push, lane new: a text field holds a control character, escape, bidi control or (outside plan text and contract) a newline (field named); nothing was written",
    SecretInText("SECRET_IN_TEXT", Usage): "report, lead takeover --reason, lead push, lane new --base: the text looks like a credential (field and kind named, never the value); nothing was written",
    PacketMismatch("PACKET_MISMATCH", Check): "accept: plan, contract, branch, head or uncommitted paths differ from the packet; nothing was recorded",
    PacketAlreadyAccepted("PACKET_ALREADY_ACCEPTED", Race): "accept: the packet was already accepted (a packet is accepted once); packet withdraw: too late to withdraw",
    PacketWithdrawn("PACKET_WITHDRAWN", Check): "accept: the packet was withdrawn by its author; nothing was recorded",
    PacketNotAuthor("PACKET_NOT_AUTHOR", Check): "packet withdraw: only the packet's author withdraws it",
    PacketLaneMissing("PACKET_LANE_MISSING", Check): "accept: the packet hands over a lane whose record has not reached this clone; nothing was recorded",
    SuccessorUnknown("SUCCESSOR_UNKNOWN", Usage): "lead handover: the address is not in the plan's succession (--force adds it)",
    LeadHeld("LEAD_HELD", Race): "lead claim: someone already leads the plan",
    LeadRaceLost("LEAD_RACE_LOST", Race): "lead claim/takeover: another contender won at the remote's compare-and-swap",
    LeadFenced("LEAD_FENCED", Race): "a leader-only command by a leader whose epoch is no longer current",
    NotLeader("NOT_LEADER", Race): "a leader-only command by someone who does not lead the plan",
    NotInSuccession("NOT_IN_SUCCESSION", Race): "lead takeover: you are not in the plan's succession list",
    LeaseLive("LEASE_LIVE", Race): "lead takeover: the leader's lease has not expired (wait, or pass --force with a reason)",
    RemoteBusy("REMOTE_BUSY", Env): "the remote kept failing a push or fetch on its side (a ref it could not lock, an HTTP 5xx, a dropped connection) through every retry; not a lost race: run the command again later",
    PushDenied("PUSH_DENIED", Env): "the remote refused a push on its own policy (a hook, branch protection); retrying cannot help",
    RemoteUnreachable("REMOTE_UNREACHABLE", Env): "the remote could not be reached (no connection, or no repository at its URL): names the remote and when this clone last reached it; an arbitration decides in this clone only with --offline, listings show what the clone knows",
    GitTooOld("GIT_TOO_OLD", Env): "the installed git lacks a feature the command needs (the forecast's `git merge-tree --write-tree`: 2.38): names the installed version, the version needed and what for",
    RemoteMissing("REMOTE_MISSING", Usage): "the configured remote does not exist",
    RemoteTaken("REMOTE_TAKEN", Usage): "init --coordination-remote: a remote of the name it adds already points at another URL; nothing was changed",
    ReftableUnsupported("REFTABLE_UNSUPPORTED", Env): "the repository uses the reftable ref backend",
    NotARepo("NOT_A_REPO", Env): "not inside a git repository",
    BareRepo("BARE_REPO", Env): "a command that writes ran in a bare repository (reading commands work there)",
    GitFailed("GIT_FAILED", Env): "git (or the object database) failed",
    IoFailed("IO_FAILED", Env): "a file could not be read or written",
    Internal("INTERNAL", Env): "git-swarm could not serialise its own data: a bug, please report it",
    DemoFailed("DEMO_FAILED", Env): "a step of `git swarm demo` did not behave as expected",
    AgentHostMissing("AGENT_HOST_MISSING", Env): "demo --agents: the Claude Code CLI is neither on PATH nor named by GIT_SWARM_CLAUDE; nothing was run",
    // verify
    RepoUnknown("REPO_UNKNOWN", Usage): "verify: the GitHub repository cannot be inferred from the remote URL; pass --repo",
    PrNotFound("PR_NOT_FOUND", Usage): "verify: no such pull request (or the token cannot see it), or no PR for the lane's branch",
    GithubApi("GITHUB_API", Env): "verify: the GitHub API answered with an error status (e.g. HTTP 500)",
    GithubAuth("GITHUB_AUTH", Env): "verify: GitHub refused the token (HTTP 401), or the token cannot be sent",
    GithubRateLimited("GITHUB_RATE_LIMITED", Env): "verify: GitHub's rate limit is exhausted (and --wait could not wait it out)",
    GithubUnreachable("GITHUB_UNREACHABLE", Env): "verify: GitHub could not be reached or did not answer in time",
    GithubBadResponse("GITHUB_BAD_RESPONSE", Env): "verify: GitHub's answer was unusable (malformed JSON, a field the verdict reads of the wrong type, named in the message, a head SHA that is not one, endless pages)",
    // lanes, reports and guards
    PlanHasExecutor("PLAN_HAS_EXECUTOR", Check): "lane new: the plan already has an active lane (one executor per plan)",
    LaneExists("LANE_EXISTS", Usage): "lane new: the lane, its branch feat/<feature> or its worktree directory already exists",
    LaneDirty("LANE_DIRTY", Check): "lane rm: the lane's worktree has uncommitted changes or unsaved plan edits (--force discards them)",
    LaneUnmerged("LANE_UNMERGED", Check): "lane rm: the lane's branch has commits not merged into its base (--keep-branch or --force)",
    LaneNeedsTask("LANE_NEEDS_TASK", Check): "lane new --plan P without --task while P has ready, unclaimed tasks: it lists them and the --task form (--no-task starts anyway)",
    LaneElsewhere("LANE_ELSEWHERE", Check): "lane rm: the lane's worktree is in another clone (--force marks the record removed)",
    LaneMoved("LANE_MOVED", Check): "report, lane snapshot, handoff or a task write in the old worktree of a lane handed over since (its record fetched first), or sync keeping the published lane over a write made here for its previous owner; says who owns it now and where",
    GuardFailed("GUARD_FAILED", Check): "a hook or check found guard violations; each names its guard, the path, line or ref, and the fix",
    GuardError("GUARD_ERROR", Env): "a guard could not read what it needs, so it failed closed (nothing passes unchecked)",
    MessageSecret("MESSAGE_SECRET", Usage): "notify/ask/reply/decide/escalate: the message looks like it holds a credential (named, never echoed); nothing was written",
    MessageInvalid("MESSAGE_INVALID", Usage): "notify/ask/reply/decide/escalate: the message is empty, too large, or addressed to nobody",
    MessageNotFound("MESSAGE_NOT_FOUND", Usage): "reply: no message has that id (sync first if it was posted elsewhere)",
    AskNotFound("ASK_NOT_FOUND", Usage): "reply --last: no ask addressed to you (from --from, if given) is known in this clone (sync first if it was posted elsewhere)",
    NoLeader("NO_LEADER", Check): "notify/ask lead: the plan has no current leader to address",
    EscalationSent("ESCALATION_SENT", Check): "escalate: the same escalation was already recorded; says when and by whom",
    WaitTimeout("WAIT_TIMEOUT", Check): "wait: nothing of the kind arrived before --timeout",
    // tasks and their leases
    TaskNotFound("TASK_NOT_FOUND", Usage): "task: no task of that id (in that plan); `git swarm task list` shows them",
    TaskExists("TASK_EXISTS", Usage): "task new: a task of that id already exists in the plan (pick another id)",
    TaskInvalidTransition("TASK_INVALID_TRANSITION", Check): "task: the status change is not allowed from the task's status (done and cancelled are terminal); nothing was written",
    TaskDependencyNotReady("TASK_DEPENDENCY_NOT_READY", Check): "task claim/done: a dependency is not done yet (named); finish it first",
    TaskUnknownDependency("TASK_UNKNOWN_DEPENDENCY", Usage): "task new/update: --depends-on names a task the plan does not have",
    TaskDependencyCycle("TASK_DEPENDENCY_CYCLE", Usage): "task new/update: the dependencies would form a cycle (the cycle is named)",
    NoReadyTask("NO_READY_TASK", Check): "task claim --next: no task is ready to claim (open, unclaimed, its dependencies done), or others claimed every ready one first (named)",
    LeaseHeld("LEASE_HELD", Race): "task claim: someone else holds a live claim on the task (holder and lease named), or won the race to claim it",
    LeaseNotHolder("LEASE_NOT_HOLDER", Race): "task renew/release/block/done/cancel: you do not hold the task's claim (the holder is named)",
    LeaseExpired("LEASE_EXPIRED", Race): "task claim/renew: the claim expired; an expired claim is taken only by `task recover --reason`",
    LeaseNotExpired("LEASE_NOT_EXPIRED", Race): "task recover: the claim is still live (wait for its lease, or ask the holder to release it)",
    LeaseInvalidDuration("LEASE_INVALID_DURATION", Usage): "task: --lease or swarm.taskLease is not a positive duration (45s, 30m, 2h, 1d)",
    TaskNotMerged("TASK_NOT_MERGED", Check): "task done: the task's branch is not merged into its base and has no merged verdict note (--unverified --reason records it anyway)",
    SnapshotTooLarge("SNAPSHOT_TOO_LARGE", Usage): "handoff, lane snapshot: the uncommitted work is larger than swarm.snapshotLimit (bytes, default 10 MiB); nothing was written",
    SnapshotUnsafe("SNAPSHOT_UNSAFE", Check): "accept: the packet's snapshot would write into .git, outside the worktree or through a symlink (a path given twice, `..`, `.git`, a path under a file, a mode outside git's set, a submodule); checked in memory before writing: nothing was written or recorded",
    SnapshotUnsupported("SNAPSHOT_UNSUPPORTED", Check): "handoff, lane snapshot: the uncommitted work holds what a successor could not get back exactly (a path with a control character, TAB, backslash or bidi control, a staged submodule, a nested repository), every path named; the rule `accept` applies; nothing was written or published",
    SnapshotMissing("SNAPSHOT_MISSING", Env): "accept: the packet's snapshot commit has not reached this clone (`git swarm sync`, or `accept --no-restore`); nothing was recorded",
    // forecast
    ForecastConflict("FORECAST_CONFLICT", Check): "forecast --exit-code: two lanes, or a lane and its base, are forecast to conflict (pairs and paths named)",
    // dashboard
    ServeTokenRequired("SERVE_TOKEN_REQUIRED", Usage): "serve: --bind to an address other than 127.0.0.1 needs --token (or GIT_SWARM_SERVE_TOKEN), which every request must carry",
    ServeBindFailed("SERVE_BIND_FAILED", Env): "serve: the address or port cannot be listened on (in use, or not an address of this machine)",
    SnapshotSecret("SNAPSHOT_SECRET", Usage): "lane snapshot: a file of the uncommitted work looks like a credential (path and line named, never the value); nothing was written or published",
    SnapshotNotOwner("SNAPSHOT_NOT_OWNER", Race): "lane snapshot: only the lane's owner publishes its snapshot (the owner is named); nothing was written",
    LaneNotHere("LANE_NOT_HERE", Env): "lane snapshot: the lane's worktree is not in this clone, or not on the lane's branch; nothing was written",
    // reservations
    ReservationConflict("RESERVATION_CONFLICT", Race): "reserve: a path overlaps a live reservation of someone else (named, with its task and expiry); nothing was written",
    ReservationPathInvalid("RESERVATION_PATH_INVALID", Usage): "reserve: a path is empty, absolute, holds '..', a control character or a backslash, is inside .git, or leaves the worktree through a symlink",
    ReservationNotHolder("RESERVATION_NOT_HOLDER", Race): "release: the reservation is someone else's",
    ReservationNotExpired("RESERVATION_NOT_EXPIRED", Race): "reserve --recover: the reservation's lease has not ended",
    ReservationNotFound("RESERVATION_NOT_FOUND", Usage): "release / reserve --recover: no live reservation has that id (or, for release, that path of yours)",
}

impl Code {
    pub fn exit_code(self) -> u8 {
        self.class().exit_code()
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// An error as the user sees it: `error[CODE]: message` plus `hint:` lines.
#[derive(Debug, Clone)]
pub struct Error {
    pub code: Code,
    pub message: String,
    pub hints: Vec<String>,
    /// Structured detail for `--json` (mismatches, conflicting paths, …).
    pub detail: Option<serde_json::Value>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with `code`; its class (so its exit code) is the code's.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            hints: Vec::new(),
            detail: None,
        }
    }
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }
    pub fn class(&self) -> Class {
        self.code.class()
    }
    pub fn exit_code(&self) -> u8 {
        self.code.exit_code()
    }

    /// Wrap a failure of gix (object database, refs, config) as an environment error.
    pub fn gix(context: impl fmt::Display, err: impl fmt::Display) -> Self {
        Self::new(Code::GitFailed, format!("{context}: {err}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_upper_snake_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for &code in Code::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{name}"
            );
            assert_eq!(Code::from_name(name), Some(code));
            assert_eq!(code.to_string(), name);
            assert_eq!(serde_json::to_value(code).unwrap(), serde_json::json!(name));
        }
        assert_eq!(Code::from_name("NO_SUCH_CODE"), None);
    }

    #[test]
    fn text_and_json_keep_their_shape() {
        let err = Error::new(Code::CasFailed, "moved").hint("retry");
        assert_eq!(err.to_string(), "error[CAS_FAILED]: moved\nhint: retry");
        assert_eq!(err.exit_code(), 3);
        assert_eq!(
            err.to_json(),
            serde_json::json!({"error": {
                "code": "CAS_FAILED", "message": "moved", "hints": ["retry"], "exit": 3,
            }})
        );
    }
}
