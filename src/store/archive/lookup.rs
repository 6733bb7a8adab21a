//! Where the archive keeps a record (below the remote, which must find an
//! archived tip before it publishes one): one archive ref per kind whose
//! tree maps each archived record's flat name to its tip.

use std::collections::BTreeMap;

use gix::ObjectId;

use crate::error::Result;
use crate::store::Store;

pub const ARCHIVE_PREFIX: &str = "refs/swarm/archive/";

pub fn archive_ref(kind: &str) -> String {
    format!("{ARCHIVE_PREFIX}{kind}")
}

/// `refs/swarm/packets/p/id` -> ("packets", "p:id"): flat tree entry names.
pub fn split(refname: &str) -> Option<(&str, String)> {
    let rest = refname.strip_prefix("refs/swarm/")?;
    let (kind, name) = rest.split_once('/')?;
    if kind == "archive" {
        return None;
    }
    Some((kind, name.replace('/', ":")))
}

/// The archived tip of a record, if the archive of its kind has it.
pub fn archived_tip(store: &Store, refname: &str) -> Result<Option<ObjectId>> {
    let Some((kind, entry)) = split(refname) else {
        return Ok(None);
    };
    let Some(tip) = store.ref_target(&archive_ref(kind))? else {
        return Ok(None);
    };
    Ok(store
        .blob_at(tip, &entry)?
        .and_then(|b| ObjectId::from_hex(String::from_utf8_lossy(&b).trim().as_bytes()).ok()))
}

/// A record's tip: the live ref, else the archived one.
pub fn find_record(store: &Store, refname: &str) -> Result<Option<ObjectId>> {
    match store.ref_target(refname)? {
        Some(id) => Ok(Some(id)),
        None => archived_tip(store, refname),
    }
}

/// Every archived record of a kind: ref name -> tip.
pub fn archived(store: &Store, kind: &str) -> Result<BTreeMap<String, ObjectId>> {
    let Some(tip) = store.ref_target(&archive_ref(kind))? else {
        return Ok(BTreeMap::new());
    };
    entries_at(store, kind, tip)
}

/// The archive index at commit `tip` of the archive of `kind`.
pub fn entries_at(store: &Store, kind: &str, tip: ObjectId) -> Result<BTreeMap<String, ObjectId>> {
    let rec = store.read_commit(tip)?;
    let mut out = BTreeMap::new();
    for (name, data) in rec.files {
        if let Ok(id) = ObjectId::from_hex(String::from_utf8_lossy(&data).trim().as_bytes()) {
            out.insert(format!("refs/swarm/{kind}/{}", name.replace(':', "/")), id);
        }
    }
    Ok(out)
}
