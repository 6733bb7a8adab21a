//! L2, the record kinds: one module per kind with its serde types, state
//! enums and pure rules. A model module imports the store and L0 only, never
//! another model module, and never runs a command or renders output.
//!
//! Every kind is registered in [`kinds`], which is how `sync` and `gc` learn
//! each kind's divergence policy and when a record is finished.

/// An enum for a closed set of states that a record writes as strings
/// (`state: active`), with an `Other` arm that keeps a value a newer
/// version wrote as it was: a record an older binary cannot name stays
/// readable, and is written back unchanged. Serialized as the string, so
/// the YAML and the `--json` shapes are the strings they always were.
macro_rules! open_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident {
        $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$vm])* $var,)+
            /// A value this version does not know, kept as written.
            Other(String),
        }
        impl $name {
            pub fn parse(s: &str) -> Self {
                match s {
                    $($s => $name::$var,)+
                    other => $name::Other(other.to_string()),
                }
            }
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $s,)+
                    $name::Other(s) => s,
                }
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name::parse(s)
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                String::deserialize(d).map(|s| $name::parse(&s))
            }
        }
    };
}

pub mod agent;
pub mod lane;
pub mod lead;
pub mod message;
pub mod note;
pub mod packet;
pub mod plan;
pub mod reservation;
pub mod task;

use crate::store::kind::{AnyKind, KindOf};

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
    static KINDS: [&dyn AnyKind; 9] = [
        &PLAN,
        &LANE,
        &LEAD,
        &PACKET,
        &MESSAGE,
        &TASK,
        &SNAPSHOT,
        &RESERVATIONS,
        &WIP,
    ];
    &KINDS
}
