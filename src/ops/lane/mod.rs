//! `git swarm lane …` and `git swarm report`: start, list, remove, report
//! and snapshot a lane.

pub mod end;
pub mod list;
pub mod remove;
pub mod report;
pub mod snapshot;
pub mod start;
