//! What each command is, in one place: a [`Spec`] per command beside its
//! clap arguments (`pub const SPECS` in each `commands/<group>.rs`), all of
//! them registered in [`crate::cli::SPECS`]. `parse()` looks the invoked
//! command up and hands its [`Facts`] to `run()`, which decides from them
//! alone whether the command may run in a bare repository, lists from the
//! mirror when the remote is out of reach, publishes after, keeps its write
//! when the remote cannot be reached, is queued by a push budget, and so on.
//!
//! A spec names a command path as typed after `git swarm` (`"lane list"`).
//! A spec of a group (`"verify"`) covers every subcommand of it that has no
//! spec of its own. Facts that depend on the arguments are listed as
//! [`When`] conditions, each adding its facts when it holds.

use clap::ArgMatches;

/// A set of facts about a command (a small bit set, built in consts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts(u16);

impl Facts {
    /// Nothing known (what a conditional adds to nothing).
    pub const NONE: Facts = Facts(0);
    /// Only reads records: works in a bare repository, and a `swarm.remote`
    /// naming no remote is a warning (local records are shown).
    pub const READ: Facts = Facts(1);
    /// Reads records and talks to the remote (`verify`, `lead check`): the
    /// remote must exist; a bare repository is fine.
    pub const REMOTE: Facts = Facts(1 << 1);
    /// Writes records, worktrees or files: needs a working tree (a bare
    /// repository is `BARE_REPO`) and a remote that exists.
    pub const WRITE: Facts = Facts(1 << 2);
    /// A listing: it works from what the clone knows when the remote cannot
    /// be reached (exit 0, one warning line naming the remote and when it
    /// was last reached), instead of failing on the fetch.
    pub const LISTING: Facts = Facts(1 << 3);
    /// An arbitration: its point is the remote's verdict, so it refuses
    /// when the remote cannot be reached and decides in this clone alone
    /// only with `--offline` (what the `REMOTE_UNREACHABLE` hint says).
    pub const ARBITRATION: Facts = Facts(1 << 4);
    /// A write nobody races for, which a push budget queues: messages,
    /// reports, plan saves, lane snapshots.
    pub const BUDGETED: Facts = Facts(1 << 5);
    /// A write that is the lane owner's when run in a lane's worktree:
    /// refused with `LANE_MOVED` in the worktree of a lane handed over
    /// since (`Ctx::refuse_if_moved`, which fetches the lane record first).
    pub const IN_LANE: Facts = Facts(1 << 6);
    /// A task boundary: the capacity check follows the command's outcome.
    pub const BOUNDARY: Facts = Facts(1 << 7);
    /// Shows no leadership announcements afterwards: the hooks, which must
    /// stay cheap and have their own way of showing messages, and the
    /// commands that do not act in a swarm.
    pub const QUIET: Facts = Facts(1 << 8);
    /// Publishes nothing after, although it writes: `sync` publishes
    /// everything itself; `init`, `demo`, the hooks and `wait` write no
    /// shared record of their own.
    pub const NO_PUBLISH: Facts = Facts(1 << 9);
    /// A write whose point is to reach the remote (`lead push`, `lead
    /// merge`, `finish`, the pool's changes): it fails when the remote
    /// cannot be reached rather than keeping its write here.
    pub const NO_KEEP: Facts = Facts(1 << 10);
    /// Never publishes a push budget's due queue first: `sync`, the git
    /// hooks and guards (a commit must not push), and the commands that do
    /// not touch a swarm.
    pub const NO_FLUSH: Facts = Facts(1 << 11);
    /// Does not sweep the worktrees of closed lanes afterwards (`lane rm`
    /// keeps a worktree it found dirty on purpose, `lane prune` sweeps
    /// itself).
    pub const NO_SWEEP: Facts = Facts(1 << 12);

    /// A listing that only reads.
    pub const LIST: Facts = Facts::READ.and(Facts::LISTING);
    /// A command outside any swarm (completions, man pages, the demo).
    pub const APART: Facts = Facts::READ
        .and(Facts::QUIET)
        .and(Facts::NO_PUBLISH)
        .and(Facts::NO_FLUSH);

    /// Both sets.
    pub const fn and(self, other: Facts) -> Facts {
        Facts(self.0 | other.0)
    }

    /// Whether every fact of `other` holds.
    pub const fn has(self, other: Facts) -> bool {
        self.0 & other.0 == other.0
    }

    /// What the command does to the repository.
    pub fn access(self) -> Access {
        if self.has(Facts::WRITE) {
            Access::Write
        } else if self.has(Facts::REMOTE) {
            Access::Remote
        } else {
            Access::Read
        }
    }

    pub fn listing(self) -> bool {
        self.has(Facts::LISTING)
    }

    /// A command that writes records: once it succeeded, whatever this
    /// clone has not published yet goes out with it (`publish_after`).
    pub fn publishes_after(self) -> bool {
        self.access() == Access::Write && !self.listing() && !self.has(Facts::NO_PUBLISH)
    }

    /// A write that, when the remote cannot be reached (it could not
    /// connect, or there is no such repository), goes on as with
    /// `--offline`: kept here, said in the one wording, published by the
    /// next command that reaches the remote. Not the arbitrations (offline
    /// two machines could each be told they won, and an agent told exit 0
    /// starts work on a task someone else holds; these keep exit 4 and name
    /// `--offline`), nor the writes whose point is to reach it.
    pub fn keeps_when_unreachable(self) -> bool {
        self.publishes_after() && !self.has(Facts::ARBITRATION) && !self.has(Facts::NO_KEEP)
    }

    pub fn arbitration(self) -> bool {
        self.has(Facts::ARBITRATION)
    }

    pub fn budgeted(self) -> bool {
        self.has(Facts::BUDGETED)
    }

    /// A command that first publishes a queue whose window has passed:
    /// every command but those that publish anyway (writes carry the
    /// queue) and those marked [`Facts::NO_FLUSH`].
    pub fn flushes_first(self) -> bool {
        !self.publishes_after() && !self.budgeted() && !self.has(Facts::NO_FLUSH)
    }

    pub fn writes_in_a_lane(self) -> bool {
        self.has(Facts::IN_LANE)
    }

    pub fn boundary(self) -> bool {
        self.has(Facts::BOUNDARY)
    }

    pub fn shows_announcements(self) -> bool {
        !self.has(Facts::QUIET)
    }

    pub fn sweeps(self) -> bool {
        !self.has(Facts::NO_SWEEP)
    }
}

impl std::ops::BitOr for Facts {
    type Output = Facts;
    fn bitor(self, other: Facts) -> Facts {
        self.and(other)
    }
}

/// What a command does to the repository, which decides what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads records ([`Facts::READ`]).
    Read,
    /// Writes records, worktrees or files ([`Facts::WRITE`]).
    Write,
    /// Reads records and talks to the remote ([`Facts::REMOTE`]).
    Remote,
}

/// A condition on the arguments (named by their clap id, the field name).
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// The argument was given on the command line.
    Given(&'static str),
    /// The argument was not given.
    Absent(&'static str),
    /// The argument was given with this value.
    Value(&'static str, &'static str),
}

impl When {
    pub fn arg(&self) -> &'static str {
        match self {
            When::Given(a) | When::Absent(a) | When::Value(a, _) => a,
        }
    }

    fn holds(&self, given: &dyn Fn(&str) -> Option<String>) -> bool {
        let value = given(self.arg());
        match self {
            When::Given(_) => value.is_some(),
            When::Absent(_) => value.is_none(),
            When::Value(_, v) => value.as_deref() == Some(*v),
        }
    }
}

/// One command's facts.
#[derive(Debug)]
pub struct Spec {
    /// The command as typed after `git swarm`: `"lane list"`.
    pub command: &'static str,
    /// What always holds.
    pub facts: Facts,
    /// What holds when a condition on the arguments does.
    pub when: &'static [(When, Facts)],
}

impl Spec {
    /// A spec whose facts do not depend on the arguments.
    pub const fn new(command: &'static str, facts: Facts) -> Spec {
        Spec {
            command,
            facts,
            when: &[],
        }
    }

    /// A spec with facts that depend on the arguments.
    pub const fn when(command: &'static str, facts: Facts, when: &'static [(When, Facts)]) -> Spec {
        Spec {
            command,
            facts,
            when,
        }
    }

    /// The facts for these arguments (`given(id)`: the argument's value as
    /// typed, `Some("")` for one given without a value, None if not given).
    pub fn facts(&self, given: &dyn Fn(&str) -> Option<String>) -> Facts {
        self.when
            .iter()
            .filter(|(w, _)| w.holds(given))
            .fold(self.facts, |f, (_, add)| f.and(*add))
    }
}

/// The spec of a command path: its own, else its nearest group's.
pub fn find(path: &[&str]) -> Option<&'static Spec> {
    (1..=path.len()).rev().find_map(|n| {
        let name = path[..n].join(" ");
        crate::cli::SPECS
            .iter()
            .flat_map(|g| g.iter())
            .find(|s| s.command == name)
    })
}

/// The facts of a command path with these arguments; a command without a
/// spec (the unit test refuses one) is taken as a write, the safe default:
/// it refuses a bare repository and a missing remote.
pub fn facts_of(path: &[&str], given: &dyn Fn(&str) -> Option<String>) -> Facts {
    find(path).map_or(Facts::WRITE, |s| s.facts(given))
}

/// The facts of what clap parsed: the subcommand path, and the leaf's
/// arguments as given on the command line.
pub fn facts_of_matches(matches: &ArgMatches) -> Facts {
    let mut path = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    facts_of(&path, &|arg| given(m, arg))
}

fn given(m: &ArgMatches, arg: &str) -> Option<String> {
    let Ok(Some(mut raw)) = m.try_get_raw(arg) else {
        return None;
    };
    (m.value_source(arg) == Some(clap::parser::ValueSource::CommandLine))
        .then(|| raw.next().map(|v| v.to_string_lossy().into_owned()))
        .map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::cli::Cli;

    /// Every command a user can run (a leaf, or a group that runs without a
    /// subcommand), as its path after `git swarm`, with its clap command.
    fn runnable(
        cmd: &clap::Command,
        path: &mut Vec<String>,
        out: &mut Vec<(String, clap::Command)>,
    ) {
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if !path.is_empty() && (subs.is_empty() || !cmd.is_subcommand_required_set()) {
            out.push((path.join(" "), cmd.clone()));
        }
        for sub in subs {
            path.push(sub.get_name().to_string());
            runnable(sub, path, out);
            path.pop();
        }
    }

    fn all() -> Vec<(String, clap::Command)> {
        let mut out = Vec::new();
        runnable(&Cli::command(), &mut Vec::new(), &mut out);
        out
    }

    #[test]
    fn every_command_has_a_spec() {
        let missing: Vec<String> = all()
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| find(&p.split(' ').collect::<Vec<_>>()).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "commands without a spec (add one to their group's SPECS):\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn every_spec_names_a_command_and_its_arguments() {
        let mut tree = Vec::new();
        let mut path = Vec::new();
        fn walk(
            cmd: &clap::Command,
            path: &mut Vec<String>,
            out: &mut Vec<(String, clap::Command)>,
        ) {
            for sub in cmd.get_subcommands() {
                path.push(sub.get_name().to_string());
                out.push((path.join(" "), sub.clone()));
                walk(sub, path, out);
                path.pop();
            }
        }
        walk(&Cli::command(), &mut path, &mut tree);
        let mut seen = std::collections::HashSet::new();
        for spec in crate::cli::SPECS.iter().flat_map(|g| g.iter()) {
            assert!(seen.insert(spec.command), "two specs of '{}'", spec.command);
            let Some((_, cmd)) = tree.iter().find(|(p, _)| p == spec.command) else {
                panic!("the spec '{}' names no command", spec.command);
            };
            for (w, _) in spec.when {
                let mut cmd = cmd.clone();
                cmd.build();
                assert!(
                    cmd.get_arguments().any(|a| a.get_id() == w.arg()),
                    "the spec '{}' names no argument '{}'",
                    spec.command,
                    w.arg()
                );
            }
        }
    }

    #[test]
    fn every_command_has_one_access() {
        for (path, _) in all() {
            let path: Vec<&str> = path.split(' ').collect();
            let spec = find(&path).expect("a spec");
            for given in [
                &(|_: &str| None) as &dyn Fn(&str) -> Option<String>,
                &|_| Some(String::new()),
            ] {
                let f = spec.facts(given);
                let n = [Facts::READ, Facts::REMOTE, Facts::WRITE]
                    .iter()
                    .filter(|a| f.has(**a))
                    .count();
                assert_eq!(n, 1, "'{}': {f:?}", path.join(" "));
            }
        }
    }

    #[test]
    fn conditions_read_the_arguments_as_given() {
        use clap::{FromArgMatches, Parser as _};
        let facts = |args: &[&str]| {
            let m = Cli::command().try_get_matches_from(args).unwrap();
            let _ = Cli::from_arg_matches(&m).unwrap();
            let _ = Cli::try_parse_from(args).unwrap();
            facts_of_matches(&m)
        };
        assert!(facts(&["git-swarm", "lane", "new", "f", "--task", "t"]).arbitration());
        assert!(!facts(&["git-swarm", "lane", "new", "f"]).arbitration());
        assert!(facts(&["git-swarm", "report", "done"]).writes_in_a_lane());
        assert!(!facts(&["git-swarm", "report", "--lane", "f", "done"]).writes_in_a_lane());
        assert!(!facts(&["git-swarm", "report", "done", "--lane", "f"]).writes_in_a_lane());
        assert!(facts(&["git-swarm", "reserve", "a"]).arbitration());
        assert!(!facts(&["git-swarm", "reserve", "--check", "a"]).arbitration());
        assert_eq!(facts(&["git-swarm", "reservations"]).access(), Access::Read);
        assert_eq!(
            facts(&["git-swarm", "reservations", "--repair", "--reason", "r"]).access(),
            Access::Write
        );
        assert!(!facts(&[
            "git-swarm",
            "agent",
            "hook",
            "pre-tool-use",
            "--host",
            "claude"
        ])
        .flushes_first());
        assert!(facts(&["git-swarm", "agent", "hook", "stop", "--host", "claude"]).flushes_first());
    }
}
