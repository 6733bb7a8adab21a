//! Reconciliation of diverged refs (`sync`): after fetching the remote's
//! swarm refs into the mirror, per ref fast-forward whichever side is
//! behind; when both moved, join them as the record's kind says
//! ([`Diverged`], from the [`AnyKind`]s the caller passes — the store knows
//! no kind): a merge commit joining both journals, or the published version
//! wins (fenced, or superseded — and a conflict when the two histories are
//! unrelated). Notes are joined as a union of lines; a namespace no kind
//! claims is joined as a journal. A ref deleted by `gc` on one side (its tip
//! is in an archive) is deleted on the other, not revived.
//!
//! Local refs move here; what must go out is returned as leased push
//! updates for one atomic push.

use std::collections::{BTreeMap, BTreeSet};

use gix::ObjectId;
use serde::Serialize;

use super::archive::{entries_at, ARCHIVE_PREFIX};
use super::error::short;
use super::notes::NOTES_REF;
use super::records::{kind_of, AnyKind, Diverged, Replayed};
use super::{Event, Store};
use crate::error::{Code, Result};
use crate::git::PushUpdate;

mod diverged;
mod join;
use diverged::{diverged, refused_join};

/// A record whose local version lost to the published one.
#[derive(Debug, Clone, Serialize)]
pub struct Fenced {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
}

/// A record whose local writes its kind refuses to join with the
/// published version ([`AnyKind::refuses_join`]: e.g. a lane handed over
/// since, written by its old owner): the published version stands, the
/// local one is kept at `kept`, and `sync` fails naming it.
#[derive(Debug, Clone, Serialize)]
pub struct Moved {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
    /// The ref that keeps the local version (`refs/swarm-lost/…`).
    pub kept: String,
    /// The writes not joined, and why.
    pub why: String,
}

/// A record created independently on both sides: left untouched.
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
}

/// The prefix under which `sync` keeps each local version it could not
/// keep (`refs/swarm-lost/<namespace>/<key>@<commit>`): never pushed,
/// never listed as a record, removed only by hand.
pub const LOST_PREFIX: &str = "refs/swarm-lost/";

/// One write of this clone that `sync` could not keep.
#[derive(Debug, Clone, Serialize)]
pub struct LostWrite {
    /// Why: `RESERVATION_CONFLICT`, or `WRITE_LOST` for a write whose
    /// record the published version replaced.
    pub code: &'static str,
    /// The write, and what the remote holds instead.
    pub what: String,
}

/// A record with writes of this clone that `sync` could not keep: the
/// local version stays reachable at `kept`.
#[derive(Debug, Clone, Serialize)]
pub struct Lost {
    pub r#ref: String,
    pub local: String,
    pub remote: String,
    /// The ref that keeps the local version (under [`LOST_PREFIX`]).
    pub kept: String,
    pub writes: Vec<LostWrite>,
}

/// What one reconciliation did, and what it leaves to push.
#[derive(Debug, Clone, Default)]
pub struct Reconciled {
    /// Local refs fast-forwarded (or created) from the remote.
    pub pulled: Vec<String>,
    /// Refs where both sides moved and a merge commit joined them.
    pub merged: Vec<String>,
    /// Records of a [`Diverged::PublishedWinsFenced`] kind whose local version was fenced.
    pub fenced: Vec<Fenced>,
    /// Records of a [`Diverged::PublishedWinsIfRelated`] kind whose local version lost.
    pub superseded: Vec<Fenced>,
    /// Records whose local writes were refused a join (see [`Moved`]).
    pub moved: Vec<Moved>,
    /// Records created independently on both sides: left untouched locally.
    pub conflicts: Vec<Conflict>,
    /// Content that could not be merged automatically.
    pub warnings: Vec<String>,
    /// Writes of this clone that could not be kept (sync exits 3 naming them).
    pub lost: Vec<Lost>,
    /// Live refs removed (here or on the remote) because `gc` archived them.
    pub archived: Vec<String>,
    /// What must go out, each with the value the remote is expected to hold.
    pub updates: Vec<PushUpdate>,
}

/// How a diverged ref is joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    Kind(Diverged),
    Notes,
}

fn join_of(kinds: &[&dyn AnyKind], refname: &str) -> Join {
    if refname == NOTES_REF {
        return Join::Notes;
    }
    Join::Kind(
        kind_of(kinds, refname)
            .map(|(k, _)| k.diverged())
            .unwrap_or(Diverged::MergeJournals),
    )
}

/// Reconcile every local swarm ref (and the notes) with the mirror of
/// `remote`, as fetched.
pub fn reconcile(
    store: &Store,
    kinds: &[&dyn AnyKind],
    remote: &str,
    actor: &str,
) -> Result<Reconciled> {
    let mut local: BTreeMap<String, ObjectId> =
        store.list_refs("refs/swarm/")?.into_iter().collect();
    if let Some(n) = store.ref_target(NOTES_REF)? {
        local.insert(NOTES_REF.to_string(), n);
    }
    let theirs = mirrored(store, remote)?;
    let archived = archived_on_either_side(store, &local, &theirs)?;
    let names: BTreeSet<&String> = local.keys().chain(theirs.keys()).collect();
    let mut out = Reconciled::default();
    for name in names {
        let sides = (local.get(name).copied(), theirs.get(name).copied());
        // A ref holding anything but a commit (a blob pushed by hand) is no
        // record: said and left alone, so that every other ref still syncs.
        if let Some(bad) = [sides.0, sides.1]
            .into_iter()
            .flatten()
            .find(|id| !is_commit(store, *id))
        {
            let side = if Some(bad) == sides.0 {
                "local"
            } else {
                "published"
            };
            out.warnings.push(format!(
                "{name}: the {side} value {} is not a commit, so not a record; left as it is (find who pushed it with `git reflog` or the remote's logs, then delete it)",
                super::short(bad)
            ));
            continue;
        }
        one(
            store,
            kinds,
            actor,
            name,
            sides,
            archived.get(name.as_str()),
            &mut out,
        )?;
    }
    Ok(out)
}

fn is_commit(store: &Store, id: ObjectId) -> bool {
    store
        .repo
        .find_header(id)
        .is_ok_and(|h| h.kind() == gix::object::Kind::Commit)
}

/// The mirror of `remote`, by local ref name.
pub(crate) fn mirrored(store: &Store, remote: &str) -> Result<BTreeMap<String, ObjectId>> {
    let mirror_prefix = format!("refs/swarm-remotes/{remote}/");
    let mut theirs: BTreeMap<String, ObjectId> = BTreeMap::new();
    for (name, id) in store.list_refs(&mirror_prefix)? {
        let rest = &name[mirror_prefix.len()..];
        let local_name = if rest == "notes/swarm" {
            NOTES_REF.to_string()
        } else if rest.starts_with("notes/") {
            continue;
        } else {
            format!("refs/swarm/{rest}")
        };
        theirs.insert(local_name, id);
    }
    Ok(theirs)
}

/// Reconcile one ref, local `l` and published `r`.
fn one(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    name: &str,
    (l, r): (Option<ObjectId>, Option<ObjectId>),
    archived: Option<&ObjectId>,
    out: &mut Reconciled,
) -> Result<()> {
    if untrusted_refused(store, kinds, name, (l, r), out)?
        || newest_trusted_taken(store, kinds, actor, name, (l, r), out)?
    {
        return Ok(());
    }
    if let (Some(l), Some(r)) = (l, r) {
        if l != r && refused_join(store, kinds, actor, name, l, r, out)? {
            return Ok(());
        }
    }
    follow(store, kinds, actor, name, (l, r), archived, out)
}

/// Under swarm.trust=require a published version that is not trusted
/// never replaces, joins or beats a local one (a merge by an honest actor
/// would sign it over); it is said, and this clone keeps its own. True
/// when so.
fn untrusted_refused(
    store: &Store,
    kinds: &[&dyn AnyKind],
    name: &str,
    (l, r): (Option<ObjectId>, Option<ObjectId>),
    out: &mut Reconciled,
) -> Result<bool> {
    if let (Some(l), Some(r)) = (l, r) {
        if l != r && super::records::kind_of(kinds, name).is_some() {
            if let Some(why) = store.refused(name, r)? {
                out.warnings.push(format!(
                    "{name}: the published version {} is not trusted ({why}); kept this clone's {} (swarm.trust=require)",
                    super::short(r),
                    super::short(l)
                ));
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// A record this clone lacks, published with an untrusted version on top
/// of trusted history: its newest trusted version is what is taken. True
/// when so.
fn newest_trusted_taken(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    name: &str,
    (l, r): (Option<ObjectId>, Option<ObjectId>),
    out: &mut Reconciled,
) -> Result<bool> {
    if let (None, Some(r)) = (l, r) {
        if super::records::kind_of(kinds, name).is_some() {
            if let Some(why) = store.refused(name, r)? {
                if let Some(t) = store.trusted_version(name, r)?.filter(|t| *t != r) {
                    store.cas(
                        name,
                        None,
                        Some(t),
                        actor,
                        "sync: the newest trusted version",
                    )?;
                    out.pulled.push(name.to_string());
                    out.warnings.push(format!(
                        "{name}: the published version {} is not trusted ({why}); took its newest trusted version {} (swarm.trust=require)",
                        super::short(r),
                        super::short(t)
                    ));
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Move whichever side is behind: a deletion by `gc` travels, a side
/// present alone is pushed or pulled, a fast-forward is taken, and two
/// moved sides are [`diverged`].
fn follow(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    name: &str,
    (l, r): (Option<ObjectId>, Option<ObjectId>),
    archived: Option<&ObjectId>,
    out: &mut Reconciled,
) -> Result<()> {
    // A ref present on one side only, at a tip some archive holds, was
    // folded by `gc`: the deletion travels, the record is not revived.
    let was_archived = |tip: ObjectId| -> Result<bool> {
        match archived {
            None => Ok(false),
            Some(a) => Ok(*a == tip || store.is_ancestor(tip, *a)?),
        }
    };
    match (l, r) {
        (None, None) => {}
        (Some(l), None) if was_archived(l)? => {
            store.cas(name, Some(l), None, actor, "sync: archived by gc")?;
            out.archived.push(name.to_string());
        }
        (Some(l), None) => out.updates.push(push_update(name, l, None)),
        (None, Some(r)) if was_archived(r)? => {
            out.updates.push(PushUpdate {
                refname: name.to_string(),
                new: None,
                expected: Some(r.to_string()),
            });
            out.archived.push(name.to_string());
        }
        (None, Some(r)) => {
            store.cas(name, None, Some(r), actor, "sync: from remote")?;
            out.pulled.push(name.to_string());
        }
        (Some(l), Some(r)) if l == r => {}
        (Some(l), Some(r)) => {
            if store.is_ancestor(l, r)? {
                store.cas(name, Some(l), Some(r), actor, "sync: fast-forward")?;
                out.pulled.push(name.to_string());
            } else if store.is_ancestor(r, l)? {
                out.updates.push(push_update(name, l, Some(r)));
            } else {
                diverged(store, kinds, actor, name, l, r, out)?;
            }
        }
    }
    Ok(())
}

/// Record name -> archived tip, from the local and the remote's archives.
pub(crate) fn archived_on_either_side(
    store: &Store,
    local: &BTreeMap<String, ObjectId>,
    theirs: &BTreeMap<String, ObjectId>,
) -> Result<BTreeMap<String, ObjectId>> {
    let mut out: BTreeMap<String, ObjectId> = BTreeMap::new();
    for side in [local, theirs] {
        for (name, tip) in side.range(ARCHIVE_PREFIX.to_string()..) {
            let Some(kind) = name.strip_prefix(ARCHIVE_PREFIX) else {
                break;
            };
            for (record, archived_tip) in entries_at(store, kind, *tip)? {
                // Two archives may hold different tips of one record: keep the newer.
                match out.get(&record) {
                    Some(existing) if store.is_ancestor(archived_tip, *existing)? => {}
                    _ => {
                        out.insert(record, archived_tip);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn push_update(name: &str, new: ObjectId, expected: Option<ObjectId>) -> PushUpdate {
    PushUpdate {
        refname: name.to_string(),
        new: Some(new.to_string()),
        expected: expected.map(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::join::merge_yaml;
    use super::*;

    struct Ns(&'static str, Diverged);
    impl AnyKind for Ns {
        fn namespace(&self) -> &'static str {
            self.0
        }
        fn kind(&self) -> &'static str {
            self.0
        }
        fn diverged(&self) -> Diverged {
            self.1
        }
        fn finished(
            &self,
            _: &Store,
            _: &str,
            _: ObjectId,
            _: &dyn Fn(&str, &str) -> bool,
        ) -> bool {
            false
        }
    }

    #[test]
    fn a_diverged_ref_is_joined_as_its_kind_says_and_unknown_ones_as_journals() {
        let lead = Ns("lead", Diverged::PublishedWinsFenced);
        let packets = Ns("packets", Diverged::PublishedWinsIfRelated);
        let kinds: &[&dyn AnyKind] = &[&lead, &packets];
        assert_eq!(
            join_of(kinds, "refs/swarm/lead/p"),
            Join::Kind(Diverged::PublishedWinsFenced)
        );
        assert_eq!(
            join_of(kinds, "refs/swarm/packets/p/x"),
            Join::Kind(Diverged::PublishedWinsIfRelated)
        );
        assert_eq!(
            join_of(kinds, "refs/swarm/archive/packets"),
            Join::Kind(Diverged::MergeJournals)
        );
        assert_eq!(
            join_of(kinds, "refs/swarm/tasks/t"),
            Join::Kind(Diverged::MergeJournals)
        );
        assert_eq!(join_of(kinds, NOTES_REF), Join::Notes);
    }

    #[test]
    fn merge_yaml_takes_each_sides_own_changes_and_the_published_one_on_overlap() {
        let y = |s: &str| Some(s.as_bytes().to_vec());
        let merged = merge_yaml(
            y("a: 1\nb: 1\nc: 1\n").as_ref(),
            y("a: 2\nb: 1\nc: 5\n").as_ref(),
            y("a: 1\nb: 3\nc: 6\n").as_ref(),
        )
        .unwrap();
        assert_eq!(String::from_utf8(merged).unwrap(), "a: 2\nb: 3\nc: 6\n");
    }
}
