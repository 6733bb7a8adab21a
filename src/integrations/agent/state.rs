//! What the hooks remember between calls, local to the clone (never
//! pushed), under `<git common dir>/swarm/agent/`:
//! - `shown/<reader>`: the ids of messages a hook has shown this agent
//!   (one a line), so a prompt shows each once; separate from the inbox
//!   cursor, so `inbox` still lists them;
//! - `sessions/<session id>`: how often the stop hook blocked and woke
//!   this session (`blocks wakes`), so it never nags forever.
//!
//! A missing or damaged file reads as empty; one that cannot be written is
//! not an error (the worst case is a message shown twice).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::store::Store;

fn dir(store: &Store) -> PathBuf {
    store.common_dir().join("swarm").join("agent")
}

/// A file name from an id the host chose (any text): safe characters only.
fn safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

fn write(path: &PathBuf, text: &str) {
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// The messages already shown to `reader` by a hook.
pub struct Shown {
    path: PathBuf,
    pub ids: BTreeSet<String>,
}

impl Shown {
    pub fn load(store: &Store, reader: &str) -> Shown {
        let path = dir(store).join("shown").join(safe(reader));
        let ids = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        Shown { path, ids }
    }

    pub fn add<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        let before = self.ids.len();
        self.ids.extend(ids.into_iter().map(str::to_string));
        if self.ids.len() != before {
            let text: String = self.ids.iter().map(|i| format!("{i}\n")).collect();
            write(&self.path, &text);
        }
    }
}

/// One session's stop-hook counters.
pub struct Session {
    path: PathBuf,
    pub blocks: u32,
    pub wakes: u32,
}

impl Session {
    pub fn load(store: &Store, id: Option<&str>) -> Session {
        let path = dir(store)
            .join("sessions")
            .join(safe(id.unwrap_or("no-session")));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut n = text.split_whitespace().map(|w| w.parse().unwrap_or(0));
        Session {
            path,
            blocks: n.next().unwrap_or(0),
            wakes: n.next().unwrap_or(0),
        }
    }

    pub fn save(&self) {
        write(&self.path, &format!("{} {}\n", self.blocks, self.wakes));
    }
}

#[cfg(test)]
mod tests {
    use super::safe;

    #[test]
    fn session_ids_become_safe_names() {
        assert_eq!(safe("abc-123"), "abc-123");
        assert_eq!(safe("../../etc/passwd"), "_.._.._etc_passwd");
        assert_eq!(safe(""), "_");
        assert_eq!(safe(".hidden"), "_.hidden");
    }
}
