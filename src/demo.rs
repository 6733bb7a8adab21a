//! Shim: `demo` moved to `crate::workflow::demo` (its rendering to the
//! CLI). This re-export keeps the old path working.

pub use crate::workflow::demo::shell_quote;
