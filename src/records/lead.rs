//! The leader record of a plan (`refs/swarm/lead/<plan>`, `lead.yaml`,
//! `swarm-lead/v1`) and the rule of who may lead at which epoch.
//!
//! [`transition`] is that rule as a pure function: given the record the
//! arbiter holds, who acts, the command, the time and the lease, it returns
//! the next version (with its journal event) or the refusal the user sees.
//! It reads nothing: the operation (`crate::ops::lead`) fetches, reads
//! what the rule needs into [`Facts`], and publishes the result.
//!
//! Identity is the address: two machines acting under one address are one
//! leader. A leader is fenced when the record's epoch has moved past the
//! last epoch at which the record named it ([`last_epoch_led`]); one who
//! released the plan themselves is not fenced afterwards, just not the
//! leader.

use std::collections::BTreeSet;

use gix::ObjectId;
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::config::LeaseSetting;
use crate::error::{Code, Error, Result};
use crate::names;
use crate::store::records::{Diverged, Files, Record, Records};
use crate::store::yaml::{self, Extra};
use crate::store::{remote, short, Store};

mod rules;
#[cfg(test)]
mod tests;

pub use rules::{
    last_epoch_led, push_rejected, race_lost, transition, Change, Facts, Next, Transition,
};

pub const SCHEMA: &str = "swarm-lead/v1";
pub const RECORD_FILE: &str = "lead.yaml";
/// The lease when neither `--lease` nor `git config swarm.lease` sets one.
pub const DEFAULT_LEASE: &str = "30m";
/// The lease a leader command asks for: its `--lease` flag, else `git
/// config swarm.lease`, else 30 minutes.
pub const LEASE: LeaseSetting = LeaseSetting {
    key: "swarm.lease",
    default: DEFAULT_LEASE,
    parse: |text, _| parse_duration(text),
};

/// Where every leader ref lives.
pub const PREFIX: &str = "refs/swarm/lead/";

pub fn lead_ref(plan: &str) -> String {
    format!("{PREFIX}{plan}")
}

/// The leader record at commit `id` (a version of `refs/swarm/lead/<plan>`).
pub fn read_at(store: &Store, plan: &str, id: ObjectId) -> Result<LeadRecord> {
    let what = format!("{} at {}", lead_ref(plan), short(id));
    Records::<LeadRecord>::new(store)
        .at_named(&plan.to_string(), id, &what)
        .map(|v| v.value)
}

/// The current leader and epoch of a plan as this repository knows it (the
/// newer of the local ref and the remote's mirror), for packets and status.
pub fn known(store: &Store, remote: Option<&str>, plan: &str) -> Result<Option<LeadRecord>> {
    let tip = remote::tip(store, remote, &lead_ref(plan))?;
    tip.base.map(|b| read_at(store, plan, b)).transpose()
}

/// The leader record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LeadRecord {
    pub schema: String,
    pub plan: String,
    /// None once released.
    pub leader: Option<String>,
    pub epoch: u64,
    /// Ordered: who may take over, first reachable first.
    #[serde(default)]
    pub succession: Vec<String>,
    #[serde(default)]
    pub lanes: Vec<String>,
    #[serde(default)]
    pub lease_until: Option<String>,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default)]
    pub released: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

impl LeadRecord {
    /// The record before anyone claimed the plan (epoch 0, nobody leads).
    pub fn new(plan: &str) -> LeadRecord {
        LeadRecord {
            schema: SCHEMA.into(),
            plan: plan.into(),
            leader: None,
            epoch: 0,
            succession: Vec::new(),
            lanes: Vec::new(),
            lease_until: None,
            updated_at: String::new(),
            released: false,
            extra: Extra::new(),
        }
    }

    /// Who leads now (None when released or never set).
    pub fn current_leader(&self) -> Option<&str> {
        if self.released {
            None
        } else {
            self.leader.as_deref()
        }
    }

    pub fn lease_until_ts(&self) -> Option<Timestamp> {
        self.lease_until.as_deref().and_then(|s| s.parse().ok())
    }

    pub fn lease_live(&self, now: Timestamp) -> bool {
        self.current_leader().is_some() && self.lease_until_ts().is_some_and(|t| now < t)
    }

    /// "bob leads at epoch 3" or "nobody leads (released at epoch 3)".
    pub fn who(&self) -> String {
        match self.current_leader() {
            Some(l) => format!("{l} leads at epoch {}", self.epoch),
            None => format!("nobody leads (released at epoch {})", self.epoch),
        }
    }

    /// The record's fields at the top level, plus the commit holding it:
    /// the JSON of `lead status` and of every error about the record.
    pub fn to_json(&self, commit: Option<ObjectId>) -> serde_json::Value {
        let mut json = serde_json::to_value(self).expect("a lead record serialises");
        json["commit"] = serde_json::json!(commit.map(|c| c.to_string()));
        json
    }
}

/// Parse a record from its YAML.
pub fn parse_record(bytes: &[u8], plan: &str) -> Result<LeadRecord> {
    let what = format!("{}:{RECORD_FILE}", lead_ref(plan));
    let rec: LeadRecord = yaml::parse(bytes, "swarm-lead", &what)?;
    let mut addresses: Vec<(&str, &str)> = vec![("leader", rec.leader.as_deref().unwrap_or(""))];
    addresses.extend(rec.succession.iter().map(|a| ("succession", a.as_str())));
    yaml::check_identities(&what, &[("plan", &rec.plan)], &addresses)?;
    Ok(rec)
}

impl Record for LeadRecord {
    const NAMESPACE: &'static str = "lead";
    const KIND: &'static str = "lead";
    const DIVERGED: Diverged = Diverged::PublishedWinsFenced;
    type Key = String;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        yaml::yaml_file(RECORD_FILE, self)
    }
    /// `what` names the version in the error when `lead.yaml` is missing.
    fn from_files(files: &Files, plan: &String, what: &str) -> Result<Self> {
        let bytes = yaml::the_file(files, RECORD_FILE, what)?;
        parse_record(bytes, plan)
    }
    /// A released leader record of a closed plan.
    fn is_finished(&self, plan: &String, finished_elsewhere: &dyn Fn(&str, &str) -> bool) -> bool {
        self.released && finished_elsewhere("plans", plan)
    }
}

/// A lease length: `30m`, `2h`, `1h30m`, `45s`, `1d`; must be positive.
pub fn parse_duration(text: &str) -> Result<SignedDuration> {
    let d = crate::clock::parse_duration(text)?;
    if d.is_zero() {
        return Err(Error::new(Code::Usage, "a lease must be longer than zero")
            .hint("use a number and a unit: 45s, 30m, 2h, 1d, or combined like 1h30m"));
    }
    Ok(d)
}

/// The end of a lease of length `lease` from `now`, as stored.
pub fn until(now: Timestamp, lease: SignedDuration) -> Result<String> {
    crate::clock::lease_end(now, lease, Code::Usage)
}

/// A leader command.
#[derive(Debug, Clone)]
pub enum Op {
    Claim {
        succession: Vec<String>,
        lanes: Vec<String>,
        lease: Option<String>,
    },
    Renew {
        lease: Option<String>,
        lanes: Option<Vec<String>>,
    },
    Handover {
        to: String,
        lease: Option<String>,
        /// Hand over to an address outside the succession (it is added).
        force: bool,
    },
    Takeover {
        reason: String,
        force: bool,
        lease: Option<String>,
    },
    Release,
    Push {
        refspecs: Vec<String>,
    },
    /// Replace the ordered succession (leader only; epoch unchanged).
    Succession {
        succession: Vec<String>,
    },
}

/// Which leader command, without its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Claim,
    Renew,
    Handover,
    Takeover,
    Release,
    Push,
    Succession,
}

impl Verb {
    /// The journal's `Swarm-Event`.
    pub fn event_kind(self) -> &'static str {
        match self {
            Verb::Claim => "lead-claimed",
            Verb::Renew => "lead-renewed",
            Verb::Handover => "lead-handover",
            Verb::Takeover => "lead-takeover",
            Verb::Release => "lead-released",
            Verb::Push => "lead-act",
            Verb::Succession => "lead-succession",
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Verb::Claim => "claim",
            Verb::Renew => "renew",
            Verb::Handover => "handover",
            Verb::Takeover => "takeover",
            Verb::Release => "release",
            Verb::Push => "push",
            Verb::Succession => "succession",
        }
    }
    /// Contests for leadership: a lost CAS means another contender won.
    pub fn contest(self) -> bool {
        matches!(self, Verb::Claim | Verb::Takeover)
    }
}

impl Op {
    pub fn verb(&self) -> Verb {
        match self {
            Op::Claim { .. } => Verb::Claim,
            Op::Renew { .. } => Verb::Renew,
            Op::Handover { .. } => Verb::Handover,
            Op::Takeover { .. } => Verb::Takeover,
            Op::Release => Verb::Release,
            Op::Push { .. } => Verb::Push,
            Op::Succession { .. } => Verb::Succession,
        }
    }

    /// Whether the command sets a lease, and its `--lease` flag: `Some(flag)`
    /// for claim, renew, handover and takeover, None for the others.
    pub fn lease_flag(&self) -> Option<Option<&str>> {
        match self {
            Op::Claim { lease, .. }
            | Op::Renew { lease, .. }
            | Op::Handover { lease, .. }
            | Op::Takeover { lease, .. } => Some(lease.as_deref()),
            Op::Release | Op::Push { .. } | Op::Succession { .. } => None,
        }
    }

    /// The refspecs a fenced push publishes with the record.
    pub fn refspecs(&self) -> &[String] {
        match self {
            Op::Push { refspecs } => refspecs,
            _ => &[],
        }
    }

    /// Whether deciding needs [`Facts::last_led`]: a leader-only command by
    /// someone the record does not name as leader (fenced, or never led).
    pub fn needs_history(&self, record: Option<&LeadRecord>, actor: &str) -> bool {
        let leader_only = !matches!(self, Op::Claim { .. } | Op::Takeover { .. });
        leader_only && record.is_some_and(|r| r.current_leader() != Some(actor))
    }
}

/// Check a command's arguments before anything is fetched (the lease and
/// a push's refspecs are checked by the operation, against config and git).
pub fn validate(op: &Op) -> Result<()> {
    match op {
        Op::Claim {
            succession, lanes, ..
        } => {
            for a in succession {
                names::validate_address(a)?;
            }
            for l in lanes {
                names::validate_name("feature", l)?;
            }
        }
        Op::Renew { lanes, .. } => {
            for l in lanes.iter().flatten() {
                names::validate_name("feature", l)?;
            }
        }
        Op::Handover { to, .. } => names::validate_address(to)?,
        Op::Takeover { reason, .. } => {
            if reason.trim().is_empty() {
                return Err(Error::new(Code::Usage, "a takeover needs a --reason"));
            }
            crate::secret::check_fields("the takeover", &[("--reason", reason)])?;
        }
        Op::Release => {}
        Op::Succession { succession } => validate_succession(succession)?,
        Op::Push { refspecs } => {
            let named: Vec<(String, &str)> = refspecs
                .iter()
                .enumerate()
                .map(|(i, spec)| (format!("refspec[{i}]"), spec.as_str()))
                .collect();
            let named: Vec<(&str, &str)> = named.iter().map(|(f, v)| (f.as_str(), *v)).collect();
            crate::secret::check_fields("the push", &named)?;
        }
    }
    Ok(())
}

fn validate_succession(succession: &[String]) -> Result<()> {
    if succession.is_empty() {
        return Err(
            Error::new(Code::Usage, "a succession names at least one address")
                .hint("e.g. `git swarm lead succession --plan <P> alice,bob`"),
        );
    }
    let mut seen = BTreeSet::new();
    for a in succession {
        names::validate_address(a)?;
        if !seen.insert(a) {
            return Err(Error::new(
                Code::Usage,
                format!("'{a}' appears twice in the succession"),
            )
            .hint("name each address once, in the order they should take over"));
        }
    }
    Ok(())
}

/// Refuse a refspec `lead push` must not publish: an empty one, or one
/// that writes swarm records (they travel with `sync`).
pub fn check_push_target(plan: &str, spec: &str) -> Result<()> {
    let dst = spec.rsplit_once(':').map_or(spec, |(_, d)| d);
    if spec.trim().is_empty() || dst.starts_with("refs/swarm/") || dst == lead_ref(plan) {
        return Err(Error::new(
            Code::Usage,
            format!("'{spec}' is not a refspec lead push can publish"),
        )
        .hint("name code refs such as your base branch, HEAD:<base branch> or refs/tags/v1; swarm records travel with `git swarm sync`"));
    }
    Ok(())
}

/// The source side of a refspec (`+HEAD:main` → `HEAD`; empty: a delete).
pub fn refspec_source(spec: &str) -> &str {
    let src = spec.trim_start_matches('+');
    src.split_once(':').map_or(src, |(s, _)| s)
}

/// A claim or succession edit whose list leaves out the leader: legal (the
/// leader need not succeed themselves), but a takeover back by them would be
/// refused, which is rarely what was meant.
pub fn succession_omits(verb: Verb, succession: &[String], actor: &str) -> bool {
    matches!(verb, Verb::Claim | Verb::Succession) && !succession.iter().any(|s| s == actor)
}
