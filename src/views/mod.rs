//! L3, the read models: `status`, `state` and the dashboard (`serve`),
//! derived from the records and returned for the CLI to render.

pub mod agents;
pub mod dashboard;
pub mod state;
pub mod status;
