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
use std::path::Path;
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

/// Run `program` with `args` and `input` on stdin, whatever its exit status.
fn run(program: &str, args: &[&OsStr], input: &[u8]) -> Result<Output> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::new(Code::SigningFailed, format!("could not run {program}: {e}")).hint(format!(
                "install {program}, or set the gpg.*program git uses"
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A program that exits early (bad key) closes its stdin: its exit
        // status says why, not the broken pipe.
        let _ = stdin.write_all(input);
    }
    child.wait_with_output().map_err(|e| {
        Error::new(
            Code::SigningFailed,
            format!("{program} did not finish: {e}"),
        )
    })
}

/// The signature of `payload` (a commit without its `gpgsig` header) made
/// with `key` as git would make it; `program` is the configured signing
/// program (None: git's default for the format).
pub fn sign(format: Format, program: Option<&str>, key: &str, payload: &[u8]) -> Result<Vec<u8>> {
    let (program, out) = match format {
        Format::Ssh => {
            let program = program.unwrap_or("ssh-keygen");
            let key = key.strip_prefix("~/").map_or_else(
                || key.to_string(),
                |rest| format!("{}/{rest}", std::env::var("HOME").unwrap_or_default()),
            );
            let mut args: Vec<&OsStr> = ["-Y", "sign", "-n", "git", "-f"]
                .iter()
                .map(OsStr::new)
                .collect();
            args.push(OsStr::new(&key));
            // A public key file signs through ssh-agent, as in git.
            let public = std::fs::read(&key)
                .map(|b| b.starts_with(b"ssh-") || b.starts_with(b"ecdsa-"))
                .unwrap_or(false);
            if public {
                args.push(OsStr::new("-U"));
            }
            (program, run(program, &args, payload)?)
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
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sig = scratch.join(format!("sig-{}-{seq}.tmp", std::process::id()));
    std::fs::write(&sig, signature).map_err(|e| {
        Error::new(
            Code::IoFailed,
            format!("cannot write {}: {e}", sig.display()),
        )
    })?;
    let check = (|| {
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
            sig.as_os_str(),
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
            sig.as_os_str(),
        ];
        let sound = run(program, &novalidate, payload)?;
        if !sound.status.success() {
            let why = String::from_utf8_lossy(&sound.stderr);
            let why = why.lines().next().unwrap_or("").trim().to_string();
            return Ok(SshCheck::Bad(why));
        }
        let find: Vec<&OsStr> = vec![
            OsStr::new("-Y"),
            OsStr::new("find-principals"),
            OsStr::new("-f"),
            allowed.as_os_str(),
            OsStr::new("-s"),
            sig.as_os_str(),
        ];
        let found = run(program, &find, b"")?;
        let principals = if found.status.success() {
            String::from_utf8_lossy(&found.stdout)
                .lines()
                .flat_map(|l| l.split(','))
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        } else {
            Vec::new()
        };
        Ok(SshCheck::NotAllowed { principals })
    })();
    let _ = std::fs::remove_file(&sig);
    check
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
