//! L3, the user operations that touch several records (start a lane, hand
//! off, accept, lead, sync, gc, status, verify, init, demo). A workflow
//! uses the session (`crate::ctx::Ctx`), the model and the store, and
//! returns an outcome for the CLI to render; workflows do not import each
//! other.

pub mod accept;
pub mod gc;
pub mod handoff;
pub mod packets;
pub mod sync;
pub mod withdraw;
