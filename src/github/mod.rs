//! GitHub for `verify`: a client trait ([`client`]), its REST implementation
//! on octocrab and tokio ([`rest`]), our own tolerant models of the payloads
//! ([`model`]), the pure verdict rules of SPEC §7 ([`verdict`]), and the
//! command that ties them to git and the notes ([`verify`]); every wait
//! goes through [`wait`].

pub mod client;
pub mod model;
pub mod rest;
pub mod verdict;
pub mod verify;
pub mod wait;
