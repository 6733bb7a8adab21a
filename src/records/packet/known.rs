//! The packets this clone knows: one version read, the packet refs known
//! here (local, last fetched, archived), one found by id, the open ones
//! (for `status` and `accept --lane`), and whether an accepted packet backs
//! a lane's move. Reads over the store's generic ones ([`Records`]).

use std::path::Path;

use gix::ObjectId;
use serde::Serialize;

use super::{
    missing_packet_file, PacketKey, PacketVersion, ACCEPTANCE_FILE, PACKET_FILE, PREFIX,
    TAG_ACCEPTED, TAG_WITHDRAWN, WITHDRAWAL_FILE,
};
use crate::error::{Code, Error, Result};
use crate::fsutil::same_path;
use crate::names;
use crate::store::fingerprint::ROOT;
use crate::store::mirror;
use crate::store::records::{Record, Records, Versioned};
use crate::store::yaml::Unreadable;
use crate::store::{short, Store};

/// The packet version at `commit` of `refname`.
pub fn read_at(store: &Store, refname: &str, commit: ObjectId) -> Result<PacketVersion> {
    let key = PacketVersion::key_of(refname).ok_or_else(|| {
        Error::new(
            Code::RecordInvalid,
            format!("{refname} is not a valid packet ref name"),
        )
    })?;
    read_key_at(store, &key, commit).map(|v| v.value)
}

/// [`read_at`] by key: a version without `packet.yaml` is named with its commit.
fn read_key_at(
    store: &Store,
    key: &PacketKey,
    commit: ObjectId,
) -> Result<Versioned<PacketVersion>> {
    Records::<PacketVersion>::new(store)
        .at(key, commit)
        .map_err(|e| match store.tree_has(commit, PACKET_FILE) {
            Ok(false) => missing_packet_file(&PacketVersion::refname(key), Some(&short(commit))),
            _ => e,
        })
}

/// Packet refs under `prefix`, local or in `remote`'s mirror; with
/// `archived`, also those `gc` folded into the archive (for finding one
/// packet by id).
pub fn known_refs(
    store: &Store,
    remote: Option<&str>,
    prefix: &str,
    archived: bool,
) -> Result<Vec<String>> {
    let mut names: Vec<String> = store
        .list_refs(prefix)?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    if let Some(remote) = remote {
        let root = mirror::mirror_ref(remote, ROOT);
        for (n, _) in store.list_refs(&mirror::mirror_ref(remote, prefix))? {
            names.push(format!("{ROOT}{}", &n[root.len()..]));
        }
    }
    if archived {
        names.extend(
            crate::store::archive::archived(store, PacketVersion::NAMESPACE)?
                .into_keys()
                .filter(|n| n.starts_with(prefix)),
        );
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// The packet ref an id names (`<id>` or `<plan>/<id>`), among the local
/// refs, `remote`'s mirror and the archive.
pub fn locate(store: &Store, remote: Option<&str>, arg: &str) -> Result<String> {
    let (plan, id) = match arg.split_once('/') {
        Some((p, i)) => (Some(p), i),
        None => (None, arg),
    };
    if let Some(p) = plan {
        names::validate_name("plan", p)?;
    }
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
    {
        return Err(Error::new(
            Code::NameInvalid,
            format!("'{}' is not a packet id", arg.escape_debug()),
        )
        .hint("packet ids look like 20261129T091131Z-alice; list them with `git swarm packets`"));
    }
    let prefix = match plan {
        Some(p) => format!("{PREFIX}{p}/"),
        None => PREFIX.to_string(),
    };
    let known = known_refs(store, remote, &prefix, true)?;
    let found: Vec<String> = known
        .iter()
        .filter(|r| r.rsplit('/').next() == Some(id))
        .cloned()
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => {
            let err = Error::new(Code::NotFound, format!("packet '{arg}' does not exist"));
            let ids = known.iter().filter_map(|r| r.rsplit('/').next());
            Err(names::did_you_mean(err, id, ids).hint(
                "list packets with `git swarm packets`; `git swarm sync` fetches the shared ones",
            ))
        }
        many => Err(Error::new(
            Code::Usage,
            format!("packet id '{id}' is ambiguous: {}", many.join(", ")),
        )
        .hint("name it as <plan>/<packet-id>")),
    }
}

/// A packet nobody has accepted yet, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct OpenPacket {
    pub id: String,
    pub plan: String,
    pub author: String,
    pub reason: String,
    pub created_at: String,
    pub branch: Option<String>,
    /// The claim it carries to the successor (plan, task), if any.
    #[serde(skip)]
    pub claim: Option<(String, String)>,
}

/// Every open (neither accepted nor withdrawn) live packet known here —
/// local refs and `remote`'s mirror as last fetched, without fetching —
/// oldest first, and the packets that could not be read.
pub fn open_packets(
    store: &Store,
    remote: Option<&str>,
) -> Result<(Vec<OpenPacket>, Vec<Unreadable>)> {
    // Most live packets are closed (accepted): tell them by the tags the
    // record cache keeps, else by the files of their tree (then kept as
    // tags), and parse only the open ones.
    let records = Records::<PacketVersion>::new(store);
    let (known, unreadable) = records.known_with(remote, "", |key, commit| {
        match closed_tags(store, &records, key, commit)? {
            0 => read_key_at(store, key, commit).map(Some),
            _ => Ok(None),
        }
    })?;
    let mut out: Vec<OpenPacket> = known
        .into_iter()
        .map(|k| k.version.value)
        .filter(|v| v.is_open())
        .map(|v| {
            let p = v.packet;
            OpenPacket {
                id: p.id,
                plan: p.plan,
                author: p.author,
                reason: p.reason,
                created_at: p.created_at,
                branch: p.branch,
                claim: p.claim.map(|c| (c.plan, c.task)),
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok((out, unreadable))
}

/// A packet version's accepted/withdrawn tags: from the record cache, else
/// from the files its tree has (remembered in the cache).
fn closed_tags(
    store: &Store,
    records: &Records<'_, PacketVersion>,
    key: &PacketKey,
    commit: ObjectId,
) -> Result<u8> {
    if let Some(tags) = records.cached_tags(key, commit) {
        return Ok(tags & (TAG_ACCEPTED | TAG_WITHDRAWN));
    }
    let tags = match store.tree_has_first(commit, &[ACCEPTANCE_FILE, WITHDRAWAL_FILE])? {
        Some(ACCEPTANCE_FILE) => TAG_ACCEPTED,
        Some(_) => TAG_WITHDRAWN,
        None => 0,
    };
    records.remember_tags(key, commit, tags);
    Ok(tags)
}

/// An accepted handoff of lane `feature` to `owner` working at `path`
/// backs the lane's record naming them there: among the packets known here
/// (local and `remote`'s mirror, newest wins: the acceptance may be known
/// here only from the last fetch), else among those `gc` archived (read
/// only when no live packet backs it: rare, a warning is at stake).
pub fn backs_lane(
    store: &Store,
    remote: Option<&str>,
    feature: &str,
    owner: &str,
    path: &str,
) -> Result<bool> {
    let backs = |v: &PacketVersion| {
        v.acceptance.as_ref().is_some_and(|acc| {
            v.packet.lane.as_deref() == Some(feature)
                && acc.accepted_by == owner
                && same_path(Path::new(&acc.checkout), Path::new(path))
        })
    };
    let packets = Records::<PacketVersion>::new(store);
    if packets.known(remote)?.0.iter().any(|v| backs(&v.value)) {
        return Ok(true);
    }
    for (refname, tip) in crate::store::archive::archived(store, PacketVersion::NAMESPACE)? {
        let Some(key) = PacketVersion::key_of(&refname) else {
            continue;
        };
        if packets.at(&key, tip).is_ok_and(|v| backs(&v.value)) {
            return Ok(true);
        }
    }
    Ok(false)
}
