//! The one rule that is not a row of the table: `password=…`-style
//! assignments, judged by the shape of the value (placeholders, code and
//! plain settings are not secrets).

use std::sync::OnceLock;

use regex::Regex;

use super::rules::is_placeholder;
use super::Hit;

pub(super) const ASSIGNMENT_KIND: &str = "secret-assignment";
pub(super) const ASSIGNMENT_WHAT: &str = "a password/secret/token assignment";

/// `password=…`, `api_key: …`, `"token": "…"`. The value after `=` must be
/// at least 4 characters; after `:` (prose like "token: expired" is common)
/// it must also look machine-made: a digit, a symbol other than `-._`, or
/// camel case in 12+ characters. Placeholders (`<…>`, `${…}`, `***`) are
/// not values.
fn assignment() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?i)\b(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|private[_-]?key|access[_-]?key|client[_-]?secret|credentials?)["']?\s*([:=])\s*["']?([^\s"'`,;]+)"#,
        )
        .expect("the assignment pattern is a valid regex")
    })
}

/// A value that is code, not a secret: `token = token_from_env(&url)`,
/// `secret::check(…)`, `token: Option<Token>`, `key = self.key`. Plan text
/// and messages quote code all the time; a bare word (`correcthorse`) is
/// still taken for a password.
fn looks_like_code(value: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:[&*]*(?:mut\s+)?[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.)[A-Za-z_][A-Za-z0-9_]*)*(?:!?\(|<|\[)|.*::|(?:self|this|ctx|cfg|config|settings|env|process|os|args|opts|options|params|secrets|vars|req|request)\.[A-Za-z_])",
        )
        .expect("the code pattern is a valid regex")
    })
    .is_match(value)
}

/// `secret=true`, `token=null`, `max_token=4096`: a flag, a null or a
/// small number is a setting, not a credential.
fn is_plain_setting(value: &str) -> bool {
    const WORDS: &[&str] = &["true", "false", "null", "none", "nil", "yes", "no", "empty"];
    WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || (value.len() < 8 && value.chars().all(|c| c.is_ascii_digit()))
}

fn looks_like_assigned_secret(sep: &str, value: &str) -> bool {
    // `<from the vault>` is cut at its first space: an opening `<` is enough;
    // so is `${VAR}…`/`{{ … }}…` (a template, e.g. in a URL).
    if is_placeholder(value)
        || value.starts_with('<')
        || value.starts_with("${")
        || value.starts_with("{{")
        || value.starts_with("[REDACTED")
        || value.starts_with("$(")
        || value.starts_with('`')
        || (sep == ":" && value.starts_with(':'))
        || looks_like_code(value)
        || is_plain_setting(value)
    {
        return false;
    }
    if sep == "=" {
        return value.chars().count() >= 4;
    }
    // After `:` it is often prose ("credentials: Rotated.", "token:
    // short-lived"): the value must look machine-made, judged without the
    // sentence's trailing punctuation.
    let value = value.trim_end_matches(['.', ',', ':', ';', '!', '?', ')', ']', '}']);
    if value.chars().count() < 6 {
        return false;
    }
    let digit = value.chars().any(|c| c.is_ascii_digit());
    let symbol = value
        .chars()
        .any(|c| !c.is_alphanumeric() && !matches!(c, '-' | '.' | '_'));
    let inner_upper = value.chars().skip(1).any(|c| c.is_uppercase());
    let lower = value.chars().any(|c| c.is_lowercase());
    digit || symbol || (inner_upper && lower && value.chars().count() >= 12)
}

/// The assignments in `text` whose value looks like a secret (`lower` is
/// `text` in lower case, to check the keywords cheaply).
pub(super) fn hits(text: &str, lower: &str, out: &mut Vec<Hit>) {
    const KEYWORDS: &[&str] = &["pass", "pwd", "secret", "token", "key", "credential"];
    if !KEYWORDS.iter().any(|k| lower.contains(k)) {
        return;
    }
    for caps in assignment().captures_iter(text) {
        let sep = caps.get(1).map_or("", |m| m.as_str());
        let Some(value) = caps.get(2) else { continue };
        if looks_like_assigned_secret(sep, value.as_str()) {
            out.push(Hit {
                kind: ASSIGNMENT_KIND,
                description: ASSIGNMENT_WHAT,
                range: value.range(),
            });
        }
    }
}
