//! The store's typed error: what a ref update can fail with, told apart from
//! gix's typed errors instead of from text.
//!
//! Callers that branch on the failure (the publish loop, `gc`, `sync`) match
//! on [`StoreError`]; everything else converts it with `?` into the one
//! [`crate::error::Error`] the CLI shows, with exactly the codes, messages and
//! hints it always had (`CAS_FAILED` exit 3, `GIT_FAILED` exit 4).

use gix::ObjectId;

use crate::error::{Code, Error};

/// A boxed source error, kept for `source()` chains rather than flattened.
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a ref transaction failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The ref did not hold the value the write expected: another writer
    /// moved it first. Nothing was overwritten.
    #[error(
        "{refname} changed while we were writing it (expected {}, found {}); nothing was overwritten",
        short_or_none(*expected),
        short_or_none(*actual)
    )]
    LostRace {
        refname: String,
        expected: Option<ObjectId>,
        actual: Option<ObjectId>,
    },
    /// A lock on the ref (or `packed-refs`) stayed held past the wait for it.
    #[error("{context}: {source}")]
    Locked {
        refname: String,
        context: String,
        #[source]
        source: Source,
    },
    /// git (gix) failed for another reason; `context` says what we did.
    #[error("{context}: {source}")]
    Git {
        context: String,
        #[source]
        source: Source,
    },
    /// A failure that already is a user-facing error (e.g. a bad ref name).
    #[error("{0}")]
    Other(Error),
}

impl StoreError {
    /// A git failure with its source kept.
    pub fn git(context: impl Into<String>, source: impl Into<Source>) -> Self {
        StoreError::Git {
            context: context.into(),
            source: source.into(),
        }
    }

    /// Whether another writer won (a retry from a fresh read may succeed).
    pub fn is_lost_race(&self) -> bool {
        matches!(self, StoreError::LostRace { .. })
    }
}

impl From<Error> for StoreError {
    fn from(e: Error) -> Self {
        StoreError::Other(e)
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::LostRace { .. } => Error::new(Code::CasFailed, e.to_string())
                .hint("run the command again: it will start from the new value"),
            StoreError::Locked { .. } | StoreError::Git { .. } => {
                Error::new(Code::GitFailed, e.to_string())
            }
            StoreError::Other(e) => e,
        }
    }
}

/// The first 12 hex digits of an object id.
pub fn short(id: ObjectId) -> String {
    id.to_string()[..12].to_string()
}

/// [`short`], or `nothing` for an absent ref.
pub fn short_or_none(id: Option<ObjectId>) -> String {
    id.map(short).unwrap_or_else(|| "nothing".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_race_is_cas_failed_exit_3_with_both_values() {
        let a = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let e: Error = StoreError::LostRace {
            refname: "refs/swarm/plans/p".into(),
            expected: Some(a),
            actual: None,
        }
        .into();
        assert_eq!(e.code, Code::CasFailed);
        assert_eq!(e.exit_code(), 3);
        assert_eq!(
            e.message,
            "refs/swarm/plans/p changed while we were writing it (expected 111111111111, found nothing); nothing was overwritten"
        );
        assert_eq!(
            e.hints,
            ["run the command again: it will start from the new value"]
        );
    }

    #[test]
    fn a_git_failure_keeps_its_source_and_is_git_failed_exit_4() {
        let io = std::io::Error::other("disk full");
        let se = StoreError::git("could not update refs (x)", io);
        assert!(std::error::Error::source(&se).is_some());
        let e: Error = se.into();
        assert_eq!(e.code, Code::GitFailed);
        assert_eq!(e.exit_code(), 4);
        assert_eq!(e.message, "could not update refs (x): disk full");
    }
}
