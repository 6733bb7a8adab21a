//! What a failed fetch, push or ref query means, decided once: from git's
//! exit status and one table of its messages ([`TABLE`]), read in the C
//! locale (every git git-swarm runs has `LC_ALL=C`, see
//! [`super::git_command`]), so a translated git says the same thing.
//!
//! Four classes ([`NetFailure`]): the remote could not be reached (no
//! connection, no such repository: offline), it is busy (a ref it could not
//! lock, an HTTP 5xx, a dropped connection: try again later), it refused on
//! its own policy (a hook, protection: retrying cannot help), or another
//! writer moved a ref first (a lost race: the caller re-reads and decides).
//! Every caller of the network asks [`classify`]; nobody else reads git's
//! stderr for these words.

use crate::error::{Code, Error};

/// What kind of failure a network operation of git met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFailure {
    /// No connection, or no repository there: the remote could not be reached.
    Unreachable,
    /// The remote answered but failed on its side: worth trying again later.
    Busy,
    /// The remote refused on its own policy (a hook, branch protection).
    Refused,
    /// A ref moved under us (a lease that no longer holds).
    LostRace,
}

/// Where a fragment of git's message counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    /// A `remote: ` line (the server's own words) or a porcelain `!` line
    /// (a ref the push could not update).
    Answer,
    /// Anywhere in stderr.
    Stderr,
}

/// The one table of git's messages, checked in order: the first line that
/// matches decides. Each names what the fragment means, in words fit for a
/// message ("the server could not lock a ref").
pub const TABLE: &[(&str, NetFailure, &str)] = &[
    // A ref that moved under a lease or a concurrent transaction.
    (
        "but expected",
        NetFailure::LostRace,
        "a ref moved under the push",
    ),
    (
        "reference already exists",
        NetFailure::LostRace,
        "a ref was created first by another push",
    ),
    (
        "incorrect old value",
        NetFailure::LostRace,
        "a ref moved under the push",
    ),
    (
        "(stale info)",
        NetFailure::LostRace,
        "a ref moved under the push (stale lease)",
    ),
    (
        "(fetch first)",
        NetFailure::LostRace,
        "the remote holds commits this clone has not fetched",
    ),
    (
        "(non-fast-forward)",
        NetFailure::LostRace,
        "the push is not a fast-forward",
    ),
    (
        "(failed to update ref)",
        NetFailure::LostRace,
        "the remote could not update a ref",
    ),
    // A lock held on the server's side.
    (
        "cannot lock ref",
        NetFailure::Busy,
        "the server could not lock a ref",
    ),
    (
        "failed to lock",
        NetFailure::Busy,
        "the server could not lock a ref",
    ),
    // The server's own refusal.
    (
        "hook declined",
        NetFailure::Refused,
        "a hook of the remote refused it",
    ),
    (
        "protected branch",
        NetFailure::Refused,
        "the remote protects the branch",
    ),
    (
        "[remote rejected]",
        NetFailure::Refused,
        "the remote refused it",
    ),
    ("[rejected]", NetFailure::Refused, "the remote refused it"),
    // The server failing (HTTP), or the connection dropping mid-way.
    (
        "The requested URL returned error: 5",
        NetFailure::Busy,
        "the server answered with an HTTP 5xx",
    ),
    (
        "RPC failed; HTTP 5",
        NetFailure::Busy,
        "the server answered with an HTTP 5xx",
    ),
    (
        "HTTP/1.1 5",
        NetFailure::Busy,
        "the server answered with an HTTP 5xx",
    ),
    (
        "HTTP/2 5",
        NetFailure::Busy,
        "the server answered with an HTTP 5xx",
    ),
    (
        "Empty reply from server",
        NetFailure::Busy,
        "the server answered with an HTTP 5xx",
    ),
    (
        "the remote end hung up unexpectedly",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "unexpected disconnect while reading sideband packet",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "early EOF",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "Connection reset by peer",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "RPC failed",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "packet write failed",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    (
        "Broken pipe",
        NetFailure::Busy,
        "the connection to the server dropped",
    ),
    // Nobody there.
    (
        "does not appear to be a git repository",
        NetFailure::Unreachable,
        "there is no repository at its URL",
    ),
    (
        "Repository not found",
        NetFailure::Unreachable,
        "there is no repository at its URL",
    ),
    (
        "repository not found",
        NetFailure::Unreachable,
        "there is no repository at its URL",
    ),
    (
        "Could not resolve host",
        NetFailure::Unreachable,
        "its host name does not resolve",
    ),
    (
        "Could not resolve hostname",
        NetFailure::Unreachable,
        "its host name does not resolve",
    ),
    (
        "Connection refused",
        NetFailure::Unreachable,
        "the connection was refused",
    ),
    (
        "Connection timed out",
        NetFailure::Unreachable,
        "the connection timed out",
    ),
    (
        "No route to host",
        NetFailure::Unreachable,
        "there is no route to its host",
    ),
    (
        "Network is unreachable",
        NetFailure::Unreachable,
        "the network is unreachable",
    ),
    (
        "Failed to connect",
        NetFailure::Unreachable,
        "the connection failed",
    ),
    (
        "unable to connect",
        NetFailure::Unreachable,
        "the connection failed",
    ),
    (
        "Could not read from remote repository",
        NetFailure::Unreachable,
        "it could not be read",
    ),
];

/// What a failed network operation met, and git's reason in words, or
/// None when nothing in the table matches (an error of git itself).
///
/// `status` is git's exit status (None: killed by a signal). `stdout` is
/// the porcelain of a push (`!` lines name rejected refs), `stderr` git's
/// messages. A fragment of the lost-race, lock and refusal lines counts only
/// in the server's answer (a `remote: ` or `!` line), so that a local lock
/// of this clone (updating the mirror) is not taken for the server's; the
/// rest anywhere in stderr. Once the server answered a ref by ref (a `!`
/// line), the connection git closes after it is not a dropped one.
pub fn classify(
    status: Option<i32>,
    stdout: &str,
    stderr: &str,
) -> Option<(NetFailure, &'static str)> {
    if status == Some(0) {
        return None;
    }
    let answer: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("remote: "))
        .chain(stdout.lines().filter(|l| l.starts_with('!')))
        .collect();
    // git itself names a refused atomic push after the lease check.
    let atomic = stderr.contains("atomic push failed for ref");
    let answered = stdout.lines().any(|l| l.starts_with('!')) || atomic;
    for (fragment, class, why) in TABLE {
        let place = match class {
            NetFailure::LostRace | NetFailure::Refused => Where::Answer,
            NetFailure::Busy if fragment.contains("lock") => Where::Answer,
            _ => Where::Stderr,
        };
        let hit = match place {
            Where::Answer => answer.iter().any(|l| l.contains(fragment)),
            Where::Stderr => !answered && stderr.contains(fragment),
        };
        if hit {
            return Some((*class, why));
        }
    }
    if answered {
        // A `!` line whose reason the table does not know: the server's
        // verdict on that ref, not a network failure; an atomic push the
        // lease check refused is a lost race.
        return Some(match atomic {
            true => (NetFailure::LostRace, "a ref moved under the push"),
            false => (NetFailure::Refused, "the remote refused it"),
        });
    }
    None
}

/// git's own reason, for a message: its `fatal:`/`error:` lines without
/// the prefix, the first two joined, never the command line.
pub fn reason(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| {
            !l.starts_with("Please make sure")
                && !l.starts_with("and the repository exists")
                && !l.starts_with("hint:")
        })
        .map(|l| {
            l.trim_start_matches("fatal: ")
                .trim_start_matches("error: ")
                .trim_start_matches("ssh: ")
        })
        .take(2)
        .collect();
    lines.join("; ")
}

/// The error of a fetch or ref query of `remote` that failed (`op` says
/// what it was doing: "fetch from"), by its class: `REMOTE_UNREACHABLE`,
/// `REMOTE_BUSY`, `PUSH_DENIED`, `CAS_FAILED`, else `GIT_FAILED`. The
/// message names the remote and git's reason, never the refspecs; the
/// detail carries the remote and the class (`remote`, `failure`) for the
/// layers above to word it ([`crate::store::mirror::unreachable_error`]).
pub fn network_error(op: &str, remote: &str, out: &std::process::Output) -> Error {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    failure_error(op, remote, out.status.code(), &stdout, &stderr)
}

/// [`network_error`] from its parts.
pub fn failure_error(
    op: &str,
    remote: &str,
    status: Option<i32>,
    stdout: &str,
    stderr: &str,
) -> Error {
    let said = reason(stderr);
    let class = classify(status, stdout, stderr);
    let (code, message, name) = match class {
        Some((NetFailure::Unreachable, why)) => (
            Code::RemoteUnreachable,
            format!("remote '{remote}' could not be reached: {why} ({said})"),
            "unreachable",
        ),
        Some((NetFailure::Busy, why)) => (
            Code::RemoteBusy,
            format!("could not {op} remote '{remote}': {why} ({said})"),
            "busy",
        ),
        Some((NetFailure::Refused, why)) => (
            Code::PushDenied,
            format!("could not {op} remote '{remote}': {why} ({said})"),
            "refused",
        ),
        Some((NetFailure::LostRace, why)) => (
            Code::CasFailed,
            format!("could not {op} remote '{remote}': {why} ({said})"),
            "lost_race",
        ),
        None => (
            Code::GitFailed,
            format!(
                "could not {op} remote '{remote}' ({}): {}",
                status.map_or("killed".to_string(), |c| format!("git exit {c}")),
                stderr.trim()
            ),
            "git",
        ),
    };
    Error::new(code, message).with_detail(serde_json::json!({ "remote": remote, "failure": name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_from_gits_words() {
        let c = |out: &str, err: &str| classify(Some(128), out, err).map(|(k, _)| k);
        assert_eq!(
            c("", "fatal: '/x/r.git' does not appear to be a git repository\nfatal: Could not read from remote repository."),
            Some(NetFailure::Unreachable)
        );
        assert_eq!(
            c("", "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused"),
            Some(NetFailure::Unreachable)
        );
        assert_eq!(
            c("", "fatal: the remote end hung up unexpectedly\nfatal: Could not read from remote repository."),
            Some(NetFailure::Busy)
        );
        assert_eq!(
            c("", "remote: error: cannot lock ref 'refs/swarm/x': Unable to create '/r/refs/swarm/x.lock': File exists."),
            Some(NetFailure::Busy)
        );
        assert_eq!(
            c(
                "",
                "remote: error: cannot lock ref 'refs/swarm/x': is at 1111 but expected 2222"
            ),
            Some(NetFailure::LostRace)
        );
        assert_eq!(
            c("!\tabc:refs/swarm/x\t[rejected] (stale info)", "error: atomic push failed for ref refs/swarm/x. status: 7\nfatal: the remote end hung up unexpectedly\n"),
            Some(NetFailure::LostRace)
        );
        assert_eq!(
            c(
                "!\tabc:refs/heads/main\t[remote rejected] (pre-receive hook declined)",
                "remote: protected branch\nerror: failed to push some refs"
            ),
            Some(NetFailure::Refused)
        );
        // This clone's own lock (the mirror) is not the server's.
        assert_eq!(
            c(
                "",
                "error: cannot lock ref 'refs/swarm-remotes/origin/x': Unable to create"
            ),
            None
        );
        assert_eq!(classify(Some(0), "", "Connection refused"), None);
    }

    #[test]
    fn the_reason_drops_gits_prefixes_and_boilerplate() {
        assert_eq!(
            reason("fatal: '/x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n"),
            "'/x' does not appear to be a git repository; Could not read from remote repository."
        );
    }
}

#[cfg(test)]
mod real;
