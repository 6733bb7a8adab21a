//! Credential detection for handoff packets. A packet is data that travels
//! to other machines and stays in the repository's history forever, so any
//! field that looks like a credential refuses the whole packet. The finding
//! names the field and the kind of credential, never the value.
//!
//! The patterns are the token formats of the big hosts (GitHub, GitLab,
//! Slack, AWS), PEM private-key blocks, JWTs, URLs with a password, and
//! `password=`-style assignments. They are anchored on prefixes and
//! keywords, so commit ids (40 hex digits) and UUIDs never match.

use std::sync::OnceLock;

use regex::Regex;
use serde_yaml_ng::Value;

/// One field that looks like it holds a credential.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Where in the packet: `task`, `next[2]`, `verified[0].evidence`, …
    pub field: String,
    /// What it looks like: "a GitHub token", "a private key block", …
    pub kind: &'static str,
}

struct Pattern {
    kind: &'static str,
    re: Regex,
}

fn patterns() -> &'static [Pattern] {
    static PATTERNS: OnceLock<Vec<Pattern>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let p = |kind, re: &str| Pattern {
            kind,
            re: Regex::new(re).expect("secret patterns are valid regexes"),
        };
        vec![
            p(
                "a GitHub token",
                r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
            ),
            p("a GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
            p("a GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
            p("a Slack token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
            p(
                "a Slack webhook",
                r"hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
            ),
            p(
                "an AWS access key",
                r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b",
            ),
            p(
                "a private key block",
                r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
            ),
            p(
                "a JSON Web Token",
                r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            ),
            p(
                "a URL with a password",
                r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",
            ),
        ]
    })
}

/// `password=…`, `api_key: …`, `"token": "…"`. The value after `=` must be
/// at least 4 characters; after `:` (prose like "token: expired" is common)
/// it must also look machine-made: a digit, a symbol, mixed case, or 16+
/// characters. Placeholders (`<…>`, `${…}`, `***`) are not values.
fn assignment() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?i)\b(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|access[_-]?key|credentials?)["']?\s*([:=])\s*["']?([^\s"',;]+)"#,
        )
        .expect("the assignment pattern is a valid regex")
    })
}

/// `${TOKEN}`, `$TOKEN`, `{{ token }}`, `%TOKEN%`, `***`, `xxxx`: the whole
/// value is a placeholder. A real password may well *start* with `$`, `%` or
/// `{`, so only a complete placeholder is excused.
fn is_placeholder(value: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:<[^<>]*>|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^{}]*\}\}|%[A-Za-z_][A-Za-z0-9_]*%|[*xX.]+)$")
            .expect("the placeholder pattern is a valid regex")
    })
    .is_match(value)
}

fn looks_like_assigned_secret(sep: &str, value: &str) -> bool {
    // `<from the vault>` is cut at its first space: an opening `<` is enough.
    if is_placeholder(value) || value.starts_with('<') {
        return false;
    }
    let len = value.chars().count();
    if sep == "=" {
        return len >= 4;
    }
    if len < 6 {
        return false;
    }
    let digit = value.chars().any(|c| c.is_ascii_digit());
    let symbol = value.chars().any(|c| !c.is_alphanumeric());
    let upper = value.chars().any(|c| c.is_uppercase());
    let lower = value.chars().any(|c| c.is_lowercase());
    digit || symbol || (upper && lower) || len >= 16
}

/// What kind of credential `text` looks like it contains, if any.
pub fn classify(text: &str) -> Option<&'static str> {
    for p in patterns() {
        if p.re.is_match(text) {
            return Some(p.kind);
        }
    }
    for caps in assignment().captures_iter(text) {
        let sep = caps.get(1).map_or("", |m| m.as_str());
        let value = caps.get(2).map_or("", |m| m.as_str());
        if looks_like_assigned_secret(sep, value) {
            return Some("a password/secret/token assignment");
        }
    }
    None
}

/// Every field of a YAML document that looks like it holds a credential
/// (keys are checked too, as a key is also text that travels).
pub fn scan(value: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

fn walk(value: &Value, path: String, out: &mut Vec<Finding>) {
    match value {
        Value::String(s) => {
            if let Some(kind) = classify(s) {
                out.push(Finding { field: path, kind });
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml_ng::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if let Some(kind) = classify(&key) {
                    out.push(Finding {
                        field: field.clone(),
                        kind,
                    });
                }
                walk(v, field, out);
            }
        }
        Value::Tagged(t) => walk(&t.value, path, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::classify;

    #[test]
    fn credentials_are_found() {
        let found = [
            "use ghp_0123456789abcdefghijABCDEFGHIJ012345 for the API",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
            "glpat-abcdefghij0123456789",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "password=hunter2",
            "DB_PASSWORD=correcthorse",
            "secret: s3cr3t-value",
            "token=abcd1234",
            "\"api_key\": \"AbCdEfGhIjKl\"",
            "clone https://bob:pa55word@example.com/repo.git",
            // Found by the property test: a password that starts like a placeholder.
            "password=%A%AA#aA",
        ];
        for text in found {
            assert!(classify(text).is_some(), "missed: {text}");
        }
    }

    #[test]
    fn ids_and_prose_are_not_credentials() {
        let clean = [
            "head 0123456789abcdef0123456789abcdef01234567",
            "run 123e4567-e89b-12d3-a456-426614174000 failed",
            "rotate the token: pending",
            "password reset flow done",
            "secret: none",
            "token=<from the vault>",
            "password=${DB_PASSWORD}",
            "password=$DB_PASSWORD",
            "api_key=%API_KEY%",
            "token={{ secrets.TOKEN }}",
            "see https://github.com/o/r/pull/12",
            "ssh://git@example.com/repo.git",
            "the key is in the CI secret store",
            "feat/token-auth",
        ];
        for text in clean {
            assert_eq!(classify(text), None, "false positive: {text}");
        }
    }
}
