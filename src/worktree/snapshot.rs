//! Taking and restoring a snapshot of a checkout's uncommitted work
//! (staged, unstaged, untracked-not-ignored), as `git stash create` does
//! plus the untracked files, without touching the checkout: the work is
//! staged in a temporary copy of the index (`GIT_INDEX_FILE`), never the
//! real one, and no file of the working tree is written. `handoff` takes
//! one; `accept` restores one into a clean successor checkout
//! ([`restore`]).
//!
//! The snapshot holds the working tree's bytes as they are (hashed without
//! filters, so `eol`/`text`/filter attributes change nothing) and the
//! index's blobs as they are; what a successor could not get back exactly
//! (a name a reader refuses, a submodule, a nested repository) is refused
//! before anything is written ([`SNAPSHOT_UNSUPPORTED`](Code::SnapshotUnsupported)).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::contents::{
    check_size, mode_refusal, path_refusal, state_of, PathState, Snapshot, SnapshotPath,
    DEFAULT_LIMIT,
};
use crate::error::{Code, Error, Result};
use crate::git::Git;
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
    let _ = excluded;
    if entries.is_empty() {
        return Ok(None);
    }
    refuse_unsupported(git, workdir, &entries)?;
    scan(git, workdir, &entries, limit, secret)?;
    let (tree, commit) = write(git, workdir, &entries, author, date)?;
    let listed = ls_tree(git, &tree)?;
    let mut paths = BTreeMap::new();
    let mut size = 0;
    for e in &entries {
        let entry = match listed.get(&e.path) {
            Some((mode, blob, bytes)) => {
                size += bytes;
                SnapshotPath {
                    state: state_of(&e.xy),
                    content: blob.clone(),
                    mode: Some(mode.clone()),
                    size: *bytes,
                    from: e.from.clone(),
                }
            }
            None => SnapshotPath {
                state: if e.xy.starts_with('R') {
                    PathState::Renamed
                } else {
                    PathState::Deleted
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
        let bytes = std::fs::read(&full).map_err(|err| crate::fsutil::io_error(&full, err))?;
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
/// (parents: the head, and a commit of the staged tree). The staged tree
/// is the index as it is; the working tree's is the index with each of
/// `entries` set to the file's bytes as they are on disk (no clean
/// filter, no eol conversion), its symlink target, or removed.
fn write(
    git: &Git,
    workdir: &Path,
    entries: &[crate::git::StatusEntry],
    author: &str,
    date: &str,
) -> Result<(String, String)> {
    let real = PathBuf::from(
        git.run(["rev-parse", "--path-format=absolute", "--git-path", "index"])?
            .trim(),
    );
    remove_stale_temp_indexes(&real);
    let temp =
        TempIndex(real.with_file_name(format!("swarm-snapshot-index-{}", std::process::id())));
    if real.exists() {
        std::fs::copy(&real, &temp.0).map_err(|e| crate::fsutil::io_error(&temp.0, e))?;
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
    let (removed, info) = working_entries(git, workdir, entries)?;
    if !removed.is_empty() {
        let input: Vec<u8> = removed
            .iter()
            .flat_map(|p| [p.as_bytes(), b"\0"].concat())
            .collect();
        git.run_env_input(
            ["update-index", "--force-remove", "-z", "--stdin"],
            &env,
            &input,
        )?;
    }
    if !info.is_empty() {
        git.run_env_input(
            ["update-index", "--add", "--replace", "-z", "--index-info"],
            &env,
            &info,
        )?;
    }
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

/// The paths of `entries` gone from the working tree, and the
/// `--index-info` lines (`mode id\tpath\0`) of the others, their blobs
/// written from the bytes on disk.
fn working_entries(
    git: &Git,
    workdir: &Path,
    entries: &[crate::git::StatusEntry],
) -> Result<(Vec<String>, Vec<u8>)> {
    let mut removed = Vec::new();
    let mut files = Vec::new();
    let mut info = Vec::new();
    for e in entries {
        let full = workdir.join(&e.path);
        match std::fs::symlink_metadata(&full) {
            Err(err) if gone(&err) => removed.push(e.path.clone()),
            Err(err) => return Err(crate::fsutil::io_error(&full, err)),
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&full)
                    .map_err(|err| crate::fsutil::io_error(&full, err))?
                    .into_os_string()
                    .into_encoded_bytes();
                let id = git.run_with_input(["hash-object", "-w", "--stdin"], &target)?;
                info.extend_from_slice(format!("120000 {}\t{}\0", id.trim(), e.path).as_bytes());
            }
            Ok(m) if m.is_file() => {
                #[cfg(unix)]
                let exec = std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0;
                #[cfg(not(unix))]
                let exec = false;
                files.push((e.path.clone(), exec));
            }
            // A directory is refused before (a nested repository).
            Ok(_) => removed.push(e.path.clone()),
        }
    }
    if !files.is_empty() {
        let input: String = files.iter().map(|(p, _)| format!("{p}\n")).collect();
        let ids = git.run_with_input(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            input.as_bytes(),
        )?;
        for ((path, exec), id) in files.iter().zip(ids.lines()) {
            let mode = if *exec { "100755" } else { "100644" };
            info.extend_from_slice(format!("{mode} {id}\t{path}\0").as_bytes());
        }
    }
    Ok((removed, info))
}

/// A path that is not there: absent, or a file stands where a directory
/// on its way was.
fn gone(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Refuse, before anything is written, uncommitted work a successor could
/// not get back exactly: a path a reader of the packet refuses
/// ([`path_refusal`], the rule `accept` applies), a staged submodule, a
/// nested repository (`SNAPSHOT_UNSUPPORTED`, every path named).
fn refuse_unsupported(
    git: &Git,
    workdir: &Path,
    entries: &[crate::git::StatusEntry],
) -> Result<()> {
    let mut found: Vec<(String, &'static str)> = Vec::new();
    for e in entries {
        for p in std::iter::once(&e.path).chain(e.from.as_ref()) {
            if let Some(why) = path_refusal(p) {
                found.push((p.clone(), why));
            }
        }
        // With `--untracked-files=all` only a nested repository is listed
        // as an untracked directory (a tracked path that is a directory
        // now is a deletion: its files are listed on their own).
        match std::fs::symlink_metadata(workdir.join(&e.path)) {
            Ok(m) if m.is_dir() && e.xy == "??" => found.push((
                e.path.clone(),
                "a nested repository or submodule: a snapshot does not carry one",
            )),
            _ => {}
        }
    }
    let staged = git.run(["ls-files", "--stage", "-z"])?;
    let dirty: std::collections::BTreeSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    for line in staged.split('\0') {
        let Some((meta, path)) = line.split_once('\t') else {
            continue;
        };
        let mode = meta.split(' ').next().unwrap_or("");
        if dirty.contains(path) {
            if let Some(why) = mode_refusal(mode) {
                found.push((path.to_string(), why));
            }
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
        .map(|(p, why)| format!("{}: {why}", crate::text::clean(&format!("{p:?}"))))
        .collect();
    Err(Error::new(
        Code::SnapshotUnsupported,
        format!(
            "the uncommitted work holds what a successor could not get back exactly ({}); nothing was written or published",
            shown.join("; ")
        ),
    )
    .hint("rename the path, or commit it (a submodule: commit or unstage it), then hand off again")
    .with_detail(serde_json::json!({
        "paths": found.iter().map(|(p, why)| serde_json::json!({"path": p, "reason": why})).collect::<Vec<_>>(),
    })))
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

/// Whether the snapshot's commit is in this repository.
pub fn present(git: &Git, snap: &Snapshot) -> Result<bool> {
    Ok(git
        .output(["cat-file", "-e", &format!("{}^{{commit}}", snap.commit)])?
        .status
        .success())
}
