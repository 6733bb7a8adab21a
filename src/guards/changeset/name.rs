//! The name rules of changeset-unique, pure (no repository): what counts as
//! a changeset file, the reserved name patterns (`swarm.reservedChangesets`,
//! default `pr-<N>-review.md`), and a free name to propose instead of a
//! taken one.

use std::collections::HashSet;

use crate::error::Result;
use crate::guards::findings::{unreadable, CHANGESET_UNIQUE};

pub const DEFAULT_RESERVED: &str = "pr-<N>-review.md";

/// `*.md` (any case) except README.md.
pub fn is_changeset_name(name: &str) -> bool {
    // Compared as bytes: the last three bytes of a name need not fall on a
    // character boundary (`ää`), and slicing the str there would panic.
    !name.contains('/')
        && name.len() > 3
        && name.as_bytes()[name.len() - 3..].eq_ignore_ascii_case(b".md")
        && !name.eq_ignore_ascii_case("readme.md")
}

/// Reserved name patterns: `<N>` is any number, `*` any text; case-insensitive.
pub struct Reserved {
    patterns: Vec<(String, regex::Regex)>,
}

/// The regex of one reserved pattern: `<N>` digits, `*` any text, every
/// other character literal, the whole name, any case.
fn pattern_regex(pattern: &str) -> String {
    let mut re = String::from("(?i)^");
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("<N>") {
            re.push_str("[0-9]+");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('*') {
            re.push_str(".*");
            rest = r;
        } else {
            let c = rest.chars().next().expect("non-empty");
            re.push_str(&regex::escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
    }
    re.push('$');
    re
}

impl Reserved {
    /// The patterns of the given config values (each a comma-separated
    /// list); no values means the default.
    pub fn parse(values: &[String]) -> Result<Reserved> {
        let default = [DEFAULT_RESERVED.to_string()];
        let values = if values.is_empty() { &default } else { values };
        let mut patterns = Vec::new();
        for pattern in values.iter().flat_map(|v| v.split(',')) {
            let pattern = pattern.trim();
            if pattern.is_empty() {
                continue;
            }
            let compiled = regex::Regex::new(&pattern_regex(pattern)).map_err(|e| {
                unreadable(
                    CHANGESET_UNIQUE,
                    format!("swarm.reservedChangesets pattern '{pattern}'"),
                    e,
                )
            })?;
            patterns.push((pattern.to_string(), compiled));
        }
        Ok(Reserved { patterns })
    }

    pub fn matching(&self, name: &str) -> Option<&str> {
        self.patterns
            .iter()
            .find(|(_, re)| re.is_match(name))
            .map(|(p, _)| p.as_str())
    }
}

/// A name for a new changeset that is free in `taken` (lowercase) and not reserved.
pub fn propose(
    stem_from: &str,
    feature: Option<&str>,
    taken: &HashSet<String>,
    reserved: &Reserved,
) -> String {
    let stem = stem_from
        .get(..stem_from.len().saturating_sub(3))
        .unwrap_or(stem_from)
        .to_ascii_lowercase();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let start = match feature {
        _ if reserved.matching(stem_from).is_some() => match feature {
            Some(f) => format!("{f}-review"),
            None => "review".to_string(),
        },
        Some(f) if !stem.contains(f) => format!("{f}-{stem}"),
        _ => stem,
    };
    let free = |name: &str| !taken.contains(name) && reserved.matching(name).is_none();
    let first = format!("{start}.md");
    if free(&first) {
        return first;
    }
    (2..)
        .map(|n| format!("{start}-{n}.md"))
        .find(|c| free(c))
        .expect("an unbounded sequence has a free name")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserved(p: &[&str]) -> Reserved {
        let values: Vec<String> = p.iter().map(|p| p.to_string()).collect();
        Reserved::parse(&values).unwrap()
    }

    #[test]
    fn changeset_names() {
        assert!(is_changeset_name("fix-auth.md"));
        assert!(is_changeset_name("Fix.MD"));
        assert!(!is_changeset_name("README.md"));
        assert!(!is_changeset_name("readme.MD"));
        assert!(!is_changeset_name("config.json"));
        assert!(!is_changeset_name("sub/x.md"));
        // The extension alone is no name; a multi-byte name is one.
        assert!(!is_changeset_name(".md"));
        assert!(is_changeset_name("a.md"));
        assert!(is_changeset_name("änderung.md"));
        assert!(!is_changeset_name("notes.mdx"));
        // Names whose last three bytes split a character: no changeset, no panic.
        assert!(!is_changeset_name("ää"));
        assert!(!is_changeset_name("xü€"));
    }

    #[test]
    fn proposals_avoid_taken_and_reserved_names() {
        let r = reserved(&["pr-<N>-review.md"]);
        let taken: HashSet<String> = ["auth-fix.md", "auth-fix-2.md", "auth-review.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(propose("fix.md", Some("auth"), &taken, &r), "auth-fix-3.md");
        assert_eq!(
            propose("pr-147-review.md", Some("auth"), &taken, &r),
            "auth-review-2.md"
        );
        assert_eq!(
            propose("Auth-Login.md", Some("auth"), &taken, &r),
            "auth-login.md"
        );
        assert!(r.matching("PR-12-Review.md").is_some());
        assert!(r.matching("pr-x-review.md").is_none());
    }

    #[test]
    fn proposals_without_a_lane_keep_the_stem_and_slug_it() {
        let r = reserved(&[]);
        let none = HashSet::new();
        assert_eq!(propose("My Change!.md", None, &none, &r), "my-change-.md");
        assert_eq!(propose("pr-3-review.md", None, &none, &r), "review.md");
        let taken: HashSet<String> = ["fix.md".to_string()].into();
        assert_eq!(propose("FIX.md", None, &taken, &r), "fix-2.md");
    }

    #[test]
    fn reserved_patterns_from_config_values() {
        // No value: the default.
        let r = reserved(&[]);
        assert_eq!(r.matching("pr-7-review.md"), Some(DEFAULT_RESERVED));
        // Comma lists across several values; `<N>` digits, `*` any text,
        // everything else literal (a `.` is not "any character").
        let r = reserved(&["pr-<N>-review.md, bot-*.md", "", "exact.md,"]);
        assert_eq!(r.matching("BOT-x.md"), Some("bot-*.md"));
        assert_eq!(r.matching("bot-.md"), Some("bot-*.md"));
        assert_eq!(r.matching("pr-12-review.md"), Some("pr-<N>-review.md"));
        assert_eq!(r.matching("exact.md"), Some("exact.md"));
        assert!(r.matching("exactXmd").is_none());
        assert!(r.matching("my-bot-x.md").is_none());
        assert!(r.matching("pr--review.md").is_none());
        // A custom value replaces the default.
        assert!(reserved(&["bot-*.md"]).matching("pr-1-review.md").is_none());
    }

    #[test]
    fn pattern_syntax() {
        assert_eq!(pattern_regex("pr-<N>.md"), r"(?i)^pr\-[0-9]+\.md$");
        assert_eq!(pattern_regex("*"), "(?i)^.*$");
        // A lone `<` or `N>` is literal.
        assert_eq!(pattern_regex("<n>"), r"(?i)^<n>$");
    }
}
