//! Records as commit chains of YAML under `refs/swarm/…`, written with
//! compare-and-swap ref updates, plus the `refs/notes/swarm` notes — all over
//! gix, so plain git reads everything (SPEC §1).
//!
//! A record is one commit: its tree holds a few flat files (`plan.yaml`,
//! `PLAN.md`, …) and its parent is the previous version of the record, so
//! `git log <ref>` is the record's journal. Every write names the value it
//! expects the ref to hold; if another process moved the ref first, the write
//! fails with exit 3 and nothing is overwritten.
//!
//! The store knows no record kind (L1: it imports only L0 and `config`):
//!
//! - [`records`]: the `Record` trait a kind implements, `Records<R>` (load, all,
//!   create, the CAS `update`) and `AnyKind` for `sync` and `gc`;
//! - `objects` and `refs`: record versions, commits, journals; ref reads and
//!   compare-and-swap transactions, failing with the typed [`StoreError`];
//! - [`notes`]: `refs/notes/swarm`, appended as line unions;
//! - [`mirror`] and [`remote`]: the mirror fetch, the atomic push with
//!   leases and the one push step of a publication (`remote::land`);
//!   [`records::Publish`] is the one fetch → decide → publish operation;
//! - [`reconcile`]: joining diverged refs as each kind says (`sync`);
//! - [`archive`]: folding finished records into archive refs (`gc`);
//! - [`yaml`]: YAML parsing with schema and size checks;
//! - [`cachefile`]: the one format of the checksummed cache files (header,
//!   checksum, atomic replace, size limit, any problem a miss);
//! - [`cache`]: parsed record values on disk, keyed by commit id, which
//!   `Records::at` reads through;
//! - [`trust`]: signing record commits and checking their signatures
//!   against the base branch's trust list (`swarm.trust`).

pub mod archive;
pub mod cachefile;
pub mod delta_bases;
pub mod error;
pub mod fingerprint;
pub mod mirror;
pub mod notes;
mod objects;
pub mod reconcile;
pub mod record_cache;
pub mod records;
pub mod ref_stamp;
mod refs;
pub mod remote;
pub mod trust;
pub mod yaml;

use std::path::{Path, PathBuf};

use gix::bstr::{BString, ByteSlice};

pub use error::{short, StoreError};
pub use objects::{parse_journal_entry, Event, JournalEntry, RecordCommit};
pub use refs::STALE_LOCK;

use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::git::Git;

/// What one command shares across the stores (and sessions) it opens: the
/// tally of its remote operations, what it does when the remote cannot be
/// reached, and what its trust checks leave for its output. The CLI opens
/// one per command and passes it down; a store opened on its own gets a
/// fresh one. Nothing of it outlives the command: a process that runs
/// several (a test, a runner) keeps them apart.
#[derive(Debug, Default)]
pub struct CommandState {
    pub net: std::sync::Arc<crate::git::NetTally>,
    pub reach: mirror::Reach,
    pub trust: trust::Notices,
}

/// An open repository: gix for objects and refs, the git binary for the rest.
pub struct Store {
    /// The command's shared state ([`CommandState`]).
    pub run: std::sync::Arc<CommandState>,
    pub repo: gix::Repository,
    pub git: Git,
    pub clock: Clock,
    /// Parsed records by commit id (`Records::at` reads through it).
    pub cache: record_cache::RecordCache,
    /// `swarm.trust`, the trust list and signature verdicts (see [`trust`]).
    pub trust: trust::Trust,
}

/// Split `section.sub.section.name` the way git does: the section before the
/// first dot, the name after the last, the subsection (if any) in between.
pub fn split_key(key: &str) -> Option<(&str, Option<&str>, &str)> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    if section.is_empty() || name.is_empty() {
        return None;
    }
    Some((section, sub, name))
}

/// Put `git -c` settings (`GIT_CONFIG_PARAMETERS`) on top of the config gix
/// loaded, in a section of their own at the end, so they win over the files
/// and `GIT_CONFIG_COUNT` as in git; section and key names stay
/// case-insensitive as gix compares them.
fn apply_command_line_config(
    repo: &mut gix::Repository,
    params: &[(String, Option<String>)],
) -> Result<()> {
    if params.is_empty() {
        return Ok(());
    }
    let mut extra =
        gix::config::File::new(gix::config::file::Metadata::from(gix::config::Source::Cli));
    for (key, value) in params {
        let bad = |why: String| {
            Error::new(
                Code::EnvInvalid,
                format!("`git -c {key}` (GIT_CONFIG_PARAMETERS) is not a valid config key: {why}"),
            )
        };
        let (section, sub, name) =
            split_key(key).ok_or_else(|| bad("no section.name".to_string()))?;
        let mut sec = extra
            .new_section(section, sub.map(|s| BString::from(s.as_bytes())))
            .map_err(|e| bad(e.to_string()))?;
        sec.push(name, value.as_deref().map(|v| v.as_bytes().as_bstr()))
            .map_err(|e| bad(e.to_string()))?;
    }
    let mut snapshot = repo.config_snapshot_mut();
    snapshot.append(extra).map_err(|e| {
        Error::new(
            Code::EnvInvalid,
            format!("cannot apply `git -c` settings: {e}"),
        )
    })?;
    snapshot.commit().map_err(|e| {
        Error::new(
            Code::EnvInvalid,
            format!("cannot apply `git -c` settings: {e}"),
        )
    })?;
    Ok(())
}

/// Room in gix's index slot map for the packs a repository gains while a
/// command runs. gix sizes that map once, when the repository is opened
/// (by default 1.1 × the packs on disk, at least 32), and a lookup fails
/// ("could not insert commit into graph", "object not found") once more
/// packs than that have appeared: in a clone where ten agents fetch at
/// once, each fetch a new pack, a claim retrying for a minute saw dozens.
/// Twice the packs on disk and at least 1,024 slots cost a few kilobytes
/// and outlast any run between two `git gc --auto`s (50 packs).
const INDEX_SLOTS: gix::odb::store::init::Slots =
    gix::odb::store::init::Slots::AsNeededByDiskState {
        multiplier: 2.0,
        minimum: 1024,
    };

/// [`gix::discover_with_environment_overrides`] with [`INDEX_SLOTS`].
fn discover(cwd: &Path) -> gix::Result<gix::Repository> {
    let mut trust = gix::sec::trust::Mapping::<gix::open::Options>::default();
    trust.full = trust.full.object_store_slots(INDEX_SLOTS);
    trust.reduced = trust.reduced.object_store_slots(INDEX_SLOTS);
    gix::ThreadSafeRepository::discover_with_environment_overrides_opts(
        cwd,
        Default::default(),
        trust,
    )
    .map(Into::into)
}

impl Store {
    /// Open the repository that contains `cwd`, or the one GIT_DIR names,
    /// without `git -c` settings ([`Store::open_with`] takes them).
    pub fn open(cwd: &Path) -> Result<Store> {
        Store::open_with(cwd, &[], std::sync::Arc::default())
    }

    /// Open the repository that contains `cwd`, or the one GIT_DIR names,
    /// with the `git -c` settings of the command line (`command_line`,
    /// parsed by [`crate::config::command_line_parameters`]) on top of the
    /// config files, as git does; the command's shared state is `run`.
    pub fn open_with(
        cwd: &Path,
        command_line: &[(String, Option<String>)],
        run: std::sync::Arc<CommandState>,
    ) -> Result<Store> {
        // Like git: GIT_DIR / GIT_WORK_TREE when set (hooks, `git --git-dir`),
        // else discovery upwards from the current directory.
        let mut repo = discover(cwd).map_err(|e| {
            Error::new(
                Code::NotARepo,
                format!("not inside a git repository ({}): {e}", cwd.display()),
            )
            .hint("run git swarm inside a git repository, or `git init` one first")
        })?;
        apply_command_line_config(&mut repo, command_line)?;
        // Records and lane trees are mostly deltas of one another in packs.
        delta_bases::DeltaBases::install(&mut repo);
        let limit = repo
            .config_snapshot()
            .integer("swarm.recordCacheLimit")
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(record_cache::DEFAULT_LIMIT);
        let policy = trust::Policy::parse(
            repo.config_snapshot()
                .string("swarm.trust")
                .map(|v| v.to_str_lossy().into_owned())
                .as_deref(),
        )?;
        let cache = record_cache::RecordCache::new(repo.common_dir(), limit);
        let store = Store {
            trust: trust::Trust::new(policy, repo.common_dir(), cache.enabled()),
            cache,
            repo,
            git: Git::counted(cwd, run.net.clone()),
            clock: Clock::from_env()?,
            run,
        };
        store.refuse_reftable()?;
        Ok(store)
    }

    fn refuse_reftable(&self) -> Result<()> {
        let config = self.repo.config_snapshot();
        if let Some(value) = config.string("extensions.refStorage") {
            if value.to_str_lossy().eq_ignore_ascii_case("reftable") {
                return Err(Error::new(
                    Code::ReftableUnsupported,
                    "this repository stores refs in reftable format, which git-swarm cannot yet update safely",
                )
                .hint("use a repository with the files ref backend (git init --ref-format=files)"));
            }
        }
        Ok(())
    }

    /// A config value as git would resolve it (repo, global, system), read by
    /// gix so that hot paths (hooks) spawn no `git config` processes.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// Every value of a multi-valued config key, in order.
    pub fn config_all(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_str_lossy().into_owned())
            .collect()
    }

    /// The worktree root of the checkout we run in, if any.
    pub fn workdir(&self) -> Option<&Path> {
        self.repo.workdir()
    }

    pub fn workdir_or_err(&self) -> Result<PathBuf> {
        self.workdir().map(Path::to_path_buf).ok_or_else(|| {
            Error::new(
                Code::Usage,
                "this command needs a working tree (not a bare repository)",
            )
        })
    }

    /// The `.git` directory shared by all worktrees.
    pub fn common_dir(&self) -> PathBuf {
        self.repo.common_dir().to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_split_like_git() {
        assert_eq!(super::split_key("swarm.as"), Some(("swarm", None, "as")));
        assert_eq!(
            super::split_key("remote.my.origin.url"),
            Some(("remote", Some("my.origin"), "url"))
        );
        assert_eq!(super::split_key("nodot"), None);
    }

    /// `git` in `dir`, its trimmed stdout.
    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `git update-ref --stdin` in `dir` with `input`.
    fn update_refs(dir: &std::path::Path, input: &str) {
        let mut child = std::process::Command::new("git")
            .current_dir(dir)
            .args(["update-ref", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn a_listing_while_another_process_deletes_and_recreates_the_refs_never_fails() {
        // Another process of the clone pruning its mirror (fetch --prune)
        // while this one lists: a loose ref listed and gone before it is
        // read is taken as a moved directory and listed again.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        git(&dir, &["init", "--quiet", "-b", "main"]);
        git(&dir, &["commit", "--quiet", "--allow-empty", "-m", "c0"]);
        let head = git(&dir, &["rev-parse", "HEAD"]);
        let create: String = (0..300)
            .map(|i| format!("create refs/swarm/x/r{i:03} {head}\n"))
            .collect();
        let delete: String = (0..300)
            .map(|i| format!("delete refs/swarm/x/r{i:03}\n"))
            .collect();
        update_refs(&dir, &create);
        let store = super::Store::open(&dir).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            let (create, delete, dir) = (create.clone(), delete.clone(), dir.clone());
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    update_refs(&dir, &delete);
                    update_refs(&dir, &create);
                    rounds += 1;
                }
                rounds
            })
        };
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let refs = store.list_refs("refs/swarm/x/").unwrap();
            seen.insert(refs.len());
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let rounds = churn.join().unwrap();
        assert!(rounds > 0, "the refs churned");
        assert!(seen.len() > 1, "the listing saw the refs move: {seen:?}");
    }

    #[test]
    fn a_store_opened_before_sixty_new_packs_reads_the_objects_in_each() {
        // What ten agents fetching into one clone do to a long command: a
        // pack per fetch. gix's default slot map (1.1 × the packs at open,
        // at least 32) ran out after 32 and every lookup in a newer pack
        // failed; the store's map has room.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "--quiet", "-b", "main"]);
        git(dir, &["commit", "--quiet", "--allow-empty", "-m", "c0"]);
        let store = super::Store::open(dir).unwrap();
        let mut commits = Vec::new();
        for i in 1..=60 {
            git(
                dir,
                &["commit", "--quiet", "--allow-empty", "-m", &format!("c{i}")],
            );
            git(dir, &["repack", "-q"]);
            commits.push(git(dir, &["rev-parse", "HEAD"]));
        }
        let packs = std::fs::read_dir(dir.join(".git/objects/pack"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("pack".as_ref()))
            .count();
        assert!(packs >= 60, "{packs} packs");
        let first = gix::ObjectId::from_hex(commits[0].as_bytes()).unwrap();
        for c in &commits {
            let id = gix::ObjectId::from_hex(c.as_bytes()).unwrap();
            assert!(store.first_parent(id).unwrap().is_some(), "{c}");
            assert!(store.is_ancestor(first, id).unwrap(), "{c}");
        }
    }
}
