//! L3, the user operations, one folder or file per command group, named
//! after what the user runs (`git swarm lane start` is `ops::lane::start`).
//! An operation uses the session (`crate::session::Ctx`), the records and
//! the store, and returns an outcome for the CLI to render; operations may
//! call each other, without an import cycle (tests/it/architecture.rs).

pub mod accept;
pub mod demo;
pub mod finish;
pub mod gc;
pub mod handoff;
pub mod init;
pub mod lane;
pub mod lead;
pub mod message;
pub mod packet;
pub mod plan;
pub mod pool;
pub mod renew;
pub mod reserve;
pub mod run;
pub mod sync;
pub mod task;
