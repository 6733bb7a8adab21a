//! The runner (`git swarm run`) and its pool, capacity loop and hosts.

pub(crate) mod capacity;
pub(crate) mod capacity_live;
pub(crate) mod capacity_run;
pub(crate) mod pool;
pub(crate) mod run_drill;
pub(crate) mod run_hosts_live;
pub(crate) mod run_live;
pub(crate) mod run_recover;
