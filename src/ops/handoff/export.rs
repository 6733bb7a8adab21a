//! `handoff --export FILE`: where the packet records the file, and writing
//! it owner-only.

use std::path::{Path, PathBuf};

use crate::error::{Code, Error, Result};

/// Where an export goes, as the packet records it: the path relative to the
/// checkout root (as `git status` names it) when inside, else absolute.
pub fn location(workdir: &Path, path: &Path) -> Result<String> {
    let cwd = std::env::current_dir().map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    let absolute = cwd.join(path);
    let name = absolute.file_name().map(PathBuf::from).unwrap_or_default();
    // The file may not exist yet: resolve its directory, as far as it exists.
    let mut dir = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut rest = Vec::new();
    while !dir.as_os_str().is_empty() && std::fs::canonicalize(&dir).is_err() {
        rest.push(dir.file_name().map(PathBuf::from).unwrap_or_default());
        if !dir.pop() {
            break;
        }
    }
    let mut resolved = std::fs::canonicalize(&dir).unwrap_or(dir);
    for part in rest.iter().rev() {
        resolved.push(part);
    }
    resolved.push(name);
    let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    Ok(match resolved.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => resolved.to_string_lossy().into_owned(),
    })
}

/// Write the packet to `path`, mode 0600 from the first byte, atomically.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |e| crate::fsutil::io_error(path, e);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| crate::fsutil::io_error(&dir, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "packet.yaml".into());
    // Owner-only from the first byte, then an atomic rename into place.
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    Ok(())
}
