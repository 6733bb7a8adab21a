//! Shim: `init` moved to `crate::workflow::init` (the command) and
//! `crate::ctx::init` (hook text, excludes, refspecs). These re-exports keep
//! the old paths working.

pub use crate::ctx::init::{
    binary_check, ensure_excludes, hooks_dir, hooks_installed, merge_hook, shim, BEGIN, END, HOOKS,
};
pub use crate::store::mirror::mirror_refspecs;
