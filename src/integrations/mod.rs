//! The outside systems: agent hosts (Claude Code, Codex, Gemini CLI), PR
//! verification, the conflict forecast, the GitHub client (`github/`,
//! below the session: a client and pure verdicts only), and the capacity
//! of agents' accounts with what they spend (`capacity/`).

pub mod agent;
pub mod capacity;
pub mod forecast;
pub mod github;
pub mod hosts;
pub mod verify;
