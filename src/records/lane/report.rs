//! Lane reports: the fixed vocabulary and the `--capacity` line.

use crate::error::{Code, Error, Result};

/// A lane report, in the fixed vocabulary.
#[derive(Debug, Clone)]
pub enum ReportKind {
    PlanReady,
    PrOpen(String),
    Blocked { class: String, what: String },
    Handoff(String),
    Done,
}

impl ReportKind {
    pub fn slug(&self) -> &'static str {
        match self {
            ReportKind::PlanReady => "plan-ready",
            ReportKind::PrOpen(_) => "pr-open",
            ReportKind::Blocked { .. } => "blocked",
            ReportKind::Handoff(_) => "handoff",
            ReportKind::Done => "done",
        }
    }
    pub fn line(&self) -> String {
        match self {
            ReportKind::PlanReady => "plan ready".into(),
            ReportKind::PrOpen(url) => format!("PR open {url}"),
            ReportKind::Blocked { class, what } => format!("blocked {class} {what}"),
            ReportKind::Handoff(packet) => format!("handoff {packet}"),
            ReportKind::Done => "done".into(),
        }
    }

    /// One-line, one-word and URL rules of the vocabulary.
    pub fn validate(&self) -> Result<()> {
        match self {
            ReportKind::PrOpen(url) => {
                self.one_word("the URL", url)?;
                let host = url
                    .strip_prefix("https://")
                    .or_else(|| url.strip_prefix("http://"))
                    .and_then(|rest| rest.split('/').next())
                    .unwrap_or("");
                if host.is_empty() {
                    return Err(Error::new(
                        Code::Usage,
                        format!("report pr-open: '{url}' is not an http(s) URL of a pull request"),
                    )
                    .hint("give the pull request's address, e.g. https://github.com/o/r/pull/7"));
                }
                Ok(())
            }
            ReportKind::Blocked { class, what } => {
                self.one_word("the class", class)?;
                self.one_line("what it needs", what)
            }
            ReportKind::Handoff(packet) => self.one_word("the packet", packet),
            ReportKind::PlanReady | ReportKind::Done => Ok(()),
        }
    }

    fn one_line(&self, what: &str, v: &str) -> Result<()> {
        if v.trim().is_empty() || v.contains('\n') || v.contains('\r') {
            Err(Error::new(
                Code::Usage,
                format!("report {}: {what} must be one non-empty line", self.slug()),
            ))
        } else {
            Ok(())
        }
    }

    fn one_word(&self, what: &str, v: &str) -> Result<()> {
        self.one_line(what, v)?;
        if v.split_whitespace().count() != 1 {
            return Err(Error::new(
                Code::Usage,
                format!("report {}: {what} must be one word, got '{v}'", self.slug()),
            ));
        }
        Ok(())
    }
}

/// Normalise `--capacity`: `ok 64% @work1` or `capacity=ok 64% @work1`;
/// the first word is the capacity state.
pub fn parse_capacity(text: &str) -> Result<String> {
    let t = text.trim();
    let t = t.strip_prefix("capacity=").unwrap_or(t).trim();
    let state = t.split_whitespace().next().unwrap_or("");
    if t.contains('\n') || !matches!(state, "ok" | "low" | "critical" | "unknown") {
        return Err(Error::new(
            Code::Usage,
            format!(
                "--capacity '{}' does not start with ok, low, critical or unknown",
                text.escape_debug()
            ),
        )
        .hint(
            "e.g. --capacity \"ok 64% @work1\" (without the kit, say \"unknown\", never \"ok\")",
        ));
    }
    Ok(t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_slugs() {
        let b = ReportKind::Blocked {
            class: "needs-review".into(),
            what: "a second pair of eyes".into(),
        };
        assert_eq!(b.slug(), "blocked");
        assert_eq!(b.line(), "blocked needs-review a second pair of eyes");
        assert_eq!(ReportKind::PrOpen("u".into()).line(), "PR open u");
        assert_eq!(ReportKind::PlanReady.line(), "plan ready");
        assert_eq!(ReportKind::Handoff("p".into()).slug(), "handoff");
    }

    #[test]
    fn validation() {
        assert!(ReportKind::PrOpen("https://github.com/o/r/pull/7".into())
            .validate()
            .is_ok());
        for bad in ["ftp://x/y", "https:///pull/1", "https://a b", ""] {
            let e = ReportKind::PrOpen(bad.into()).validate().unwrap_err();
            assert_eq!(e.code, Code::Usage, "{bad}");
        }
        let two_words = ReportKind::Blocked {
            class: "a b".into(),
            what: "x".into(),
        };
        assert!(two_words
            .validate()
            .unwrap_err()
            .message
            .contains("the class must be one word, got 'a b'"));
        let two_lines = ReportKind::Blocked {
            class: "a".into(),
            what: "x\ny".into(),
        };
        assert!(two_lines.validate().is_err());
        assert!(ReportKind::Handoff("p q".into()).validate().is_err());
        assert!(ReportKind::Done.validate().is_ok());
    }

    #[test]
    fn capacity() {
        assert_eq!(parse_capacity(" ok 64% @w1 ").unwrap(), "ok 64% @w1");
        assert_eq!(parse_capacity("capacity=low 10%").unwrap(), "low 10%");
        assert_eq!(parse_capacity("unknown").unwrap(), "unknown");
        for bad in ["fine", "", "ok\nlow", "capacity=great"] {
            assert_eq!(
                parse_capacity(bad).unwrap_err().code,
                Code::Usage,
                "{bad:?}"
            );
        }
    }
}
