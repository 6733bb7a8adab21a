//! Properties across commands: kills and re-runs, soaks, hostile input, secrets, random interleavings, scale.

pub(crate) mod controls;
pub(crate) mod crash;
pub(crate) mod hostile_files;
pub(crate) mod names;
pub(crate) mod props;
pub(crate) mod rerun;
pub(crate) mod secrets;
pub(crate) mod soak;
pub(crate) mod swarm_scale;
pub(crate) mod sync_props;
