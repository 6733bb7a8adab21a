//! `git swarm packets`, `packet show` and `packet withdraw`: the packets
//! known here, and withdrawing one.

pub mod list;
pub mod withdraw;
