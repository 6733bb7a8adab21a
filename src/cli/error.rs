//! The error edge of the command line: how a failure becomes what the user
//! sees (SPEC §4) — `error[CODE]: message` and `hint:` lines on stderr, the
//! `{"error": {"code", "message", "hints", "exit", "detail"}}` document on
//! stdout under `--json`, and the exit code of the code's class.
//!
//! Where hints come from. The library raises one error type,
//! [`git_swarm::error::Error`]: a [`Code`] (whose class fixes the exit
//! code), a message and hints. Most hints are attached where the error is
//! raised, because they need what only that place knows (the nearest valid
//! name, the plan that is closed, the lane's owner); moving them here would
//! re-derive that context. What the edge owns is what the library cannot
//! know: clap's parse errors become `USAGE` here ([`from_clap`]), and the
//! rendering and the exit code are decided here ([`report`], [`exit_code`]).
//! When a layer below grows a typed error of its own (the store's lost race,
//! a gix failure), its mapping to a `Code` and to the CLI's hints belongs in
//! this module, as in jj's `cli/src/command_error.rs`.

use std::process::ExitCode;

use git_swarm::error::{Code, Error};
use git_swarm::git::RemoteOps;

/// clap's parse error as a `USAGE` error: its first line is the message,
/// its tips and usage line become hints. (`--help`/`--version` are not
/// errors and never get here.)
pub fn from_clap(e: &clap::Error) -> Error {
    // clap's text: one line of error, then tips and a usage line.
    let rendered = e.to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut message = lines
        .next()
        .unwrap_or("bad usage")
        .trim_start_matches("error: ")
        .to_string();
    let mut rest: Vec<&str> = lines.collect();
    // "the following required arguments were not provided:" + the list.
    if message.ends_with(':') {
        let n = rest
            .iter()
            .take_while(|l| !l.starts_with("Usage: ") && !l.starts_with("tip: "))
            .count();
        let listed: Vec<&str> = rest.drain(..n).collect();
        message = format!("{message} {}", listed.join(" "));
    }
    let mut err = Error::new(Code::Usage, message);
    for line in rest {
        if let Some(tip) = line.strip_prefix("tip: ") {
            err = err.hint(tip.to_string());
        } else if line.starts_with("Usage: ") {
            err = err.hint(line.replacen("Usage: ", "usage: ", 1));
        } else if !line.starts_with("For more information") {
            err = err.hint(line.to_string());
        }
    }
    err.hint("see `git swarm <command> -h`")
}

/// The hint of `REMOTE_UNREACHABLE` (whose message the store words: the
/// remote, when it was last reached, git's reason): an arbitration decides
/// in this clone alone with `--offline`; a command whose point is the
/// remote (`sync`, `lead push`) is run again once it answers.
pub fn unreachable_hint(err: Error, arbitration: bool) -> Error {
    if err.code != Code::RemoteUnreachable {
        return err;
    }
    if arbitration {
        err.hint("check the remote's URL and your network; or pass --offline to decide in this clone alone (`git swarm sync` publishes it once the remote answers, where it may lose to another clone's)")
    } else {
        err.hint("check the remote's URL and your network, and run it again once the remote answers; `git swarm status` counts what this clone has not published")
    }
}

/// Show `err`: the JSON document on stdout under `--json`, and always the
/// text on stderr (control characters made visible).
pub fn report(err: &Error, json: bool, ops: RemoteOps) {
    if json {
        let doc = with_remote_ops(err.to_json(), ops);
        let text = serde_json::to_string_pretty(&doc).expect("JSON values serialise");
        super::emit(&mut std::io::stdout().lock(), &format!("{text}\n"));
    }
    say(&git_swarm::text::clean_block(&err.to_string()));
}

/// A command's JSON document with the remote operations this process made
/// (`remote_ops`: pushes, refs pushed, fetches, queries, retries; see
/// [`git_swarm::git::NetTally`]), so that every command says what it cost
/// the remote, whether it succeeded or not. (`remote` is taken: sync, init
/// and status name the remote there.)
pub fn with_remote_ops(mut doc: serde_json::Value, ops: RemoteOps) -> serde_json::Value {
    if let Some(map) = doc.as_object_mut() {
        let ops = serde_json::to_value(ops).expect("counts serialise");
        map.insert("remote_ops".into(), ops);
    }
    doc
}

/// One line on stderr. A closed stderr (`2>&1 | head -c 10`) loses the
/// line, never the exit code: `eprintln!` would panic (exit 101).
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The process exit code for `err`: its code's class (1 check, 2 usage,
/// 3 race, 4 environment).
pub fn exit_code(err: &Error) -> ExitCode {
    ExitCode::from(err.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn a_clap_error_is_usage_with_its_tips_as_hints() {
        let e = crate::cli::Cli::try_parse_from(["git-swarm", "--bogus", "status"]).unwrap_err();
        let err = from_clap(&e);
        assert_eq!(err.code, Code::Usage);
        assert_eq!(err.exit_code(), 2);
        assert!(err.message.contains("--bogus"), "{}", err.message);
        assert_eq!(
            err.hints.last().map(String::as_str),
            Some("see `git swarm <command> -h`")
        );
        assert!(!err
            .hints
            .iter()
            .any(|h| h.starts_with("For more information")));
    }
}
