//! The outside systems: agent hosts (Claude Code, Codex, Gemini CLI), PR
//! verification, the conflict forecast, and the GitHub client
//! (`github/`, below the session: a client and pure verdicts only).

pub mod agent;
pub mod forecast;
pub mod github;
pub mod verify;
