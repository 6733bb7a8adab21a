//! L3, the user operations that touch several records (start a lane, hand
//! off, accept, lead, sync, gc, status, verify, init, demo). A workflow
//! uses the session (`crate::ctx::Ctx`), the model and the store, and
//! returns an outcome for the CLI to render; workflows do not import each
//! other.

pub mod accept;
pub mod agent;
pub mod dashboard;
pub mod demo;
pub mod forecast;
pub mod gc;
pub mod handoff;
pub mod init;
pub mod lane_remove;
pub mod lane_report;
pub mod lane_snapshot;
pub mod lane_start;
pub mod lanes;
pub mod lead;
pub mod message;
pub mod packets;
pub mod plan;
pub mod pool;
pub mod renew;
pub mod reserve;
pub mod run;
pub mod state;
pub mod status;
pub mod sync;
pub mod task;
pub mod verify;
pub mod withdraw;
