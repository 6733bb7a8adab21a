//! changeset-unique: a changeset added under `swarm.changesetDir` must not
//! share its name (case-insensitively: macOS and Windows checkouts collide
//! on case) with one on the base branch, on any other lane branch (local
//! `feat/*` or remote-tracking `<remote>/feat/*`), or with another one in
//! the same commit, and must not match a reserved bot pattern (default
//! `pr-<N>-review.md`). Other branches are read only at that directory, each
//! distinct directory tree once. A violation proposes a slug that is free
//! everywhere it was checked.
//!
//! `scope` decides which refs to compare with, `others` reads them,
//! through the hook's two caches: `lane_refs` (which lane refs there are)
//! and `cache` (the names in each branch's directory). `dir` finds the
//! changeset directory in a tree and `name` holds the pure name rules;
//! those two import nothing else here, and `staged` and `range` use them
//! too.

mod cache;
pub mod dir;
mod lane_refs;
pub mod name;
mod others;
mod scope;

use std::collections::BTreeMap;

use gix::ObjectId;

use self::name::{propose, Reserved};
use self::others::{Hit, Others};
pub use self::scope::{scope_for_head, Base, Scope};
use super::findings::{Findings, Violation, CHANGESET_UNIQUE};
use super::staged::Staged;
use crate::error::Result;
use crate::session::Ctx;

/// `swarm.reservedChangesets` (each value a comma-separated list), else the default.
fn reserved(ctx: &Ctx) -> Result<Reserved> {
    Reserved::parse(&ctx.store.config_all("swarm.reservedChangesets"))
}

/// The common rule, for the staged index and for a commit range.
pub struct Added<'a> {
    /// Names added (as spelled).
    pub added: &'a [String],
    /// Every changeset name the new state of the directory has.
    pub present: &'a [String],
    /// For range checks: the commit that added each name.
    pub commit_of: &'a dyn Fn(&str) -> Option<String>,
    /// The content (blob) added under each name, when known.
    pub blob_of: &'a dyn Fn(&str) -> Option<ObjectId>,
    /// The commits the new state is made from (HEAD and, for a merge or
    /// cherry-pick in progress, the commits being brought in; the range's
    /// head): read only when a lane branch holds the very same changeset.
    pub sources: &'a dyn Fn() -> Vec<ObjectId>,
    /// How to phrase the fix: staged (`git mv`) or committed (new commit).
    pub staged: bool,
}

/// Why an added name is refused within the commit itself: a reserved
/// pattern, or another name in the directory that differs only in case.
fn own_problems(dir: &str, name: &str, input: &Added<'_>, reserved: &Reserved) -> Vec<String> {
    let mut why = Vec::new();
    if let Some(p) = reserved.matching(name) {
        why.push(format!(
            "the name matches the reserved pattern `{p}` (a bot writes that name itself; never reuse it)"
        ));
    }
    let twins = input
        .present
        .iter()
        .filter(|o| *o != name && o.eq_ignore_ascii_case(name));
    for t in twins {
        if input.added.contains(t) {
            why.push(format!(
                "{dir}/{t} is added in the same commit and differs only in case"
            ));
        } else {
            why.push(format!(
                "{dir}/{t} already exists on this branch and differs only in case"
            ));
        }
    }
    why
}

/// Why an added name is refused because of other branches: the hits on the
/// base, and those on lane branches that do not hold this very changeset.
fn hit_problems(name: &str, base: &[&Hit], lanes: &[&Hit]) -> Vec<String> {
    let mut why = Vec::new();
    if let Some((l, spelled, _)) = base.first() {
        why.push(format!(
            "a changeset named {spelled} exists on the base branch {l}"
        ));
    }
    if !lanes.is_empty() {
        let mut shown: Vec<String> = lanes
            .iter()
            .take(3)
            .map(|(l, spelled, _)| {
                if spelled == name {
                    l.clone()
                } else {
                    format!("{l} (as {spelled})")
                }
            })
            .collect();
        if lanes.len() > 3 {
            shown.push(format!("and {} more", lanes.len() - 3));
        }
        why.push(format!(
            "a changeset with this name exists on lane branch {}",
            shown.join(", ")
        ));
    }
    why
}

/// Is the changeset `spelled` that lane branch `l` holds the very one
/// being added (same content, and come by git from the same commit), not
/// a duplicate written again? Into a branch that is no lane (the base),
/// the same content is enough: that is a lane's changeset squashed or
/// cherry-picked in, or one the lane inherited from the base. Into a lane
/// branch it must also have come through history: a merge base of the
/// lane and one of `sources` holds it (a merge or cherry-pick of that
/// lane, or both inherited it); a sibling lane that wrote the same text is
/// a duplicate all the same. Only reached on a name hit, so an ordinary
/// commit or a new unique name pays nothing for it.
fn same_changeset(
    ctx: &Ctx,
    scope: &Scope<'_>,
    others: &Others,
    sources: &mut Option<Vec<ObjectId>>,
    input: &Added<'_>,
    added_blob: ObjectId,
    (l, spelled): (&str, &str),
) -> Result<bool> {
    if others.blob_on(ctx, l, spelled) != Some(added_blob) {
        return Ok(false);
    }
    if scope.own_feature.is_none() {
        return Ok(true);
    }
    let sources = sources.get_or_insert_with(|| (input.sources)());
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    others.shares_history(l, &format!("{dir}/{spelled}"), added_blob, sources)
}

/// Every added name that breaks the rule, with why.
fn problems(
    ctx: &Ctx,
    scope: &Scope<'_>,
    input: &Added<'_>,
    reserved: &Reserved,
    others: &Others,
    hits: &BTreeMap<String, Vec<Hit>>,
) -> Result<Vec<(String, Vec<String>)>> {
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    let mut out = Vec::new();
    let mut sources = None;
    for name in input.added {
        let mut why = own_problems(dir, name, input, reserved);
        if let Some(list) = hits.get(&name.to_ascii_lowercase()) {
            let (base, lanes): (Vec<_>, Vec<_>) = list.iter().partition(|(_, _, b)| *b);
            let mut other_lanes = Vec::new();
            for hit in lanes {
                let (l, spelled, _) = hit;
                let same = match (input.blob_of)(name) {
                    Some(blob) => {
                        same_changeset(ctx, scope, others, &mut sources, input, blob, (l, spelled))?
                    }
                    None => false,
                };
                if !same {
                    other_lanes.push(hit);
                }
            }
            why.extend(hit_problems(name, &base, &other_lanes));
        }
        if !why.is_empty() {
            out.push((name.clone(), why));
        }
    }
    Ok(out)
}

/// The fix line of a refused name renamed to `proposed`.
fn fix_line(from: &str, to: &str, proposed: &str, free_on: &str, staged: bool) -> String {
    if staged {
        format!("git mv {from} {to}   ({proposed} is free on {free_on})")
    } else {
        format!(
            "rename it in a new commit: git mv {from} {to} && git commit   ({proposed} is free on {free_on})"
        )
    }
}

pub fn check_added(ctx: &Ctx, scope: &Scope<'_>, input: Added<'_>, f: &mut Findings) -> Result<()> {
    if input.added.is_empty() {
        return Ok(());
    }
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    let reserved = reserved(ctx)?;
    let mut others = Others::collect(ctx, scope)?;
    let targets: Vec<String> = input.added.iter().map(|n| n.to_ascii_lowercase()).collect();
    let hits = others.find(&targets)?;
    let problems = problems(ctx, scope, &input, &reserved, &others, &hits)?;
    if problems.is_empty() {
        return Ok(());
    }

    let mut taken = others.all_names();
    taken.extend(input.present.iter().map(|n| n.to_ascii_lowercase()));
    let free_on = others.describe_where();
    for (name, why) in problems {
        let proposed = propose(&name, scope.own_feature, &taken, &reserved);
        taken.insert(proposed.clone());
        let from = format!("{dir}/{name}");
        let to = format!("{dir}/{proposed}");
        f.violations.push(Violation {
            guard: CHANGESET_UNIQUE,
            fix: fix_line(&from, &to, &proposed, &free_on, input.staged),
            subject: from,
            commit: (input.commit_of)(&name),
            problem: why.join("; "),
            proposed: Some(proposed),
        });
    }
    Ok(())
}

/// pre-commit / `check --staged`.
pub fn check_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    let added = &staged.added;
    if added.is_empty() {
        return Ok(());
    }
    let (branch, base) = scope_for_head(ctx)?;
    let feature = branch.as_deref().and_then(|b| b.strip_prefix("feat/"));
    let scope = Scope {
        base,
        own_feature: feature,
        own_branch: branch.as_deref(),
    };
    check_added(
        ctx,
        &scope,
        Added {
            added,
            present: &staged.changesets,
            commit_of: &|_| None,
            blob_of: &|name| staged.changeset_blobs.get(name).copied(),
            sources: &|| {
                let mut from: Vec<ObjectId> = staged.head.into_iter().collect();
                from.extend(incoming_heads(&ctx.store.repo));
                from
            },
            staged: true,
        },
        f,
    )
}

/// The commits a merge, cherry-pick or squash merge in progress brings
/// into this worktree's next commit: `MERGE_HEAD` (one per line),
/// `CHERRY_PICK_HEAD`, and the `commit <id>` lines `git merge --squash`
/// writes into `SQUASH_MSG`. Unreadable files bring nothing.
fn incoming_heads(repo: &gix::Repository) -> Vec<ObjectId> {
    let dir = repo.git_dir();
    let mut out = Vec::new();
    for (file, prefix) in [
        ("MERGE_HEAD", ""),
        ("CHERRY_PICK_HEAD", ""),
        ("SQUASH_MSG", "commit "),
    ] {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            continue;
        };
        out.extend(text.lines().filter_map(|line| {
            let hex = line.strip_prefix(prefix)?.trim();
            ObjectId::from_hex(hex.as_bytes()).ok()
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_in_the_commit_itself() {
        let reserved = Reserved::parse(&[]).unwrap();
        let added = names(&["Fix.md", "fix.md", "pr-3-review.md"]);
        let present = names(&["Fix.md", "fix.md", "FIX.md", "pr-3-review.md"]);
        let input = Added {
            added: &added,
            present: &present,
            commit_of: &|_| None,
            blob_of: &|_| None,
            sources: &Vec::new,
            staged: true,
        };
        assert_eq!(
            own_problems("cs", "Fix.md", &input, &reserved),
            vec![
                "cs/fix.md is added in the same commit and differs only in case",
                "cs/FIX.md already exists on this branch and differs only in case",
            ]
        );
        assert_eq!(
            own_problems("cs", "pr-3-review.md", &input, &reserved),
            vec!["the name matches the reserved pattern `pr-<N>-review.md` (a bot writes that name itself; never reuse it)"]
        );
    }

    #[test]
    fn names_on_other_branches() {
        let hit = |l: &str, s: &str, b: bool| (l.to_string(), s.to_string(), b);
        let base = hit("main", "x.md", true);
        let lanes: Vec<Hit> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|l| {
                hit(
                    &format!("feat/{l}"),
                    if *l == "b" { "X.md" } else { "x.md" },
                    false,
                )
            })
            .collect();
        let lanes: Vec<&Hit> = lanes.iter().collect();
        assert_eq!(
            hit_problems("x.md", &[&base], &lanes[..2]),
            vec![
                "a changeset named x.md exists on the base branch main",
                "a changeset with this name exists on lane branch feat/a, feat/b (as X.md)",
            ]
        );
        assert_eq!(
            hit_problems("x.md", &[], &lanes),
            vec!["a changeset with this name exists on lane branch feat/a, feat/b (as X.md), feat/c, and 2 more"]
        );
        assert!(hit_problems("x.md", &[], &[]).is_empty());
    }

    #[test]
    fn fixes_rename_staged_or_committed_names() {
        assert_eq!(
            fix_line("cs/a.md", "cs/b.md", "b.md", "main", true),
            "git mv cs/a.md cs/b.md   (b.md is free on main)"
        );
        assert_eq!(
            fix_line("cs/a.md", "cs/b.md", "b.md", "main", false),
            "rename it in a new commit: git mv cs/a.md cs/b.md && git commit   (b.md is free on main)"
        );
    }
}
