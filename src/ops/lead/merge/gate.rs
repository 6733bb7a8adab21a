//! The gate `lead merge` runs in each merged tree, and the trimming of
//! its output for a brief.

use std::path::Path;

use std::process::Command as Process;

use super::BRIEF_LINES;
use crate::error::{Code, Error, Result};

/// Run the gate in `dir` through `sh -c`. A pass is exit 0 that is not
/// empty: a missing command (exit 126 or 127) fails, and so does output
/// that says no test ran (see [`no_test_ran`]). Ok: its last line; Err: the
/// output's tail, for the brief.
pub fn run_gate(cmd: &str, dir: &Path) -> Result<std::result::Result<String, String>> {
    let out = Process::new("sh")
        .arg("-c")
        .arg(format!("{cmd} 2>&1"))
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| {
            Error::new(
                Code::IoFailed,
                format!("could not run the gate (sh -c): {e}"),
            )
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let status = out.status.code();
    let why = match status {
        Some(0) => no_test_ran(&text)
            .map(|w| format!("the gate `{cmd}` passed without testing anything: {w}")),
        Some(126) | Some(127) => Some(format!(
            "the gate `{cmd}` could not run (exit {}: a missing or non-executable command)",
            status.unwrap_or_default()
        )),
        Some(c) => Some(format!("the gate `{cmd}` failed (exit {c})")),
        None => Some(format!("the gate `{cmd}` was killed by a signal")),
    };
    match why {
        None => Ok(Ok(text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("(no output)")
            .trim()
            .to_string())),
        Some(why) => Ok(Err(format!("{why}\n{}", trim_tail(&text)))),
    }
}

/// "No test run": a gate that exits 0 but whose output says it ran no
/// test. The test runners' own words: cargo/libtest's `running 0 tests`
/// with no `running N tests` for N > 0, pytest's `collected 0 items` /
/// `no tests ran`, jest's `No tests found`, go's `no test files` with no
/// `ok` line, mocha's `0 passing`. Other output counts as a run.
pub fn no_test_ran(output: &str) -> Option<&'static str> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let any = |f: &dyn Fn(&str) -> bool| lines.iter().any(|l| f(l));
    let ran_some = any(&|l| {
        l.strip_prefix("running ")
            .and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test")))
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    });
    if any(&|l| l == "running 0 tests") && !ran_some {
        return Some("`running 0 tests`");
    }
    if any(&|l| l.contains("collected 0 items") || l.contains("no tests ran")) {
        return Some("`no tests ran`");
    }
    if any(&|l| l.starts_with("No tests found")) {
        return Some("`No tests found`");
    }
    if any(&|l| l.ends_with("[no test files]")) && !any(&|l| l.starts_with("ok ")) {
        return Some("`no test files`");
    }
    if any(&|l| l == "0 passing" || l.starts_with("0 passing (")) {
        return Some("`0 passing`");
    }
    None
}

fn trim_tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(BRIEF_LINES);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("… ({skip} lines above)\n"));
    }
    for l in &lines[skip..] {
        out.push_str(l);
        out.push('\n');
    }
    out
}

pub(super) fn trim_head(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines
        .iter()
        .take(BRIEF_LINES)
        .map(|l| format!("{l}\n"))
        .collect();
    if lines.len() > BRIEF_LINES {
        out.push_str(&format!("… ({} more lines)\n", lines.len() - BRIEF_LINES));
    }
    out
}
