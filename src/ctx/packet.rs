//! Session helpers of the packet kind: fetch packet refs, name the packet
//! refs known here (local, last fetched, archived), find one by id, read a
//! version, and what other areas ask about packets (open ones for `status`,
//! an accepted handoff backing a lane).

use std::collections::BTreeMap;
use std::path::Path;

use gix::ObjectId;
use serde::Serialize;

use super::Ctx;
use crate::error::{Code, Error, Result};
use crate::model::packet::{
    missing_packet_file, PacketKey, PacketVersion, ACCEPTANCE_FILE, PACKET_FILE, PREFIX,
    TAG_ACCEPTED, TAG_WITHDRAWN, WITHDRAWAL_FILE,
};
use crate::names;
use crate::store::fingerprint::ROOT;
use crate::store::kind::{Record, Records};
use crate::store::record::Unreadable;
use crate::store::{mirror, remote};
use crate::store::{short, Store};

/// Fetch `refs` (prefixes) from the remote into its mirror, unless offline.
pub fn fetch(ctx: &Ctx, refs: &[&str]) -> Result<()> {
    if let Some(remote) = ctx.remote() {
        mirror::fetch_refs(&ctx.store, remote, refs)?;
    }
    Ok(())
}

/// The packet version at `commit` of `refname`.
pub fn read_at(store: &Store, refname: &str, commit: ObjectId) -> Result<PacketVersion> {
    let key = PacketVersion::key_of(refname).ok_or_else(|| {
        Error::new(
            Code::RecordInvalid,
            format!("{refname} is not a valid packet ref name"),
        )
    })?;
    Records::<PacketVersion>::new(store)
        .at(&key, commit)
        .map_err(|e| match store.tree_has(commit, PACKET_FILE) {
            Ok(false) => missing_packet_file(refname, Some(&short(commit))),
            _ => e,
        })
        .map(|v| v.value)
}

/// Packet refs under `prefix`, local or published; with `archived`, also
/// those `gc` folded into the archive (for finding one packet by id).
pub fn known_refs(
    ctx: &Ctx,
    remote: Option<&str>,
    prefix: &str,
    archived: bool,
) -> Result<Vec<String>> {
    let mut names: Vec<String> = ctx
        .store
        .list_refs(prefix)?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    if let Some(remote) = remote {
        let root = mirror::mirror_ref(remote, ROOT);
        for (n, _) in ctx.store.list_refs(&mirror::mirror_ref(remote, prefix))? {
            names.push(format!("{ROOT}{}", &n[root.len()..]));
        }
    }
    if archived {
        names.extend(
            crate::store::archive::archived(&ctx.store, "packets")?
                .into_keys()
                .filter(|n| n.starts_with(prefix)),
        );
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Find the packet ref an id names (`<id>` or `<plan>/<id>`).
pub fn locate(ctx: &Ctx, arg: &str) -> Result<String> {
    locate_in(ctx, ctx.remote(), arg)
}

/// [`locate`] among the local refs and `remote`'s mirror.
pub fn locate_in(ctx: &Ctx, remote: Option<&str>, arg: &str) -> Result<String> {
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
    let known = known_refs(ctx, remote, &prefix, true)?;
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
            Err(crate::names::did_you_mean(err, id, ids).hint(
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
}

/// Every open (neither accepted nor withdrawn) live packet known here —
/// local refs and the mirror as last fetched, without fetching (`status`
/// only reads) — oldest first, and the packets that could not be read.
pub fn open_packets(ctx: &Ctx) -> Result<(Vec<OpenPacket>, Vec<Unreadable>)> {
    let remote = ctx.settings.remote.as_deref();
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    // Most live packets are closed (accepted): tell them by the tags the
    // record cache keeps, else by the files of their tree (then kept as
    // tags), and parse only the open ones.
    let records = Records::<PacketVersion>::new(&ctx.store);
    for (below, tip) in remote::tips_under(&ctx.store, remote, PREFIX)? {
        let refname = format!("{PREFIX}{below}");
        let Some(base) = tip.base else { continue };
        let closed = match PacketVersion::key_of(&refname) {
            Some(key) => closed_tags(&ctx.store, &records, &key, base),
            None => Ok(0),
        };
        let read = closed.and_then(|closed| match closed {
            0 => read_at(&ctx.store, &refname, base).map(Some),
            _ => Ok(None),
        });
        let p = match read {
            Ok(Some(v)) if v.is_open() => v.packet,
            Ok(_) => continue,
            Err(e) => {
                unreadable.push(Unreadable::new("packet", &below, &refname, &e));
                continue;
            }
        };
        out.push(OpenPacket {
            id: p.id,
            plan: p.plan,
            author: p.author,
            reason: p.reason,
            created_at: p.created_at,
            branch: p.branch,
        });
    }
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
    let tags = if store.tree_has(commit, ACCEPTANCE_FILE)? {
        TAG_ACCEPTED
    } else if store.tree_has(commit, WITHDRAWAL_FILE)? {
        TAG_WITHDRAWN
    } else {
        0
    };
    records.remember_tags(key, commit, tags);
    Ok(tags)
}

/// The content of each path in the checkout, as git would store it: the
/// blob id of a file's bytes (of a symlink's target, for a link), or
/// `deleted`. No filters run, so both sides of a handoff hash alike.
pub fn content_ids(
    store: &Store,
    workdir: &Path,
    paths: &[String],
) -> Result<BTreeMap<String, String>> {
    let kind = store.repo.object_hash();
    let mut out = BTreeMap::new();
    for p in paths {
        let full = workdir.join(p);
        let bytes = match std::fs::symlink_metadata(&full) {
            // A file where a directory on the way was: the path is gone.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                out.insert(p.clone(), "deleted".to_string());
                continue;
            }
            Err(e) => return Err(crate::ctx::plan::io_error(&full, e)),
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&full)
                .map_err(|e| crate::ctx::plan::io_error(&full, e))?
                .into_os_string()
                .into_encoded_bytes(),
            Ok(m) if m.is_dir() => {
                // A nested repository or submodule: its content is not ours to hash.
                out.insert(p.clone(), "directory".to_string());
                continue;
            }
            Ok(_) => std::fs::read(&full).map_err(|e| crate::ctx::plan::io_error(&full, e))?,
        };
        let id = gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &bytes)
            .map_err(|e| Error::gix("could not hash a file", e))?;
        out.insert(p.clone(), id.to_string());
    }
    Ok(out)
}
