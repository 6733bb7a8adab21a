//! The one integration test binary: every test drives the real `git swarm`
//! binary against real git repositories, worktrees and bare remotes.

mod harness;

mod agents;
mod agents_live;
mod architecture;
mod attack;
mod cache;
mod cli;
mod controls;
mod crash;
mod docs;
mod executor;
mod forecast;
mod forecast_wip;
mod forged_lane;
mod gc;
mod github_server;
mod guard;
mod hardening;
mod hook_cache;
mod init;
mod issue14;
mod lane;
mod lead;
mod message;
mod openapi;
mod packet;
mod plan;
mod process;
mod props;
mod publish;
mod regress;
mod reserve;
mod reserve_guard;
mod rough;
mod secrets;
mod serve;
mod snapshot;
mod soak;
mod swarm_scale;
mod sync;
mod task;
mod tryout;
mod verify;
