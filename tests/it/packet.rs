//! Tests for the packet capability.
