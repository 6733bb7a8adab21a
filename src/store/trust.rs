//! Signed records and the trust list (`swarm.trust`, SPEC §9).
//!
//! Who wrote a record is proven by the signature on its commit, not by the
//! `Swarm-Actor` it names. Two points, and only two, in the store:
//!
//! - **sign** ([`Store::commit`]): when the actor has a key
//!   (`swarm.<address>.signingKey`, an ssh key; else `user.signingKey` with
//!   `commit.gpgSign` and `gpg.format`, as git signs), the commit carries
//!   a `gpgsig` header made as git makes it, so `git verify-commit` checks it;
//! - **check** ([`Store::trusted`]), called by `Records::at` before any
//!   record version is used: under `swarm.trust=require` a record that is
//!   unsigned, badly signed, or signed by a key the trust list does not
//!   list for the actor it names fails with `RECORD_UNTRUSTED`, which makes
//!   it an unreadable record everywhere (listed as `UNTRUSTED`, never
//!   decided on); under `warn` it is used and a warning says so.
//!
//! The trust list is `.swarm/allowed_signers` (git's allowed-signers
//! format, principal = swarm address) at the tip of the base branch as the
//! remote has it (its remote-tracking ref; a local branch only without a
//! remote), so adding a signer goes through the base branch's review; a
//! record can never vouch for its signer. `valid-after`/`valid-before` are
//! judged at the record commit's committer time, as git does.
//!
//! A record commit never changes, so a verdict is kept by (trust list blob,
//! commit) in `<common dir>/swarm/cache/trust/<list>/<namespace>.v2.verdicts`,
//! one line per commit, appended; a new trust list starts new files.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use gix::ObjectId;

mod list;
mod signing;
mod verdict;

use super::Store;
use crate::error::{Code, Error, Result};
use crate::git::sign::{self, SshCheck};
use list::List;
pub use verdict::Verdict;
use verdict::{check_jobs, split_commit, verify_time, Check, Prepared};

/// How many untrusted versions on top of a record a read passes over to
/// find a trusted one before it gives up (the record is then unreadable):
/// a bound on the signatures one read checks.
pub const MAX_PASSED_OVER: usize = 64;

/// The trust list's path on the base branch.
pub const LIST_PATH: &str = ".swarm/allowed_signers";

/// `swarm.trust`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Off,
    Warn,
    Require,
}

impl Policy {
    pub fn parse(value: Option<&str>) -> Result<Policy> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("off") | Some("") => Ok(Policy::Off),
            Some("warn") => Ok(Policy::Warn),
            Some("require") => Ok(Policy::Require),
            Some(other) => Err(Error::new(
                Code::ConfigInvalid,
                format!("swarm.trust is '{other}'; it is off, warn or require"),
            )
            .hint("fix it: `git config swarm.trust require` (or warn, or off)")),
        }
    }
}

/// The trust state of one store: the policy, where the trust list lives,
/// and the verdicts known so far.
pub struct Trust {
    policy: Policy,
    /// The ref holding the base branch's tip as the remote has it (set by
    /// the session, which knows the base).
    base: Mutex<Option<String>>,
    list: OnceLock<List>,
    /// Verdicts by record namespace, each loaded from its file on first use.
    verdicts: Mutex<HashMap<String, HashMap<ObjectId, Verdict>>>,
    dir: PathBuf,
    disk: Mutex<bool>,
    /// The first failure of the checking program itself (missing, too old
    /// for `-Y`): every later check of this store fails with it at once,
    /// and nothing it caused is kept as a verdict.
    tool: Mutex<Option<Error>>,
}

/// What the trust checks of one command leave for its output (shared by
/// the stores the command opens: see [`crate::store::CommandState`]).
#[derive(Debug, Default)]
pub struct Notices {
    /// Warnings for untrusted records used under `warn`: one per commit, in
    /// the order met.
    warnings: Mutex<Vec<(ObjectId, String)>>,
    /// Under `require`, the checking program's failure (missing, too old),
    /// if a check met one: a listing that showed the records it could not
    /// check as unreadable still fails with it (exit 4), since it judged
    /// none of them.
    tool_failure: Mutex<Option<Error>>,
}

impl Notices {
    /// The checking program's failure met under `require`, if any (the CLI
    /// ends the command with it).
    pub fn take_tool_failure(&self) -> Option<Error> {
        self.tool_failure.lock().ok().and_then(|mut f| f.take())
    }

    /// The warnings collected so far, one per commit (the CLI adds them to
    /// its output).
    pub fn take_warnings(&self) -> Vec<String> {
        let taken = self
            .warnings
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        taken
            .into_iter()
            .filter(|(id, _)| seen.insert(*id))
            .map(|(_, line)| line)
            .collect()
    }

    pub(super) fn warn(&self, commit: ObjectId, line: String) {
        if let Ok(mut n) = self.warnings.lock() {
            n.push((commit, line));
        }
    }

    fn tool_failed(&self, e: &Error) {
        if let Ok(mut f) = self.tool_failure.lock() {
            f.get_or_insert_with(|| e.clone());
        }
    }
}

/// The record namespace of a ref (`refs/swarm/<ns>/…`, or a remote's
/// mirror of it): verdicts are kept per namespace, so that a listing of
/// one kind loads that kind's only.
pub fn namespace_of(refname: &str) -> &str {
    let rest = refname
        .strip_prefix("refs/swarm/")
        .or_else(|| {
            refname
                .strip_prefix("refs/swarm-remotes/")
                .and_then(|r| r.split_once('/').map(|(_, rest)| rest))
        })
        .unwrap_or(refname);
    rest.split('/').next().unwrap_or("")
}

impl Trust {
    pub(super) fn new(policy: Policy, common_dir: &std::path::Path, cache: bool) -> Trust {
        Trust {
            policy,
            base: Mutex::new(None),
            list: OnceLock::new(),
            verdicts: Mutex::new(HashMap::new()),
            dir: common_dir.join("swarm").join("cache").join("trust"),
            disk: Mutex::new(cache),
            tool: Mutex::new(None),
        }
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Name the ref whose tree holds the trust list (before any record is
    /// read).
    pub fn set_base(&self, refname: Option<String>) {
        if let Ok(mut b) = self.base.lock() {
            *b = refname;
        }
    }

    /// Keep verdicts in memory only (`--no-cache`).
    pub fn bypass_cache(&self) {
        if let Ok(mut d) = self.disk.lock() {
            *d = false;
        }
    }
}

impl Store {
    /// Where verdicts of namespace `ns` for the current trust list are
    /// kept on disk.
    fn verdict_file(&self, ns: &str) -> Option<PathBuf> {
        let on = self.trust.disk.lock().map(|d| *d).unwrap_or(false);
        let blob = self.trust_list().blob?;
        let safe = !ns.is_empty()
            && ns
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        (on && safe).then(|| {
            self.trust
                .dir
                .join(blob.to_string())
                .join(format!("{ns}.v2.verdicts"))
        })
    }

    /// The verdict on record commit `id` of namespace `ns` (cached by
    /// commit id). A checking program that cannot run is
    /// `SIGNING_TOOL_MISSING`, no verdict, and nothing is kept.
    pub fn verdict(&self, ns: &str, id: ObjectId) -> Result<Verdict> {
        if let Some(e) = self.trust.tool.lock().ok().and_then(|t| t.clone()) {
            return Err(e);
        }
        let mut guard = self
            .trust
            .verdicts
            .lock()
            .map_err(|_| Error::new(Code::Internal, "the trust cache lock was poisoned"))?;
        let known = self.known_verdicts(&mut guard, ns);
        if let Some(v) = known.get(&id) {
            return Ok(v.clone());
        }
        let verdict = match self.check_signature(id) {
            Err(e) if e.code == Code::SigningToolMissing => {
                if let Ok(mut t) = self.trust.tool.lock() {
                    *t = Some(e.clone());
                }
                return Err(e);
            }
            other => other?,
        };
        known.insert(id, verdict.clone());
        self.keep_verdict(ns, id, &verdict);
        Ok(verdict)
    }

    /// The verdicts of namespace `ns` known so far, loaded from its file
    /// on first use.
    fn known_verdicts<'g>(
        &self,
        guard: &'g mut HashMap<String, HashMap<ObjectId, Verdict>>,
        ns: &str,
    ) -> &'g mut HashMap<ObjectId, Verdict> {
        guard.entry(ns.to_string()).or_insert_with(|| {
            let mut map = HashMap::new();
            if let Some(file) = self.verdict_file(ns) {
                if let Ok(text) = std::fs::read_to_string(file) {
                    map.extend(text.lines().filter_map(Verdict::parse_line));
                }
            }
            map
        })
    }

    /// Append `verdict` on `id` to its namespace's file (a later line for
    /// the same commit wins when read back).
    fn keep_verdict(&self, ns: &str, id: ObjectId, verdict: &Verdict) {
        self.keep_verdicts(ns, &[(id, verdict.clone())]);
    }

    fn keep_verdicts(&self, ns: &str, verdicts: &[(ObjectId, Verdict)]) {
        if verdicts.is_empty() {
            return;
        }
        if let Some(file) = self.verdict_file(ns) {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
            {
                // One short line per write: appends from two processes
                // interleave whole lines.
                for (id, verdict) in verdicts.iter().filter(|(_, v)| v.lasting()) {
                    let _ = f.write_all(verdict.line(*id).as_bytes());
                }
            }
        }
    }

    /// With `swarm.trust` on, whether `who` signed the record version at
    /// `commit` (a relayed message's author): whether the trust list holds
    /// its signing key for `who` at the record's time, every principal the
    /// key maps to counted, as `git verify-commit` finds them. None when
    /// trust is off, or under warn when the signature could not be checked.
    pub fn signed_by(&self, ns: &str, commit: ObjectId, who: &str) -> Result<Option<bool>> {
        if self.trust.policy == Policy::Off {
            return Ok(None);
        }
        let verdict = match self.verdict(ns, commit) {
            Ok(v) => v,
            Err(e) if e.code == Code::SigningToolMissing && self.trust.policy == Policy::Warn => {
                return Ok(None)
            }
            Err(e) => return Err(self.unchecked(e)),
        };
        if verdict.signers.iter().any(|s| s == who) {
            return Ok(Some(true));
        }
        if verdict.all_signers {
            return Ok(Some(false));
        }
        // A good signature by the actor's key: which others is it theirs?
        let signers = match self.principals_of(commit) {
            Ok(s) => s,
            Err(e) if e.code == Code::SigningToolMissing && self.trust.policy == Policy::Warn => {
                return Ok(None)
            }
            Err(e) => return Err(self.unchecked(e)),
        };
        let mut complete = verdict;
        for s in signers {
            if !complete.signers.contains(&s) {
                complete.signers.push(s);
            }
        }
        complete.all_signers = true;
        let signed = complete.signers.iter().any(|s| s == who);
        if let Ok(mut guard) = self.trust.verdicts.lock() {
            guard
                .entry(ns.to_string())
                .or_default()
                .insert(commit, complete.clone());
        }
        self.keep_verdict(ns, commit, &complete);
        Ok(Some(signed))
    }

    /// Every principal the trust list holds the key that signed `commit`
    /// for, at the commit's time.
    fn principals_of(&self, commit: ObjectId) -> Result<Vec<String>> {
        let raw = self
            .repo
            .find_object(commit)
            .map_err(|e| Error::gix(format!("could not read commit {commit}"), e))?
            .data
            .clone();
        let signed = split_commit(&raw);
        let (Some(signature), Some(file)) = (signed.signature, &self.trust_list().file) else {
            return Ok(Vec::new());
        };
        sign::ssh_find_principals(
            self.config("gpg.ssh.program").as_deref(),
            file,
            &verify_time(signed.time),
            &signature,
            &self.trust.dir,
        )
    }

    fn check_signature(&self, id: ObjectId) -> Result<Verdict> {
        match self.prepare_check(id)? {
            Prepared::Done(verdict) => Ok(verdict),
            Prepared::Check(check) => {
                let program = self.config("gpg.ssh.program");
                let said = check.run(program.as_deref(), &self.trust.dir)?;
                Ok(self.judge(&check, said))
            }
        }
    }

    /// What checking `id` takes: a verdict already (unsigned, not ssh, no
    /// trust list), or one `ssh-keygen` check.
    fn prepare_check(&self, id: ObjectId) -> Result<Prepared> {
        let raw = self
            .repo
            .find_object(id)
            .map_err(|e| Error::gix(format!("could not read commit {id}"), e))?
            .data
            .clone();
        let signed = split_commit(&raw);
        let Some(signature) = signed.signature.clone() else {
            return Ok(Prepared::Done(Verdict::bad(Vec::new(), "unsigned")));
        };
        if !signature.starts_with(b"-----BEGIN SSH SIGNATURE-----") {
            return Ok(Prepared::Done(Verdict::bad(
                Vec::new(),
                "signed with openpgp or x509: only ssh signatures are checked against .swarm/allowed_signers",
            )));
        }
        let list = self.trust_list();
        let Some(file) = &list.file else {
            return Ok(Prepared::Done(Verdict::bad(Vec::new(), list.missing())));
        };
        Ok(Prepared::Check(Check {
            id,
            file: file.clone(),
            time: verify_time(signed.time),
            signature,
            signed,
        }))
    }

    /// The verdict on what ssh-keygen said of `check`.
    fn judge(&self, check: &Check, said: SshCheck) -> Verdict {
        let signed = &check.signed;
        match said {
            SshCheck::Good => Verdict::good(&signed.actor),
            SshCheck::Bad(why) if why.is_empty() => Verdict::bad(Vec::new(), verdict::UNEXPLAINED),
            SshCheck::Bad(why) => Verdict::bad(Vec::new(), format!("bad signature ({why})")),
            SshCheck::NotAllowed { principals } if principals.is_empty() => Verdict::bad(
                Vec::new(),
                format!(
                    "signed by a key {LIST_PATH} on {} does not list for {} at the record's time {}",
                    self.trust_list().source,
                    signed.actor,
                    jiff::Timestamp::from_second(signed.time).map(|t| t.to_string()).unwrap_or_default()
                ),
            ),
            SshCheck::NotAllowed { principals } => {
                let reason = format!(
                    "signed by the key of {}, not of {} whom the record names",
                    principals.join(", "),
                    signed.actor
                );
                Verdict::bad(principals, reason)
            }
        }
    }

    /// Before a listing reads `ids` of namespace `ns` one by one: check the
    /// ones with no verdict yet across a few `ssh-keygen` processes at once
    /// (`ssh-keygen -Y verify` checks one signature a call), so a cold
    /// listing waits for the slowest of a few, not for the sum. The
    /// verdicts are kept as [`Store::verdict`] keeps them; a failure of the
    /// program is left for the one-by-one reads to meet and say.
    pub fn check_ahead(&self, ns: &str, ids: &[ObjectId]) {
        if self.trust.policy == Policy::Off || ids.len() < 2 {
            return;
        }
        if self.trust.tool.lock().map(|t| t.is_some()).unwrap_or(true) {
            return;
        }
        let mut checks = Vec::new();
        {
            let Ok(mut guard) = self.trust.verdicts.lock() else {
                return;
            };
            let known = self.known_verdicts(&mut guard, ns);
            let mut seen = std::collections::HashSet::new();
            for &id in ids {
                if known.contains_key(&id) || !seen.insert(id) {
                    continue;
                }
                match self.prepare_check(id) {
                    Ok(Prepared::Check(c)) => checks.push(c),
                    // Cheap verdicts, and errors, are left to `verdict`.
                    Ok(Prepared::Done(_)) | Err(_) => {}
                }
            }
        }
        let jobs = check_jobs().min(checks.len());
        if jobs < 2 {
            return;
        }
        let program = self.config("gpg.ssh.program");
        let next = std::sync::atomic::AtomicUsize::new(0);
        let said: Vec<Mutex<Option<SshCheck>>> = checks.iter().map(|_| Mutex::new(None)).collect();
        let dir = &self.trust.dir;
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(check) = checks.get(i) else { break };
                    match check.run(program.as_deref(), dir) {
                        Ok(s) => {
                            if let Ok(mut slot) = said[i].lock() {
                                *slot = Some(s);
                            }
                        }
                        // The program failed: stop; `verdict` says why.
                        Err(_) => {
                            next.store(checks.len(), std::sync::atomic::Ordering::Relaxed);
                            break;
                        }
                    }
                });
            }
        });
        let Ok(mut guard) = self.trust.verdicts.lock() else {
            return;
        };
        let mut judged = Vec::new();
        for (check, said) in checks.iter().zip(said) {
            if let Some(said) = said.into_inner().ok().flatten() {
                judged.push((check.id, self.judge(check, said)));
            }
        }
        let known = guard.entry(ns.to_string()).or_default();
        for (id, verdict) in &judged {
            known.insert(*id, verdict.clone());
        }
        drop(guard);
        self.keep_verdicts(ns, &judged);
    }

    /// The newest version of the record at `tip` that may be used: `tip`
    /// itself unless `swarm.trust=require` refuses it; then the first
    /// trusted commit down its first parents (a record is a commit chain:
    /// untrusted commits on top of trusted history are passed over, their
    /// trees never read). None when no version is trusted, or none within
    /// [`MAX_PASSED_OVER`] versions: the record then stays unreadable.
    /// Off and warn: `tip`.
    pub fn trusted_version(&self, refname: &str, tip: ObjectId) -> Result<Option<ObjectId>> {
        if self.trust.policy != Policy::Require {
            return Ok(Some(tip));
        }
        let mut at = tip;
        for _ in 0..=MAX_PASSED_OVER {
            if self.refused(refname, at)?.is_none() {
                return Ok(Some(at));
            }
            // Only the commit's header is read (its parents), never its tree.
            let parent = match self.repo.find_commit(at) {
                Ok(c) => c.parent_ids().next().map(|p| p.detach()),
                Err(_) => None,
            };
            match parent {
                Some(p) => at = p,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Under `require`, why the record version at `commit` may not be
    /// used (None: it may, or trust is not required).
    pub fn refused(&self, refname: &str, commit: ObjectId) -> Result<Option<String>> {
        if self.trust.policy != Policy::Require {
            return Ok(None);
        }
        let verdict = self
            .verdict(namespace_of(refname), commit)
            .map_err(|e| self.unchecked(e))?;
        Ok((!verdict.trusted).then_some(verdict.reason))
    }

    /// A check that failed: a failure of the checking program is kept for
    /// the CLI under `require` (see [`Notices::take_tool_failure`]).
    fn unchecked(&self, e: Error) -> Error {
        if e.code == Code::SigningToolMissing && self.trust.policy == Policy::Require {
            self.run.trust.tool_failed(&e);
        }
        e
    }

    /// The one check point: whether the record version at `commit` may be
    /// used. Off: yes. Require: `RECORD_UNTRUSTED` unless its signature is
    /// good for the actor it names. Warn: yes, with a warning.
    pub fn trusted(&self, ns: &str, kind: &str, name: &str, commit: ObjectId) -> Result<()> {
        if self.trust.policy == Policy::Off {
            return Ok(());
        }
        let verdict = match self.verdict(ns, commit) {
            Ok(v) => v,
            // Under warn, records the program cannot check are used, said once.
            Err(e) if e.code == Code::SigningToolMissing && self.trust.policy == Policy::Warn => {
                let line = format!(
                    "records not checked (swarm.trust=warn), used unchecked: {} [SIGNING_TOOL_MISSING]",
                    e.message
                );
                self.run
                    .trust
                    .warn(ObjectId::null(gix::hash::Kind::Sha1), line);
                return Ok(());
            }
            Err(e) => return Err(self.unchecked(e)),
        };
        if verdict.trusted {
            return Ok(());
        }
        let short = &commit.to_string()[..12];
        if self.trust.policy == Policy::Require {
            return Err(Error::new(
                Code::RecordUntrusted,
                format!("{} ({kind} '{name}', commit {short})", verdict.reason),
            )
            .hint(format!(
                "swarm.trust=require uses only records signed by a key {LIST_PATH} on the base branch lists for their actor; see docs/trust.md"
            )));
        }
        let line = format!(
            "untrusted {kind} '{name}' used (swarm.trust=warn): {} (commit {short})",
            verdict.reason
        );
        self.run.trust.warn(commit, line);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_a_bad_one_names_the_key() {
        assert_eq!(Policy::parse(None).unwrap(), Policy::Off);
        assert_eq!(Policy::parse(Some("Require")).unwrap(), Policy::Require);
        let e = Policy::parse(Some("yes")).unwrap_err();
        assert_eq!(e.code, Code::ConfigInvalid);
    }

    #[test]
    fn namespaces_of_local_and_mirrored_refs() {
        assert_eq!(namespace_of("refs/swarm/tasks/p/t1"), "tasks");
        assert_eq!(namespace_of("refs/swarm-remotes/origin/lead/p"), "lead");
        assert_eq!(namespace_of("refs/swarm/reservations"), "reservations");
    }
}
