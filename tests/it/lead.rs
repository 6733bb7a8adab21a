//! Tests for the lead capability.
