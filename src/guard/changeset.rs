//! changeset-unique: a changeset added under `swarm.changesetDir` must not
//! share its name (case-insensitively: macOS and Windows checkouts collide
//! on case) with one on the base branch, on any other lane branch (local
//! `feat/*` or remote-tracking `<remote>/feat/*`), or with another one in
//! the same commit, and must not match a reserved bot pattern (default
//! `pr-<N>-review.md`). Other branches are read only at that directory, each
//! distinct directory tree once. A violation proposes a slug that is free
//! everywhere it was checked.

use std::collections::{BTreeMap, HashMap, HashSet};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use super::cache::NameCache;
use super::staged::Staged;
use super::{unreadable, Findings, Violation, CHANGESET_UNIQUE};
use crate::ctx::Ctx;
use crate::error::Result;

pub const DEFAULT_RESERVED: &str = "pr-<N>-review.md";

/// `*.md` (any case) except README.md.
pub fn is_changeset_name(name: &str) -> bool {
    !name.contains('/')
        && name.len() > 3
        && name[name.len() - 3..].eq_ignore_ascii_case(".md")
        && !name.eq_ignore_ascii_case("readme.md")
}

type GixResult<T> = std::result::Result<T, String>;

/// The id of the tree at `dir` in `commit`'s tree, if there is one.
pub fn dir_tree(
    repo: &gix::Repository,
    commit: ObjectId,
    dir: &str,
) -> GixResult<Option<ObjectId>> {
    let commit = repo
        .find_object(commit)
        .map_err(|e| e.to_string())?
        .peel_to_commit()
        .map_err(|e| e.to_string())?;
    let tree = commit.tree().map_err(|e| e.to_string())?;
    let entry = tree.lookup_entry_by_path(dir).map_err(|e| e.to_string())?;
    Ok(entry.filter(|e| e.mode().is_tree()).map(|e| e.object_id()))
}

/// The changeset names directly in a directory tree.
pub fn names_in(repo: &gix::Repository, tree: ObjectId) -> GixResult<Vec<String>> {
    let tree = repo.find_tree(tree).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for entry in tree.iter() {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.mode().is_tree() {
            continue;
        }
        if let Ok(name) = entry.filename().to_str() {
            if is_changeset_name(name) {
                out.push(name.to_string());
            }
        }
    }
    Ok(out)
}

/// Reserved name patterns: `<N>` is any number, `*` any text; case-insensitive.
pub struct Reserved {
    patterns: Vec<(String, regex::Regex)>,
}

impl Reserved {
    /// `swarm.reservedChangesets` (each value a comma-separated list), else the default.
    pub fn load(ctx: &Ctx) -> Result<Reserved> {
        Self::parse(&ctx.store.config_all("swarm.reservedChangesets"))
    }

    /// The patterns of the given config values; no values means the default.
    pub fn parse(values: &[String]) -> Result<Reserved> {
        let default = [DEFAULT_RESERVED.to_string()];
        let values = if values.is_empty() { &default } else { values };
        let mut patterns = Vec::new();
        for pattern in values.iter().flat_map(|v| v.split(',')) {
            let pattern = pattern.trim();
            if pattern.is_empty() {
                continue;
            }
            let mut re = String::from("(?i)^");
            let mut rest = pattern;
            while !rest.is_empty() {
                if let Some(r) = rest.strip_prefix("<N>") {
                    re.push_str("[0-9]+");
                    rest = r;
                } else if let Some(r) = rest.strip_prefix('*') {
                    re.push_str(".*");
                    rest = r;
                } else {
                    let c = rest.chars().next().expect("non-empty");
                    re.push_str(&regex::escape(&c.to_string()));
                    rest = &rest[c.len_utf8()..];
                }
            }
            re.push('$');
            let compiled = regex::Regex::new(&re).map_err(|e| {
                unreadable(
                    CHANGESET_UNIQUE,
                    format!("swarm.reservedChangesets pattern '{pattern}'"),
                    e,
                )
            })?;
            patterns.push((pattern.to_string(), compiled));
        }
        Ok(Reserved { patterns })
    }

    pub fn matching(&self, name: &str) -> Option<&str> {
        self.patterns
            .iter()
            .find(|(_, re)| re.is_match(name))
            .map(|(p, _)| p.as_str())
    }
}

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

/// The directory trees of the refs a new changeset is compared against,
/// each distinct tree once, with the refs that have it.
pub struct Others {
    /// The repository, with a delta-base cache for reading many trees.
    repo: gix::Repository,
    /// dir tree id → (is base, ref labels)
    trees: Vec<(ObjectId, bool, Vec<String>)>,
    cache: NameCache,
    pub base_label: Option<String>,
    pub lane_refs: usize,
}

/// The base branch a new changeset is compared with.
pub enum Base {
    /// A branch name (`main`, `origin/main`); `true` when configured rather
    /// than defaulted (a configured base that is missing fails the guard).
    Name(String, bool),
    /// A commit given directly (`check --range BASE..HEAD`), with its label.
    Commit(String, ObjectId),
}

/// Which refs to compare against.
pub struct Scope<'a> {
    pub base: Option<Base>,
    /// The lane feature whose branches are ours (excluded), if any.
    pub own_feature: Option<&'a str>,
    /// A branch name that is ours and excluded (the current branch).
    pub own_branch: Option<&'a str>,
}

/// The refs a base branch name can be here: `refs/heads/<base>`,
/// `refs/remotes/<base>` and `refs/remotes/<remote>/<base>` (or the full
/// ref name given), with their commits; empty when it is no branch here.
fn branch_refs(ctx: &Ctx, base: &str) -> Result<Vec<(String, ObjectId)>> {
    let mut candidates = vec![];
    if base.starts_with("refs/") {
        candidates.push(base.to_string());
    } else {
        candidates.push(format!("refs/heads/{base}"));
        candidates.push(format!("refs/remotes/{base}"));
        if let Some(remote) = ctx.settings.remote.as_deref() {
            candidates.push(format!("refs/remotes/{remote}/{base}"));
        }
    }
    let mut out = Vec::new();
    for c in candidates {
        // `HEAD~1` and the like cannot be ref names: no branch.
        if gix::refs::FullName::try_from(c.as_str()).is_err() {
            continue;
        }
        let id = ctx
            .store
            .ref_target(&c)
            .map_err(|e| unreadable(CHANGESET_UNIQUE, format!("the base ref {c}"), e.message))?;
        if let Some(id) = id {
            out.push((c, id));
        }
    }
    Ok(out)
}

impl Others {
    pub fn collect(ctx: &Ctx, scope: &Scope<'_>) -> Result<Others> {
        let mut owned = ctx.store.repo.clone();
        super::cache::DeltaBases::install(&mut owned);
        let repo = &owned;
        let dir = ctx.settings.changeset_dir.trim_matches('/');
        let mut wanted: Vec<(String, ObjectId, bool)> = Vec::new();
        let mut base_label = None;
        if let Some(Base::Commit(label, id)) = &scope.base {
            wanted.push((label.clone(), *id, true));
            base_label = Some(label.clone());
        }
        if let Some(Base::Name(base, explicit)) = &scope.base {
            for (c, id) in branch_refs(ctx, base)? {
                wanted.push((c, id, true));
            }
            if wanted.is_empty() && *explicit {
                return Err(unreadable(
                    CHANGESET_UNIQUE,
                    format!("the base branch '{base}'"),
                    "no such branch here (fetch it, or fix swarm.base / the lane's base)",
                ));
            }
            if !wanted.is_empty() {
                base_label = Some(base.clone());
            }
        }
        let is_own = |rest: &str| {
            scope
                .own_feature
                .is_some_and(|f| rest == format!("feat/{f}"))
                || scope.own_branch.is_some_and(|b| rest == b)
        };
        let mut lane_refs = 0;
        let lanes = super::lane_refs::lane_refs(repo).map_err(|(prefix, e)| {
            unreadable(CHANGESET_UNIQUE, format!("the refs under {prefix}"), e)
        })?;
        for (name, id) in lanes {
            let rest = name
                .strip_prefix("refs/heads/")
                .or_else(|| {
                    let rest = name.strip_prefix("refs/remotes/")?;
                    rest.find("/feat/").map(|pos| &rest[pos + 1..])
                })
                .unwrap_or(&name);
            if is_own(rest) {
                continue;
            }
            wanted.push((name, id, false));
            lane_refs += 1;
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
            repo: owned,
            trees,
            cache,
            base_label,
            lane_refs,
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
    fn blob_on(&self, ctx: &Ctx, label: &str, spelled: &str) -> Option<ObjectId> {
        let (tree, _, _) = self
            .trees
            .iter()
            .find(|(_, _, l)| l.iter().any(|x| x == label))?;
        let tree = ctx.store.repo.find_tree(*tree).ok()?;
        let entry = tree.lookup_entry_by_path(spelled).ok()??;
        entry.mode().is_blob().then(|| entry.object_id())
    }

    /// Every changeset name (lowercase) on every compared ref: only read to propose a slug.
    pub fn all_names(&self) -> HashSet<String> {
        self.trees
            .iter()
            .flat_map(|(tree, _, _)| self.cache.names_of(*tree))
            .map(|n| n.to_ascii_lowercase())
            .collect()
    }

    fn describe_where(&self) -> String {
        let lanes = format!(
            "{} other lane branch{}",
            self.lane_refs,
            if self.lane_refs == 1 { "" } else { "es" }
        );
        match &self.base_label {
            Some(b) => format!("{b}, on {lanes} and in this commit"),
            None => format!("{lanes} and in this commit"),
        }
    }
}

/// A name for a new changeset that is free in `taken` (lowercase) and not reserved.
pub fn propose(
    stem_from: &str,
    feature: Option<&str>,
    taken: &HashSet<String>,
    reserved: &Reserved,
) -> String {
    let stem = stem_from
        .get(..stem_from.len().saturating_sub(3))
        .unwrap_or(stem_from)
        .to_ascii_lowercase();
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let start = match feature {
        _ if reserved.matching(stem_from).is_some() => match feature {
            Some(f) => format!("{f}-review"),
            None => "review".to_string(),
        },
        Some(f) if !stem.contains(f) => format!("{f}-{stem}"),
        _ => stem,
    };
    let free = |name: &str| !taken.contains(name) && reserved.matching(name).is_none();
    let first = format!("{start}.md");
    if free(&first) {
        return first;
    }
    (2..)
        .map(|n| format!("{start}-{n}.md"))
        .find(|c| free(c))
        .expect("an unbounded sequence has a free name")
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
    /// How to phrase the fix: staged (`git mv`) or committed (new commit).
    pub staged: bool,
}

pub fn check_added(ctx: &Ctx, scope: &Scope<'_>, input: Added<'_>, f: &mut Findings) -> Result<()> {
    if input.added.is_empty() {
        return Ok(());
    }
    let dir = ctx.settings.changeset_dir.trim_matches('/');
    let reserved = Reserved::load(ctx)?;
    let mut others = Others::collect(ctx, scope)?;
    let targets: Vec<String> = input.added.iter().map(|n| n.to_ascii_lowercase()).collect();
    let hits = others.find(&targets)?;

    let mut problems: Vec<(String, Vec<String>)> = Vec::new();
    for name in input.added {
        let lower = name.to_ascii_lowercase();
        let mut why = Vec::new();
        if let Some(p) = reserved.matching(name) {
            why.push(format!(
                "the name matches the reserved pattern `{p}` (a bot writes that name itself; never reuse it)"
            ));
        }
        let twins: Vec<&String> = input
            .present
            .iter()
            .filter(|o| *o != name && o.eq_ignore_ascii_case(name))
            .collect();
        for t in twins {
            let other_added = input.added.contains(t);
            if other_added {
                why.push(format!(
                    "{dir}/{t} is added in the same commit and differs only in case"
                ));
            } else {
                why.push(format!(
                    "{dir}/{t} already exists on this branch and differs only in case"
                ));
            }
        }
        if let Some(list) = hits.get(&lower) {
            let (base, lanes): (Vec<_>, Vec<_>) = list.iter().partition(|(_, _, b)| *b);
            // The very same changeset (same name, same content) on a lane
            // branch is that lane's own, being brought in (squash, merge,
            // cherry-pick, rebase), or one the lane inherited from the base:
            // not a duplicate.
            let added_blob = (input.blob_of)(name);
            let lanes: Vec<_> = lanes
                .into_iter()
                .filter(|(l, spelled, _)| {
                    added_blob.is_none() || others.blob_on(ctx, l, spelled) != added_blob
                })
                .collect();
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
        }
        if !why.is_empty() {
            problems.push((name.clone(), why));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }

    let mut taken = others.all_names();
    taken.extend(input.present.iter().map(|n| n.to_ascii_lowercase()));
    let feature = scope.own_feature;
    for (name, why) in problems {
        let proposed = propose(&name, feature, &taken, &reserved);
        taken.insert(proposed.clone());
        let from = format!("{dir}/{name}");
        let to = format!("{dir}/{proposed}");
        let fix = if input.staged {
            format!(
                "git mv {from} {to}   ({proposed} is free on {})",
                others.describe_where()
            )
        } else {
            format!(
                "rename it in a new commit: git mv {from} {to} && git commit   ({proposed} is free on {})",
                others.describe_where()
            )
        };
        f.violations.push(Violation {
            guard: CHANGESET_UNIQUE,
            subject: from,
            commit: (input.commit_of)(&name),
            problem: why.join("; "),
            fix,
            proposed: Some(proposed),
        });
    }
    Ok(())
}

/// The scope for a commit in this worktree: the lane's base when HEAD is a
/// lane branch with a record, else the configured default base.
pub fn scope_for_head(ctx: &Ctx) -> Result<(Option<String>, Option<Base>)> {
    let head_name = ctx
        .store
        .repo
        .head_name()
        .map_err(|e| unreadable(CHANGESET_UNIQUE, "HEAD", e))?
        .map(|n| n.as_bstr().to_string());
    let branch = head_name
        .as_deref()
        .and_then(|n| n.strip_prefix("refs/heads/"))
        .map(str::to_string);
    let feature = branch
        .as_deref()
        .and_then(|b| b.strip_prefix("feat/"))
        .map(str::to_string);
    if let Some(f) = &feature {
        if crate::names::is_valid_name(f) {
            let lane = crate::lane::load(&ctx.store, f).map_err(|e| {
                unreadable(
                    CHANGESET_UNIQUE,
                    format!("the lane record of {f}"),
                    e.message,
                )
            })?;
            if let Some(lane) = lane {
                return Ok((branch, Some(lane_base(ctx, &lane.record)?)));
            }
        }
    }
    // `swarm.base` is explicit; the remote's default branch or `main` is a guess.
    let explicit = ctx.settings.base.is_some();
    let base = crate::lane::default_base(ctx);
    if explicit && branch_refs(ctx, &base)?.is_empty() {
        // `swarm.base` set to a tag or a commit rather than a branch.
        if let Ok(id) = ctx.store.repo.rev_parse_single(base.as_str()) {
            return Ok((branch, Some(Base::Commit(base, id.detach()))));
        }
    }
    Ok((branch, Some(Base::Name(base, explicit))))
}

/// The base a lane's changesets are compared with. `lane new --base` takes
/// any revision: when the recorded base is a branch here, its current tip
/// (the branch moves, and so do the names on it); when it is a commit, a tag
/// or an expression such as `HEAD~1` (which would now mean something else),
/// the commit the lane started from (`base_commit` in its record). A branch
/// that is missing here fails the guard closed, as before.
fn lane_base(ctx: &Ctx, record: &crate::lane::LaneRecord) -> Result<Base> {
    let base = &record.base;
    if !branch_refs(ctx, base)?.is_empty() {
        return Ok(Base::Name(base.clone(), true));
    }
    let Ok(start) = ObjectId::from_hex(record.base_commit.as_bytes()) else {
        return Ok(Base::Name(base.clone(), true));
    };
    let lower = base.to_ascii_lowercase();
    let is_sha = lower.len() >= 4
        && lower.bytes().all(|c| c.is_ascii_hexdigit())
        && record.base_commit.starts_with(&lower);
    // A revision expression may not resolve any more (`HEAD~1` on a lane
    // of one commit), so its syntax counts too.
    let is_revision = is_sha
        || base.contains(['~', '^', ':'])
        || base.contains("@{")
        || ctx.store.repo.rev_parse_single(base.as_str()).is_ok();
    if !is_revision {
        return Ok(Base::Name(base.clone(), true));
    }
    let short = &record.base_commit[..record.base_commit.len().min(12)];
    let label = if is_sha {
        short.to_string()
    } else {
        format!("{base} ({short})")
    };
    Ok(Base::Commit(label, start))
}

/// pre-commit / `check --staged`.
pub fn check_staged(ctx: &Ctx, staged: &Staged, f: &mut Findings) -> Result<()> {
    let added = staged.added_changesets();
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
            added: &added,
            present: &staged.changesets,
            commit_of: &|_| None,
            blob_of: &|name| staged.changeset_blobs.get(name).copied(),
            staged: true,
        },
        f,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserved(p: &[&str]) -> Reserved {
        let values: Vec<String> = p.iter().map(|p| p.to_string()).collect();
        Reserved::parse(&values).unwrap()
    }

    #[test]
    fn changeset_names() {
        assert!(is_changeset_name("fix-auth.md"));
        assert!(is_changeset_name("Fix.MD"));
        assert!(!is_changeset_name("README.md"));
        assert!(!is_changeset_name("readme.MD"));
        assert!(!is_changeset_name("config.json"));
        assert!(!is_changeset_name("sub/x.md"));
    }

    #[test]
    fn proposals_avoid_taken_and_reserved_names() {
        let r = reserved(&["pr-<N>-review.md"]);
        let taken: HashSet<String> = ["auth-fix.md", "auth-fix-2.md", "auth-review.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(propose("fix.md", Some("auth"), &taken, &r), "auth-fix-3.md");
        assert_eq!(
            propose("pr-147-review.md", Some("auth"), &taken, &r),
            "auth-review-2.md"
        );
        assert_eq!(
            propose("Auth-Login.md", Some("auth"), &taken, &r),
            "auth-login.md"
        );
        assert!(r.matching("PR-12-Review.md").is_some());
        assert!(r.matching("pr-x-review.md").is_none());
    }

    #[test]
    fn reserved_patterns_from_config_values() {
        // No value: the default.
        let r = reserved(&[]);
        assert_eq!(r.matching("pr-7-review.md"), Some(DEFAULT_RESERVED));
        // Comma lists across several values; `<N>` digits, `*` any text,
        // everything else literal (a `.` is not "any character").
        let r = reserved(&["pr-<N>-review.md, bot-*.md", "", "exact.md,"]);
        assert_eq!(r.matching("BOT-x.md"), Some("bot-*.md"));
        assert_eq!(r.matching("bot-.md"), Some("bot-*.md"));
        assert_eq!(r.matching("pr-12-review.md"), Some("pr-<N>-review.md"));
        assert_eq!(r.matching("exact.md"), Some("exact.md"));
        assert!(r.matching("exactXmd").is_none());
        assert!(r.matching("my-bot-x.md").is_none());
        assert!(r.matching("pr--review.md").is_none());
        // A custom value replaces the default.
        assert!(reserved(&["bot-*.md"]).matching("pr-1-review.md").is_none());
    }
}
