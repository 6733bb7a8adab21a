//! The one integration test binary: every test drives the real `git swarm`
//! binary against real git repositories, worktrees and bare remotes.

mod agents;
mod architecture;
mod cli;
mod guard;
mod lane;
mod lead;
mod message;
mod packet;
mod plan;
mod properties;
mod reserve;
mod run;
mod support;
mod sync;
mod task;
mod trust;
mod verify;
mod views;
