//! What git-swarm drives outside itself: the agent hosts the runner
//! launches (`hosts`).

pub mod hosts;
