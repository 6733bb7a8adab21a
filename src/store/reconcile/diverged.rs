//! Both sides of a record moved: the local writes replayed on the
//! published version, joined as the kind says, or refused and kept under
//! `refs/swarm-lost/`, and what this clone wrote that was not kept named.

use super::join::{merge_journals, merge_notes};
use super::*;

/// Both sides moved since `base`, and the record's kind refuses to join
/// this clone's writes into the published version (a lane handed over
/// meanwhile, written here by someone who does not own it there): the
/// published version stands locally, the local one is kept at
/// `refs/swarm-lost/<ref below refs/swarm/>@<commit>`, and it is reported.
pub(super) fn refused_join(
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
    let kept = keep_lost(store, actor, name, l, "sync: a local version not joined")?;
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

/// Both sides moved and neither contains the other: replay this clone's
/// writes on the published version when the kind can ([`AnyKind::replay`]),
/// else join them as the kind's policy says. Whatever this clone wrote that
/// the result does not keep is [`Lost`]: named, and kept under
/// [`LOST_PREFIX`].
pub(super) fn diverged(
    store: &Store,
    kinds: &[&dyn AnyKind],
    actor: &str,
    name: &str,
    l: ObjectId,
    r: ObjectId,
    out: &mut Reconciled,
) -> Result<()> {
    let d = Sides {
        store,
        actor,
        name,
        l,
        r,
    };
    if replayed(d, kinds, out)? {
        return Ok(());
    }
    match join_of(kinds, name) {
        // Two records of one key written independently (e.g. two packets:
        // same author, same second, two machines offline) are two different
        // records, not two versions of one.
        Join::Kind(Diverged::PublishedWinsIfRelated) if store.merge_base(l, r)?.is_none() => {
            out.conflicts.push(d.conflict())
        }
        Join::Kind(
            policy @ (Diverged::PublishedWinsFenced
            | Diverged::PublishedWinsIfRelated
            | Diverged::PublishedWins),
        ) => published_wins(d, policy, out)?,
        Join::Kind(Diverged::NewestWins) => newest_wins(d, out)?,
        Join::Notes => {
            let merged = merge_notes(store, l, r, actor)?;
            store.cas(name, Some(l), Some(merged), actor, "sync: notes union")?;
            out.merged.push(name.to_string());
            out.updates.push(push_update(name, merged, Some(r)));
        }
        Join::Kind(Diverged::MergeJournals) => match store.merge_base(l, r)? {
            None => out.conflicts.push(d.conflict()),
            Some(base) => journals_merged(d, base, out)?,
        },
    }
    Ok(())
}

/// One ref whose local version `l` and published version `r` both moved,
/// and the store and actor that join them.
#[derive(Clone, Copy)]
struct Sides<'a> {
    store: &'a Store,
    actor: &'a str,
    name: &'a str,
    l: ObjectId,
    r: ObjectId,
}

impl Sides<'_> {
    /// The two versions as an unresolved [`Conflict`].
    fn conflict(&self) -> Conflict {
        Conflict {
            r#ref: self.name.to_string(),
            local: self.l.to_string(),
            remote: self.r.to_string(),
        }
    }

    /// The two versions as a [`Fenced`] entry (fenced or superseded).
    fn fenced(&self) -> Fenced {
        Fenced {
            r#ref: self.name.to_string(),
            local: self.l.to_string(),
            remote: self.r.to_string(),
        }
    }

    /// [`lose`] for these two versions.
    fn lose(&self, writes: Vec<LostWrite>, out: &mut Reconciled) -> Result<()> {
        lose(
            self.store, self.actor, self.name, self.l, self.r, writes, out,
        )
    }
}

/// Replay this clone's writes on the published version when the kind can
/// ([`AnyKind::replay`]); true when done, false (a failure warned) when the
/// kind's join policy decides instead.
fn replayed(d: Sides, kinds: &[&dyn AnyKind], out: &mut Reconciled) -> Result<bool> {
    let Sides {
        store,
        actor,
        name,
        l,
        r,
    } = d;
    let Some((kind, path)) = kind_of(kinds, name) else {
        return Ok(false);
    };
    let base = store.merge_base(l, r)?;
    match kind.replay(store, &path, base, l, r) {
        Ok(Some(Replayed { value: files, lost })) => {
            let tree = store.write_tree(&files)?;
            let event = Event::new(
                "merge",
                actor,
                format!("sync: this clone's writes replayed on the published {name}"),
            );
            let merged = store.commit(tree, &[l, r], &event)?;
            store.cas(name, Some(l), Some(merged), actor, "sync: replay")?;
            out.merged.push(name.to_string());
            out.updates.push(push_update(name, merged, Some(r)));
            let lost = lost
                .into_iter()
                .map(|(code, what)| LostWrite {
                    code: code.as_str(),
                    what,
                })
                .collect();
            d.lose(lost, out)?;
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => {
            out.warnings.push(format!(
                "{name}: this clone's writes could not be replayed ({}); {}",
                e.message, "the kind's own rule decides"
            ));
            Ok(false)
        }
    }
}

/// The published version wins (`policy`): the local ref moves to it, the
/// entry is fenced or superseded, and this clone's unpublished writes are
/// reported lost.
fn published_wins(d: Sides, policy: Diverged, out: &mut Reconciled) -> Result<()> {
    let Sides {
        store,
        actor,
        name,
        l,
        r,
    } = d;
    // Named before the local ref moves: what this clone wrote that
    // the published version does not hold.
    let writes =
        if policy == Diverged::PublishedWins || store.commit_tree(l)? == store.commit_tree(r)? {
            // A record written once under a name its content decides
            // (an escalation): the published copy is the same message.
            Vec::new()
        } else {
            let rule = match policy {
                Diverged::PublishedWinsFenced => "fenced by",
                _ => "the version published first wins:",
            };
            unpublished(store, l, r)?
                .into_iter()
                .map(|w| LostWrite {
                    code: Code::WriteLost.as_str(),
                    what: format!("{w} ({rule} {} on the remote)", short(r)),
                })
                .collect()
        };
    store.cas(
        name,
        Some(l),
        Some(r),
        actor,
        "sync: the published record wins",
    )?;
    if policy == Diverged::PublishedWinsFenced {
        out.fenced.push(d.fenced());
    } else {
        out.superseded.push(d.fenced());
    }
    d.lose(writes, out)
}

/// The version written later (by its commit's claimed time) wins: this
/// clone's is pushed, or the published one taken and this one superseded.
fn newest_wins(d: Sides, out: &mut Reconciled) -> Result<()> {
    let Sides {
        store,
        actor,
        name,
        l,
        r,
    } = d;
    let now = store.clock.now().as_second();
    let seconds = |id| {
        crate::store::archive::commit_seconds(store, id).map(|t| crate::clock::claimed_time(t, now))
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
        out.superseded.push(d.fenced());
    }
    Ok(())
}

/// Join both journals since `base` in a merge commit; the writes that
/// overlap are reported lost.
fn journals_merged(d: Sides, base: ObjectId, out: &mut Reconciled) -> Result<()> {
    let Sides {
        store,
        actor,
        name,
        l,
        r,
    } = d;
    let mut overlaps = Vec::new();
    let merged = merge_journals(store, name, base, l, r, actor, &mut overlaps)?;
    store.cas(name, Some(l), Some(merged), actor, "sync: merge journals")?;
    out.merged.push(name.to_string());
    out.updates.push(push_update(name, merged, Some(r)));
    let writes = overlaps
        .into_iter()
        .map(|what| LostWrite {
            code: Code::WriteLost.as_str(),
            what,
        })
        .collect();
    d.lose(writes, out)
}

/// Report `writes` of `name` as lost (none: nothing to report), keeping
/// the local version `l` at `refs/swarm-lost/<namespace>/<key>@<l>`.
fn lose(
    store: &Store,
    actor: &str,
    name: &str,
    l: ObjectId,
    r: ObjectId,
    writes: Vec<LostWrite>,
    out: &mut Reconciled,
) -> Result<()> {
    if writes.is_empty() {
        return Ok(());
    }
    let kept = keep_lost(
        store,
        actor,
        name,
        l,
        "sync: a local version whose writes could not be kept",
    )?;
    out.lost.push(Lost {
        r#ref: name.to_string(),
        local: l.to_string(),
        remote: r.to_string(),
        kept,
        writes,
    });
    Ok(())
}

/// The writes of this clone's version `l` that the published `r` lacks,
/// newest first, as their journal names them (`<event> by <actor>:
/// <summary> (<commit>)`); at most 20.
fn unpublished(store: &Store, l: ObjectId, r: ObjectId) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in store.journal(l, Some(50))? {
        let Ok(id) = entry.commit.parse::<ObjectId>() else {
            continue;
        };
        if id == r || store.is_ancestor(id, r)? {
            continue;
        }
        out.push(format!(
            "{} by {}: {} ({})",
            entry.event,
            entry.actor,
            entry.summary,
            short(id)
        ));
        if out.len() >= 20 {
            break;
        }
    }
    if out.is_empty() {
        out.push(format!("this clone's version {}", short(l)));
    }
    Ok(out)
}

/// Keep this clone's version `l` of `name` at
/// `refs/swarm-lost/<ref below refs/swarm/>@<commit>` (once), and return
/// that ref.
fn keep_lost(store: &Store, actor: &str, name: &str, l: ObjectId, message: &str) -> Result<String> {
    let rest = name.strip_prefix("refs/swarm/").unwrap_or(name);
    let kept = format!("{LOST_PREFIX}{rest}@{}", short(l));
    if store.ref_target(&kept)?.is_none() {
        store.cas(&kept, None, Some(l), actor, message)?;
    }
    Ok(kept)
}
