//! Handoff packets (`dwp-handoff/v1`) and their acceptance or withdrawal:
//! the serde types, the record kind (`refs/swarm/packets/<plan>/<id>`), and
//! the pure rules — building a packet with its secret scan
//! ([`build`]), judging re-derived facts against it ([`verdict`]), and who
//! may withdraw or accept it.
//!
//! A packet version is one commit on the packet ref: `packet.yaml`, plus
//! `acceptance.yaml` once a successor accepted it, or `withdrawal.yaml`
//! once its author took it back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::store::records::{Diverged, Files, Record, ScopedKey};
use crate::store::yaml::{self, Extra};

pub mod build;
mod known;
pub mod snapshot;
pub mod verdict;

pub use build::{
    check_reason, clean_url, parse_verified, refuse_findings, same_content, scan, scan_said,
    Derived, HandoffInput,
};
pub use known::{backs_lane, known_refs, locate, open_packets, read_at, OpenPacket};
pub use verdict::{content_mismatch, list_diff, mismatch_error, mismatches, Facts, Mismatch};

pub const SCHEMA: &str = "dwp-handoff/v1";
pub const ACCEPTANCE_SCHEMA: &str = "swarm-acceptance/v1";
pub const PACKET_FILE: &str = "packet.yaml";
pub const ACCEPTANCE_FILE: &str = "acceptance.yaml";
pub const WITHDRAWAL_FILE: &str = "withdrawal.yaml";
pub const WITHDRAWAL_SCHEMA: &str = "swarm-withdrawal/v1";
pub const REASONS: &[&str] = &[
    "capacity_critical",
    "capacity_low",
    "context_pressure",
    "usage_limit",
    "lead_handover",
];
/// Where every packet ref lives.
pub const PREFIX: &str = "refs/swarm/packets/";

pub fn packet_ref(plan: &str, id: &str) -> String {
    format!("{PREFIX}{plan}/{id}")
}

/// The refs of every packet of a plan (a prefix).
pub fn plan_prefix(plan: &str) -> String {
    format!("{PREFIX}{plan}/")
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verified {
    pub claim: String,
    pub evidence: String,
}

/// The packet (`packet.yaml`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Packet {
    pub schema: String,
    pub id: String,
    pub plan: String,
    /// The plan's contract in force when the packet was written.
    pub contract: String,
    pub author: String,
    pub created_at: String,
    pub reason: String,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
    /// The shared remote's URL (credentials stripped), if any.
    #[serde(default)]
    pub repo: Option<String>,
    /// Absolute path of the checkout the work is in.
    pub checkout: String,
    /// None on a detached HEAD.
    #[serde(default)]
    pub branch: Option<String>,
    pub head: String,
    /// The head is reachable from the remote-tracking branch.
    #[serde(default)]
    pub pushed: bool,
    /// Uncommitted paths, without the packet's own export file.
    #[serde(default)]
    pub uncommitted: Vec<String>,
    /// What each uncommitted path holds: the git blob id of the working-tree
    /// file (as `git hash-object` without filters), or `deleted`. `accept`
    /// compares it, so equal paths with other content do not pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uncommitted_content: BTreeMap<String, String>,
    /// Where `--export` wrote the packet: relative to the checkout when
    /// inside it (that file is not part of the work), else absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// The lane whose branch this is: its record is published with the
    /// packet, and `accept` hands it over or refuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// The uncommitted work itself, as a commit on the snapshot ref tied
    /// to this packet; None when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<snapshot::Snapshot>,
    /// The claim the author holds on the lane's task: `accept` moves it
    /// to the successor in the same atomic push as the acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<PacketClaim>,
    /// The live reservations the author holds for this work: `accept`
    /// moves them to the successor in the same push.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<PacketReservation>,
    #[serde(default)]
    pub leader: Option<String>,
    #[serde(default)]
    pub epoch: Option<u64>,
    #[serde(default)]
    pub done: Vec<String>,
    #[serde(default)]
    pub verified: Vec<Verified>,
    #[serde(default)]
    pub unverified: Vec<String>,
    #[serde(default)]
    pub next: Vec<String>,
    #[serde(default)]
    pub requests: Vec<String>,
    #[serde(default)]
    pub decisions: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The claim a packet carries: task `id` of `plan`, held by the author at
/// claim counter `epoch` until `lease_until`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PacketClaim {
    pub plan: String,
    pub task: String,
    pub holder: String,
    pub epoch: u64,
    pub lease_until: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A reservation a packet carries (its ledger id, paths and lease).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PacketReservation {
    pub id: String,
    pub paths: Vec<String>,
    pub lease_until: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What `accept` moved to the successor with the acceptance, and what it
/// could not move (and why).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Moved {
    /// `<plan>/<task>` whose claim is the successor's now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reservations: Vec<String>,
    /// One line per claim or reservation left behind, saying why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_moved: Vec<String>,
}

impl Moved {
    pub fn is_empty(&self) -> bool {
        self.claim.is_none() && self.reservations.is_empty() && self.not_moved.is_empty()
    }
}

/// The acceptance (`acceptance.yaml`), appended to the packet ref once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Acceptance {
    pub schema: String,
    pub packet: String,
    pub plan: String,
    pub contract: String,
    pub accepted_by: String,
    pub accepted_at: String,
    /// Where the successor re-derived the facts.
    pub checkout: String,
    #[serde(default)]
    pub branch: Option<String>,
    pub head: String,
    #[serde(default)]
    pub uncommitted: Vec<String>,
    #[serde(default)]
    pub leader: Option<String>,
    #[serde(default)]
    pub epoch: Option<u64>,
    /// The packet's unverified gates: the successor must re-run every one.
    #[serde(default)]
    pub must_rerun: Vec<String>,
    #[serde(default)]
    pub next: Vec<String>,
    /// The claim and reservations moved to the successor with it.
    #[serde(default, skip_serializing_if = "Moved::is_empty")]
    pub moved: Moved,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Acceptance {
    /// `accepted_by`'s acceptance of `packet`, re-derived in `checkout`
    /// under the plan's current `leader` and `epoch`.
    pub fn new(
        packet: &Packet,
        accepted_by: &str,
        accepted_at: String,
        checkout: String,
        leader: Option<String>,
        epoch: Option<u64>,
    ) -> Acceptance {
        Acceptance {
            schema: ACCEPTANCE_SCHEMA.into(),
            packet: packet.id.clone(),
            plan: packet.plan.clone(),
            contract: packet.contract.clone(),
            accepted_by: accepted_by.to_string(),
            accepted_at,
            checkout,
            branch: packet.branch.clone(),
            head: packet.head.clone(),
            uncommitted: packet.uncommitted.clone(),
            leader,
            epoch,
            must_rerun: packet.unverified.clone(),
            next: packet.next.clone(),
            moved: Moved::default(),
            extra: Extra::new(),
        }
    }
}

/// The withdrawal (`withdrawal.yaml`, `swarm-withdrawal/v1`): the author
/// took a packet back before anyone accepted it. The packet stays on its
/// ref, readable, and can no longer be accepted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Withdrawal {
    pub schema: String,
    pub packet: String,
    pub plan: String,
    pub withdrawn_by: String,
    pub withdrawn_at: String,
    pub reason: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Withdrawal {
    pub fn new(packet: &Packet, by: &str, at: String, reason: &str) -> Withdrawal {
        Withdrawal {
            schema: WITHDRAWAL_SCHEMA.into(),
            packet: packet.id.clone(),
            plan: packet.plan.clone(),
            withdrawn_by: by.to_string(),
            withdrawn_at: at,
            reason: reason.to_string(),
            extra: Extra::new(),
        }
    }
}

/// A packet's key: its plan and its id (`refs/swarm/packets/<plan>/<id>`).
pub type PacketKey = ScopedKey;

/// One version of a packet record: the packet, and its acceptance or
/// withdrawal once there is one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PacketVersion {
    pub packet: Packet,
    pub acceptance: Option<Acceptance>,
    pub withdrawal: Option<Withdrawal>,
}

impl PacketVersion {
    /// Neither accepted nor withdrawn.
    pub fn is_open(&self) -> bool {
        self.acceptance.is_none() && self.withdrawal.is_none()
    }

    /// Parse the files of one packet version; `what` is its ref name.
    pub fn parse(files: &Files, what: &str) -> Result<PacketVersion> {
        let bytes = files
            .get(PACKET_FILE)
            .ok_or_else(|| missing_packet_file(what, None))?;
        let packet_what = format!("{what}:{PACKET_FILE}");
        let packet: Packet = yaml::parse(bytes, "dwp-handoff", &packet_what)?;
        yaml::check_identities(&packet_what, &[], &[("author", &packet.author)])?;
        let acceptance = files
            .get(ACCEPTANCE_FILE)
            .map(|b| yaml::parse(b, "swarm-acceptance", &format!("{what}:{ACCEPTANCE_FILE}")))
            .transpose()?;
        let withdrawal = files
            .get(WITHDRAWAL_FILE)
            .map(|b| yaml::parse(b, "swarm-withdrawal", &format!("{what}:{WITHDRAWAL_FILE}")))
            .transpose()?;
        Ok(PacketVersion {
            packet,
            acceptance,
            withdrawal,
        })
    }

    /// Whether `actor` may withdraw this packet: only its author, only
    /// before anyone accepted it. `Ok(Some(w))`: withdrawn already.
    pub fn may_withdraw(&self, actor: &str) -> Result<Option<&Withdrawal>> {
        let packet = &self.packet;
        if let Some(acc) = &self.acceptance {
            return Err(Error::new(
                Code::PacketAlreadyAccepted,
                format!(
                    "packet {} was accepted by {} at {}: it can no longer be withdrawn",
                    packet.id, acc.accepted_by, acc.accepted_at
                ),
            )
            .hint(format!(
                "talk to {}: the work is theirs now",
                acc.accepted_by
            )));
        }
        if packet.author != actor {
            return Err(Error::new(
                Code::PacketNotAuthor,
                format!(
                    "packet {} was written by {}, not by you ({actor}): only its author withdraws it",
                    packet.id, packet.author
                ),
            )
            .hint(format!(
                "ask {} to run `git swarm packet withdraw {}`",
                packet.author, packet.id
            )));
        }
        Ok(self.withdrawal.as_ref())
    }

    /// Where `actor` stands with accepting this packet: `Ok(None)` it is
    /// open to accept; `Ok(Some(acc))` `actor` accepted it already (a re-run
    /// completes what an interrupted run left); accepted by someone else or
    /// withdrawn is refused.
    pub fn may_accept(&self, actor: &str) -> Result<Option<&Acceptance>> {
        match (&self.acceptance, &self.withdrawal) {
            (Some(acc), _) if acc.accepted_by == actor => Ok(Some(acc)),
            (Some(acc), _) => Err(already_accepted(&self.packet, acc)),
            (None, Some(w)) => Err(withdrawn_error(&self.packet, w)),
            (None, None) => Ok(None),
        }
    }
}

/// A packet file is missing from a packet version (`commit`, when known).
pub fn missing_packet_file(what: &str, commit: Option<&str>) -> Error {
    let at = commit.map(|c| format!(" at {c}")).unwrap_or_default();
    Error::new(
        Code::YamlInvalid,
        format!("{what}{at} has no {PACKET_FILE}"),
    )
}

/// `PACKET_ALREADY_ACCEPTED`: a packet is accepted once.
pub fn already_accepted(packet: &Packet, acc: &Acceptance) -> Error {
    Error::new(
        Code::PacketAlreadyAccepted,
        format!(
            "packet {} was already accepted by {} at {}",
            packet.id, acc.accepted_by, acc.accepted_at
        ),
    )
    .hint(format!(
        "a packet is accepted once; see it with `git swarm packet show {}`",
        packet.id
    ))
    .with_detail(serde_json::json!({ "acceptance": acc }))
}

/// `PACKET_WITHDRAWN`: its author took it back.
pub fn withdrawn_error(packet: &Packet, w: &Withdrawal) -> Error {
    Error::new(
        Code::PacketWithdrawn,
        format!(
            "packet {} was withdrawn by {} at {}: {}",
            packet.id, w.withdrawn_by, w.withdrawn_at, w.reason
        ),
    )
    .hint(format!(
        "ask {} for a new handoff; `git swarm packets --plan {}` lists the open ones",
        packet.author, packet.plan
    ))
    .with_detail(serde_json::json!({ "withdrawal": w }))
}

/// [`Record::cache_tags`] of a packet: accepted, withdrawn (a closed
/// packet is told without decoding it).
pub const TAG_ACCEPTED: u8 = 1;
pub const TAG_WITHDRAWN: u8 = 2;

impl Record for PacketVersion {
    const NAMESPACE: &'static str = "packets";
    const KIND: &'static str = "packet";
    const DIVERGED: Diverged = Diverged::PublishedWinsIfRelated;
    type Key = PacketKey;
    const FINISHED_WITH_FILE: Option<&'static str> = Some(ACCEPTANCE_FILE);

    crate::store::record_cache::json_cache!();
    fn cache_tags(&self) -> u8 {
        let accepted = if self.acceptance.is_some() {
            TAG_ACCEPTED
        } else {
            0
        };
        accepted
            | if self.withdrawal.is_some() {
                TAG_WITHDRAWN
            } else {
                0
            }
    }
    fn to_files(&self) -> Result<Files> {
        let mut files = Files::new();
        files.insert(PACKET_FILE.to_string(), yaml::to_yaml(&self.packet)?);
        if let Some(acc) = &self.acceptance {
            files.insert(ACCEPTANCE_FILE.to_string(), yaml::to_yaml(acc)?);
        }
        if let Some(w) = &self.withdrawal {
            files.insert(WITHDRAWAL_FILE.to_string(), yaml::to_yaml(w)?);
        }
        Ok(files)
    }
    fn from_files(files: &Files, key: &PacketKey, _what: &str) -> Result<Self> {
        PacketVersion::parse(files, &packet_ref(&key.plan, &key.id))
    }
    /// An accepted packet.
    fn is_finished(&self, _: &PacketKey, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.acceptance.is_some()
    }
}

#[cfg(test)]
mod tests;
