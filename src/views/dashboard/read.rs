//! Reading every record of a kind for the dashboard: each at the newer of
//! its local and mirrored version (through the record cache), unreadable
//! ones named, and which local records the remote does not have yet.

use std::collections::BTreeMap;

use crate::error::{Code, Error, Result};
use crate::store::fingerprint::{prefix_of, ROOT};
use crate::store::records::{Record, RecordKey, Records};
use crate::store::yaml::Unreadable;
use crate::store::{remote as tips, Store};

/// Every record of kind `R` known here, by key.
pub fn known<R: Record>(
    store: &Store,
    remote: Option<&str>,
    what: &'static str,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<(R::Key, R)>> {
    known_as(store, remote, what, unreadable, |k, r| (k, r))
}

/// Every record of kind `R` known here, as its fields `V` (see
/// [`Records::view_at`]): thousands of whole records are neither decoded
/// nor kept.
pub fn views<R: Record, V>(
    store: &Store,
    remote: Option<&str>,
    what: &'static str,
    unreadable: &mut Vec<Unreadable>,
) -> Result<Vec<V>>
where
    V: serde::de::DeserializeOwned + From<R>,
{
    let records = Records::<R>::new(store);
    each::<R, V>(store, remote, what, unreadable, |key, base| {
        records.view_at::<V>(key, base)
    })
}

/// Every record of kind `R` known here, each made into what the page
/// keeps of it as it is read.
pub fn known_as<R: Record, T>(
    store: &Store,
    remote: Option<&str>,
    what: &'static str,
    unreadable: &mut Vec<Unreadable>,
    mut keep: impl FnMut(R::Key, R) -> T,
) -> Result<Vec<T>> {
    let records = Records::<R>::new(store);
    each::<R, T>(store, remote, what, unreadable, |key, base| {
        records.at(key, base).map(|v| keep(key.clone(), v.value))
    })
}

fn each<R: Record, T>(
    store: &Store,
    remote: Option<&str>,
    what: &'static str,
    unreadable: &mut Vec<Unreadable>,
    mut read: impl FnMut(&R::Key, gix::ObjectId) -> Result<T>,
) -> Result<Vec<T>> {
    let prefix = prefix_of::<R>();
    let listed = tips::tips_under(store, remote, &prefix)?;
    let mut out = Vec::with_capacity(listed.len());
    for (below, tip) in listed {
        let Some(key) = R::Key::from_path(&below) else {
            let refname = format!("{prefix}{below}");
            let e = Error::new(
                Code::RecordInvalid,
                format!("{refname} is not a valid {what} ref name"),
            );
            unreadable.push(Unreadable::new(what, &below, &refname, &e));
            continue;
        };
        let Some(base) = tip.base else {
            continue;
        };
        match read(&key, base) {
            Ok(v) => out.push(v),
            Err(e) => {
                let refname = format!("{prefix}{below}");
                unreadable.push(Unreadable::new(what, &below, &refname, &e))
            }
        }
    }
    Ok(out)
}

/// Each lane's published snapshot (`refs/swarm/wip/<lane>`): a short id.
pub fn snapshot_tips(store: &Store, remote: Option<&str>) -> Result<BTreeMap<String, String>> {
    Ok(
        tips::tips_under(store, remote, crate::records::lane::wip::WIP_PREFIX)?
            .into_iter()
            .filter_map(|(lane, tip)| tip.base.map(|b| (lane, b.to_hex_with_len(10).to_string())))
            .collect(),
    )
}

/// Local records the remote does not have: the local ref is new, or
/// ahead of the mirrored one (which `sync` or the next command publishes).
pub fn unpublished(store: &Store, remote: &str) -> Result<Vec<String>> {
    Ok(tips::tips_under(store, Some(remote), ROOT)?
        .into_iter()
        .filter(|(_, t)| t.local.is_some() && t.local != t.remote && t.base == t.local)
        .map(|(below, _)| format!("{ROOT}{below}"))
        .collect())
}
