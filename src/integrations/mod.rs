//! The outside systems git-swarm reads: the capacity of agents' accounts
//! and what they spend (`capacity/`).

pub mod capacity;
