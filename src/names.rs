//! Name rules (SPEC §1): plans and features are ref path components, so they
//! are restricted to what is safe in a ref and on every file system;
//! addresses name actors and appear in commit trailers and packet ids.

use crate::error::{Code, Error, Result};

/// `[a-z0-9][a-z0-9._-]{0,62}`, no `..`, not ending in `.lock` or `.`.
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > 63 {
        return false;
    }
    if !(bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit()) {
        return false;
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
    {
        return false;
    }
    !(name.contains("..") || name.ends_with(".lock") || name.ends_with('.'))
}

/// `[A-Za-z0-9][A-Za-z0-9._@-]{0,63}`, no `..`, not ending in `.lock` or
/// `.`: an address ends packet ids, which are ref names
/// (`refs/swarm/packets/<plan>/<time>-<address>`), so it obeys git's ref
/// rules (`git check-ref-format`) the way plan and feature names do.
pub fn is_valid_address(addr: &str) -> bool {
    let bytes = addr.as_bytes();
    if bytes.is_empty() || bytes.len() > 64 {
        return false;
    }
    bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
        && !(addr.contains("..")
            || addr.to_ascii_lowercase().ends_with(".lock")
            || addr.ends_with('.'))
}

/// `kind` is what the name names, for the message ("plan", "feature").
pub fn validate_name(kind: &str, name: &str) -> Result<()> {
    if is_valid_name(name) {
        return Ok(());
    }
    let mut err = Error::new(
        Code::NameInvalid,
        format!("'{}' is not a valid {kind} name", name.escape_debug()),
    );
    if let Some(s) = sanitize(name) {
        err = err.hint(mean(&s));
    }
    Err(err.hint("names use lowercase letters, digits, '.', '_' and '-', start with a letter or digit, are at most 63 characters, and contain no '..' nor end in '.lock' or '.'"))
}

/// The one wording of every "did you mean" hint.
pub fn mean(nearest: &str) -> String {
    format!("did you mean '{nearest}'?")
}

/// The known name nearest to `name`, a likely typo of it: at most one edit
/// (two from five characters on) away, ignoring case, an adjacent swap
/// counting as one edit (`tokenzier` → `tokenizer`). Not `name` itself;
/// of several as near, the first in `known`'s order.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let target: Vec<char> = name.to_lowercase().chars().collect();
    let most = if target.len() >= 5 { 2 } else { 1 };
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        if k == name {
            continue;
        }
        let cand: Vec<char> = k.to_lowercase().chars().collect();
        let d = edits(&target, &cand);
        if d <= most && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, k));
        }
    }
    best.map(|(_, k)| k)
}

/// Add the "did you mean" hint to a `NOT_FOUND` of `name` when one of
/// `known` is its likely typo (see [`closest`]).
pub fn did_you_mean<'a>(err: Error, name: &str, known: impl IntoIterator<Item = &'a str>) -> Error {
    match closest(name, known) {
        Some(k) => err.hint(mean(k)),
        None => err,
    }
}

/// Edits from `a` to `b`: insertions, deletions, substitutions and swaps
/// of adjacent characters (optimal string alignment distance).
fn edits(a: &[char], b: &[char]) -> usize {
    if a.len().abs_diff(b.len()) > 2 {
        return usize::MAX;
    }
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The nearest valid name: lower case, any other character a '-', no
/// '..', trimmed at both ends, at most 63 characters. None when nothing
/// usable is left (e.g. only punctuation).
pub fn sanitize(name: &str) -> Option<String> {
    let s = nearest(
        name,
        |c| {
            let c = c.to_ascii_lowercase();
            (c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
                .then_some(c)
        },
        63,
        &['.', '-', '_'],
    );
    is_valid_name(&s).then_some(s)
}

/// The nearest valid address: any other character a '-' (case is kept:
/// addresses may have capitals), trimmed, at most 64 characters.
pub fn sanitize_address(addr: &str) -> Option<String> {
    let s = nearest(
        addr,
        |c| (c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-')).then_some(c),
        64,
        &['.', '-'],
    );
    is_valid_address(&s).then_some(s)
}

/// Shared by [`sanitize`] and [`sanitize_address`]: map each character
/// (`keep` gives the character to use, or `None` for a '-'), collapse runs
/// of separators that would make '..' or '--' noise, start on an
/// alphanumeric, cut at `max`, and drop a trailing `.lock` or `trim_end`.
fn nearest(
    text: &str,
    keep: impl Fn(char) -> Option<char>,
    max: usize,
    trim_end: &[char],
) -> String {
    let mut out = String::new();
    for c in text.trim().chars() {
        let c = keep(c).unwrap_or('-');
        if (c == '-' && out.ends_with('-')) || (c == '.' && out.ends_with('.')) {
            continue;
        }
        out.push(c);
    }
    let mut s = out
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    s.truncate(max);
    loop {
        let before = s.len();
        if let Some(stripped) = s.strip_suffix(".lock") {
            s = stripped.to_string();
        }
        s = s.trim_end_matches(trim_end).to_string();
        if s.len() == before {
            break;
        }
    }
    s
}

pub fn validate_address(addr: &str) -> Result<()> {
    if is_valid_address(addr) {
        return Ok(());
    }
    let mut err = Error::new(
        Code::NameInvalid,
        format!("'{}' is not a valid address", addr.escape_debug()),
    );
    if let Some(s) = sanitize_address(addr) {
        err = err.hint(mean(&s));
    }
    Err(err.hint("addresses use letters, digits, '.', '_', '@' and '-', start with a letter or digit, are at most 64 characters, and contain no '..' nor end in '.lock' or '.' (they end packet ids, which are git ref names; e.g. claude@work1)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_likely_typo_finds_the_known_name() {
        let known = ["bob", "alice", "tokenizer", "search"];
        assert_eq!(closest("bobb", known), Some("bob"));
        assert_eq!(closest("tokenzier", known), Some("tokenizer"));
        assert_eq!(closest("Alice", known), Some("alice"));
        assert_eq!(closest("serch", known), Some("search"));
        // Too far, or the name itself: nothing.
        assert_eq!(closest("carol", known), None);
        assert_eq!(closest("bo", ["bobby"]), None);
        assert_eq!(closest("bob", known), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
        assert_eq!(edits(&['a', 'b'], &['b', 'a']), 1);
    }

    #[test]
    fn names() {
        for ok in ["a", "auth-v2", "0", "a.b_c-d", &"x".repeat(63)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "A",
            "-a",
            ".a",
            "a..b",
            "a.lock",
            "a.",
            "a/b",
            "a b",
            &"x".repeat(64),
            "é",
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn sanitized_names_are_valid_and_lower_case() {
        assert_eq!(sanitize("Auth").as_deref(), Some("auth"));
        assert_eq!(sanitize("My Plan!").as_deref(), Some("my-plan"));
        assert_eq!(sanitize("a..b.lock").as_deref(), Some("a.b"));
        assert_eq!(sanitize("--x--").as_deref(), Some("x"));
        assert_eq!(sanitize("!!!"), None);
        assert_eq!(sanitize(&"Y".repeat(80)).map(|s| s.len()), Some(63));
        assert_eq!(
            sanitize_address("claude work1").as_deref(),
            Some("claude-work1")
        );
        assert_eq!(sanitize_address("@Bob").as_deref(), Some("Bob"));
        assert_eq!(sanitize_address("***"), None);
    }

    #[test]
    fn addresses() {
        for ok in ["claude@work1", "A", "lead.1_x-y", &"x".repeat(64)] {
            assert!(is_valid_address(ok), "{ok}");
        }
        for bad in [
            "",
            "@a",
            "a b",
            "a/b",
            "a:b",
            &"x".repeat(65),
            "x.lock",
            "x.LOCK",
            "a..b",
            "a.",
        ] {
            assert!(!is_valid_address(bad), "{bad}");
        }
    }
}
