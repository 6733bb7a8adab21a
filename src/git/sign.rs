//! Signing and checking commit signatures the way git does, with the
//! programs git runs for it: `ssh-keygen -Y sign -n git` for
//! `gpg.format=ssh`, `gpg --status-fd=2 -bsau <key>` for `openpgp` and
//! `gpgsm` likewise for `x509` (each overridable as in git:
//! `gpg.ssh.program`, `gpg.program`, `gpg.x509.program`). The signature
//! goes in the commit's `gpgsig` header over the rest of the commit, so
//! `git verify-commit` and `git log --show-signature` check it unchanged.
//!
//! Checking is ssh only (the trust list is git's allowed-signers file):
//! `ssh-keygen -Y verify -I <principal> -n git -Overify-time=<commit time>`,
//! as `git verify-commit` runs it with `gpg.ssh.allowedSignersFile`.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{Code, Error, Result};

/// `gpg.format`: how a key signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ssh,
    OpenPgp,
    X509,
}

impl Format {
    /// git's names (`gpg.format`); git's default is openpgp.
    pub fn parse(value: Option<&str>) -> Result<Format> {
        match value.map(str::to_ascii_lowercase).as_deref() {
            None | Some("openpgp") => Ok(Format::OpenPgp),
            Some("ssh") => Ok(Format::Ssh),
            Some("x509") => Ok(Format::X509),
            Some(other) => Err(Error::new(
                Code::ConfigInvalid,
                format!("gpg.format is '{other}'; git knows openpgp, x509 and ssh"),
            )
            .hint("fix `git config gpg.format`")),
        }
    }
}

/// Run `program` with `args` and `input` on stdin, whatever its exit
/// status; a program that cannot be run at all, or that does not know
/// what it is asked (an ssh-keygen older than `-Y`), is
/// `SIGNING_TOOL_MISSING`, an environment error, never a verdict.
fn run(program: &str, args: &[&OsStr], input: &[u8]) -> Result<Output> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::new(
                Code::SigningToolMissing,
                format!("could not run {program}: {e}"),
            )
            .hint(TOOL_HINT)
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that exits early (bad key) closes its stdin: its exit
        // status says why, not the broken pipe.
        let _ = stdin.write_all(input);
    }
    let out = child.wait_with_output().map_err(|e| {
        Error::new(
            Code::SigningToolMissing,
            format!("{program} did not finish: {e}"),
        )
        .hint(TOOL_HINT)
    })?;
    match tool_failure(program, args, &out) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

const TOOL_HINT: &str = "install OpenSSH 8.2p1 or later (ssh-keygen -Y signs and checks, as git runs it), or point `git config gpg.ssh.program` (gpg.program for openpgp) at one";

/// Whether `out` says the program itself failed rather than judged: killed
/// by a signal, or a usage message for an option or operation it does not
/// know (as git tells an ssh-keygen too old for `-Y`).
fn tool_failure(program: &str, args: &[&OsStr], out: &Output) -> Option<Error> {
    if out.status.success() {
        return None;
    }
    let operation = args
        .iter()
        .position(|a| *a == OsStr::new("-Y"))
        .and_then(|i| args.get(i + 1))
        .map(|op| format!(" -Y {}", op.to_string_lossy()))
        .unwrap_or_default();
    if out.status.code().is_none() {
        return Some(
            Error::new(
                Code::SigningToolMissing,
                format!(
                    "{program}{operation} was stopped by a signal ({})",
                    out.status
                ),
            )
            .hint(TOOL_HINT),
        );
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !stderr.contains("usage:") {
        return None;
    }
    let said = stderr.lines().next().unwrap_or("").trim();
    Some(
        Error::new(
            Code::SigningToolMissing,
            format!("{program} is too old for `ssh-keygen{operation}` (it said: {said})"),
        )
        .hint(TOOL_HINT),
    )
}

/// An ssh signing key as configured (`swarm.<address>.signingKey`,
/// `user.signingKey`), read as git reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshKey {
    /// `key::<public key line>`, or a value that starts `ssh-`: the public
    /// key itself, its private half in ssh-agent.
    Literal(String),
    /// A key file (private, or public with the private half in ssh-agent),
    /// `~` expanded as git expands it.
    File(PathBuf),
}

impl SshKey {
    pub fn parse(value: &str) -> Result<SshKey> {
        if let Some(public) = value.strip_prefix("key::") {
            return Ok(SshKey::Literal(public.trim().to_string()));
        }
        if value.starts_with("ssh-") {
            return Ok(SshKey::Literal(value.trim().to_string()));
        }
        expand_path(value).map(SshKey::File)
    }

    /// The public key line (`type base64 [comment]`): the literal key, or
    /// the file's `.pub` beside it (the file itself when it is public).
    pub fn public(&self) -> Result<String> {
        match self {
            SshKey::Literal(public) => Ok(public.clone()),
            SshKey::File(path) => {
                let beside = PathBuf::from(format!("{}.pub", path.display()));
                let text = std::fs::read_to_string(&beside)
                    .or_else(|e| {
                        std::fs::read_to_string(path)
                            .ok()
                            .filter(|t| is_public(t))
                            .ok_or(e)
                    })
                    .map_err(|e| {
                        Error::new(
                            Code::IoFailed,
                            format!("cannot read the public key {}: {e}", beside.display()),
                        )
                    })?;
                Ok(text.trim().to_string())
            }
        }
    }
}

/// Whether `text` is a public key line (not a private key file).
fn is_public(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("ssh-") || t.starts_with("ecdsa-") || t.starts_with("sk-")
}

/// A key path from git config with `~/` (the home directory) and
/// `~user/` (that user's) expanded, as git's `interpolate_path` does.
pub fn expand_path(value: &str) -> Result<PathBuf> {
    if !value.starts_with('~') {
        return Ok(PathBuf::from(value));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let context = gix::config::path::interpolate::Context {
        home_dir: home.as_deref(),
        ..Default::default()
    };
    gix::config::Path::from(value)
        .interpolate(context)
        .map_err(|e| {
            Error::new(
                Code::ConfigInvalid,
                format!("cannot expand the signing key path {value}: {e}"),
            )
            .hint("name the key by an absolute path, or set HOME")
        })
}

/// The file `ssh-keygen -f` reads: a configured one, or a literal key
/// written to a temporary file (removed when dropped), as git does.
enum KeyFile {
    Named(PathBuf),
    Temporary(PathBuf),
}

impl KeyFile {
    fn temporary(public: &str) -> Result<KeyFile> {
        use std::os::unix::fs::OpenOptionsExt;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!(".git_signing_key_tmp{}-{seq}", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(public.as_bytes()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(Error::new(
                Code::IoFailed,
                format!("cannot write the signing key to {}: {e}", path.display()),
            ));
        }
        Ok(KeyFile::Temporary(path))
    }

    fn path(&self) -> &Path {
        match self {
            KeyFile::Named(p) | KeyFile::Temporary(p) => p,
        }
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        if let KeyFile::Temporary(p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The signature of `payload` (a commit without its `gpgsig` header) made
/// with `key` as git would make it; `program` is the configured signing
/// program (None: git's default for the format).
pub fn sign(format: Format, program: Option<&str>, key: &str, payload: &[u8]) -> Result<Vec<u8>> {
    let (program, out) = match format {
        Format::Ssh => {
            let program = program.unwrap_or("ssh-keygen");
            // As git's sign_buffer_ssh: a literal key goes to a temporary
            // file and signs with `-U` (its private half is in ssh-agent);
            // a key file is named as it is (a public one signs through
            // ssh-agent too, ssh-keygen sees to that).
            let (file, literal) = match SshKey::parse(key)? {
                SshKey::Literal(public) => (KeyFile::temporary(&public)?, true),
                SshKey::File(path) => (KeyFile::Named(path), false),
            };
            let mut args: Vec<&OsStr> = ["-Y", "sign", "-n", "git", "-f"]
                .iter()
                .map(OsStr::new)
                .collect();
            args.push(file.path().as_os_str());
            if literal {
                args.push(OsStr::new("-U"));
            }
            let out = run(program, &args, payload)?;
            if literal && !out.status.success() {
                return Err(Error::new(
                    Code::SigningFailed,
                    format!(
                        "{program} could not sign with the literal key {key}: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ),
                )
                .hint("a literal key (`key::ssh-…`) signs through ssh-agent, as in git: add its private half with `ssh-add <private key>` and check that SSH_AUTH_SOCK names that agent"));
            }
            (program, out)
        }
        Format::OpenPgp | Format::X509 => {
            let program = program.unwrap_or(if format == Format::X509 {
                "gpgsm"
            } else {
                "gpg"
            });
            let words = ["--status-fd=2", "-bsau", key];
            let args: Vec<&OsStr> = words.iter().map(OsStr::new).collect();
            let out = run(program, &args, payload)?;
            if out.status.success()
                && !String::from_utf8_lossy(&out.stderr).contains("[GNUPG:] SIG_CREATED ")
            {
                return Err(Error::new(
                    Code::SigningFailed,
                    format!("{program} made no signature with key {key}"),
                ));
            }
            (program, out)
        }
    };
    if !out.status.success() || out.stdout.is_empty() {
        return Err(Error::new(
            Code::SigningFailed,
            format!(
                "{program} could not sign with key {key}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        )
        .hint("check the key's path and that it is readable (swarm.<address>.signingKey or user.signingKey)"));
    }
    Ok(out.stdout)
}

/// What `ssh-keygen` says of one signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshCheck {
    /// Made by a key the allowed-signers file lists for the principal,
    /// valid at the given time.
    Good,
    /// The signature does not match the payload (or is no ssh signature).
    Bad(String),
    /// A sound signature by a key listed for these principals (maybe none),
    /// not for the one asked, or not at that time.
    NotAllowed { principals: Vec<String> },
}

/// A signature written to a file for ssh-keygen (`-s`), removed when
/// dropped.
struct SigFile(PathBuf);

impl SigFile {
    fn write(scratch: &Path, signature: &[u8]) -> Result<SigFile> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sig = scratch.join(format!("sig-{}-{seq}.tmp", std::process::id()));
        std::fs::write(&sig, signature).map_err(|e| {
            Error::new(
                Code::IoFailed,
                format!("cannot write {}: {e}", sig.display()),
            )
        })?;
        Ok(SigFile(sig))
    }
}

impl Drop for SigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Check `signature` over `payload` for `principal` against the
/// allowed-signers file `allowed`, at `time` (`YYYYMMDDhhmmssZ`), the way
/// `git verify-commit` does. `scratch` is a directory for the signature
/// file ssh-keygen reads.
pub fn ssh_verify(
    program: Option<&str>,
    allowed: &Path,
    principal: &str,
    time: &str,
    signature: &[u8],
    payload: &[u8],
    scratch: &Path,
) -> Result<SshCheck> {
    let program = program.unwrap_or("ssh-keygen");
    let sig = SigFile::write(scratch, signature)?;
    let verify_time = format!("-Overify-time={time}");
    let verify: Vec<&OsStr> = vec![
        OsStr::new("-Y"),
        OsStr::new("verify"),
        OsStr::new("-n"),
        OsStr::new("git"),
        OsStr::new("-f"),
        allowed.as_os_str(),
        OsStr::new("-I"),
        OsStr::new(principal),
        OsStr::new("-s"),
        sig.0.as_os_str(),
        OsStr::new(&verify_time),
    ];
    if run(program, &verify, payload)?.status.success() {
        return Ok(SshCheck::Good);
    }
    // Why not: a signature that is not sound at all, or one by a key
    // the list holds for someone else (or for this actor at another time).
    let novalidate: Vec<&OsStr> = vec![
        OsStr::new("-Y"),
        OsStr::new("check-novalidate"),
        OsStr::new("-n"),
        OsStr::new("git"),
        OsStr::new("-s"),
        sig.0.as_os_str(),
    ];
    let sound = run(program, &novalidate, payload)?;
    if !sound.status.success() {
        let why = String::from_utf8_lossy(&sound.stderr);
        let why = why.lines().next().unwrap_or("").trim().to_string();
        return Ok(SshCheck::Bad(why));
    }
    Ok(SshCheck::NotAllowed {
        principals: find_principals(program, allowed, &verify_time, &sig)?,
    })
}

/// Every principal `allowed` lists the key of `signature` for, at `time`
/// (`YYYYMMDDhhmmssZ`), as `git verify-commit` asks ssh-keygen: one
/// `find-principals` with `-Overify-time`, each line's comma-separated
/// principals, in the file's order.
pub fn ssh_find_principals(
    program: Option<&str>,
    allowed: &Path,
    time: &str,
    signature: &[u8],
    scratch: &Path,
) -> Result<Vec<String>> {
    let program = program.unwrap_or("ssh-keygen");
    let sig = SigFile::write(scratch, signature)?;
    find_principals(program, allowed, &format!("-Overify-time={time}"), &sig)
}

fn find_principals(
    program: &str,
    allowed: &Path,
    verify_time: &str,
    sig: &SigFile,
) -> Result<Vec<String>> {
    let find: Vec<&OsStr> = vec![
        OsStr::new("-Y"),
        OsStr::new("find-principals"),
        OsStr::new("-f"),
        allowed.as_os_str(),
        OsStr::new("-s"),
        sig.0.as_os_str(),
        OsStr::new(verify_time),
    ];
    let found = run(program, &find, b"")?;
    if !found.status.success() {
        return Ok(Vec::new());
    }
    let mut principals: Vec<String> = Vec::new();
    for p in String::from_utf8_lossy(&found.stdout)
        .lines()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        if !principals.iter().any(|q| q == p) {
            principals.push(p.to_string());
        }
    }
    Ok(principals)
}

/// Make an ed25519 key pair at `path` (and `path.pub`) with `comment`,
/// without a passphrase; returns the public key line.
pub fn ssh_keygen(program: Option<&str>, path: &Path, comment: &str) -> Result<String> {
    let program = program.unwrap_or("ssh-keygen");
    let args: Vec<&OsStr> = vec![
        OsStr::new("-q"),
        OsStr::new("-t"),
        OsStr::new("ed25519"),
        OsStr::new("-N"),
        OsStr::new(""),
        OsStr::new("-C"),
        OsStr::new(comment),
        OsStr::new("-f"),
        path.as_os_str(),
    ];
    let out = run(program, &args, b"")?;
    if !out.status.success() {
        return Err(Error::new(
            Code::SigningFailed,
            format!(
                "{program} could not make a key at {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    let public = std::path::PathBuf::from(format!("{}.pub", path.display()));
    std::fs::read_to_string(&public)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            Error::new(
                Code::IoFailed,
                format!("cannot read {}: {e}", public.display()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_as_git_reads_user_signing_key() {
        assert_eq!(
            SshKey::parse("key::ssh-ed25519 AAAA c").unwrap(),
            SshKey::Literal("ssh-ed25519 AAAA c".into())
        );
        assert_eq!(
            SshKey::parse("ssh-ed25519 AAAA").unwrap(),
            SshKey::Literal("ssh-ed25519 AAAA".into())
        );
        assert_eq!(
            SshKey::parse("/k/id").unwrap(),
            SshKey::File(PathBuf::from("/k/id"))
        );
        // `~user/` is that user's home, as in git (root's, which every
        // system has).
        assert_eq!(
            expand_path("~root/.ssh/id").unwrap(),
            PathBuf::from("/root/.ssh/id")
        );
        let e = expand_path("~no-such-user-here/id").unwrap_err();
        assert_eq!(e.code, Code::ConfigInvalid);
    }
}
