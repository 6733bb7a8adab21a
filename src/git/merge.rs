//! An in-memory three-way merge with git's own messages
//! (`git merge-tree --write-tree --name-only -z`, git >= 2.38): the tree it
//! wrote (conflicted files carry their markers), the conflicted paths and,
//! per path, the kinds of conflict git named. Nothing in the worktree,
//! index or refs changes; only objects are written.

use super::Git;
use crate::error::Result;

/// What `git merge-tree` said about one merge.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MergeReport {
    /// The tree git wrote (with conflict markers in conflicted files).
    pub tree: String,
    /// Conflicted paths, sorted, each with the kinds git named
    /// (`contents`, `modify/delete`, `add/add`, `rename/delete`, …).
    pub conflicts: Vec<(String, Vec<String>)>,
    /// Paths git content-merged ("Auto-merging"): both sides changed them.
    pub auto_merged: Vec<String>,
}

impl Git {
    /// `git merge-tree --write-tree` of `ours` and `theirs`, with messages.
    pub fn merge_tree_report(&self, ours: &str, theirs: &str) -> Result<MergeReport> {
        super::version::require(super::version::Need::MergeTreeWriteTree)?;
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--messages",
            "-z",
            ours,
            theirs,
        ];
        let out = self.output(args)?;
        match out.status.code() {
            Some(0) | Some(1) => Ok(parse(&String::from_utf8_lossy(&out.stdout))),
            _ => Err(super::failed(&args, &out)),
        }
    }
}

/// Parse `--name-only -z` output: `<tree>\0<path>\0…\0\0` then messages,
/// each `<n>\0<path>\0…<type>\0<text>\0`. A clean merge has no paths.
pub fn parse(stdout: &str) -> MergeReport {
    let mut fields = stdout.split('\0');
    let tree = fields.next().unwrap_or_default().trim().to_string();
    let mut paths: Vec<String> = Vec::new();
    for f in fields.by_ref() {
        if f.is_empty() {
            break;
        }
        paths.push(f.to_string());
    }
    let mut kinds: std::collections::BTreeMap<String, Vec<String>> =
        paths.iter().map(|p| (p.clone(), Vec::new())).collect();
    let mut auto_merged: Vec<String> = Vec::new();
    while let Some(n) = fields.next().and_then(|f| f.trim().parse::<usize>().ok()) {
        let named: Vec<&str> = fields.by_ref().take(n).collect();
        let Some(kind) = fields.next() else { break };
        let _text = fields.next();
        if kind == "Auto-merging" {
            auto_merged.extend(named.iter().map(|p| p.to_string()));
            continue;
        }
        let Some(kind) = kind
            .strip_prefix("CONFLICT (")
            .and_then(|k| k.strip_suffix(')'))
        else {
            continue;
        };
        for p in named {
            if let Some(list) = kinds.get_mut(p) {
                if !list.iter().any(|k| k == kind) {
                    list.push(kind.to_string());
                }
            }
        }
    }
    auto_merged.sort();
    auto_merged.dedup();
    MergeReport {
        tree,
        conflicts: kinds.into_iter().collect(),
        auto_merged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_carry_the_kinds_git_named() {
        let out = "8fb9\0f\0g\0\0\x31\0f\0Auto-merging\0Auto-merging f\n\0\
                   1\0f\0CONFLICT (contents)\0CONFLICT (content): Merge conflict in f\n\0\
                   1\0g\0CONFLICT (modify/delete)\0g deleted in A\n\0";
        let r = parse(out);
        assert_eq!(r.tree, "8fb9");
        assert_eq!(r.auto_merged, vec!["f".to_string()]);
        assert_eq!(
            r.conflicts,
            vec![
                ("f".to_string(), vec!["contents".to_string()]),
                ("g".to_string(), vec!["modify/delete".to_string()]),
            ]
        );
    }

    #[test]
    fn a_clean_merge_has_no_conflicts() {
        let r = parse("abcd\0\0");
        assert_eq!(r.tree, "abcd");
        assert!(r.conflicts.is_empty());
        let r = parse("abcd\n");
        assert_eq!(r.tree, "abcd");
        assert!(r.conflicts.is_empty());
    }
}
