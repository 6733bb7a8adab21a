//! Tests for the lane capability.
