//! The changeset directory (`swarm.changesetDir`) in a commit: the id of
//! its tree, and the changeset names directly in such a tree. Read by the
//! staged-changes reader, the name cache and `check --range` alike.

use gix::bstr::ByteSlice;
use gix::ObjectId;

use super::name::is_changeset_name;

/// A gix failure, as its message (the caller names what it was reading).
pub type GixResult<T> = std::result::Result<T, String>;

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
