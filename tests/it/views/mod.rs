//! What the swarm shows: `status`, the dashboard (`serve`, `state --html`) and the record cache behind the listings.

pub(crate) mod cache;
pub(crate) mod serve;
pub(crate) mod status;
