//! Restoring a snapshot into a successor's checkout, in two steps: verify
//! the whole snapshot in memory against the packet and the checkout as it
//! is ([`verify`]: every path, raw mode, type, staged and working state,
//! content) and only then write ([`restore`]). A refusal writes nothing.
//! A restore leaves a marker in the checkout's git directory while it
//! writes, so that a run killed half-way is recognised by the next one,
//! which puts the checkout back to the head ([`undo`]) and starts again.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::contents::{mode_refusal, path_refusal, unsafe_entries, Snapshot};
use super::tree::{self, Changed, RawEntry};
use crate::error::{Code, Error, Result};
use crate::failpoint;
use crate::git::Git;
use crate::store::Store;

/// What the packet that carries a snapshot says of the checkout it leaves:
/// the head it sits on, the uncommitted paths and the paths whose content
/// it lists.
pub struct Expected<'a> {
    pub head: &'a str,
    pub uncommitted: &'a [String],
    pub content: Vec<&'a str>,
}

/// What the checkout would hold once the snapshot is restored, for the
/// caller to compare with the packet: the paths `git status` would list,
/// and what each of [`Expected::content`]'s paths then holds.
pub struct Predicted {
    pub dirty: Vec<String>,
    pub content: BTreeMap<String, String>,
}

/// A snapshot checked against its packet and a checkout: what restoring
/// it writes.
#[derive(Debug, Clone)]
pub struct Verified {
    commit: String,
    /// The head's tree to the working tree's: what is written or removed.
    work: Vec<Changed>,
    /// The staged tree (the index to set).
    staged_tree: String,
    head_tree: String,
    /// Paths added with `git add -N`.
    intent: Vec<String>,
}

fn unsafe_error(commit: &str, found: &mut Vec<(String, &'static str)>) -> Error {
    found.sort();
    found.dedup();
    let shown: Vec<String> = found
        .iter()
        .take(10)
        .map(|(p, why)| format!("{p:?}: {why}"))
        .collect();
    Error::new(
        Code::SnapshotUnsafe,
        format!(
            "the snapshot {} would write outside the checkout's files ({}); nothing was written or recorded",
            &commit[..commit.len().min(12)],
            shown.join("; ")
        ),
    )
    .hint("a snapshot only ever holds worktree paths: this one was made or changed by hand; ask its author to hand off again")
    .hint("or `git swarm accept --no-restore` to take the packet over without its files")
    .with_detail(serde_json::json!({
        "paths": found.iter().map(|(p, why)| serde_json::json!({"path": p, "reason": why})).collect::<Vec<_>>(),
    }))
}

/// The entries of tree `id`, as stored.
fn read_tree(store: &Store, id: &str) -> Result<Vec<RawEntry>> {
    let oid = gix::ObjectId::from_hex(id.as_bytes()).map_err(|e| Error::gix("bad tree id", e))?;
    let obj = store
        .repo
        .find_object(oid)
        .map_err(|e| Error::gix(format!("could not read tree {id}"), e))?;
    if obj.kind != gix::object::Kind::Tree {
        return Err(Error::new(
            Code::SnapshotUnsafe,
            format!("{id} in the snapshot is not a tree; nothing was written or recorded"),
        ));
    }
    tree::parse(&obj.data, oid.as_slice().len()).ok_or_else(|| {
        Error::new(
            Code::SnapshotUnsafe,
            format!("the tree {id} of the snapshot is malformed; nothing was written or recorded"),
        )
    })
}

/// Check `snap` of `packet` entirely, before anything is written into the
/// checkout at `workdir` (whose head is the packet's): its commit's first
/// parent is the head; no changed entry of its working or staged tree has
/// a path or a (raw) mode a snapshot may not write; no path is written
/// through a symlink or file of the checkout; and the checkout it would
/// leave lists the packet's uncommitted paths with the packet's content
/// (`matches`, the caller's comparison, refuses otherwise).
pub fn verify(
    store: &Store,
    workdir: &Path,
    expected: &Expected,
    snap: &Snapshot,
    matches: impl FnOnce(&Predicted) -> Result<()>,
) -> Result<Verified> {
    let commit = snap.commit.as_str();
    let trees = trees_of(&store.git, commit, expected.head)?;
    let mut bad = Vec::new();
    let mut read = |id: &str| read_tree(store, id);
    let (mut work, mut staged) = (Vec::new(), Vec::new());
    tree::diff(
        &mut read,
        Some(&trees.head),
        Some(&trees.work),
        "",
        &mut work,
        &mut bad,
    )?;
    tree::diff(
        &mut read,
        Some(&trees.head),
        Some(&trees.staged),
        "",
        &mut staged,
        &mut bad,
    )?;
    refuse_entries(&work, &staged, &mut bad);
    refuse_links_on_the_way(workdir, &work, &mut bad);
    if !bad.is_empty() {
        return Err(unsafe_error(commit, &mut bad));
    }
    let intent: Vec<String> = snap
        .paths
        .iter()
        .filter(|(_, p)| p.state == "intent-to-add")
        .map(|(path, _)| path.clone())
        .collect();
    matches(&predicted(&work, &staged, snap, expected))?;
    Ok(Verified {
        commit: commit.to_string(),
        work,
        staged_tree: trees.staged,
        head_tree: trees.head,
        intent,
    })
}

/// The trees of a snapshot commit: its working tree, its first parent's
/// (the head's) and its second parent's (the staged tree).
struct Trees {
    work: String,
    head: String,
    staged: String,
}

/// The trees of snapshot `commit`, refused (`SNAPSHOT_UNSAFE`) when it is
/// no snapshot commit or its first parent is not the packet's `head`.
fn trees_of(git: &Git, commit: &str, head: &str) -> Result<Trees> {
    let revs = git.run([
        "rev-parse",
        &format!("{commit}^1"),
        &format!("{commit}^{{tree}}"),
        &format!("{commit}^1^{{tree}}"),
        &format!("{commit}^2^{{tree}}"),
    ])?;
    let revs: Vec<&str> = revs.lines().collect();
    let [parent, work_tree, head_tree, staged_tree] = revs[..] else {
        return Err(unsafe_error(
            commit,
            &mut vec![(commit.to_string(), "not a snapshot commit")],
        ));
    };
    if parent != head {
        return Err(unsafe_error(
            commit,
            &mut vec![(
                commit.to_string(),
                "its first parent is not the packet's head",
            )],
        ));
    }
    Ok(Trees {
        work: work_tree.to_string(),
        head: head_tree.to_string(),
        staged: staged_tree.to_string(),
    })
}

/// Add to `bad` every changed entry of the working or staged tree whose
/// path or (raw) mode a snapshot may not write, or that another entry of
/// the same tree would be written through.
fn refuse_entries(work: &[Changed], staged: &[Changed], bad: &mut tree::Bad) {
    for c in work.iter().chain(staged) {
        if let Some(why) = path_refusal(&c.path) {
            bad.push((c.path.clone(), why));
        }
        if let Some((mode, _)) = &c.new {
            if let Some(why) = mode_refusal(mode) {
                bad.push((c.path.clone(), why));
            }
        }
    }
    for changes in [work, staged] {
        let written: Vec<(&str, &str)> = changes
            .iter()
            .filter_map(|c| c.new.as_ref().map(|(m, _)| (c.path.as_str(), m.as_str())))
            .collect();
        bad.extend(
            unsafe_entries(&written)
                .into_iter()
                .filter(|(_, why)| !why.starts_with("not a file"))
                .map(|(p, w)| (p.to_string(), w)),
        );
    }
}

/// Add to `bad` every path the working tree writes through a symlink or a
/// file of the checkout at `workdir` that the snapshot does not delete.
fn refuse_links_on_the_way(workdir: &Path, work: &[Changed], bad: &mut tree::Bad) {
    let deleted: BTreeSet<&str> = work
        .iter()
        .filter(|c| c.new.is_none())
        .map(|c| c.path.as_str())
        .collect();
    for c in work.iter().filter(|c| c.new.is_some()) {
        // A link or file on the way that the snapshot itself deletes first
        // is no danger (a directory that replaced it).
        let on_the_way = link_on_the_way(workdir, &c.path).and_then(|bad| {
            bad.strip_prefix(workdir)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        });
        if on_the_way.is_some_and(|rel| !deleted.contains(rel.as_str())) {
            bad.push((
                c.path.clone(),
                "a directory on its way is a symlink or a file here",
            ));
        }
    }
}

/// The paths `git status` lists once the snapshot is restored (a rename's
/// source, which status folds into the rename, left out), and what each
/// path of the packet's content list then holds in the working tree.
fn predicted(
    work: &[Changed],
    staged: &[Changed],
    snap: &Snapshot,
    expected: &Expected,
) -> Predicted {
    type Side = Option<(String, String)>;
    let w: BTreeMap<&str, (&Side, &Side)> = work
        .iter()
        .map(|c| (c.path.as_str(), (&c.old, &c.new)))
        .collect();
    let s: BTreeMap<&str, (&Side, &Side)> = staged
        .iter()
        .map(|c| (c.path.as_str(), (&c.old, &c.new)))
        .collect();
    let sources: BTreeSet<&str> = snap
        .paths
        .values()
        .filter_map(|p| p.from.as_deref())
        .collect();
    let mut dirty = Vec::new();
    for path in w.keys().chain(s.keys()).collect::<BTreeSet<_>>() {
        let head = w
            .get(path)
            .or_else(|| s.get(path))
            .map(|c| c.0)
            .cloned()
            .flatten();
        let in_work = w
            .get(path)
            .map(|c| c.1.clone())
            .unwrap_or_else(|| head.clone());
        let in_index = s
            .get(path)
            .map(|c| c.1.clone())
            .unwrap_or_else(|| head.clone());
        let listed = in_index != head || in_work != in_index;
        // A rename's source is folded into the rename by `git status`.
        let folded = sources.contains(path) && !expected.uncommitted.iter().any(|u| u == path);
        if listed && !folded {
            dirty.push(path.to_string());
        }
    }
    let content = expected
        .content
        .iter()
        .map(|&p| {
            let value = match (w.get(p), s.get(p)) {
                (Some((_, new)), _) => new.as_ref().map(|n| n.1.clone()),
                (None, Some((old, _))) => old.as_ref().map(|o| o.1.clone()),
                (None, None) => Some("unchanged".to_string()),
            };
            // A path gone where a directory of the snapshot now stands
            // reads as that directory (as `content_ids` says).
            let under = format!("{p}/");
            let dir = work
                .iter()
                .any(|c| c.new.is_some() && c.path.starts_with(&under));
            let gone = if dir { "directory" } else { "deleted" };
            (p.to_string(), value.unwrap_or_else(|| gone.to_string()))
        })
        .collect();
    Predicted { dirty, content }
}

/// Where a restore under way says so: the checkout's git directory.
fn marker(git: &Git) -> Result<PathBuf> {
    Ok(PathBuf::from(
        git.run([
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "swarm-restore",
        ])?
        .trim(),
    ))
}

/// Whether a restore of snapshot `commit` was under way here and did not
/// finish (the process was killed).
pub fn interrupted(git: &Git, commit: &str) -> Result<bool> {
    Ok(std::fs::read_to_string(marker(git)?).is_ok_and(|m| m.trim() == commit))
}

/// Write the verified snapshot into the checkout at `workdir`: every file
/// it changed (its bytes as stored, no filter), the ones it deleted
/// removed, the index set to its staged tree (intent-to-add entries
/// added again). Deletions first (deepest first, emptied directories
/// removed), then files, symlinks last, so no write goes through a link
/// this restore made; every parent is checked again just before each step.
pub fn restore(git: &Git, workdir: &Path, v: &Verified) -> Result<()> {
    let mark = marker(git)?;
    std::fs::write(&mark, format!("{}\n", v.commit))
        .map_err(|e| crate::fsutil::io_error(&mark, e))?;
    let mut order: Vec<&Changed> = v.work.iter().collect();
    order.sort_by_key(|c| {
        let rank = match &c.new {
            None => 0,
            Some((m, _)) if m == "120000" => 2,
            Some(_) => 1,
        };
        (
            rank,
            std::cmp::Reverse(if rank == 0 { c.path.len() } else { 0 }),
            c.path.clone(),
        )
    });
    for (i, c) in order.into_iter().enumerate() {
        if i == 1 {
            failpoint::point("accept:restore");
        }
        let full = workdir.join(&c.path);
        if let Some(bad) = link_on_the_way(workdir, &c.path) {
            return Err(Error::new(
                Code::SnapshotUnsafe,
                format!(
                    "the snapshot {} would write {:?} through {}, not a directory; stopped before writing it",
                    &v.commit[..v.commit.len().min(12)],
                    c.path,
                    bad.display()
                ),
            ));
        }
        match &c.new {
            None => {
                match std::fs::remove_file(&full) {
                    Err(e) if !gone(&e) => return Err(crate::fsutil::io_error(&full, e)),
                    _ => {}
                }
                remove_empty_parents(workdir, &full);
            }
            Some((mode, blob)) => write_file(git, &full, mode, blob)?,
        }
    }
    git.run(["read-tree", &v.staged_tree])?;
    if !v.intent.is_empty() {
        let mut args = vec!["add", "--intent-to-add", "--force", "--"];
        args.extend(v.intent.iter().map(String::as_str));
        git.run_env(args, &[("GIT_LITERAL_PATHSPECS", OsStr::new("1"))])?;
    }
    // Refresh the stat data, so that `status` compares by content.
    let _ = git.output(["update-index", "-q", "--refresh"])?;
    let _ = std::fs::remove_file(&mark);
    Ok(())
}

/// Put the checkout back as the head has it wherever the snapshot
/// changed it (after a refusal that came once the files were written, or
/// before restarting a restore a killed run began), and the index to the
/// head's tree.
pub fn undo(git: &Git, workdir: &Path, v: &Verified) -> Result<()> {
    let mut in_head = Vec::new();
    let mut order: Vec<&Changed> = v.work.iter().collect();
    order.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
    for c in order {
        let full = workdir.join(&c.path);
        if link_on_the_way(workdir, &c.path).is_none() {
            if let Ok(m) = std::fs::symlink_metadata(&full) {
                let removed = if m.is_dir() {
                    std::fs::remove_dir(&full)
                } else {
                    std::fs::remove_file(&full)
                };
                removed.map_err(|e| crate::fsutil::io_error(&full, e))?;
                remove_empty_parents(workdir, &full);
            }
        }
        if c.old.is_some() {
            in_head.push(c.path.as_str());
        }
    }
    git.run(["read-tree", &v.head_tree])?;
    if !in_head.is_empty() {
        let input: Vec<u8> = in_head
            .iter()
            .flat_map(|p| [p.as_bytes(), b"\0"].concat())
            .collect();
        git.run_env_input(
            [
                "checkout",
                "HEAD",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            &[("GIT_LITERAL_PATHSPECS", OsStr::new("1"))],
            &input,
        )?;
    }
    let _ = git.output(["update-index", "-q", "--refresh"])?;
    let _ = std::fs::remove_file(marker(git)?);
    Ok(())
}

fn gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Remove the directories a deletion left empty, up to `workdir`.
fn remove_empty_parents(workdir: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == workdir || !d.starts_with(workdir) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// The first directory on the way to `path` under `workdir` that exists as
/// something other than a directory (a symlink, a file), if any.
fn link_on_the_way(workdir: &Path, path: &str) -> Option<PathBuf> {
    let mut dir = workdir.to_path_buf();
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if !m.is_dir() => return Some(dir),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

fn write_file(git: &Git, full: &Path, mode: &str, blob: &str) -> Result<()> {
    let io = |e| crate::fsutil::io_error(full, e);
    let bytes = git.run_bytes(["cat-file", "blob", blob])?;
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    if let Ok(m) = std::fs::symlink_metadata(full) {
        // A directory the deletions emptied (a typechange) goes; one that
        // still holds something is not ours to remove.
        if m.is_dir() {
            std::fs::remove_dir(full).map_err(io)?;
        } else {
            std::fs::remove_file(full).map_err(io)?;
        }
    }
    if mode == "120000" {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            std::os::unix::fs::symlink(OsStr::from_bytes(&bytes), full).map_err(io)?;
        }
        return Ok(());
    }
    std::fs::write(full, &bytes).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perm = if mode == "100755" { 0o755 } else { 0o644 };
        std::fs::set_permissions(full, std::fs::Permissions::from_mode(perm)).map_err(io)?;
    }
    Ok(())
}
