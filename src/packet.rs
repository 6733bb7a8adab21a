//! Handoff packets: a shim. The kind lives in `crate::model::packet` (types,
//! the record, the pure rules), the session helpers in `crate::ctx::packet`,
//! the commands in `crate::workflow::{handoff, accept, withdraw, packets}`.
//! These re-exports keep the paths other areas still use working until
//! every branch of the restructure is merged.

pub use crate::ctx::packet::{handoff_accepted, locate, open_packets, OpenPacket};
pub use crate::model::packet::{
    packet_ref, Acceptance, HandoffInput, Packet, PacketKey, PacketVersion, Verified, Withdrawal,
    REASONS,
};
