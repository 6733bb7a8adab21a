//! One record commit's verdict and how it is kept (a line per commit), and
//! the parts of a commit its signature covers.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::error::Result;
use crate::git::sign::{self, SshCheck};

/// The reason of a signature the verify program refused without saying
/// why (kept for this run only, see [`Verdict::lasting`]).
pub(super) const UNEXPLAINED: &str =
    "bad signature (the verify program failed without a reason; not kept, checked again next run)";

/// What checking one record commit found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub trusted: bool,
    /// The principals the trust list holds the signing key for at the
    /// record's time (the actor alone when it verified, until
    /// [`Store::signed_by`] asks for every one).
    pub signers: Vec<String>,
    /// Whether `signers` is every principal the key maps to.
    pub all_signers: bool,
    /// Why it is not trusted (empty when it is).
    pub reason: String,
}

impl Verdict {
    pub(super) fn good(signer: &str) -> Verdict {
        Verdict {
            trusted: true,
            signers: vec![signer.to_string()],
            all_signers: false,
            reason: String::new(),
        }
    }
    pub(super) fn bad(signers: Vec<String>, reason: impl Into<String>) -> Verdict {
        Verdict {
            trusted: false,
            signers,
            all_signers: true,
            reason: reason.into(),
        }
    }
    /// Whether it may be kept on disk: not a "bad" that the verify program
    /// gave no reason for (it judged nothing; the next run checks again).
    pub(super) fn lasting(&self) -> bool {
        self.reason != UNEXPLAINED
    }
    /// `<commit> T|T+|U <signer,…|-> <reason>`: `T+` a trusted one whose
    /// signers are all known.
    pub(super) fn line(&self, commit: ObjectId) -> String {
        let signers = if self.signers.is_empty() {
            "-".to_string()
        } else {
            self.signers.join(",").replace(' ', "")
        };
        format!(
            "{commit} {} {signers} {}\n",
            match (self.trusted, self.all_signers) {
                (true, false) => "T",
                (true, true) => "T+",
                (false, _) => "U",
            },
            self.reason.replace('\n', " ")
        )
    }
    pub(super) fn parse_line(line: &str) -> Option<(ObjectId, Verdict)> {
        let mut parts = line.splitn(4, ' ');
        let commit = ObjectId::from_hex(parts.next()?.as_bytes()).ok()?;
        let (trusted, all_signers) = match parts.next()? {
            "T" => (true, false),
            "T+" => (true, true),
            "U" => (false, true),
            _ => return None,
        };
        let signers = match parts.next()? {
            "-" => Vec::new(),
            s => s.split(',').map(str::to_string).collect(),
        };
        let reason = parts.next().unwrap_or("").to_string();
        Some((
            commit,
            Verdict {
                trusted,
                signers,
                all_signers,
                reason,
            },
        ))
    }
}

/// A commit's raw parts a signature covers.
pub(super) struct Signed {
    pub payload: Vec<u8>,
    pub signature: Option<Vec<u8>>,
    pub actor: String,
    pub time: i64,
}

/// Split a raw commit into the payload git signs (the commit without its
/// `gpgsig` header) and the signature; the actor it names (`Swarm-Actor`,
/// else the author's name) and its committer time.
pub(super) fn split_commit(raw: &[u8]) -> Signed {
    let end = raw.find(b"\n\n").map_or(raw.len(), |i| i + 1);
    let (head, body) = raw.split_at(end);
    let mut payload = Vec::with_capacity(raw.len());
    let mut signature: Option<Vec<u8>> = None;
    let mut in_sig = false;
    let mut author = String::new();
    let mut time = 0;
    for line in head.split_inclusive(|b| *b == b'\n') {
        if in_sig && line.starts_with(b" ") {
            if let Some(sig) = signature.as_mut() {
                sig.extend_from_slice(&line[1..]);
            }
            continue;
        }
        in_sig = false;
        if let Some(rest) = line.strip_prefix(b"gpgsig ") {
            signature = Some(rest.to_vec());
            in_sig = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"author ") {
            let rest = rest.to_str_lossy();
            author = rest.split(" <").next().unwrap_or("").to_string();
        }
        if let Some(rest) = line.strip_prefix(b"committer ") {
            let rest = rest.to_str_lossy();
            let mut fields = rest.trim_end().rsplitn(3, ' ');
            let _tz = fields.next();
            time = fields.next().and_then(|t| t.parse().ok()).unwrap_or(0);
        }
        payload.extend_from_slice(line);
    }
    payload.extend_from_slice(body);
    let message = body.to_str_lossy();
    let entry = crate::store::parse_journal_entry(String::new(), 0, message.trim_start(), 0);
    let actor = if entry.actor.is_empty() {
        author
    } else {
        entry.actor
    };
    Signed {
        payload,
        signature,
        actor,
        time,
    }
}

/// A committer time as ssh-keygen's `-Overify-time` takes it.
pub(super) fn verify_time(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y%m%d%H%M%SZ").to_string())
        .unwrap_or_else(|_| "19700101000000Z".to_string())
}

/// What checking one commit takes.
pub(super) enum Prepared {
    /// Known without ssh-keygen (unsigned, not ssh, no trust list).
    Done(Verdict),
    Check(Check),
}

/// One `ssh-keygen` check of a commit's signature against the trust list
/// file, for the actor it names, at its time.
pub(super) struct Check {
    pub id: ObjectId,
    pub file: PathBuf,
    pub time: String,
    pub signature: Vec<u8>,
    pub signed: Signed,
}

impl Check {
    /// What ssh-keygen says (`program`, None: ssh-keygen); `scratch` holds
    /// the signature file. Runs no git-swarm state: safe on any thread.
    pub fn run(&self, program: Option<&str>, scratch: &Path) -> Result<SshCheck> {
        sign::ssh_verify(
            program,
            &self.file,
            &self.signed.actor,
            &self.time,
            &self.signature,
            &self.signed.payload,
            scratch,
        )
    }
}

/// How many ssh-keygen checks a cold listing runs at once: the machine's
/// cores, at least 2 and at most 8 (`GIT_SWARM_TRUST_JOBS` sets it; 1 checks
/// one by one).
pub(super) fn check_jobs() -> usize {
    if let Some(n) = std::env::var("GIT_SWARM_TRUST_JOBS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n.max(1);
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_splits_into_payload_and_signature_as_git_signs_it() {
        let raw = b"tree 1\nauthor bob <b@x> 5 +0000\ncommitter bob <b@x> 7 +0000\ngpgsig -----BEGIN SSH SIGNATURE-----\n abc\n -----END SSH SIGNATURE-----\n\nsummary\n\nSwarm-Actor: carol\n";
        let s = split_commit(raw);
        assert_eq!(
            s.payload,
            b"tree 1\nauthor bob <b@x> 5 +0000\ncommitter bob <b@x> 7 +0000\n\nsummary\n\nSwarm-Actor: carol\n"
        );
        assert_eq!(
            s.signature.unwrap(),
            b"-----BEGIN SSH SIGNATURE-----\nabc\n-----END SSH SIGNATURE-----\n"
        );
        assert_eq!(s.actor, "carol");
        assert_eq!(s.time, 7);
        let unsigned =
            split_commit(b"tree 1\nauthor dan <d@x> 5 +0000\ncommitter dan <d@x> 5 +0000\n\nwip\n");
        assert!(unsigned.signature.is_none());
        assert_eq!(unsigned.actor, "dan");
    }

    #[test]
    fn verdict_lines_round_trip() {
        let id = ObjectId::from_hex(b"0123456789012345678901234567890123456789").unwrap();
        let v = Verdict::bad(
            vec!["bob".into(), "dave".into()],
            "signed by the key of bob, dave, not of carol",
        );
        assert_eq!(Verdict::parse_line(v.line(id).trim_end()), Some((id, v)));
        let mut g = Verdict::good("ann");
        assert_eq!(
            Verdict::parse_line(g.line(id).trim_end()),
            Some((id, g.clone()))
        );
        g.signers.push("carol".into());
        g.all_signers = true;
        assert_eq!(Verdict::parse_line(g.line(id).trim_end()), Some((id, g)));
        let u = Verdict::bad(Vec::new(), "unsigned");
        assert_eq!(Verdict::parse_line(u.line(id).trim_end()), Some((id, u)));
    }
}
