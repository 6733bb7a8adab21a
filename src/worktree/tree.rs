//! A snapshot's trees read as git stores them, not as `git ls-tree` shows
//! them (which turns `100600` into `100644` and `120755` into `120000`):
//! the raw tree objects, compared with the head's, into the changes a
//! restore would make. Pure: the caller reads the objects.

use std::collections::BTreeMap;

/// One changed path: what the base (the head) and the new tree hold there,
/// as (raw mode, object id); None where the path is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub path: String,
    pub old: Option<(String, String)>,
    pub new: Option<(String, String)>,
}

/// One entry of a raw tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub mode: String,
    pub name: Vec<u8>,
    pub id: String,
}

impl RawEntry {
    pub fn is_tree(&self) -> bool {
        matches!(self.mode.as_str(), "40000" | "040000")
    }
}

/// The entries of a tree object (`<mode> <name>\0<id bytes>` repeated).
pub fn parse(bytes: &[u8], hash_len: usize) -> Option<Vec<RawEntry>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let sp = rest.iter().position(|b| *b == b' ')?;
        let mode = std::str::from_utf8(&rest[..sp]).ok()?.to_string();
        rest = &rest[sp + 1..];
        let nul = rest.iter().position(|b| *b == 0)?;
        let name = rest[..nul].to_vec();
        rest = &rest[nul + 1..];
        if rest.len() < hash_len {
            return None;
        }
        let id: String = rest[..hash_len]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        rest = &rest[hash_len..];
        out.push(RawEntry { mode, name, id });
    }
    Some(out)
}

/// What a walk found wrong with a tree (the path, why).
pub type Bad = Vec<(String, &'static str)>;

/// The leaves that differ between tree `old` and tree `new` (either None
/// for an empty tree), under `prefix`; `read` returns a tree's entries.
/// Subtrees with the same id are not read. A name that is not UTF-8 or is
/// in one tree twice goes to `bad`.
pub fn diff<E>(
    read: &mut dyn FnMut(&str) -> Result<Vec<RawEntry>, E>,
    old: Option<&str>,
    new: Option<&str>,
    prefix: &str,
    out: &mut Vec<Changed>,
    bad: &mut Bad,
) -> Result<(), E> {
    if old == new {
        return Ok(());
    }
    let mut side = |id: Option<&str>, bad: &mut Bad| -> Result<BTreeMap<String, RawEntry>, E> {
        let mut map = BTreeMap::new();
        let Some(id) = id else { return Ok(map) };
        for e in read(id)? {
            let Ok(name) = String::from_utf8(e.name.clone()) else {
                bad.push((
                    format!("{prefix}{}", String::from_utf8_lossy(&e.name)),
                    "a name that is not UTF-8",
                ));
                continue;
            };
            if map.insert(name.clone(), e).is_some() {
                bad.push((format!("{prefix}{name}"), "the path is in the tree twice"));
            }
        }
        Ok(map)
    };
    let a = side(old, bad)?;
    let b = side(new, bad)?;
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let path = format!("{prefix}{name}");
        let (x, y) = (a.get(name), b.get(name));
        if let (Some(x), Some(y)) = (x, y) {
            if x.mode == y.mode && x.id == y.id {
                continue;
            }
        }
        let sub = format!("{path}/");
        let tree = |e: Option<&RawEntry>| e.filter(|e| e.is_tree()).map(|e| e.id.clone());
        let leaf = |e: Option<&RawEntry>| {
            e.filter(|e| !e.is_tree())
                .map(|e| (e.mode.clone(), e.id.clone()))
        };
        diff(read, tree(x).as_deref(), tree(y).as_deref(), &sub, out, bad)?;
        let (lx, ly) = (leaf(x), leaf(y));
        if lx.is_some() || ly.is_some() {
            out.push(Changed {
                path,
                old: lx,
                new: ly,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(entries: &[(&str, &str, u8)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (mode, name, id) in entries {
            out.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            out.extend_from_slice(&[*id; 20]);
        }
        out
    }

    #[test]
    fn raw_modes_are_kept_and_only_differing_subtrees_are_read() {
        let trees: BTreeMap<String, Vec<u8>> = [
            (
                "01".repeat(20),
                raw(&[("100644", "a", 1), ("40000", "d", 2)]),
            ),
            ("02".repeat(20), raw(&[("100644", "x", 3)])),
            (
                "09".repeat(20),
                raw(&[("100600", "a", 1), ("40000", "d", 2), ("120755", "l", 4)]),
            ),
        ]
        .into_iter()
        .collect();
        let mut reads = Vec::new();
        let mut read = |id: &str| -> Result<Vec<RawEntry>, ()> {
            reads.push(id.to_string());
            Ok(parse(&trees[id], 20).unwrap())
        };
        let (mut out, mut bad) = (Vec::new(), Vec::new());
        diff(
            &mut read,
            Some(&"01".repeat(20)),
            Some(&"09".repeat(20)),
            "",
            &mut out,
            &mut bad,
        )
        .unwrap();
        assert!(bad.is_empty());
        assert_eq!(reads.len(), 2, "d is the same tree: not read");
        let got: Vec<(&str, Option<&str>)> = out
            .iter()
            .map(|c| (c.path.as_str(), c.new.as_ref().map(|n| n.0.as_str())))
            .collect();
        assert_eq!(got, [("a", Some("100600")), ("l", Some("120755"))]);
    }

    #[test]
    fn a_directory_replaced_by_a_file_is_deletions_and_a_write() {
        let trees: BTreeMap<String, Vec<u8>> = [
            ("01".repeat(20), raw(&[("40000", "d", 2)])),
            (
                "02".repeat(20),
                raw(&[("100644", "x", 3), ("100644", "y", 3)]),
            ),
            (
                "09".repeat(20),
                raw(&[("100644", "d", 5), ("100644", "d", 6)]),
            ),
        ]
        .into_iter()
        .collect();
        let mut read =
            |id: &str| -> Result<Vec<RawEntry>, ()> { Ok(parse(&trees[id], 20).unwrap()) };
        let (mut out, mut bad) = (Vec::new(), Vec::new());
        diff(
            &mut read,
            Some(&"01".repeat(20)),
            Some(&"09".repeat(20)),
            "",
            &mut out,
            &mut bad,
        )
        .unwrap();
        let paths: Vec<(&str, bool)> = out
            .iter()
            .map(|c| (c.path.as_str(), c.new.is_some()))
            .collect();
        assert_eq!(paths, [("d/x", false), ("d/y", false), ("d", true)]);
        assert_eq!(bad, [("d".to_string(), "the path is in the tree twice")]);
        assert!(parse(b"100644 a\0short", 20).is_none());
    }
}
