//! Building a packet: what the caller says is checked and scanned for
//! secrets before anything else runs; what the tool derived is scanned too,
//! before a single object is written.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::{Packet, Verified, REASONS, SCHEMA};
use crate::error::{Code, Error, Result};
use crate::secret;
use crate::store::yaml::Extra;

/// What the caller of `handoff` says.
#[derive(Debug, Clone, Default)]
pub struct HandoffInput {
    pub reason: String,
    pub plan: Option<String>,
    pub task: Option<String>,
    pub step: Option<String>,
    pub done: Vec<String>,
    /// `CLAIM=EVIDENCE`
    pub verified: Vec<String>,
    pub unverified: Vec<String>,
    pub next: Vec<String>,
    pub requests: Vec<String>,
    pub decisions: Vec<String>,
    pub export: Option<PathBuf>,
}

/// What the tool derived for a packet (everything but the caller's words,
/// the id and the time).
#[derive(Debug, Clone, Default)]
pub struct Derived {
    pub plan: String,
    pub contract: String,
    pub author: String,
    pub repo: Option<String>,
    pub checkout: String,
    pub branch: Option<String>,
    pub head: String,
    pub pushed: bool,
    pub uncommitted: Vec<String>,
    pub uncommitted_content: BTreeMap<String, String>,
    pub export: Option<String>,
    pub lane: Option<String>,
    /// The lane's task (`<plan>/<id>`), when the lane took one.
    pub task: Option<String>,
    pub claim: Option<super::PacketClaim>,
    pub reservations: Vec<super::PacketReservation>,
    pub leader: Option<String>,
    pub epoch: Option<u64>,
}

pub fn scan<T: Serialize>(value: &T) -> Result<()> {
    let value = serde_yaml_ng::to_value(value)
        .map_err(|e| Error::new(Code::Internal, format!("could not serialise a packet: {e}")))?;
    refuse_findings(secret::scan(&value))
}

pub fn refuse_findings(findings: Vec<secret::Finding>) -> Result<()> {
    if findings.is_empty() {
        Ok(())
    } else {
        Err(secret::refusal(Code::PacketSecret, "the packet", &findings))
    }
}

pub fn parse_verified(raw: &[String]) -> Result<Vec<Verified>> {
    raw.iter()
        .enumerate()
        .map(|(i, v)| {
            // Never echo the value: it has not been scanned yet when this fails.
            let (claim, evidence) = v.split_once('=').ok_or_else(|| {
                Error::new(
                    Code::Usage,
                    format!("--verified #{} is not CLAIM=EVIDENCE", i + 1),
                )
                .hint("e.g. --verified \"unit tests pass=target/test-log.txt\"")
            })?;
            let (claim, evidence) = (claim.trim(), evidence.trim());
            if claim.is_empty() || evidence.is_empty() {
                return Err(Error::new(
                    Code::Usage,
                    format!(
                        "--verified #{} needs both a claim and an evidence path",
                        i + 1
                    ),
                ));
            }
            Ok(Verified {
                claim: claim.to_string(),
                evidence: evidence.to_string(),
            })
        })
        .collect()
}

/// Check and scan what the caller says, before anything else runs: a
/// credential must never reach a message, a fetch or an object. Returns the
/// parsed `--verified` claims.
pub fn scan_said(input: &HandoffInput) -> Result<Vec<Verified>> {
    let verified = parse_verified(&input.verified)?;
    let said = serde_json::json!({
        "reason": input.reason,
        "plan": input.plan,
        "task": input.task,
        "step": input.step,
        "done": input.done,
        "verified": verified,
        "unverified": input.unverified,
        "next": input.next,
        "requests": input.requests,
        "decisions": input.decisions,
    });
    let value = serde_yaml_ng::to_value(&said)
        .map_err(|e| Error::new(Code::Internal, format!("could not serialise a packet: {e}")))?;
    let mut findings = secret::scan(&value);
    // `--verified CLAIM=EVIDENCE` is judged whole too: split at its `=`, a
    // password assignment would pass as the claim "password" and the rest.
    for (i, raw) in input.verified.iter().enumerate() {
        let field = format!("verified[{i}]");
        let prefix = format!("{field}.");
        if !findings.iter().any(|f| f.field.starts_with(&prefix)) {
            findings.extend(secret::scan_fields(&[(field.as_str(), raw.as_str())]));
        }
    }
    refuse_findings(findings)?;
    crate::text::check_value("the packet", &value, &[])?;
    check_reason(&input.reason)?;
    Ok(verified)
}

/// `--reason` is one of [`REASONS`].
pub fn check_reason(reason: &str) -> Result<()> {
    if REASONS.contains(&reason) {
        Ok(())
    } else {
        Err(Error::new(
            Code::Usage,
            format!("--reason must be one of {}", REASONS.join(", ")),
        )
        .hint("the reason is why the work moves, from that fixed list (e.g. `--reason capacity_low` when you stop before your limit); say the rest in --next"))
    }
}

impl Packet {
    /// The packet the caller's words and the derived facts make, without an
    /// id or a time yet (given when it is published); refused when anything
    /// derived looks like a credential (a path or a URL can carry one).
    pub fn build(input: &HandoffInput, verified: Vec<Verified>, d: Derived) -> Result<Packet> {
        let packet = Packet {
            schema: SCHEMA.into(),
            id: String::new(),
            plan: d.plan,
            contract: d.contract,
            author: d.author,
            created_at: String::new(),
            reason: input.reason.clone(),
            task: input.task.clone().or(d.task),
            step: input.step.clone(),
            repo: d.repo,
            checkout: d.checkout,
            branch: d.branch,
            head: d.head,
            pushed: d.pushed,
            uncommitted: d.uncommitted,
            uncommitted_content: d.uncommitted_content,
            export: d.export,
            lane: d.lane,
            snapshot: None,
            claim: d.claim,
            reservations: d.reservations,
            leader: d.leader,
            epoch: d.epoch,
            done: input.done.clone(),
            verified,
            unverified: input.unverified.clone(),
            next: input.next.clone(),
            requests: input.requests.clone(),
            decisions: input.decisions.clone(),
            extra: Extra::new(),
        };
        // `uncommitted_content` repeats the `uncommitted` paths as its keys,
        // with blob ids: scanned once, as `uncommitted`, so a finding names
        // that field.
        let mut probe = packet.clone();
        probe.uncommitted_content.clear();
        scan(&probe)?;
        Ok(packet)
    }
}

/// Strip credentials from a remote URL: all user info of http(s) URLs, the
/// password of any other.
pub fn clean_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let scheme_l = scheme.to_ascii_lowercase();
    if scheme_l == "http" || scheme_l == "https" {
        return format!("{scheme}://{host}{path}");
    }
    let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
    format!("{scheme}://{user}@{host}{path}")
}

/// Compare two packets ignoring their identity (id and time).
pub fn same_content(a: &Packet, b: &Packet) -> bool {
    let mut a = a.clone();
    a.id = b.id.clone();
    a.created_at = b.created_at.clone();
    a == *b
}

#[cfg(test)]
mod tests {
    use super::clean_url;

    #[test]
    fn remote_urls_lose_their_credentials() {
        assert_eq!(
            clean_url("https://x-access-token:ghs_abc@github.com/o/r.git"),
            "https://github.com/o/r.git"
        );
        assert_eq!(
            clean_url("https://ghp_token@github.com/o/r"),
            "https://github.com/o/r"
        );
        assert_eq!(
            clean_url("ssh://git:secret@example.com/r.git"),
            "ssh://git@example.com/r.git"
        );
        assert_eq!(
            clean_url("ssh://git@example.com/r.git"),
            "ssh://git@example.com/r.git"
        );
        assert_eq!(
            clean_url("git@github.com:o/r.git"),
            "git@github.com:o/r.git"
        );
        assert_eq!(clean_url("/srv/remote.git"), "/srv/remote.git");
        // A user and a token (or password) in any http(s) URL: both go.
        assert_eq!(
            clean_url("https://user:token@host.example/o/r.git"),
            "https://host.example/o/r.git"
        );
        assert_eq!(
            clean_url("HTTP://user:token@host.example:8080"),
            "HTTP://host.example:8080"
        );
        // ssh: the user is part of the address and stays; the password goes.
        assert_eq!(
            clean_url("ssh://user:pw@host.example:2222/srv/r.git"),
            "ssh://user@host.example:2222/srv/r.git"
        );
        // An '@' in the path is not user info.
        assert_eq!(
            clean_url("https://host.example/o/r@v2.git"),
            "https://host.example/o/r@v2.git"
        );
    }
}
