//! Names for shell completion: plans, lanes and packets as this repository
//! knows them (its own refs and the remote's mirror), read from ref names
//! only, so a <TAB> stays fast on thousands of records.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Plans,
    Lanes,
    Packets,
}

/// The names of `kind` starting with `prefix`, sorted, each once.
pub fn names(store: &Store, remote: Option<&str>, kind: Kind, prefix: &str) -> Result<Vec<String>> {
    let ns = match kind {
        Kind::Plans => crate::records::plan::PREFIX,
        Kind::Lanes => crate::records::lane::PREFIX,
        Kind::Packets => crate::records::packet::PREFIX,
    };
    let mut prefixes = vec![ns.to_string()];
    if let Some(r) = remote {
        prefixes.push(crate::store::mirror::mirror_ref(r, ns));
    }
    let mut out = BTreeSet::new();
    for p in &prefixes {
        for (name, _) in store.list_refs(p)? {
            let rest = name.trim_start_matches(p.as_str());
            // Packets are `<plan>/<id>`: complete the id, which `accept` takes.
            let item = match kind {
                Kind::Packets => rest.rsplit('/').next().unwrap_or(rest),
                _ => rest,
            };
            if item.starts_with(prefix) && !item.is_empty() {
                out.insert(item.to_string());
            }
        }
    }
    Ok(out.into_iter().collect())
}
