//! Free text from users and from the remote: which characters it may hold
//! and how it is shown. Input refuses terminal control characters
//! (`TEXT_INVALID`), records read from refs holding them are unreadable
//! (`RECORD_INVALID`), and human output escapes whatever still gets through.

use std::borrow::Cow;

use crate::error::{Code, Error, Result};

/// A character no free text may hold: C0 controls except TAB (and LF, which
/// `multiline` decides), DEL, C1 controls, bidi embedding/override/isolate
/// controls and the line/paragraph separators.
pub fn forbidden(c: char, multiline: bool) -> bool {
    match c {
        '\t' => false,
        '\n' => !multiline,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' => true,
        _ => false,
    }
}

/// The first forbidden character of `text`, if any.
pub fn first_forbidden(text: &str, multiline: bool) -> Option<char> {
    text.chars().find(|c| forbidden(*c, multiline))
}

/// Refuse single-line free text holding a control character or a newline
/// (`TEXT_INVALID`, exit 2), naming the field and never the value.
pub fn check_fields(subject: &str, fields: &[(&str, &str)]) -> Result<()> {
    let bad: Vec<String> = fields
        .iter()
        .filter_map(|(field, text)| {
            first_forbidden(text, false).map(|c| format!("`{field}` (U+{:04X})", c as u32))
        })
        .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(refusal(subject, &bad))
}

fn refusal(subject: &str, bad: &[String]) -> Error {
    Error::new(
        Code::TextInvalid,
        format!(
            "{subject} was refused: {} {} a control character, newline or bidi control; nothing was written",
            bad.join(", "),
            if bad.len() == 1 { "holds" } else { "hold" }
        ),
    )
    .hint("this text is published to every clone and printed on terminals: keep it to one line of printable text")
}

/// `bytes` as UTF-8 text, or `TEXT_INVALID` naming the byte offset of the
/// first byte that is not: text read from a file is never replaced
/// (`\u{fffd}`) silently, as records are text and carry it as given.
pub fn utf8(subject: &str, bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Error::new(
            Code::TextInvalid,
            format!(
                "{subject} is not UTF-8 text: the byte at offset {at} (0x{:02x}) does not start a UTF-8 character; nothing was written",
                e.as_bytes()[at]
            ),
        )
        .with_detail(serde_json::json!({ "offset": at }))
        .hint("convert it to UTF-8 first, e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`")
    })
}

/// Refuse a YAML value (a packet or plan record about to be written) with a
/// string holding a forbidden character; `multiline` says which keys may
/// hold newlines.
pub fn check_value(subject: &str, value: &serde_yaml_ng::Value, multiline: &[&str]) -> Result<()> {
    match find_in_value(value, "", multiline) {
        None => Ok(()),
        Some((field, c)) => Err(refusal(
            subject,
            &[format!("`{field}` (U+{:04X})", c as u32)],
        )),
    }
}

/// The first string (key or value) in `value` holding a forbidden
/// character, as its field path and the character. Newlines are allowed in
/// the values of keys named in `multiline`.
pub fn find_in_value(
    value: &serde_yaml_ng::Value,
    path: &str,
    multiline: &[&str],
) -> Option<(String, char)> {
    use serde_yaml_ng::Value;
    let key_of = |p: &str| p.rsplit('.').next().unwrap_or("").to_string();
    match value {
        Value::String(s) => {
            let ml = multiline.contains(&key_of(path).as_str());
            first_forbidden(s, ml).map(|c| (path.to_string(), c))
        }
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_in_value(v, &format!("{path}[{i}]"), multiline)),
        Value::Mapping(map) => map.iter().find_map(|(k, v)| {
            let name = match k {
                Value::String(s) => {
                    if let Some(c) = first_forbidden(s, false) {
                        return Some((format!("{path} (a key)"), c));
                    }
                    s.clone()
                }
                other => serde_yaml_ng::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            };
            let sub = if path.is_empty() {
                name
            } else {
                format!("{path}.{name}")
            };
            find_in_value(v, &sub, multiline)
        }),
        Value::Tagged(t) => find_in_value(&t.value, path, multiline),
        _ => None,
    }
}

/// Whether YAML text could parse to a string holding a character that
/// [`check_record`] refuses. False when every byte is printable ASCII, a
/// tab or a newline, with no escape (`\`), no tag (`!`), no block scalar
/// indicator (`|`, `>`) and no blank line (a folded flow scalar makes one a
/// newline): every parsed string is then made of the text's own printable
/// characters, spaces and tabs. What git-swarm writes nearly always is, so
/// a listing checks the text instead of walking every parsed record.
pub fn yaml_may_hold_forbidden(bytes: &[u8]) -> bool {
    // Whether a newline was seen and nothing but spaces and tabs since.
    let mut blank_so_far = false;
    for &b in bytes {
        match b {
            b'\\' | b'|' | b'>' | b'!' => return true,
            b'\n' if blank_so_far => return true,
            b'\n' => blank_so_far = true,
            b' ' | b'\t' => {}
            0x21..=0x7e => blank_so_far = false,
            _ => return true,
        }
    }
    false
}

/// Check a record just parsed from a ref: any string with a forbidden
/// character makes it unreadable (`RECORD_INVALID`).
pub fn check_record<T: serde::Serialize>(record: &T, what: &str, multiline: &[&str]) -> Result<()> {
    let value = serde_yaml_ng::to_value(record)
        .map_err(|e| Error::new(Code::Internal, format!("could not serialise a record: {e}")))?;
    match find_in_value(&value, "", multiline) {
        None => Ok(()),
        Some((field, c)) => Err(Error::new(
            Code::RecordInvalid,
            format!(
                "{what} field `{field}` holds a control character (U+{:04X}); it was not read",
                c as u32
            ),
        )
        .hint(
            "git-swarm never writes such a record: find who published it with `git log` on its ref",
        )),
    }
}

/// "1 lane", "2 lanes", "0 lanes": a count with the noun in the right number.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A text for a terminal: every forbidden character (newlines included)
/// shown as a visible escape (`^[` for ESC, `\u{..}` otherwise).
pub fn clean(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Like [`clean`] but keeps newlines: for a whole block of human output.
pub fn clean_block(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, multiline: bool) -> Cow<'_, str> {
    if first_forbidden(text, multiline).is_none() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !forbidden(c, multiline) {
            out.push(c);
        } else if (c as u32) < 0x20 {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        } else if c == '\u{7f}' {
            out.push_str("^?");
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The text check never passes a record that holds a refused
        /// character: whatever such text parses to, walked whole, holds
        /// none (no newline either, so no field may hold one).
        #[test]
        fn text_that_passes_parses_to_nothing_refused(
            start in proptest::sample::select(vec!["t: ", "- ", "t:\n  - ", "t: |\n  ", "t: >\n  ", "t: !!binary ", "? "]),
            quote in proptest::sample::select(vec!["", "'", "\""]),
            body in "(a|b|:| |\t|\n  |\n|\n\n  |\\\\n|\\\\x1b|\\\\u202e|\\\\e|\\\\t|\\\\|\r|\u{85}|\u{1b}|\u{202e}|é){0,12}",
        ) {
            let text = format!("{start}{quote}{body}{quote}\n");
            let Ok(value) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
                return Ok(());
            };
            if !yaml_may_hold_forbidden(text.as_bytes()) {
                proptest::prop_assert_eq!(find_in_value(&value, "", &[]), None, "{:?}", text);
            }
        }
    }

    #[test]
    fn text_with_escapes_blocks_or_blank_lines_is_checked_whole() {
        for held in [
            "t: \"a\\nb\"\n",
            "t: |\n  a\n  b\n",
            "t: >\n  a\n\n  b\n",
            "t: a\n\n  b\n",
            "t: a\n  \n  b\n",
            "t: !!binary Gw==\n",
            "t: \"a\u{202e}\"\n",
            "t: a\rb\n",
        ] {
            assert!(yaml_may_hold_forbidden(held.as_bytes()), "{held:?}");
        }
        assert!(!yaml_may_hold_forbidden(
            b"schema: swarm-task/v1\nplan: p\ntitle: 'a: b' \"c\"\n  d\n"
        ));
    }

    #[test]
    fn controls_are_refused_and_plain_text_is_not() {
        assert!(check_fields("x", &[("--task", "fix the parser\tnow — ünïcode ok")]).is_ok());
        for bad in [
            "a\u{1b}[2J",
            "a\nb",
            "a\rb",
            "a\u{7f}",
            "a\u{9b}31m",
            "a\u{202e}b",
            "a\u{2066}",
            "a\u{2028}b",
            "\u{0}",
        ] {
            let err = check_fields("the packet", &[("--next", bad)]).unwrap_err();
            assert_eq!(err.code, Code::TextInvalid, "{bad:?}");
            assert!(err.message.contains("`--next`"));
        }
        assert!(first_forbidden("a\nb", true).is_none());
        assert!(first_forbidden("a\n\u{1b}b", true).is_some());
    }

    #[test]
    fn values_are_walked_with_multiline_keys() {
        let v: serde_yaml_ng::Value =
            serde_yaml_ng::from_str("a: ok\ncontract: \"x\\ny\"\nlist: [ok, \"b\\e[31m\"]\n")
                .unwrap();
        let (field, c) = find_in_value(&v, "", &["contract"]).unwrap();
        assert_eq!(field, "list[1]");
        assert_eq!(c, '\u{1b}');
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str("owner: \"a\\nb\"\n").unwrap();
        assert_eq!(find_in_value(&v, "", &["contract"]).unwrap().0, "owner");
    }

    #[test]
    fn invalid_utf8_is_refused_at_its_offset() {
        assert_eq!(utf8("b", b"ok \xc3\xa9".to_vec()).unwrap(), "ok \u{e9}");
        let e = utf8("the body", b"abc \xff\xfe \xc3(".to_vec()).unwrap_err();
        assert_eq!(e.code, Code::TextInvalid);
        assert!(e.message.contains("offset 4 (0xff)"), "{}", e.message);
    }

    #[test]
    fn clean_makes_controls_visible() {
        assert_eq!(clean("plain"), Cow::Borrowed("plain"));
        assert_eq!(clean("a\u{1b}[2J\u{7}\nb"), "a^[[2J^G^Jb");
        assert_eq!(clean("x\u{9b}\u{202e}"), "x\\u{9b}\\u{202e}");
        assert_eq!(clean_block("a\n\u{1b}b\tc"), "a\n^[b\tc");
        assert!(!clean("\u{1b}]0;pwn\u{7}").contains('\u{1b}'));
    }
}
