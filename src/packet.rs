//! Handoff packets (`dwp-handoff/v1`) and their acceptance.
