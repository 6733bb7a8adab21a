//! What the tests share: the test environment (`harness`), the swarm fixtures (`fixture`), processes raced and killed (`process`), the reservations as stored (`reservations`), and the scripted model and GitHub servers.

pub(crate) mod fixture;
pub(crate) mod github_server;
pub(crate) mod harness;
pub(crate) mod model_server;
pub(crate) mod process;
pub(crate) mod reservations;
