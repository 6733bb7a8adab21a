//! Taking and restoring a snapshot of a checkout's uncommitted work
//! (staged, unstaged, untracked-not-ignored), as `git stash create` does
//! plus the untracked files, without touching the checkout: the work is
//! staged in a temporary copy of the index (`GIT_INDEX_FILE`), never the
//! real one, and no file of the working tree is written. `handoff` takes
//! one; `accept` restores one into a clean successor checkout.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::{Code, Error, Result};
use crate::git::Git;
use crate::model::packet::snapshot::{
    check_size, state_of, unsafe_entries, unsafe_entry, Snapshot, SnapshotPath, DEFAULT_LIMIT,
};
use crate::secret;
use crate::store::Store;

/// A fixed date for the snapshot's commits, so that the same work on the
/// same head by the same author is the same commit (a re-run of an
/// interrupted handoff finds its packet unchanged).
const FIXED_DATE: &str = "@0 +0000";

/// `swarm.snapshotLimit` (bytes), else [`DEFAULT_LIMIT`].
pub fn limit(store: &Store) -> Result<u64> {
    match store.config("swarm.snapshotLimit") {
        None => Ok(DEFAULT_LIMIT),
        Some(v) => v.trim().parse().map_err(|_| {
            Error::new(
                Code::ConfigInvalid,
                format!("swarm.snapshotLimit is '{v}', not a number of bytes"),
            )
            .hint(
                "set it to a whole number of bytes, e.g. `git config swarm.snapshotLimit 20971520`",
            )
        }),
    }
}

/// Snapshot the uncommitted work of the checkout at `workdir`, leaving
/// out `exclude` (the plan file, the packet's export file): None when
/// there is none. Refuses a file that looks like it holds a credential
/// (`PACKET_SECRET`, path and line named) and work over `limit` bytes
/// (`SNAPSHOT_TOO_LARGE`), before writing any object.
pub fn take(
    git: &Git,
    workdir: &Path,
    exclude: &[String],
    author: &str,
    limit: u64,
) -> Result<Option<Snapshot>> {
    take_at(
        git,
        workdir,
        exclude,
        author,
        limit,
        FIXED_DATE,
        Code::PacketSecret,
    )
}

/// [`take`] with the commits dated `date` (git's date format, e.g.
/// `@1700000000 +0000`) and a credential refused with `secret`: a lane's
/// published snapshot (`lane snapshot`) is dated when it was taken, since
/// the newer of two versions wins.
pub fn take_at(
    git: &Git,
    workdir: &Path,
    exclude: &[String],
    author: &str,
    limit: u64,
    date: &str,
    secret: Code,
) -> Result<Option<Snapshot>> {
    let (entries, excluded): (Vec<_>, Vec<_>) = git
        .status_entries()?
        .into_iter()
        .partition(|e| !exclude.contains(&e.path));
    if entries.is_empty() {
        return Ok(None);
    }
    scan(git, workdir, &entries, limit, secret)?;
    // Only a path git would add is left out by name (naming an ignored
    // one makes `git add` fail).
    let excluded: Vec<String> = excluded.into_iter().map(|e| e.path).collect();
    let (tree, commit) = write(git, &excluded, author, date)?;
    let listed = ls_tree(git, &tree)?;
    let mut paths = BTreeMap::new();
    let mut size = 0;
    for e in &entries {
        let entry = match listed.get(&e.path) {
            Some((mode, blob, bytes)) => {
                size += bytes;
                SnapshotPath {
                    state: state_of(&e.xy).to_string(),
                    content: blob.clone(),
                    mode: Some(mode.clone()),
                    size: *bytes,
                    from: e.from.clone(),
                }
            }
            None => SnapshotPath {
                state: if e.xy.starts_with('R') {
                    "renamed".to_string()
                } else {
                    "deleted".to_string()
                },
                content: "deleted".to_string(),
                mode: None,
                size: 0,
                from: e.from.clone(),
            },
        };
        paths.insert(e.path.clone(), entry);
    }
    Ok(Some(Snapshot {
        commit,
        size,
        paths,
    }))
}

/// Refuse credentials in, and too many bytes of, the files to snapshot:
/// the working tree's version, and the staged one where it differs (the
/// snapshot's second parent carries the staged tree, so a credential
/// staged and then overwritten in the file would travel too).
fn scan(
    git: &Git,
    workdir: &Path,
    entries: &[crate::git::StatusEntry],
    limit: u64,
    secret: Code,
) -> Result<()> {
    let mut findings = Vec::new();
    let mut sizes = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        // The name travels too (the snapshot's tree), as does a symlink's
        // target (its blob). A name is not echoed: it is the secret.
        let name = format!("the name of uncommitted path #{} (`git status`)", i + 1);
        findings.extend(secret::scan_lines(&name, &e.path));
        let full = workdir.join(&e.path);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&full) {
                let target = target.to_string_lossy().into_owned();
                findings.extend(secret::scan_lines(
                    &format!("{} (symlink target)", e.path),
                    &target,
                ));
            }
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        sizes.push((e.path.clone(), meta.len()));
        if meta.len() > limit {
            continue;
        }
        let bytes = std::fs::read(&full).map_err(|err| crate::ctx::plan::io_error(&full, err))?;
        if bytes.contains(&0) {
            continue; // binary: no text credential to find
        }
        findings.extend(secret::scan_lines(
            &e.path,
            &String::from_utf8_lossy(&bytes),
        ));
    }
    for e in entries.iter().filter(|e| staged_differs(&e.xy)) {
        findings.extend(scan_staged(git, &e.path, limit)?);
    }
    if !findings.is_empty() {
        return Err(secret::refusal(secret, "the snapshot of the uncommitted work", &findings)
            .hint("or leave the file out of the snapshot: commit it elsewhere, delete it, or add it to .gitignore"));
    }
    let total = sizes.iter().map(|(_, s)| s).sum();
    sizes.sort_by_key(|s| std::cmp::Reverse(s.1));
    check_size(total, limit, &sizes)
}

/// Whether a path's staged content may differ from its working-tree file
/// (staged, then changed or deleted in the working tree).
fn staged_differs(xy: &str) -> bool {
    let mut c = xy.chars();
    let (x, y) = (c.next().unwrap_or(' '), c.next().unwrap_or(' '));
    !matches!(x, ' ' | '?' | '!' | 'D') && y != ' '
}

/// The credentials in the staged version of `path` (text, within `limit`).
fn scan_staged(git: &Git, path: &str, limit: u64) -> Result<Vec<secret::Finding>> {
    let spec = format!(":{path}");
    let size: u64 = git
        .run(["cat-file", "-s", &spec])?
        .trim()
        .parse()
        .unwrap_or(u64::MAX);
    if size > limit {
        return Ok(Vec::new());
    }
    let bytes = git.run_bytes(["cat-file", "blob", &spec])?;
    if bytes.contains(&0) {
        return Ok(Vec::new());
    }
    Ok(secret::scan_lines(
        &format!("{path} (staged)"),
        &String::from_utf8_lossy(&bytes),
    ))
}

/// Take away the temporary indexes snapshots killed mid-way left beside
/// `index` (no drop ran), once they are ten minutes old: a live snapshot
/// takes seconds.
fn remove_stale_temp_indexes(index: &Path) {
    let Some(dir) = index.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let old = std::time::Duration::from_secs(600);
    for e in entries.flatten() {
        let stale = e
            .file_name()
            .to_string_lossy()
            .starts_with("swarm-snapshot-index-")
            && e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > old);
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Removes the temporary index on drop.
struct TempIndex(PathBuf);

impl Drop for TempIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Write the snapshot's objects: the working tree's tree and the commit
/// (parents: the head, and a commit of the staged tree).
fn write(git: &Git, exclude: &[String], author: &str, date: &str) -> Result<(String, String)> {
    let real = PathBuf::from(
        git.run(["rev-parse", "--path-format=absolute", "--git-path", "index"])?
            .trim(),
    );
    remove_stale_temp_indexes(&real);
    let temp =
        TempIndex(real.with_file_name(format!("swarm-snapshot-index-{}", std::process::id())));
    if real.exists() {
        std::fs::copy(&real, &temp.0).map_err(|e| crate::ctx::plan::io_error(&temp.0, e))?;
    }
    let mut env = identity(author, date);
    env.push(("GIT_INDEX_FILE", temp.0.as_os_str()));
    let head = head(git)?;
    let staged = git.run_env(["write-tree"], &env)?.trim().to_string();
    let index_commit = git
        .run_env(
            [
                "commit-tree",
                &staged,
                "-p",
                &head,
                "-m",
                "swarm snapshot: staged",
            ],
            &env,
        )?
        .trim()
        .to_string();
    let mut add: Vec<String> = vec!["add".into(), "-A".into(), "--".into(), ":/".into()];
    add.extend(exclude.iter().map(|p| format!(":(top,exclude,literal){p}")));
    git.run_env(&add, &env)?;
    let tree = git.run_env(["write-tree"], &env)?.trim().to_string();
    let commit = git
        .run_env(
            [
                "commit-tree",
                &tree,
                "-p",
                &head,
                "-p",
                &index_commit,
                "-m",
                "swarm snapshot: working tree",
            ],
            &env,
        )?
        .trim()
        .to_string();
    Ok((tree, commit))
}

/// The snapshot commit's author and committer: `author`, at `date`.
fn identity<'a>(author: &'a str, date: &'a str) -> Vec<(&'static str, &'a OsStr)> {
    vec![
        ("GIT_AUTHOR_NAME", OsStr::new(author)),
        ("GIT_AUTHOR_EMAIL", OsStr::new(author)),
        ("GIT_COMMITTER_NAME", OsStr::new(author)),
        ("GIT_COMMITTER_EMAIL", OsStr::new(author)),
        ("GIT_AUTHOR_DATE", OsStr::new(date)),
        ("GIT_COMMITTER_DATE", OsStr::new(date)),
    ]
}

fn head(git: &Git) -> Result<String> {
    Ok(git
        .run(["rev-parse", "--verify", "HEAD"])?
        .trim()
        .to_string())
}

/// The snapshot of a checkout with nothing uncommitted: a commit of the
/// head's own tree on the head, dated `date`, so that "nothing
/// uncommitted" can be published in place of an earlier snapshot.
pub fn clean_at(git: &Git, author: &str, date: &str) -> Result<String> {
    let head = head(git)?;
    let tree = format!("{head}^{{tree}}");
    let env = identity(author, date);
    Ok(git
        .run_env(
            [
                "commit-tree",
                &tree,
                "-p",
                &head,
                "-m",
                "swarm snapshot: nothing uncommitted",
            ],
            &env,
        )?
        .trim()
        .to_string())
}

/// Every file of `tree`: path → (mode, blob id, size).
fn ls_tree(git: &Git, tree: &str) -> Result<BTreeMap<String, (String, String, u64)>> {
    let out = git.run(["ls-tree", "-r", "-l", "-z", "--full-tree", tree])?;
    let mut map = BTreeMap::new();
    for entry in out.split('\0').filter(|e| !e.is_empty()) {
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let f: Vec<&str> = meta.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        map.insert(
            path.to_string(),
            (
                f[0].to_string(),
                f[2].to_string(),
                f[3].parse().unwrap_or(0),
            ),
        );
    }
    Ok(map)
}

/// Restore `snap` into the clean checkout of `git` at `workdir`, whose
/// head is the snapshot's first parent: write every file the snapshot
/// changed (content and mode), remove the ones it deleted, and set the
/// index to the snapshot's staged tree. The caller checked the checkout
/// is clean, so nothing is overwritten.
pub fn restore(git: &Git, workdir: &Path, snap: &Snapshot) -> Result<()> {
    let commit = &snap.commit;
    let out = git.run([
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        &format!("{commit}^1"),
        commit,
    ])?;
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let f: Vec<&str> = meta.trim_start_matches(':').split_whitespace().collect();
        if f.len() >= 5 {
            changes.push((f[1], f[3], f[4], path));
        }
    }
    refuse_unsafe(git, workdir, commit, &changes)?;
    // Deletions first (deepest first: a directory that became a file or
    // link is emptied before it is replaced), then files, symlinks last, so
    // no write can go through a link this restore made; and every parent is
    // checked again just before each step, as the checkout is then.
    changes.sort_by_key(|(mode, _, status, path)| {
        let rank = match (*status, *mode) {
            ("D", _) => 0,
            (_, "120000") => 2,
            _ => 1,
        };
        (
            rank,
            std::cmp::Reverse(if rank == 0 { path.len() } else { 0 }),
            *path,
        )
    });
    for (mode, blob, status, path) in changes {
        let full = workdir.join(path);
        if let Some(bad) = link_on_the_way(workdir, path) {
            return Err(Error::new(
                Code::SnapshotUnsafe,
                format!(
                    "the snapshot {} would write {path:?} through {}, not a directory; stopped before writing it",
                    &commit[..commit.len().min(12)],
                    bad.display()
                ),
            )
            .hint("nothing was recorded; `git status` shows what was restored before this: discard it with `git checkout -- . && git clean -fd`"));
        }
        if status == "D" {
            match std::fs::remove_file(&full) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(crate::ctx::plan::io_error(&full, e))
                }
                _ => {}
            }
            continue;
        }
        write_file(git, &full, mode, blob)?;
    }
    let staged = git.run(["rev-parse", &format!("{commit}^2^{{tree}}")])?;
    let head_tree = git.run(["rev-parse", &format!("{commit}^1^{{tree}}")])?;
    if staged != head_tree {
        git.run(["read-tree", staged.trim()])?;
    }
    // Refresh the stat data, so that `status` compares by content.
    let _ = git.output(["update-index", "-q", "--refresh"])?;
    Ok(())
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
    let io = |e| crate::ctx::plan::io_error(full, e);
    if mode == "160000" {
        return Ok(()); // a submodule: not ours to restore
    }
    let bytes = git.run_bytes(["cat-file", "blob", blob])?;
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    if std::fs::symlink_metadata(full).is_ok() {
        std::fs::remove_file(full).map_err(io)?;
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

/// Refuse, before anything is written, a snapshot that would write into
/// `.git`, out of the worktree or through a symlink: every entry of its
/// tree and of its staged tree by [`unsafe_entries`], and every path to
/// write against the checkout as it is (no directory on the way may be a
/// symlink or a file). A snapshot comes from the remote: whoever can push
/// there must not be able to plant a hook through `accept`.
fn refuse_unsafe(
    git: &Git,
    workdir: &Path,
    commit: &str,
    changes: &[(&str, &str, &str, &str)],
) -> Result<()> {
    let mut found: Vec<(String, &'static str)> = Vec::new();
    for tree in [commit.to_string(), format!("{commit}^2")] {
        let listed = git.run(["ls-tree", "-r", "-z", "--full-tree", &tree])?;
        let entries: Vec<(&str, &str)> = listed
            .split('\0')
            .filter_map(|line| {
                let (meta, path) = line.split_once('\t')?;
                Some((path, meta.split(' ').next()?))
            })
            .collect();
        found.extend(
            unsafe_entries(&entries)
                .into_iter()
                .map(|(p, w)| (p.to_string(), w)),
        );
    }
    let deleted: std::collections::BTreeSet<&str> =
        changes.iter().filter(|c| c.2 == "D").map(|c| c.3).collect();
    for (mode, _, status, path) in changes {
        // A deletion has no new mode; its path must be safe all the same.
        let mode = if *status == "D" { "100644" } else { mode };
        if let Some(why) = unsafe_entry(path, mode) {
            found.push((path.to_string(), why));
            continue;
        }
        // A link or file on the way that the snapshot itself deletes first
        // is no danger (a directory that replaced it); `restore` checks
        // every parent again just before each write.
        let on_the_way = link_on_the_way(workdir, path).and_then(|bad| {
            bad.strip_prefix(workdir)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        });
        if on_the_way.is_some_and(|rel| !deleted.contains(rel.as_str())) {
            found.push((
                path.to_string(),
                "a directory on its way is a symlink or a file here",
            ));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    found.dedup();
    let shown: Vec<String> = found
        .iter()
        .take(10)
        .map(|(p, why)| format!("{p:?}: {why}"))
        .collect();
    Err(Error::new(
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
    })))
}

/// Whether the snapshot's commit is in this repository.
pub fn present(git: &Git, snap: &Snapshot) -> Result<bool> {
    Ok(git
        .output(["cat-file", "-e", &format!("{}^{{commit}}", snap.commit)])?
        .status
        .success())
}
