//! Which git is installed, asked once per process (`git --version`, about a
//! millisecond), and what needs a newer one: every feature of git that
//! git-swarm uses and that came after the oldest git it runs on is one line
//! of [`NEEDS`], and a command that uses one calls [`require`] first, so an
//! older git is named at once (`GIT_TOO_OLD`, exit 4) instead of failing
//! later with git's own message about an unknown option.
//!
//! Where an older git has another way to ask the same question, the caller
//! takes it instead of refusing ([`has`]): `wait` and the idle hook read
//! `git fetch --dry-run`'s lines where `--porcelain` (2.41) is missing.

use std::sync::OnceLock;

use crate::error::{Code, Error, Result};

/// A git feature newer than the oldest git git-swarm runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// `git merge-tree --write-tree`: the forecast, verify's local
    /// conflict check.
    MergeTreeWriteTree,
    /// `git fetch --porcelain`: `wait` and the idle hook's cheap question
    /// (without it they read the dry run's lines for people).
    FetchPorcelain,
    /// `git worktree list -z`: lanes and accept (without it they read its
    /// lines).
    WorktreeListZ,
}

/// Each feature: the git that brought it, and what it is for (said in the
/// message), as the README's table of git versions lists them.
pub const NEEDS: &[(Need, (u32, u32), &str)] = &[
    (
        Need::MergeTreeWriteTree,
        (2, 38),
        "`git merge-tree --write-tree` (the forecast, and verify's local conflict check)",
    ),
    (
        Need::FetchPorcelain,
        (2, 41),
        "`git fetch --porcelain` (wait and the idle hook; older gits read the lines of `git fetch --dry-run`)",
    ),
    (
        Need::WorktreeListZ,
        (2, 36),
        "`git worktree list -z` (lanes and accept; older gits read its lines)",
    ),
];

fn need(n: Need) -> ((u32, u32), &'static str) {
    NEEDS
        .iter()
        .find(|(k, _, _)| *k == n)
        .map(|(_, v, what)| (*v, *what))
        .expect("every Need has a line in NEEDS")
}

/// The installed git's version as (major, minor), asked once per process;
/// None when git does not say (then nothing is refused on its account).
pub fn installed() -> Option<(u32, u32)> {
    static VERSION: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let out = super::git_command()
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .output()
            .ok()?;
        parse_version(&String::from_utf8_lossy(&out.stdout))
    })
}

/// Whether the installed git has `n` (an unknown version is taken to).
pub fn has(n: Need) -> bool {
    match installed() {
        Some(v) => v >= need(n).0,
        None => true,
    }
}

/// `GIT_TOO_OLD` when the installed git lacks `n`: names the installed
/// version, the version needed and what for.
pub fn require(n: Need) -> Result<()> {
    too_old_for(n, installed()).map_or(Ok(()), Err)
}

/// The `GIT_TOO_OLD` error of `version` for `n`, if it is too old.
pub fn too_old_for(n: Need, version: Option<(u32, u32)>) -> Option<Error> {
    let ((a, b), what) = need(n);
    let v = version?;
    if v >= (a, b) {
        return None;
    }
    Some(
        Error::new(
            Code::GitTooOld,
            format!(
                "this needs git {a}.{b} or newer for {what}; the installed git is {}.{}",
                v.0, v.1
            ),
        )
        .hint(format!(
            "install git {a}.{b} or newer (e.g. from your distribution's backports) and run it again"
        )),
    )
}

/// `git version 2.47.3` → (2, 47).
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let v = text.trim().strip_prefix("git version ")?;
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("git version 2.47.3\n"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.5 (Apple Git-154)"),
            Some((2, 39))
        );
    }

    #[test]
    fn an_old_git_is_named_with_the_version_needed_and_what_for() {
        let e = too_old_for(Need::MergeTreeWriteTree, Some((2, 34))).unwrap();
        assert_eq!(e.code, Code::GitTooOld);
        assert_eq!(e.exit_code(), 4);
        assert!(e.message.contains("git 2.38 or newer"), "{}", e.message);
        assert!(e.message.contains("installed git is 2.34"), "{}", e.message);
        assert!(
            e.message.contains("merge-tree --write-tree"),
            "{}",
            e.message
        );
        assert!(too_old_for(Need::MergeTreeWriteTree, Some((2, 38))).is_none());
        assert!(too_old_for(Need::FetchPorcelain, Some((2, 39))).is_some());
        assert!(too_old_for(Need::FetchPorcelain, Some((2, 41))).is_none());
        assert!(too_old_for(Need::FetchPorcelain, None).is_none());
    }
}
