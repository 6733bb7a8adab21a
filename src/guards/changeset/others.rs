//! The other branches a new changeset is compared with, read only at the
//! changeset directory and each distinct directory tree once, through the
//! name cache.

use std::collections::{BTreeMap, HashMap, HashSet};

use gix::ObjectId;

use super::cache::NameCache;
use super::lane_refs::lane_refs;
use super::scope::{branch_refs, Base, Refs, Scope};
use crate::error::Result;
use crate::guards::findings::{unreadable, CHANGESET_UNIQUE};
use crate::session::Ctx;

/// A name found elsewhere: (ref label, the name as spelled there, on the base?).
pub type Hit = (String, String, bool);

/// Shorten a ref name for messages: `refs/heads/feat/x` → `feat/x`.
fn label(refname: &str) -> String {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| refname.strip_prefix("refs/remotes/"))
        .unwrap_or(refname)
        .to_string()
}

/// The branch a lane ref is, as the scope names its own: `feat/x` for
/// `refs/heads/feat/x` and for `refs/remotes/<remote>/feat/x`.
fn lane_branch(refname: &str) -> &str {
    refname
        .strip_prefix("refs/heads/")
        .or_else(|| {
            let rest = refname.strip_prefix("refs/remotes/")?;
            rest.find("/feat/").map(|pos| &rest[pos + 1..])
        })
        .unwrap_or(refname)
}

/// Is `branch` (as [`lane_branch`] gives it) one of ours?
fn is_own(scope: &Scope<'_>, branch: &str) -> bool {
    scope
        .own_feature
        .is_some_and(|f| branch == format!("feat/{f}"))
        || scope.own_branch.is_some_and(|b| branch == b)
}

/// The directory trees of the refs a new changeset is compared against,
/// each distinct tree once, with the refs that have it.
pub struct Others {
    /// The repository (its clone has its own delta-base cache, as every
    /// handle of the store has: [`crate::store::delta_bases`]).
    repo: gix::Repository,
    /// dir tree id → (is base, ref labels)
    trees: Vec<(ObjectId, bool, Vec<String>)>,
    cache: NameCache,
    /// lane ref label → its commit, to look at its history on a hit.
    lane_tips: HashMap<String, ObjectId>,
    pub base_label: Option<String>,
    pub lane_refs: usize,
}

/// The base's refs to compare with (ref, commit), and its label.
fn base_refs(ctx: &Ctx, base: Option<&Base>) -> Result<(Refs, Option<String>)> {
    match base {
        None => Ok((Vec::new(), None)),
        Some(Base::Commit(label, id)) => Ok((vec![(label.clone(), *id)], Some(label.clone()))),
        Some(Base::Name(base, explicit)) => {
            let refs = branch_refs(ctx, base)?;
            if refs.is_empty() && *explicit {
                return Err(unreadable(
                    CHANGESET_UNIQUE,
                    format!("the base branch '{base}'"),
                    "no such branch here (fetch it, or fix swarm.base / the lane's base)",
                ));
            }
            let label = (!refs.is_empty()).then(|| base.clone());
            Ok((refs, label))
        }
    }
}

impl Others {
    pub fn collect(ctx: &Ctx, scope: &Scope<'_>) -> Result<Others> {
        let repo = &ctx.store.repo;
        let dir = ctx.settings.changeset_dir.trim_matches('/');
        let (base, base_label) = base_refs(ctx, scope.base.as_ref())?;
        let mut wanted: Vec<(String, ObjectId, bool)> =
            base.into_iter().map(|(r, id)| (r, id, true)).collect();
        let lanes = lane_refs(repo).map_err(|(prefix, e)| {
            unreadable(CHANGESET_UNIQUE, format!("the refs under {prefix}"), e)
        })?;
        let mut lane_count = 0;
        let mut lane_tips = HashMap::new();
        for (name, id) in lanes {
            if is_own(scope, lane_branch(&name)) {
                continue;
            }
            lane_tips.insert(label(&name), id);
            wanted.push((name, id, false));
            lane_count += 1;
        }
        let mut by_tree: HashMap<ObjectId, usize> = HashMap::new();
        let mut trees: Vec<(ObjectId, bool, Vec<String>)> = Vec::new();
        let mut cache = NameCache::load(repo, dir);
        for (name, commit, is_base) in wanted {
            let tree = cache.dir_tree(repo, commit).map_err(|e| {
                unreadable(CHANGESET_UNIQUE, format!("{dir}/ on {}", label(&name)), e)
            })?;
            let Some(tree) = tree else { continue };
            match by_tree.get(&tree) {
                Some(&i) => {
                    trees[i].1 |= is_base;
                    trees[i].2.push(label(&name));
                }
                None => {
                    by_tree.insert(tree, trees.len());
                    trees.push((tree, is_base, vec![label(&name)]));
                }
            }
        }
        Ok(Others {
            repo: ctx.store.repo.clone(),
            trees,
            cache,
            lane_tips,
            base_label,
            lane_refs: lane_count,
        })
    }

    /// For each lowercase target name: the (ref label, name as spelled there, on base?) hits.
    pub fn find(&mut self, targets: &[String]) -> Result<BTreeMap<String, Vec<Hit>>> {
        let repo = &self.repo;
        for (tree, _, labels) in &self.trees {
            self.cache.load_tree(repo, *tree).map_err(|e| {
                unreadable(
                    CHANGESET_UNIQUE,
                    format!("the changeset directory on {}", labels[0]),
                    e,
                )
            })?;
        }
        self.cache.save();
        let mut hits: BTreeMap<String, Vec<Hit>> = BTreeMap::new();
        for target in targets {
            let spellings = self.cache.spellings(target);
            if spellings.is_empty() {
                continue;
            }
            for (tree, is_base, labels) in &self.trees {
                if let Some(spelled) = self.cache.has_any(*tree, &spellings) {
                    let list = hits.entry(target.clone()).or_default();
                    for l in labels {
                        list.push((l.clone(), spelled.to_string(), *is_base));
                    }
                }
            }
        }
        Ok(hits)
    }

    /// The blob of changeset `spelled` on the ref labelled `label`, if any.
    pub fn blob_on(&self, ctx: &Ctx, label: &str, spelled: &str) -> Option<ObjectId> {
        let (tree, _, _) = self
            .trees
            .iter()
            .find(|(_, _, l)| l.iter().any(|x| x == label))?;
        let tree = ctx.store.repo.find_tree(*tree).ok()?;
        let entry = tree.lookup_entry_by_path(spelled).ok()??;
        entry.mode().is_blob().then(|| entry.object_id())
    }

    /// Does a merge base of lane `label` and one of `sources` hold `blob`
    /// at `path`: did the lane's copy come by history that the new state
    /// shares (a merge or cherry-pick of the lane, or both inherited it)?
    pub fn shares_history(
        &self,
        label: &str,
        path: &str,
        blob: ObjectId,
        sources: &[ObjectId],
    ) -> Result<bool> {
        let Some(&tip) = self.lane_tips.get(label) else {
            return Ok(false);
        };
        let unreadable_history =
            |e: String| unreadable(CHANGESET_UNIQUE, format!("the history of {label}"), e);
        for &source in sources {
            let base = match self.repo.merge_base(source, tip) {
                Ok(Some(base)) => base.detach(),
                // Unrelated histories share nothing.
                Ok(None) => continue,
                Err(e) => return Err(unreadable_history(e.to_string())),
            };
            let entry = self
                .repo
                .find_commit(base)
                .map_err(|e| unreadable_history(e.to_string()))?
                .tree()
                .map_err(|e| unreadable_history(e.to_string()))?
                .lookup_entry_by_path(path)
                .map_err(|e| unreadable_history(e.to_string()))?;
            if entry.is_some_and(|e| e.mode().is_blob() && e.object_id() == blob) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every changeset name (lowercase) on every compared ref: only read to propose a slug.
    pub fn all_names(&self) -> HashSet<String> {
        self.trees
            .iter()
            .flat_map(|(tree, _, _)| self.cache.names_of(*tree))
            .map(|n| n.to_ascii_lowercase())
            .collect()
    }

    /// Where a proposed name was found free, for the fix line.
    pub fn describe_where(&self) -> String {
        describe_where(self.base_label.as_deref(), self.lane_refs)
    }
}

fn describe_where(base_label: Option<&str>, lane_refs: usize) -> String {
    let lanes = format!(
        "{} other lane branch{}",
        lane_refs,
        if lane_refs == 1 { "" } else { "es" }
    );
    match base_label {
        Some(b) => format!("{b}, on {lanes} and in this commit"),
        None => format!("{lanes} and in this commit"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_refs_are_named_as_branches() {
        assert_eq!(label("refs/heads/feat/x"), "feat/x");
        assert_eq!(label("refs/remotes/origin/feat/x"), "origin/feat/x");
        assert_eq!(label("abc123"), "abc123");
        assert_eq!(lane_branch("refs/heads/feat/x"), "feat/x");
        assert_eq!(lane_branch("refs/remotes/origin/feat/x"), "feat/x");
        assert_eq!(lane_branch("refs/remotes/a/b/feat/x/y"), "feat/x/y");
    }

    #[test]
    fn our_own_branches_are_left_out() {
        let scope = Scope {
            base: None,
            own_feature: Some("auth"),
            own_branch: Some("feat/auth-2"),
        };
        assert!(is_own(&scope, "feat/auth"));
        assert!(is_own(&scope, "feat/auth-2"));
        assert!(!is_own(&scope, "feat/auth-3"));
        let none = Scope {
            base: None,
            own_feature: None,
            own_branch: None,
        };
        assert!(!is_own(&none, "feat/auth"));
    }

    #[test]
    fn where_a_name_is_free() {
        assert_eq!(
            describe_where(Some("main"), 1),
            "main, on 1 other lane branch and in this commit"
        );
        assert_eq!(
            describe_where(None, 3),
            "3 other lane branches and in this commit"
        );
    }
}
