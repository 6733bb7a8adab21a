//! Reading and writing the few files git-swarm touches outside the object
//! database (the plan file, `--from`/`--file` inputs) without being turned
//! against the user: a symlink is not followed where the path comes from
//! configuration, a FIFO or device is refused before it can block or stream
//! forever, every read has a size limit, and a write replaces the file by
//! rename instead of writing through whatever the path points at.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Code, Error, Result};

/// The largest plan text (a file or `--from` input) git-swarm reads.
pub const MAX_TEXT: u64 = 1024 * 1024;

/// Whether a symlink at the path itself may be followed: yes for a path
/// the user typed on the command line, no for one that comes from
/// configuration or sits in a worktree (anyone who can write there could
/// point it at `/etc/passwd` or `.git/hooks/pre-commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Yes,
    No,
}

/// What went wrong reading a file, before it is worded for its caller.
#[derive(Debug)]
pub enum ReadError {
    Missing,
    Symlink,
    /// A FIFO, socket, device or directory: (what it is).
    NotRegular(&'static str),
    TooLarge(u64),
    Io(std::io::Error),
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Read a regular file of at most `limit` bytes. The file is opened
/// non-blocking (a FIFO cannot stall the open) and, with `Follow::No`,
/// `O_NOFOLLOW` (a symlink swapped in after any check is still refused);
/// its type is checked on the open descriptor, then at most `limit + 1`
/// bytes are read, so `/dev/zero` or a growing file cannot exhaust memory.
pub fn read_limited(path: &Path, follow: Follow, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if follow == Follow::No {
        flags |= libc::O_NOFOLLOW;
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => return Err(ReadError::Symlink),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::Missing,
            _ if e.raw_os_error() == Some(libc::ELOOP) && follow == Follow::No => {
                ReadError::Symlink
            }
            _ => ReadError::Io(e),
        })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(meta.len()));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(ReadError::Io)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge(out.len() as u64));
    }
    Ok(out)
}

/// A file named on the command line (`--from`, `--file`): symlinks are
/// followed (the user named it), anything but a regular file is refused.
pub fn read_input(path: &Path, limit: u64) -> Result<Vec<u8>> {
    read_limited(path, Follow::Yes, limit).map_err(|e| input_error(path, e, limit))
}

/// A file that could not be read or written (`IO_FAILED`), naming it.
pub fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::new(Code::IoFailed, format!("{}: {e}", path.display()))
}

pub fn input_error(path: &Path, e: ReadError, limit: u64) -> Error {
    match e {
        ReadError::Missing => {
            Error::new(Code::NotFound, format!("{} does not exist", path.display()))
        }
        ReadError::Symlink => Error::new(
            Code::FileNotRegular,
            format!("{} is a symbolic link", path.display()),
        )
        .hint("name the file it points to, inside the repository"),
        ReadError::NotRegular(kind) => Error::new(
            Code::FileNotRegular,
            format!("{} is {kind}, not a regular file", path.display()),
        )
        .hint("git-swarm reads only regular files: save the content to a file and pass that"),
        ReadError::TooLarge(size) => too_large(path, size, limit),
        ReadError::Io(e) => Error::new(Code::IoFailed, format!("{}: {e}", path.display())),
    }
}

pub fn too_large(path: &Path, size: u64, limit: u64) -> Error {
    Error::new(
        Code::FileTooLarge,
        format!(
            "{} is larger than git-swarm reads ({}{} bytes; the limit is {limit})",
            path.display(),
            if size > limit { "" } else { "over " },
            size.max(limit + 1)
        ),
    )
    .hint("plans and inputs are small text files: keep large material in the repository and link to it")
}

/// An exclusive lock on a file, held with `flock(2)` for as long as this
/// value lives: another process (or another open of the file in this one)
/// cannot take it meanwhile, and the kernel releases it when its holder
/// ends however it ends — a SIGKILL included — so there is no stale lock
/// to judge or take over, and nothing that depends on `/proc` or on age.
///
/// The file is opened without following a link and close-on-exec (a git
/// child process never inherits the lock), and is never removed: removing
/// it on release would let one process lock the removed file while another
/// creates and locks a new one under the same name.
#[derive(Debug)]
pub struct Lock {
    _file: std::fs::File,
}

impl Lock {
    /// Take the lock at `path` (creating the file and its directory), or
    /// None while another holder has it.
    pub fn try_take(path: &Path) -> std::io::Result<Option<Lock>> {
        use rustix::fs::{flock, FlockOperation};
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Some(Lock { _file: file })),
                Err(e) if e == rustix::io::Errno::WOULDBLOCK => return Ok(None),
                Err(e) if e == rustix::io::Errno::INTR => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Take the lock at `path`, waiting while a live holder has it, for at
    /// most `patience`: None if it is still held then.
    pub fn take(path: &Path, patience: std::time::Duration) -> std::io::Result<Option<Lock>> {
        let start = std::time::Instant::now();
        loop {
            if let Some(lock) = Lock::try_take(path)? {
                return Ok(Some(lock));
            }
            if start.elapsed() >= patience {
                return Ok(None);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Remove the temporary files of [`replace_file`] for `name` in `dir` that
/// a process killed before its rename left (`.<name>.swarm-<pid>-<n>` of a
/// pid no longer running): in a worktree they would show as uncommitted
/// work. Where `/proc` is missing nothing is removed.
fn clear_dead_temporaries(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{name}.swarm-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Replace `path` with a regular file holding `bytes`: written to a new
/// temporary file next to it (created exclusively, never through a link),
/// then renamed over the path. A symlink at `path` is replaced, never
/// written through; callers refuse symlinks before getting here.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    clear_dead_temporaries(dir, &name);
    let mut attempt = 0u32;
    loop {
        let tmp = dir.join(format!(".{name}.swarm-{}-{attempt}", std::process::id()));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp);
        let mut file = match opened {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let written = file.write_all(bytes).and_then(|_| file.sync_all());
        drop(file);
        if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        return Ok(());
    }
}

/// A configured path that must stay inside a directory: relative, no `..`,
/// no `.git` component. Returns the normalised relative path.
pub fn confined_relative(value: &str) -> Option<PathBuf> {
    let path = Path::new(value);
    if value.is_empty() || path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => {
                if part.to_string_lossy().eq_ignore_ascii_case(".git") {
                    return None;
                }
                out.push(part);
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// `path` with symlinks resolved as far as it exists; the part that does
/// not exist yet is appended as written (`..` taken lexically).
pub fn resolve_existing(path: &Path) -> PathBuf {
    let mut probe = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&probe) {
            let mut out = real;
            for part in rest.iter().rev() {
                if part == ".." {
                    out.pop();
                } else if part != "." {
                    out.push(part);
                }
            }
            return out;
        }
        match probe.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => match probe.components().next_back() {
                Some(Component::ParentDir) => rest.push("..".into()),
                _ => return path.to_path_buf(),
            },
        }
        if !probe.pop() {
            return path.to_path_buf();
        }
    }
}

/// Whether `path` (symlinks resolved as far as it exists) lies inside
/// `root` (likewise resolved).
pub fn resolves_inside(root: &Path, path: &Path) -> bool {
    resolve_existing(path).starts_with(resolve_existing(root))
}

/// Two paths naming one directory (by their canonical forms when both exist).
pub fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_has_one_holder_until_it_is_dropped_and_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swarm").join("x.lock");
        let held = Lock::try_take(&path).unwrap().expect("free");
        // Another open of the file, even in this process, is refused.
        assert!(Lock::try_take(&path).unwrap().is_none());
        assert!(Lock::take(&path, std::time::Duration::ZERO)
            .unwrap()
            .is_none());
        drop(held);
        // Released, and the file stays (never removed under a waiter).
        assert!(path.exists());
        let again = Lock::try_take(&path).unwrap();
        assert!(again.is_some());
        drop(again);
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(Lock::try_take(&link).is_err());
    }

    #[test]
    fn confined_paths() {
        for ok in ["PLAN.md", "docs/PLAN.md", "./PLAN.md", "a/./b"] {
            assert!(confined_relative(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../PLAN.md",
            "a/../../b",
            ".git/hooks/pre-commit",
            "sub/.GIT/x",
            ".",
        ] {
            assert!(confined_relative(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn reads_refuse_devices_fifos_links_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_limited(&file, Follow::No, 5).unwrap(), b"hello");
        assert!(matches!(
            read_limited(&file, Follow::No, 4),
            Err(ReadError::TooLarge(5))
        ));
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_limited(&link, Follow::No, 10),
            Err(ReadError::Symlink)
        ));
        assert_eq!(read_limited(&link, Follow::Yes, 10).unwrap(), b"hello");
        assert!(matches!(
            read_limited(Path::new("/dev/zero"), Follow::Yes, 10),
            Err(ReadError::NotRegular(_))
        ));
        assert!(matches!(
            read_limited(dir.path(), Follow::Yes, 10),
            Err(ReadError::NotRegular(_))
        ));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_limited(&fifo, Follow::Yes, 10),
            Err(ReadError::NotRegular("a FIFO"))
        ));
    }

    #[test]
    fn replace_does_not_write_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let link = dir.path().join("PLAN.md");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        replace_file(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
