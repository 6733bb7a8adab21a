//! Agents in their hosts (Claude Code, Codex, Gemini CLI): the guide they
//! read, the hooks the hosts call, and installing both. The hosts'
//! contracts are in [`crate::model::agent`].
//!
//! - `guide`: the protocol text, the skill, the `AGENTS.md` block;
//! - `hook`: one event in, one answer out (pre-tool-use, user-prompt-submit);
//! - `context`: session-start; `stop`: unfinished work and idle mode;
//!   `renew`: post-tool-use;
//! - `install`: the hosts' settings files, merged and restored;
//! - `state`: what the hooks remember between calls; `json`: settings
//!   files read and written in their own key order.

pub mod context;
pub mod guide;
pub mod hook;
pub mod install;
pub mod json;
pub mod renew;
pub mod state;
pub mod stop;
