//! The joins of two versions that both moved: journals merged per file and
//! per top-level YAML key, notes as a union of lines.

use super::*;

/// A merge commit with parents [local, remote]: per file, the side that
/// changed since the merge base; per top-level YAML key likewise; where both
/// changed the same thing, the published (remote) value wins and the local
/// one stays reachable in the journal.
pub(super) fn merge_journals(
    store: &Store,
    name: &str,
    base: ObjectId,
    l: ObjectId,
    r: ObjectId,
    actor: &str,
    warnings: &mut Vec<String>,
) -> Result<ObjectId> {
    let b = store.read_commit(base)?.files;
    let lf = store.read_commit(l)?.files;
    let rf = store.read_commit(r)?.files;
    let mut files = BTreeMap::new();
    let keys: BTreeSet<&String> = b.keys().chain(lf.keys()).chain(rf.keys()).collect();
    for key in keys {
        let (bv, lv, rv) = (b.get(key), lf.get(key), rf.get(key));
        let chosen = if lv == rv || lv == bv {
            rv
        } else if rv == bv {
            lv
        } else if key.ends_with(".yaml") {
            match merge_yaml(bv, lv, rv) {
                Some(merged) => {
                    files.insert(key.clone(), merged);
                    continue;
                }
                None => {
                    warnings.push(format!(
                        "{name}:{key} changed on both sides; kept the published version, yours is at {}:{key}",
                        short(l)
                    ));
                    rv
                }
            }
        } else {
            // Text (the plan): a line-level three-way merge, as git would do;
            // only edits that overlap fall back to the published version.
            let empty = Vec::new();
            match (lv, rv) {
                (Some(lt), Some(rt)) => match store.git.merge_text(bv.unwrap_or(&empty), lt, rt)? {
                    Some(merged) => {
                        files.insert(key.clone(), merged);
                        continue;
                    }
                    None => {
                        warnings.push(format!(
                            "{name}:{key}: both sides edited the same lines; kept the published version, yours is at {}:{key}",
                            short(l)
                        ));
                        rv
                    }
                },
                _ => {
                    warnings.push(format!(
                        "{name}:{key} was removed on one side and changed on the other; kept the published state, yours is at {}:{key}",
                        short(l)
                    ));
                    rv
                }
            }
        };
        if let Some(v) = chosen {
            files.insert(key.clone(), v.clone());
        }
    }
    let tree = store.write_tree(&files)?;
    let event = Event::new("merge", actor, format!("sync: join journals of {name}"));
    store.commit(tree, &[l, r], &event)
}

/// Three-way merge of top-level YAML mapping keys; None if unparseable.
pub(super) fn merge_yaml(
    b: Option<&Vec<u8>>,
    l: Option<&Vec<u8>>,
    r: Option<&Vec<u8>>,
) -> Option<Vec<u8>> {
    use serde_yaml_ng::{Mapping, Value};
    let parse = |v: Option<&Vec<u8>>| -> Option<Mapping> {
        match v {
            None => Some(Mapping::new()),
            Some(bytes) => {
                // Never hand the YAML parser a record too large or deep to read.
                crate::store::yaml::precheck(bytes, "record").ok()?;
                match serde_yaml_ng::from_slice::<Value>(bytes).ok()? {
                    Value::Mapping(m) => Some(m),
                    _ => None,
                }
            }
        }
    };
    let (bm, lm, rm) = (parse(b)?, parse(l)?, parse(r)?);
    let mut out = rm.clone();
    for (k, lv) in &lm {
        let bv = bm.get(k);
        let rv = rm.get(k);
        if Some(lv) != bv && rv == bv {
            out.insert(k.clone(), lv.clone());
        }
    }
    for k in bm.keys() {
        // Removed locally, untouched remotely.
        if !lm.contains_key(k) && rm.get(k) == bm.get(k) {
            out.remove(k);
        }
    }
    serde_yaml_ng::to_string(&Value::Mapping(out))
        .ok()
        .map(String::into_bytes)
}

/// Union of note lines per annotated object.
pub(super) fn merge_notes(
    store: &Store,
    l: ObjectId,
    r: ObjectId,
    actor: &str,
) -> Result<ObjectId> {
    let mut all: BTreeMap<ObjectId, Vec<String>> = BTreeMap::new();
    for (target, lines) in store.all_notes(r)?.into_iter().chain(store.all_notes(l)?) {
        let entry = all.entry(target).or_default();
        for line in lines {
            if !entry.contains(&line) {
                entry.push(line);
            }
        }
    }
    let base_tree = store.commit_tree(r)?;
    let notes: Vec<(ObjectId, Vec<String>)> = all.into_iter().collect();
    let tree = store.notes_tree_with(base_tree, &notes)?;
    let event = Event::new("merge", actor, "sync: union of swarm notes");
    store.commit(tree, &[l, r], &event)
}
