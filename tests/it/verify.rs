//! Tests for the verify capability.
