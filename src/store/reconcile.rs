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
use super::kind::{kind_of, AnyKind, Diverged};
use super::notes::NOTES_REF;
use super::{Event, Store};
use crate::error::Result;
use crate::git::PushUpdate;

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
    // A ref present on one side only, at a tip some archive holds, was
    // folded by `gc`: the deletion travels, the record is not revived.
    let was_archived = |tip: ObjectId| -> Result<bool> {
        match archived {
            None => Ok(false),
            Some(a) => Ok(*a == tip || store.is_ancestor(tip, *a)?),
        }
    };
    // Under swarm.trust=require a published version that is not trusted
    // never replaces, joins or beats a local one (a merge by an honest
    // actor would sign it over); it is said, and this clone keeps its own.
    if let (Some(l), Some(r)) = (l, r) {
        if l != r && super::kind::kind_of(kinds, name).is_some() {
            if let Some(why) = store.refused(name, r)? {
                out.warnings.push(format!(
                    "{name}: the published version {} is not trusted ({why}); kept this clone's {} (swarm.trust=require)",
                    super::short(r),
                    super::short(l)
                ));
                return Ok(());
            }
        }
    }
    // A record this clone lacks, published with an untrusted version on top
    // of trusted history: its newest trusted version is what is taken.
    if let (None, Some(r)) = (l, r) {
        if super::kind::kind_of(kinds, name).is_some() {
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
                    return Ok(());
                }
            }
        }
    }
    if let (Some(l), Some(r)) = (l, r) {
        if l != r && refused_join(store, kinds, actor, name, l, r, out)? {
            return Ok(());
        }
    }
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
                diverged(store, join_of(kinds, name), actor, name, l, r, out)?;
            }
        }
    }
    Ok(())
}

/// Both sides moved since `base`, and the record's kind refuses to join
/// this clone's writes into the published version (a lane handed over
/// meanwhile, written here by someone who does not own it there): the
/// published version stands locally, the local one is kept at
/// `refs/swarm-lost/<ref below refs/swarm/>@<commit>`, and it is reported.
fn refused_join(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    name: &str,
    l: ObjectId,
    r: ObjectId,
    out: &mut Reconciled,
) -> Result<bool> {
    let Some((kind, path)) = kind_of(kinds, name).filter(|(k, _)| k.may_refuse_join()) else {
        return Ok(false);
    };
    // One side containing the other is no join (a fast-forward).
    let Some(base) = store.merge_base(l, r)?.filter(|b| *b != l && *b != r) else {
        return Ok(false);
    };
    let Some(why) = kind.refuses_join(store, &path, base, l, r)? else {
        return Ok(false);
    };
    let rest = name.strip_prefix("refs/swarm/").unwrap_or(name);
    let kept = format!("refs/swarm-lost/{rest}@{}", short(l));
    if store.ref_target(&kept)?.is_none() {
        store.cas(
            &kept,
            None,
            Some(l),
            actor,
            "sync: a local version not joined",
        )?;
    }
    store.cas(
        name,
        Some(l),
        Some(r),
        actor,
        "sync: the published record stands",
    )?;
    out.moved.push(Moved {
        r#ref: name.to_string(),
        local: l.to_string(),
        remote: r.to_string(),
        kept,
        why,
    });
    Ok(true)
}

/// Both sides moved and neither contains the other: join them as the
/// kind says.
fn diverged(
    store: &Store,
    join: Join,
    actor: &str,
    name: &str,
    l: ObjectId,
    r: ObjectId,
    out: &mut Reconciled,
) -> Result<()> {
    let conflict = || Conflict {
        r#ref: name.to_string(),
        local: l.to_string(),
        remote: r.to_string(),
    };
    match join {
        // Two records of one key written independently (e.g. two packets:
        // same author, same second, two machines offline) are two different
        // records, not two versions of one.
        Join::Kind(Diverged::PublishedWinsIfRelated) if store.merge_base(l, r)?.is_none() => {
            out.conflicts.push(conflict())
        }
        Join::Kind(
            policy @ (Diverged::PublishedWinsFenced
            | Diverged::PublishedWinsIfRelated
            | Diverged::PublishedWins),
        ) => {
            store.cas(
                name,
                Some(l),
                Some(r),
                actor,
                "sync: the published record wins",
            )?;
            let entry = Fenced {
                r#ref: name.to_string(),
                local: l.to_string(),
                remote: r.to_string(),
            };
            if policy == Diverged::PublishedWinsFenced {
                out.fenced.push(entry);
            } else {
                out.superseded.push(entry);
            }
        }
        Join::Kind(Diverged::NewestWins) => {
            let now = store.clock.now().as_second();
            let seconds = |id| {
                super::archive::commit_seconds(store, id)
                    .map(|t| crate::clock::claimed_time(t, now))
            };
            if seconds(l)? > seconds(r)? {
                out.updates.push(push_update(name, l, Some(r)));
            } else {
                store.cas(
                    name,
                    Some(l),
                    Some(r),
                    actor,
                    "sync: the newer version wins",
                )?;
                out.superseded.push(Fenced {
                    r#ref: name.to_string(),
                    local: l.to_string(),
                    remote: r.to_string(),
                });
            }
        }
        Join::Notes => {
            let merged = merge_notes(store, l, r, actor)?;
            store.cas(name, Some(l), Some(merged), actor, "sync: notes union")?;
            out.merged.push(name.to_string());
            out.updates.push(push_update(name, merged, Some(r)));
        }
        Join::Kind(Diverged::MergeJournals) => match store.merge_base(l, r)? {
            None => out.conflicts.push(conflict()),
            Some(base) => {
                let merged = merge_journals(store, name, base, l, r, actor, &mut out.warnings)?;
                store.cas(name, Some(l), Some(merged), actor, "sync: merge journals")?;
                out.merged.push(name.to_string());
                out.updates.push(push_update(name, merged, Some(r)));
            }
        },
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

/// A merge commit with parents [local, remote]: per file, the side that
/// changed since the merge base; per top-level YAML key likewise; where both
/// changed the same thing, the published (remote) value wins and the local
/// one stays reachable in the journal.
fn merge_journals(
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
fn merge_yaml(b: Option<&Vec<u8>>, l: Option<&Vec<u8>>, r: Option<&Vec<u8>>) -> Option<Vec<u8>> {
    use serde_yaml_ng::{Mapping, Value};
    let parse = |v: Option<&Vec<u8>>| -> Option<Mapping> {
        match v {
            None => Some(Mapping::new()),
            Some(bytes) => {
                // Never hand the YAML parser a record too large or deep to read.
                crate::store::record::precheck(bytes, "record").ok()?;
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
fn merge_notes(store: &Store, l: ObjectId, r: ObjectId, actor: &str) -> Result<ObjectId> {
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

#[cfg(test)]
mod tests {
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
