//! Note lines: the JSON objects git-swarm appends, one a line, to the note
//! on a commit (`refs/notes/swarm`). A tagged enum on `kind`, so writers
//! and readers share one definition instead of `json!` values parsed by hand.
//!
//! The bytes of a line are those of a `serde_json::Value` object: keys in
//! alphabetical order (`{"author":…,"kind":"handoff",…}`), which is what
//! [`Note::line`] and [`Note::value`] give; lines written before this type
//! existed compare equal.

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::Store;

/// One note line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Note {
    /// A handoff packet was written for work at this commit.
    Handoff {
        packet: String,
        plan: String,
        author: String,
        reason: String,
    },
    /// A packet for work at this commit was accepted; `commit` is the
    /// acceptance's record commit (notes are a union across machines, so a
    /// superseded offline acceptance may leave a line too: the one whose
    /// commit is on the packet ref is the acceptance that counts).
    Acceptance {
        packet: String,
        plan: String,
        by: String,
        commit: String,
    },
    /// A PR verdict (`git swarm verify`) for this head.
    Verdict {
        #[serde(default)]
        state: String,
        #[serde(default)]
        repo: String,
        #[serde(default)]
        number: u64,
        #[serde(default)]
        head_sha: Option<String>,
        #[serde(default)]
        merge_commit: Option<String>,
        #[serde(default)]
        confirmed_on_base: bool,
        #[serde(default)]
        at: String,
    },
    /// A kind this build does not know.
    #[serde(other)]
    Other,
}

impl Note {
    /// The line as a JSON value (keys sorted), as `Store::note_append` takes it.
    pub fn value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a note line serialises")
    }

    /// The line's bytes as written to the note.
    pub fn line(&self) -> String {
        self.value().to_string()
    }

    /// A line read back; None when it is not a JSON object with a `kind`
    /// this build can read.
    pub fn parse(line: &str) -> Option<Note> {
        serde_json::from_str(line).ok()
    }

    /// Every readable line of a note.
    pub fn parse_all<S: AsRef<str>>(lines: &[S]) -> Vec<Note> {
        lines
            .iter()
            .filter_map(|l| Note::parse(l.as_ref()))
            .collect()
    }

    /// The readable lines of the note on `target` (`refs/notes/swarm`).
    pub fn on(store: &Store, target: ObjectId) -> Result<Vec<Note>> {
        Ok(Note::parse_all(&store.note_lines(target)?))
    }

    /// Append this line to the note on `target`, once (a line already there
    /// is not written twice), on `remote`'s published notes when the local
    /// ones lag behind them ([`Store::note_append`]).
    pub fn append(
        &self,
        store: &Store,
        remote: Option<&str>,
        target: ObjectId,
        event: &crate::store::Event,
    ) -> Result<()> {
        store.note_append(target, &self.value(), event, remote)
    }

    /// A verdict that the PR merged.
    pub fn is_merged_verdict(&self) -> bool {
        matches!(self, Note::Verdict { state, .. } if state == "merged")
    }
}

/// A recorded verdict: a JSON note `{"kind": "verdict", "state": "merged", …}` on `head`.
pub fn has_merged_verdict(store: &Store, head: ObjectId) -> Result<bool> {
    Ok(store.note_objects(head)?.iter().any(|n| {
        n.get("kind").and_then(|k| k.as_str()) == Some("verdict")
            && n.get("state").and_then(|s| s.as_str()) == Some("merged")
    }))
}

#[cfg(test)]
mod tests {
    use super::Note;
    use serde_json::json;

    #[test]
    fn handoff_line_bytes_are_unchanged() {
        let old = json!({ "kind": "handoff", "packet": "20261129T091131Z-alice", "plan": "p", "author": "alice", "reason": "usage_limit" });
        let new = Note::Handoff {
            packet: "20261129T091131Z-alice".into(),
            plan: "p".into(),
            author: "alice".into(),
            reason: "usage_limit".into(),
        };
        assert_eq!(new.value(), old);
        assert_eq!(new.line(), serde_json::to_string(&old).unwrap());
        assert_eq!(
            new.line(),
            r#"{"author":"alice","kind":"handoff","packet":"20261129T091131Z-alice","plan":"p","reason":"usage_limit"}"#
        );
        assert_eq!(Note::parse(&new.line()), Some(new));
    }

    #[test]
    fn acceptance_line_bytes_are_unchanged() {
        let old = json!({ "kind": "acceptance", "packet": "x", "plan": "p", "by": "bob", "commit": "abc" });
        let new = Note::Acceptance {
            packet: "x".into(),
            plan: "p".into(),
            by: "bob".into(),
            commit: "abc".into(),
        };
        assert_eq!(new.line(), serde_json::to_string(&old).unwrap());
        assert_eq!(Note::parse(&new.line()), Some(new));
    }

    #[test]
    fn verdict_line_bytes_are_unchanged_and_read_back() {
        let old = json!({
            "kind": "verdict", "state": "merged", "repo": "o/r", "number": 7,
            "head_sha": "h", "merge_commit": null, "confirmed_on_base": true, "at": "t",
        });
        let new = Note::Verdict {
            state: "merged".into(),
            repo: "o/r".into(),
            number: 7,
            head_sha: Some("h".into()),
            merge_commit: None,
            confirmed_on_base: true,
            at: "t".into(),
        };
        assert_eq!(new.line(), serde_json::to_string(&old).unwrap());
        assert!(Note::parse(&old.to_string()).unwrap().is_merged_verdict());
        // A reader tolerates a verdict line with fields missing.
        let thin = Note::parse(r#"{"kind":"verdict","state":"merged"}"#).unwrap();
        assert!(thin.is_merged_verdict());
        let open = Note::parse(r#"{"kind":"verdict","state":"open"}"#).unwrap();
        assert!(!open.is_merged_verdict());
    }

    #[test]
    fn unknown_kinds_and_junk() {
        assert_eq!(Note::parse(r#"{"kind":"future","x":1}"#), Some(Note::Other));
        assert_eq!(Note::parse("not json"), None);
        assert_eq!(Note::parse(r#"{"no":"kind"}"#), None);
        let lines = vec![
            "junk".to_string(),
            r#"{"kind":"verdict","state":"merged"}"#.into(),
        ];
        assert_eq!(Note::parse_all(&lines).len(), 1);
    }
}
