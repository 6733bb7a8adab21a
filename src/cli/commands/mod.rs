//! One module per command group: its clap arguments, how it runs the
//! operation, and how it renders the outcome.

pub mod agent;
pub mod capacity;
pub mod completions;
pub mod demo;
pub mod finish;
pub mod forecast;
pub mod gc;
pub mod guard;
pub mod handoff;
pub mod init;
pub mod lane;
pub mod lead;
pub mod man;
pub mod message;
pub mod plan;
pub mod pool;
pub mod renew;
pub mod reserve;
pub mod run;
pub mod serve;
pub mod status;
pub mod sync;
pub mod task;
pub mod verify;
