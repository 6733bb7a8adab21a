//! The bytes of a file before `agent install` first changed it, and
//! putting them back: `<key>.orig` (the original bytes) or `<key>.absent`
//! (there was no file), and `<key>.ours` (what install wrote), keyed by the
//! file's absolute path, in a backup directory of the clone (or of the
//! user, for `--user`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Code, Error, Result};
use crate::fsutil::io_error;

/// One file `install` wrote, would write, or restored.
#[derive(Debug, Clone, Serialize)]
pub struct Touched {
    pub path: String,
    /// `created`, `updated`, `unchanged`, `restored`, `removed`, `stripped`.
    pub action: &'static str,
}

/// Where backups go for a file: keyed by its absolute path.
fn backup_key(dir: &Path, file: &Path) -> PathBuf {
    let mut h = Sha256::new();
    h.update(file.to_string_lossy().as_bytes());
    let hex: String = h.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(hex)
}

/// Refuse a file `install` would read or write (`FILE_NOT_REGULAR`,
/// nothing written) when it is there but no regular file (a FIFO would
/// block the read; a directory or device is no settings file) and, inside
/// a checkout (`root`), when it or a directory on its way from `root` is a
/// symlink leading out of the checkout, or nowhere: a repository can track
/// symlinks, and install must not write a file of the user's elsewhere
/// through one. A symlink within the checkout (AGENTS.md -> CLAUDE.md) is
/// followed. `root` None: the user's own settings, whose symlinks are theirs.
pub fn check_target(path: &Path, root: Option<&Path>) -> Result<()> {
    let refuse = |why: String| {
        Error::new(
            Code::FileNotRegular,
            format!("{} {why}; agent install wrote nothing", path.display()),
        )
        .hint("make it a regular file inside the checkout (or remove it), then run `git swarm agent install` again")
    };
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Err(refuse(
                "is not a regular file (a FIFO, device or directory)".to_string(),
            ))
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error(path, e)),
        _ => {}
    }
    let Some(root) = root else {
        return Ok(());
    };
    let inside = std::fs::canonicalize(root).map_err(|e| io_error(root, e))?;
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| p.starts_with(root) && *p != root) {
        let link = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        if link {
            match std::fs::canonicalize(p) {
                Ok(to) if to.starts_with(&inside) => {}
                Ok(to) => {
                    return Err(refuse(format!(
                        "leads out of the checkout {} through the symbolic link {} (to {})",
                        root.display(),
                        p.display(),
                        to.display()
                    )))
                }
                Err(_) => {
                    return Err(refuse(format!(
                        "leads nowhere through the symbolic link {}",
                        p.display()
                    )))
                }
            }
        }
        at = p.parent();
    }
    Ok(())
}

pub fn read_opt(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| io_error(path, e))
}

/// Write `new` to `path`, keeping the original first (once).
pub fn put(backups: &Path, path: &Path, new: &[u8], dry: bool) -> Result<Touched> {
    let old = read_opt(path)?;
    let shown = path.display().to_string();
    if old.as_deref() == Some(new) {
        return Ok(Touched {
            path: shown,
            action: "unchanged",
        });
    }
    let action = if old.is_some() { "updated" } else { "created" };
    if !dry {
        let key = backup_key(backups, path);
        let orig = key.with_extension("orig");
        let absent = key.with_extension("absent");
        if !orig.exists() && !absent.exists() {
            match &old {
                Some(b) => write_file(&orig, b)?,
                None => write_file(&absent, path.to_string_lossy().as_bytes())?,
            }
        }
        write_file(path, new)?;
        write_file(&key.with_extension("ours"), new)?;
    }
    Ok(Touched {
        path: shown,
        action,
    })
}

/// Undo `put`: the original bytes when the file is as we left it, else
/// `fallback` (our part taken out of what is there now).
pub fn restore(
    backups: &Path,
    path: &Path,
    dry: bool,
    fallback: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<Option<Touched>> {
    let key = backup_key(backups, path);
    let (orig, absent, ours) = (
        key.with_extension("orig"),
        key.with_extension("absent"),
        key.with_extension("ours"),
    );
    let now = read_opt(path)?;
    let shown = path.display().to_string();
    let ours_bytes = read_opt(&ours)?;
    let original = read_opt(&orig)?;
    let was_absent = absent.exists();
    let Some(now) = now else {
        if !dry {
            for f in [&orig, &absent, &ours] {
                let _ = std::fs::remove_file(f);
            }
        }
        return Ok(None);
    };
    let (bytes, action) =
        if ours_bytes.as_deref() == Some(now.as_slice()) && (original.is_some() || was_absent) {
            match original {
                Some(o) => (Some(o), "restored"),
                None => (None, "removed"),
            }
        } else {
            match fallback(&now) {
                Some(b) if b == now => return Ok(None),
                Some(b) => (Some(b), "stripped"),
                None => (None, "removed"),
            }
        };
    if !dry {
        match &bytes {
            Some(b) => write_file(path, b)?,
            None => {
                std::fs::remove_file(path).map_err(|e| io_error(path, e))?;
                remove_empty_parents(path);
            }
        }
        for f in [&orig, &absent, &ours] {
            let _ = std::fs::remove_file(f);
        }
    }
    Ok(Some(Touched {
        path: shown,
        action,
    }))
}

/// Remove the directories we may have created (`.claude/skills/git-swarm`,
/// `.claude`, …) when they are left empty.
fn remove_empty_parents(path: &Path) {
    let mut dir = path.parent();
    for _ in 0..3 {
        let Some(d) = dir else { return };
        if std::fs::remove_dir(d).is_err() {
            return;
        }
        dir = d.parent();
    }
}
