//! Judging a packet against the facts a successor's checkout re-derived:
//! the list of mismatches, and the error that explains them. Reading the
//! facts (git, the working tree) is the accept operation's; the verdict is
//! pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Packet;
use crate::error::{Code, Error};

/// One fact that does not match the packet.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    pub field: String,
    pub expected: serde_json::Value,
    pub actual: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl Mismatch {
    fn plain(field: &str, expected: serde_json::Value, actual: serde_json::Value) -> Mismatch {
        Mismatch {
            field: field.into(),
            expected,
            actual,
            diff: None,
        }
    }
}

/// What a successor's checkout says about the facts a packet states.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The contract of the newest version of the packet's plan known here;
    /// None when the plan is not found here.
    pub contract: Option<String>,
    pub branch: Option<String>,
    pub head: Option<String>,
    /// Uncommitted paths, in any order (the packet's export file included
    /// or not: it is never part of the work).
    pub dirty: Vec<String>,
}

/// `- `/`+ `/`  ` lines of the expected list against the actual one.
pub fn list_diff(expected: &[String], actual: &[String]) -> String {
    use similar::{ChangeTag, TextDiff};
    let e: Vec<&str> = expected.iter().map(String::as_str).collect();
    let a: Vec<&str> = actual.iter().map(String::as_str).collect();
    let diff = TextDiff::configure().diff_slices(&e, &a);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => "- ",
            ChangeTag::Insert => "+ ",
            ChangeTag::Equal => "  ",
        };
        out.push_str(sign);
        out.push_str(change.value());
        out.push('\n');
    }
    out
}

/// Every fact of `facts` that does not match the packet, in the order
/// plan/contract, branch, head, uncommitted. The content of the
/// uncommitted paths is judged apart ([`content_mismatch`]), and only when
/// the paths match.
pub fn mismatches(packet: &Packet, facts: &Facts) -> Vec<Mismatch> {
    use serde_json::json;
    let mut out = Vec::new();
    match &facts.contract {
        None => out.push(Mismatch::plain(
            "plan",
            json!(format!("plan {} exists", packet.plan)),
            json!("not found here"),
        )),
        Some(c) if *c != packet.contract => out.push(Mismatch::plain(
            "contract",
            json!(packet.contract),
            json!(c),
        )),
        Some(_) => {}
    }
    if facts.branch != packet.branch {
        out.push(Mismatch::plain(
            "branch",
            json!(packet.branch),
            json!(facts.branch),
        ));
    }
    if facts.head.as_deref() != Some(packet.head.as_str()) {
        out.push(Mismatch::plain(
            "head",
            json!(packet.head),
            json!(facts.head),
        ));
    }
    let mut dirty = facts.dirty.clone();
    // The packet's own export file is not part of the work.
    dirty.retain(|p| Some(p) != packet.export.as_ref());
    dirty.sort();
    let mut want = packet.uncommitted.clone();
    want.sort();
    if dirty != want {
        out.push(Mismatch {
            field: "uncommitted".into(),
            diff: Some(list_diff(&want, &dirty)),
            expected: json!(want),
            actual: json!(dirty),
        });
    }
    out
}

/// Paths whose content differs from what the packet recorded, as
/// `path blob` lines (expected, actual); None when every path matches.
pub fn content_mismatch(
    recorded: &BTreeMap<String, String>,
    actual: &BTreeMap<String, String>,
) -> Option<Mismatch> {
    let differ: Vec<&String> = recorded
        .keys()
        .filter(|p| actual.get(*p) != recorded.get(*p))
        .collect();
    if differ.is_empty() {
        return None;
    }
    let line = |map: &BTreeMap<String, String>, p: &String| {
        format!("{p} {}", map.get(p).map(String::as_str).unwrap_or("?"))
    };
    let want: Vec<String> = differ.iter().map(|p| line(recorded, p)).collect();
    let got: Vec<String> = differ.iter().map(|p| line(actual, p)).collect();
    Some(Mismatch {
        field: "uncommitted_content".into(),
        diff: Some(list_diff(&want, &got)),
        expected: serde_json::json!(want),
        actual: serde_json::json!(got),
    })
}

fn show_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "(none)".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn mismatch_message(packet: &Packet, mismatches: &[Mismatch]) -> String {
    let mut msg = format!(
        "packet {} does not match this checkout ({} mismatch{}); nothing was recorded",
        packet.id,
        mismatches.len(),
        if mismatches.len() == 1 { "" } else { "es" }
    );
    for m in mismatches {
        match &m.diff {
            Some(d) => {
                msg.push_str(&format!(
                    "\n  {}: the packet's list (-) vs this checkout's (+):",
                    m.field
                ));
                for line in d.lines() {
                    msg.push_str(&format!("\n    {line}"));
                }
            }
            None => msg.push_str(&format!(
                "\n  {}: expected {}, found {}",
                m.field,
                show_value(&m.expected),
                show_value(&m.actual)
            )),
        }
    }
    msg
}

/// `PACKET_MISMATCH`, with a hint for each kind of mismatch.
pub fn mismatch_error(packet: &Packet, mismatches: &[Mismatch]) -> Error {
    let has = |field: &str| mismatches.iter().any(|m| m.field == field);
    let mut err = Error::new(Code::PacketMismatch, mismatch_message(packet, mismatches));
    if has("branch") || has("head") {
        let target = packet.branch.as_deref().unwrap_or(&packet.head);
        err = err.hint(format!(
            "check out the work first: git fetch && git switch {target} (at {})",
            &packet.head[..12.min(packet.head.len())]
        ));
    }
    if has("uncommitted") {
        err = err.hint("the uncommitted paths must be the packet's: bring the same working-tree changes over (or ask the author to commit and push them)");
    }
    if has("uncommitted_content") {
        err = err.hint("the same paths hold other content than the packet's (blob ids shown): bring the author's exact working-tree changes over (or ask them to commit and push them)");
    }
    if has("plan") {
        err = err.hint("fetch the plan with `git swarm sync`");
    }
    if has("contract") {
        err = err.hint(format!(
            "the plan's contract changed after the packet was written: read the plan (`git swarm plan show {}`), then ask {} for a new handoff against it",
            packet.plan, packet.author
        ));
    }
    if !packet.pushed && (has("branch") || has("head")) {
        err = err.hint(format!("the packet says its head was not pushed: {} must push it before anyone elsewhere can take it over", packet.author));
    }
    err.with_detail(serde_json::json!({ "packet": packet.id, "mismatches": mismatches }))
}
