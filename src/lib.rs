//! git-swarm: plans, lanes, handoff packets and leader records kept in git
//! refs and notes, so a coordinator and many parallel agents can work on one
//! repository without losing work, trust or direction.
//!
//! The library holds the domain logic; it never prints and never exits.
//! `src/main.rs` and `src/cli/` parse arguments and render what it returns (`cli::output::Output`).

pub mod clock;
pub mod complete;
pub mod config;
pub mod ctx;
pub mod error;
pub mod failpoint;
pub mod fsutil;
pub mod git;
pub mod github;
pub mod guard;
pub mod model;
pub mod names;
pub mod secret;
pub mod store;
pub mod text;
pub mod workflow;
pub mod worktree;
