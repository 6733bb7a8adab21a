//! GitHub for `verify` (L2): a client trait ([`client`]), its REST
//! implementation on octocrab and tokio ([`rest`]), our own tolerant models
//! of the payloads ([`model`]) and the pure verdict rules of SPEC §7
//! ([`verdict`]); every wait goes through [`wait`]. The command that ties
//! them to git and the notes is the workflow `crate::integrations::verify`.

pub mod client;
pub mod model;
pub mod rest;
pub mod verdict;
pub mod wait;
