//! Text from records on the page: escaped by maud like every string, and
//! beyond that, controls that could reorder or hide what is shown (bidi
//! overrides and isolates, C0/C1 controls, line separators) made visible
//! as `[U+202E]` marks, inside a `<bdi>` so that no string's direction
//! leaks into its neighbours.

use maud::{html, Render};

/// A character shown as a visible mark instead of itself (a newline
/// stays: bodies are shown with their lines).
pub fn hidden(c: char) -> bool {
    git_swarm::text::forbidden(c, true)
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{feff}')
}

/// Whether `s` holds a character shown as a mark. Printable ASCII (and
/// tab and newline) holds none: the common case, checked byte by byte.
fn has_hidden(s: &str) -> bool {
    !s.bytes().all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t')) && s.chars().any(hidden)
}

/// `s` as isolated text, its hidden characters shown.
pub fn shown(s: &str) -> Shown<'_> {
    Shown(s)
}

/// Record text rendered straight into the page: maud escapes the text,
/// and nothing is allocated per string (a page shows thousands).
pub struct Shown<'a>(&'a str);

impl Render for Shown<'_> {
    fn render_to(&self, buffer: &mut String) {
        buffer.push_str("<bdi>");
        if !has_hidden(self.0) {
            self.0.render_to(buffer);
        } else {
            for part in split(self.0) {
                match part {
                    Part::Text(t) => t.render_to(buffer),
                    Part::Mark(c) => html! {
                        span.ctl title="an invisible control character" { (format!("[U+{:04X}]", c as u32)) }
                    }
                    .render_to(buffer),
                }
            }
        }
        buffer.push_str("</bdi>");
    }
}

enum Part<'a> {
    Text(&'a str),
    Mark(char),
}

fn split(s: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if hidden(c) {
            if start < i {
                out.push(Part::Text(&s[start..i]));
            }
            out.push(Part::Mark(c));
            start = i + c.len_utf8();
        }
    }
    if start < s.len() {
        out.push(Part::Text(&s[start..]));
    }
    out
}

/// `s` with its hidden characters as marks, as plain text (attributes,
/// SVG titles), for maud to escape.
pub fn plain(s: &str) -> std::borrow::Cow<'_, str> {
    if !has_hidden(s) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| {
            if hidden(c) {
                format!("[U+{:04X}]", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// A fragment id made of a name: letters, digits, `-`, `_`, `.` kept,
/// anything else as `_hex_`, so two names never share an id and nothing
/// from a record reaches a URL unescaped.
pub fn anchor(kind: &str, name: &str) -> String {
    let mut out = format!("{kind}-");
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            out.push(c);
        } else {
            out.push_str(&format!("_{:x}_", c as u32));
        }
    }
    out
}

/// "12m left", "3h 5m left", "expired 4m ago".
pub fn left(secs: i64) -> String {
    let d = secs.unsigned_abs();
    let text = if d >= 3600 {
        format!("{}h {}m", d / 3600, (d % 3600) / 60)
    } else if d >= 60 {
        format!("{}m", d / 60)
    } else {
        format!("{d}s")
    };
    if secs > 0 {
        format!("{text} left")
    } else {
        format!("expired {text} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_controls_stay_text() {
        let m = shown("<script>x</script>\u{202e}gnp.exe")
            .render()
            .into_string();
        assert_eq!(
            m,
            "<bdi>&lt;script&gt;x&lt;/script&gt;<span class=\"ctl\" title=\"an invisible control character\">[U+202E]</span>gnp.exe</bdi>"
        );
        assert_eq!(plain("a\u{2066}b"), "a[U+2066]b");
    }

    #[test]
    fn anchors_are_unique_and_plain() {
        assert_eq!(anchor("lane", "a.b-c"), "lane-a.b-c");
        assert_eq!(anchor("pair", "a/b"), "pair-a_2f_b");
        assert_ne!(anchor("x", "a_b"), anchor("x", "a/b"));
    }

    #[test]
    fn lease_left_reads_as_words() {
        assert_eq!(left(754), "12m left");
        assert_eq!(left(-240), "expired 4m ago");
        assert_eq!(left(3 * 3600 + 300), "3h 5m left");
    }
}
