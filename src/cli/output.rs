//! What a command produces: a JSON document (stable field names) and the
//! human text, plus the exit code when the command ran but its verdict does
//! not hold (exit 1 without an error, e.g. `lead check`, `verify`). Only the
//! CLI renders: the library returns outcome structs and errors.

use serde::Serialize;

use git_swarm::clock::ago;
use git_swarm::store::remote::MirrorView;
use git_swarm::store::yaml::Unreadable;
pub use git_swarm::text::count;

#[derive(Debug, Clone)]
pub struct Output {
    pub json: serde_json::Value,
    pub text: String,
    pub exit: u8,
    /// Printed on stderr as `warning: …` (in JSON mode too): things the user
    /// should know that did not stop the command.
    pub warnings: Vec<String>,
    /// Under the push budget, the queue is left to its window: what the
    /// command wrote is queued (said by `budget::Session::queued_after`), or
    /// it pushed nothing of its own (a `renew --due` with nothing due), so
    /// the publish rule does not push the queue after it.
    pub leaves_queue: bool,
}

impl Output {
    /// The output of a listing: as [`Output::new`], except that when the
    /// JSON document is not `wanted` (a text run, `Global::json` false) it
    /// is left an empty object, so that a listing of 10,000 rows nobody
    /// reads is not built.
    pub fn listing(wanted: bool, json: impl Serialize, text: impl Into<String>) -> Self {
        if wanted {
            return Output::new(json, text);
        }
        Output::new(serde_json::Value::Object(Default::default()), text)
    }

    pub fn new(json: impl Serialize, text: impl Into<String>) -> Self {
        Output {
            json: serde_json::to_value(json).expect("output structs always serialise"),
            text: text.into(),
            exit: 0,
            warnings: Vec::new(),
            leaves_queue: false,
        }
    }
    pub fn warn(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
    pub fn with_exit(mut self, exit: u8) -> Self {
        self.exit = exit;
        self
    }
}

/// Add the unreadable records to a listing's output: a warning each on
/// stderr, an `unreadable` array in the JSON (always present, maybe empty),
/// and a line each in the text ([`unreadable_row`]). The exit code stays 0.
pub fn report_unreadable(mut out: Output, unreadable: &[Unreadable]) -> Output {
    if let Some(map) = out.json.as_object_mut() {
        map.insert(
            "unreadable".into(),
            serde_json::to_value(unreadable).unwrap_or_default(),
        );
    }
    for u in unreadable {
        out.text.push_str(&unreadable_row(u));
        out.warnings.push(unreadable_warning(u));
    }
    out
}

/// The `warning:` line a listing prints on stderr for an unreadable record.
pub fn unreadable_warning(u: &Unreadable) -> String {
    if u.code == git_swarm::error::Code::RecordUntrusted {
        return format!(
            "skipped untrusted {} '{}' ({}): {}",
            u.kind, u.name, u.refname, u.reason
        );
    }
    format!(
        "skipped unreadable {} '{}' ({}): [{}] {}",
        u.kind, u.name, u.refname, u.code, u.reason
    )
}

/// The line a listing's text shows for an unreadable record.
pub fn unreadable_row(u: &Unreadable) -> String {
    if u.code == git_swarm::error::Code::RecordUntrusted {
        return format!("{:<24} UNTRUSTED {} ({})\n", u.name, u.refname, u.reason);
    }
    format!("{:<24} UNREADABLE {} ({})\n", u.name, u.refname, u.code)
}

/// "mirror of origin: fetched 5m ago (…)", and a pointer to `sync`
/// when the mirror has what the local refs lack.
pub fn mirror_text(m: &MirrorView, now: jiff::Timestamp) -> String {
    let age = match m
        .fetched_at
        .as_deref()
        .map(|t| (t, t.parse::<jiff::Timestamp>()))
    {
        Some((t, Ok(at))) => format!("fetched {} ago ({t})", ago(now, at)),
        Some((t, Err(_))) => format!("fetched at {t}"),
        None => "never fetched by `git swarm sync`".to_string(),
    };
    let mut out = format!(
        "shown: local records plus the mirror of {} ({age})\n",
        m.remote
    );
    if !m.ahead.is_empty() && !m.announced {
        let n = m.ahead.len();
        let shown: Vec<&str> = m.ahead.iter().take(3).map(String::as_str).collect();
        out.push_str(&format!(
            "the mirror has {n} record{} your local refs lack ({}{}): `git swarm sync` brings {} in\n",
            if n == 1 { "" } else { "s" },
            shown.join(", "),
            if n > 3 { ", …" } else { "" },
            if n == 1 { "it" } else { "them" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_agree_in_number() {
        assert_eq!(super::count(1, "lane", "lanes"), "1 lane");
        assert_eq!(super::count(2, "lane", "lanes"), "2 lanes");
        assert_eq!(super::count(0, "ref", "refs"), "0 refs");
    }
}
