//! What every guard reports: the guard names, one [`Violation`] per broken
//! rule, the [`Findings`] of a run, and the fail-closed error of a guard
//! that could not read what it needs. The lowest guard module: every other
//! one imports it, it imports none of them.

use std::fmt::Display;

use serde::Serialize;

use crate::error::{Code, Error};

pub const PLAN_UNTRACKED: &str = "plan-untracked";
pub const CHANGESET_UNIQUE: &str = "changeset-unique";
pub const ATTRIBUTION: &str = "attribution";
pub const FENCED_PUBLISH: &str = "fenced-publish";

/// One broken rule.
#[derive(Debug, Clone, Serialize)]
pub struct Violation {
    pub guard: &'static str,
    /// What it is about: a path, a commit-message line, or a ref.
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    pub problem: String,
    pub fix: String,
    /// changeset-unique: a name that is free everywhere it was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<String>,
}

/// What a guard run found.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    pub guards: Vec<&'static str>,
    pub violations: Vec<Violation>,
    /// Things done or worth knowing that are not violations (e.g. stripped lines).
    pub notes: Vec<String>,
}

impl Findings {
    /// Record that `guard` ran (once, in the order they ran).
    pub fn ran(&mut self, guard: &'static str) {
        if !self.guards.contains(&guard) {
            self.guards.push(guard);
        }
    }
}

/// A guard could not run: fail closed (exit 4), naming what it could not read.
pub fn unreadable(guard: &str, what: impl Display, err: impl Display) -> Error {
    Error::new(
        Code::GuardError,
        format!("guard {guard} could not read {what}: {err}"),
    )
    .hint("nothing was checked, so nothing passes: fix the cause and run again")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_is_listed_once_in_the_order_it_ran() {
        let mut f = Findings::default();
        f.ran(PLAN_UNTRACKED);
        f.ran(CHANGESET_UNIQUE);
        f.ran(PLAN_UNTRACKED);
        assert_eq!(f.guards, vec![PLAN_UNTRACKED, CHANGESET_UNIQUE]);
    }

    #[test]
    fn an_unreadable_input_fails_closed() {
        let e = unreadable(CHANGESET_UNIQUE, "the index", "denied");
        assert_eq!(
            e.message,
            "guard changeset-unique could not read the index: denied"
        );
    }
}
