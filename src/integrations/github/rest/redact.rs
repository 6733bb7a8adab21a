//! Redaction at the boundary: the token in use (by its exact value) and
//! anything shaped like a credential, out of every answer and error.

use crate::error::Error;
use crate::secret;

/// The secrets whose exact values are redacted from GitHub's answers (the
/// token in use), kept out of `Debug` output like the token itself.
#[derive(Default)]
pub(super) struct Redactor {
    pub(super) known: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} known, <redacted>)", self.known.len())
    }
}

impl Redactor {
    pub(super) fn text(&self, s: &str) -> String {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        secret::redact(s, &known)
    }

    pub(super) fn json(&self, v: &mut serde_json::Value) {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        secret::redact_json(v, &known);
    }

    /// An error whose message, hints or detail may quote GitHub.
    pub(super) fn error(&self, mut e: Error) -> Error {
        e.message = self.text(&e.message);
        e.hints = e.hints.iter().map(|h| self.text(h)).collect();
        if let Some(d) = e.detail.as_mut() {
            self.json(d);
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn errors_and_answers_are_redacted_at_the_boundary() {
        let token = "opaque-credential-0042";
        let r = Redactor {
            known: vec![token.into()],
        };
        let stripe = format!("{}_live_{}", "sk", "Zq81xWq9Lm2Pp0aB3dE5gH7j");
        let e = Error::new(Code::GithubApi, format!("upstream said: Bearer {token}"))
            .hint(format!("proxy log: {stripe}"))
            .with_detail(serde_json::json!({"echo": token, "status": 500}));
        let e = r.error(e);
        let all = format!("{e} {}", e.to_json());
        assert!(!all.contains(token) && !all.contains(&stripe), "{all}");
        assert!(
            e.message.ends_with("Bearer [REDACTED:token]"),
            "{}",
            e.message
        );
        assert_eq!(e.detail.as_ref().unwrap()["status"], 500);
        let mut answer = serde_json::json!({"title": format!("fix {token}"), "number": 7,
            "head": {"ref": "feat/x", "sha": "0123456789abcdef0123456789abcdef01234567"}});
        r.json(&mut answer);
        assert_eq!(answer["title"], "fix [REDACTED:token]");
        assert_eq!(
            answer["head"]["sha"],
            "0123456789abcdef0123456789abcdef01234567"
        );
        assert!(!format!("{r:?}").contains(token));
    }
}
