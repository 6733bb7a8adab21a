//! Shim: `init` moved to `crate::workflow::init` (the command) and
//! `crate::ctx::init` (hook text, excludes, refspecs). These re-exports keep
//! the old paths working.

pub use crate::ctx::init::{
    binary_check, ensure_excludes, hooks_dir, hooks_installed, merge_hook, mirror_refspecs, shim,
    BEGIN, END, HOOKS,
};
