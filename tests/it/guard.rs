//! Tests for the guard capability.
