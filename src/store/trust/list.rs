//! The trust list (`.swarm/allowed_signers` on the base branch) as read
//! once per process, and why a check has none to go by.

use std::path::PathBuf;

use gix::ObjectId;

use super::LIST_PATH;
use crate::store::Store;

/// The trust list as read once per process.
pub(super) struct List {
    /// Its blob id; None when the base has no trust list.
    pub(super) blob: Option<ObjectId>,
    /// Where it came from, for messages (`refs/remotes/origin/main`).
    pub(super) source: String,
    /// A copy on disk for ssh-keygen.
    pub(super) file: Option<PathBuf>,
    /// The path a list committed as a symlink names (not followed).
    symlink: Option<String>,
}

impl List {
    /// Why a signature cannot be checked: there is no list on the base
    /// (or it is a symlink, which is not followed).
    pub(super) fn missing(&self) -> String {
        match &self.symlink {
            Some(to) => format!(
                "{LIST_PATH} on {} is a symlink (to {to}), which is not followed: the list is read from the base branch's tree, where a symlink holds only its target's path; commit the file itself there",
                self.source
            ),
            None => format!(
                "no {LIST_PATH} on {} to check the signature against",
                self.source
            ),
        }
    }
}

impl Store {
    pub(super) fn trust_list(&self) -> &List {
        self.trust.list.get_or_init(|| {
            let base = self.trust.base.lock().ok().and_then(|b| b.clone());
            let source = base
                .clone()
                .unwrap_or_else(|| "(no base branch)".to_string());
            let (blob, symlink) = match base.and_then(|b| self.list_entry(&b)) {
                Some((id, false)) => (Some(id), None),
                Some((id, true)) => {
                    let target = self
                        .repo
                        .find_object(id)
                        .ok()
                        .map(|o| String::from_utf8_lossy(&o.data).into_owned());
                    (None, target)
                }
                None => (None, None),
            };
            let file = blob.and_then(|id| {
                let data = self.repo.find_object(id).ok()?.data.clone();
                let odd = unknown_options(&data);
                if !odd.is_empty() {
                    self.run.trust.warn(id, odd_lines(&source, &odd));
                }
                let path = self.trust.dir.join(format!("{id}.allowed_signers"));
                if !path.exists() {
                    std::fs::create_dir_all(&self.trust.dir).ok()?;
                    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
                    std::fs::write(&tmp, &data).ok()?;
                    std::fs::rename(&tmp, &path).ok()?;
                }
                Some(path)
            });
            List {
                blob,
                source,
                file,
                symlink,
            }
        })
    }

    /// The blob of the trust list at the tip of `refname`, and whether it
    /// is a symlink's (whose blob is the path it names).
    fn list_entry(&self, refname: &str) -> Option<(ObjectId, bool)> {
        let tip = self.ref_target(refname).ok()??;
        let tree = self.repo.find_commit(tip).ok()?.tree().ok()?;
        let entry = tree.lookup_entry_by_path(LIST_PATH).ok()??;
        let mode = entry.mode();
        (mode.is_blob() || mode.is_link()).then(|| (entry.object_id(), mode.is_link()))
    }
}

/// The options of `ssh-keygen`'s allowed-signers format.
const KNOWN_OPTIONS: &[&str] = &[
    "cert-authority",
    "namespaces",
    "valid-after",
    "valid-before",
];

/// Lines (1-based) of a trust list whose options field names an option
/// `ssh-keygen` does not know: it skips such a line, so that key signs for
/// nobody, without a word.
fn unknown_options(data: &[u8]) -> Vec<(usize, String)> {
    let text = String::from_utf8_lossy(data);
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (_, rest) = field(line);
        let rest = rest.trim_start();
        let key_first = ["ssh-", "ecdsa-", "sk-"]
            .iter()
            .any(|k| rest.starts_with(k));
        if rest.is_empty() || key_first {
            continue;
        }
        let (options, _) = field(rest);
        for option in split_unquoted(options, ',') {
            let name = option.split('=').next().unwrap_or_default().trim();
            if !KNOWN_OPTIONS.iter().any(|k| k.eq_ignore_ascii_case(name)) {
                found.push((i + 1, name.to_string()));
            }
        }
    }
    found
}

/// The first whitespace-separated field of `s` (quotes keep spaces in),
/// and the rest.
fn field(s: &str) -> (&str, &str) {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return (&s[..i], &s[i..]),
            _ => {}
        }
    }
    (s, "")
}

/// `s` split at `sep` outside double quotes.
fn split_unquoted(s: &str, sep: char) -> Vec<&str> {
    let (mut parts, mut quoted, mut start) = (Vec::new(), false, 0);
    for (i, c) in s.char_indices() {
        if c == '"' {
            quoted = !quoted;
        } else if c == sep && !quoted {
            parts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

fn odd_lines(source: &str, odd: &[(usize, String)]) -> String {
    let named: Vec<String> = odd
        .iter()
        .take(5)
        .map(|(line, name)| format!("line {line}: '{name}'"))
        .collect();
    let more = odd.len().saturating_sub(5);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(
        "{LIST_PATH} on {source} names options ssh-keygen does not know ({}{more}): it skips those lines, so their keys sign for nobody; the options it knows are {}",
        named.join(", "),
        KNOWN_OPTIONS.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::unknown_options;

    #[test]
    fn only_options_ssh_keygen_does_not_know_are_named() {
        let list = b"# comment\n\
alice ssh-ed25519 AAAA one\n\
bob namespaces=\"git,file\",valid-after=\"20260101\" ssh-ed25519 AAAA two\n\
\"carol,dave\" frobnicate=\"1\",cert-authority ssh-ed25519 AAAA three\n\
eve Valid-Before=\"20300101\",no-such sk-ssh-ed25519@openssh.com AAAA four\n";
        assert_eq!(
            unknown_options(list),
            vec![(4, "frobnicate".to_string()), (5, "no-such".to_string())]
        );
    }
}
