//! L2, the record kinds: one module per kind with its serde types, state
//! enums and pure rules. A model module imports the store and L0 only, never
//! another model module, and never runs a command or renders output.
//!
//! Every kind is registered in [`kinds`], which is how `sync` and `gc` learn
//! each kind's divergence policy and when a record is finished.

pub mod agent;
pub mod forecast;
pub mod lane;
pub mod lead;
pub mod message;
pub mod note;
pub mod packet;
pub mod plan;
pub mod pool;
pub mod reservation;
pub mod task;

use crate::store::records::{AnyKind, KindOf};

/// Every record kind, for `sync` (how diverged versions are joined) and
/// `gc` (what is finished). A namespace not listed here is joined as a
/// journal and never archived.
pub fn kinds() -> &'static [&'static dyn AnyKind] {
    static PLAN: KindOf<plan::PlanDoc> = KindOf::new();
    static LANE: KindOf<lane::LaneRecord> = KindOf::new();
    static LEAD: KindOf<lead::LeadRecord> = KindOf::new();
    static PACKET: KindOf<packet::PacketVersion> = KindOf::new();
    static MESSAGE: KindOf<message::Message> = KindOf::new();
    static TASK: KindOf<task::TaskRecord> = KindOf::new();
    static SNAPSHOT: packet::snapshot::SnapshotKind = packet::snapshot::SnapshotKind;
    static RESERVATIONS: KindOf<reservation::Ledger> = KindOf::new();
    static WIP: lane::wip::WipKind = lane::wip::WipKind;
    static POOL: KindOf<pool::Account> = KindOf::new();
    static KINDS: [&dyn AnyKind; 10] = [
        &PLAN,
        &LANE,
        &LEAD,
        &PACKET,
        &MESSAGE,
        &TASK,
        &SNAPSHOT,
        &RESERVATIONS,
        &WIP,
        &POOL,
    ];
    &KINDS
}
