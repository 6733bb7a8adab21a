//! Lanes: one worktree and branch `feat/<feature>` per feature, recorded in
//! `refs/swarm/lanes/<feature>` (`lane.yaml`), and lane reports journalled in
//! the plan. A plan has at most one active lane (its executor); starting a
//! lane journals `lane-started` on the plan with a compare-and-swap, so two
//! lanes racing for one plan cannot both win. Removing a lane never deletes
//! unmerged or uncommitted work without `--force`, and leaves the record in
//! place with a final `lane-removed` commit (state `removed`) so its history
//! stays readable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::git::Git;
use crate::names;
use crate::output::Output;
use crate::plan;
use crate::store::record::{self, Extra, Unreadable};
use crate::store::{short, Event, Store};

pub const SCHEMA: &str = "swarm-lane/v1";
pub const RECORD_FILE: &str = "lane.yaml";
pub const ACTIVE: &str = "active";
pub const REMOVED: &str = "removed";

pub fn lane_ref(feature: &str) -> String {
    format!("refs/swarm/lanes/{feature}")
}

pub fn branch_of(feature: &str) -> String {
    format!("feat/{feature}")
}

/// `lane.yaml`. Field names `plan`, `owner`, `branch`, `state` and `path`
/// are read by `status` and by `Ctx::lane_here`; keep them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaneRecord {
    pub schema: String,
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    /// Absolute path of the lane's worktree, on the machine that created it.
    pub path: String,
    /// The base as named when the lane started (`main`, `origin/main`, a rev).
    pub base: String,
    /// The commit the branch started from.
    #[serde(default)]
    pub base_commit: String,
    /// `active` or `removed`.
    pub state: String,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub created_by: String,
    #[serde(default)]
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_by: Option<String>,
    /// Removed with `--keep-branch`: the branch stays, also when a re-run
    /// completes an interrupted removal.
    #[serde(default, skip_serializing_if = "is_false")]
    pub branch_kept: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<LastReport>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LastReport {
    /// `plan-ready`, `pr-open`, `blocked`, `handoff` or `done`.
    pub kind: String,
    /// The vocabulary line, e.g. `PR open https://…`.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<String>,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub by: String,
    /// The plan journal commit that carries the report.
    #[serde(default)]
    pub commit: String,
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl LaneRecord {
    pub fn is_active(&self) -> bool {
        self.state == ACTIVE
    }
}

/// One lane as read from its ref.
#[derive(Debug, Clone)]
pub struct Lane {
    pub feature: String,
    pub record: LaneRecord,
    pub commit: ObjectId,
}

fn parse(feature: &str, bytes: &[u8]) -> Result<LaneRecord> {
    let what = format!("{}:{RECORD_FILE}", lane_ref(feature));
    let rec: LaneRecord = record::parse(bytes, "swarm-lane", &what)?;
    record::check_identities(
        &what,
        &[("feature", &rec.feature), ("plan", &rec.plan)],
        &[("owner", &rec.owner)],
    )?;
    Ok(rec)
}

pub fn load(store: &Store, feature: &str) -> Result<Option<Lane>> {
    let Some(rec) = store.read(&lane_ref(feature))? else {
        return Ok(None);
    };
    from_record(feature, rec).map(Some)
}

/// A lane as one version of its record (e.g. the mirror's) has it.
pub fn at(store: &Store, feature: &str, commit: ObjectId) -> Result<Lane> {
    from_record(feature, store.read_commit(commit)?)
}

fn from_record(feature: &str, rec: crate::store::Record) -> Result<Lane> {
    let bytes = rec.file(RECORD_FILE).ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{}:{RECORD_FILE} is missing", lane_ref(feature)),
        )
    })?;
    Ok(Lane {
        feature: feature.to_string(),
        record: parse(feature, bytes)?,
        commit: rec.commit,
    })
}

/// Every lane record that can be read, sorted by feature, and those that
/// cannot (one bad record must not hide every other lane).
pub fn all(store: &Store) -> Result<(Vec<Lane>, Vec<Unreadable>)> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for (refname, _) in store.list_refs("refs/swarm/lanes/")? {
        let feature = refname.trim_start_matches("refs/swarm/lanes/");
        match load(store, feature) {
            Ok(Some(lane)) => out.push(lane),
            Ok(None) => {}
            Err(e) => bad.push(Unreadable::new("lane", feature, &refname, &e)),
        }
    }
    Ok((out, bad))
}

fn require(store: &Store, feature: &str) -> Result<Lane> {
    names::validate_name("feature", feature)?;
    load(store, feature)?.ok_or_else(|| {
        Error::usage("NOT_FOUND", format!("lane '{feature}' does not exist"))
            .hint("list lanes with `git swarm lane list`")
    })
}

fn files(record: &LaneRecord) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    files.insert(RECORD_FILE.to_string(), record::to_yaml(record)?);
    Ok(files)
}

/// The base a new lane starts from when `--base` is not given:
/// `swarm.base`, else the remote's default branch (`<remote>/HEAD`, else
/// `<remote>/main`), else `main`, else the branch checked out (`master`…).
pub fn default_base(ctx: &Ctx) -> String {
    if let Some(base) = &ctx.settings.base {
        return base.clone();
    }
    if let Some(remote) = ctx.settings.remote.as_deref() {
        let head = format!("refs/remotes/{remote}/HEAD");
        if let Ok(Some(r)) = ctx.store.repo.try_find_reference(head.as_str()) {
            if let Some(name) = r.target().try_name() {
                let name = name.as_bstr().to_string();
                if let Some(short) = name.strip_prefix("refs/remotes/") {
                    return short.to_string();
                }
                return name;
            }
        }
        // A clone of a then-empty remote has no <remote>/HEAD: the remote's
        // main is still what "merged" means for shared work.
        let main = format!("refs/remotes/{remote}/main");
        if let Ok(Some(_)) = ctx.store.repo.try_find_reference(main.as_str()) {
            return format!("{remote}/main");
        }
    }
    // No remote base: main, else the branch checked out here (e.g. master).
    if let Ok(Some(_)) = ctx.store.repo.try_find_reference("refs/heads/main") {
        return "main".to_string();
    }
    if let Ok(Some(head)) = ctx.store.repo.head_name() {
        if let Some(short) = head.as_bstr().to_string().strip_prefix("refs/heads/") {
            return short.to_string();
        }
    }
    "main".to_string()
}

fn resolve(git: &Git, rev: &str) -> Result<Option<ObjectId>> {
    Ok(git
        .rev_parse(rev)?
        .and_then(|s| ObjectId::from_hex(s.as_bytes()).ok()))
}

/// The main worktree's root: lanes live under it, whichever worktree we run in.
pub fn main_worktree(store: &Store) -> Result<PathBuf> {
    store
        .git
        .worktree_paths()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::env("GIT_FAILED", "`git worktree list` named no worktree"))
}

fn lane_path(ctx: &Ctx, main: &Path, feature: &str) -> PathBuf {
    let root = Path::new(&ctx.settings.worktree_root);
    let root = if root.is_absolute() {
        root.to_path_buf()
    } else {
        main.join(root)
    };
    root.join(feature)
}

/// [`lane_path`] for a lane about to be created: `swarm.worktreeRoot` must
/// lead inside the main worktree (symlinks resolved), unless
/// `swarm.worktreeRootAllowOutside` is true, and never into the git directory.
fn confined_lane_path(ctx: &Ctx, main: &Path, feature: &str) -> Result<PathBuf> {
    let value = &ctx.settings.worktree_root;
    let refuse = |why: &str| {
        Error::usage(
            "CONFIG_INVALID",
            format!("swarm.worktreeRoot = '{}' {why}", value.escape_debug()),
        )
    };
    let path = lane_path(ctx, main, feature);
    let lexical = if Path::new(value).is_absolute() {
        Path::new(value).starts_with(main)
            && !Path::new(value)
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
    } else {
        crate::fsutil::confined_relative(value).is_some()
    };
    let inside = lexical && crate::fsutil::resolves_inside(main, &path);
    if !inside && !ctx.settings.worktree_root_allow_outside {
        return Err(refuse("leads outside the main worktree")
            .hint("use a directory inside the main worktree (default _swarm-worktrees)")
            .hint("to keep lane worktrees elsewhere on purpose, allow it: `git config swarm.worktreeRootAllowOutside true`"));
    }
    if crate::fsutil::resolves_inside(&ctx.store.common_dir(), &path)
        || crate::fsutil::resolves_inside(ctx.store.repo.git_dir(), &path)
        || Path::new(value)
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(refuse("leads into the git directory")
            .hint("use a directory of the worktree (default _swarm-worktrees)"));
    }
    Ok(path)
}

pub struct NewLane<'a> {
    pub feature: &'a str,
    pub plan: Option<&'a str>,
    pub base: Option<&'a str>,
    pub owner: Option<&'a str>,
}

/// The active lane of `plan` other than `feature`, if any.
fn executor_of<'a>(lanes: &'a [Lane], plan: &str) -> Option<&'a Lane> {
    lanes
        .iter()
        .find(|l| l.record.is_active() && l.record.plan == plan)
}

/// Where `lane new` marks a start under way (a cache in the git directory
/// shared by all worktrees): present after a kill, it tells a re-run that
/// the branch and worktree it finds were made for this lane.
fn start_marker(store: &Store, feature: &str) -> PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("lane-start")
        .join(feature)
}

/// A `lane new` killed after writing the lane record and before its
/// `lane-started` journal entry: write the entry (once: it carries the
/// record's commit) and say so.
fn finish_after_record(ctx: &Ctx, lane: &Lane, actor: &str) -> Result<Output> {
    let feature = lane.feature.as_str();
    let r = &lane.record;
    let summary = format!(
        "lane {feature}: started on {} from {} for plan {}",
        r.branch, r.base, r.plan
    );
    let record = lane.commit.to_string();
    let claim = Event::new("lane-started", actor, summary)
        .trailer("Swarm-Lane", feature)
        .trailer("Swarm-Lane-Record", record.as_str());
    let wrote = plan::journal(
        ctx,
        &r.plan,
        &claim,
        None,
        Some(("Swarm-Lane-Record", record.as_str())),
    )?;
    let _ = std::fs::remove_file(start_marker(&ctx.store, feature));
    let json = serde_json::json!({
        "feature": feature,
        "plan": r.plan,
        "owner": r.owner,
        "branch": r.branch,
        "path": r.path,
        "base": r.base,
        "base_commit": r.base_commit,
        "record": record,
        "resumed": true,
    });
    let mut text = format!(
        "an earlier `git swarm lane new {feature}` was interrupted after writing its record: finishing it\n"
    );
    if wrote.is_some() {
        text.push_str(&format!("journalled lane-started in plan {}\n", r.plan));
    }
    text.push_str(&format!(
        "started lane {feature} for plan {}: worktree {} on {}\ncd {}\n",
        r.plan, r.path, r.branch, r.path
    ));
    Ok(Output::new(json, text))
}

/// `lane new`
pub fn new(ctx: &Ctx, args: NewLane<'_>) -> Result<Output> {
    names::validate_name("feature", args.feature)?;
    // `--base` is recorded as given (`lane.yaml: base`).
    crate::secret::check_fields("the lane", &[("--base", args.base.unwrap_or(""))])?;
    let feature = args.feature;
    let plan_name = match args.plan {
        Some(p) => p.to_string(),
        None => plan::infer(ctx)?,
    };
    // Read the plan head before scanning lanes: the CAS on it at the end is
    // what makes "one executor per plan" hold against a concurrent lane new.
    let plan = plan::require(&ctx.store, &plan_name)?;
    let actor = ctx.actor()?;
    let owner = args
        .owner
        .map(str::to_string)
        .unwrap_or_else(|| actor.clone());
    names::validate_address(&owner)?;

    // A re-run finishing an interrupted start is let through.
    if !start_marker(&ctx.store, feature).exists() {
        plan::refuse_closed(&plan, &plan_name, "start a lane on it")?;
    }
    // This lane's own record is needed: unreadable, it fails with its code.
    // Other unreadable lane records are skipped.
    load(&ctx.store, feature)?;
    let (lanes, _) = all(&ctx.store)?;
    let previous = lanes.iter().find(|l| l.feature == feature);
    if let Some(prev) = previous.filter(|l| l.record.is_active()) {
        if start_marker(&ctx.store, feature).exists() && prev.record.plan == plan_name {
            return finish_after_record(ctx, prev, &actor);
        }
        return Err(Error::usage(
            "LANE_EXISTS",
            format!(
                "lane '{feature}' is already active (plan {}, owner {}, {})",
                prev.record.plan, prev.record.owner, prev.record.path
            ),
        )
        .hint("pick another feature name, or `git swarm lane rm` the existing lane first"));
    }
    if let Some(exec) = executor_of(&lanes, &plan_name) {
        return Err(Error::check(
            "PLAN_HAS_EXECUTOR",
            format!(
                "plan '{plan_name}' already has an executor: lane '{}' (owner {}, branch {}, {})",
                exec.feature, exec.record.owner, exec.record.branch, exec.record.path
            ),
        )
        .hint("one executor per plan: continue in that lane, or take it over with `git swarm handoff` / `git swarm accept`")
        .hint(format!(
            "if that lane is finished, remove it first: `git swarm lane rm {}` (or `git swarm lane prune`)",
            exec.feature
        ))
        .hint("for parallel work, make a child plan: `git swarm plan new <name> --parent <plan>`")
        .with_detail(serde_json::json!({
            "plan": plan_name,
            "lane": exec.feature,
            "owner": exec.record.owner,
            "path": exec.record.path,
        })));
    }

    // An interrupted `lane rm` leaves the record removed and the rest here.
    let leftover_hint = previous.map(|_| {
        format!("if an interrupted `git swarm lane rm {feature}` left it, run that again to finish")
    });
    let branch = branch_of(feature);
    let branch_ref = format!("refs/heads/{branch}");
    let base = args
        .base
        .map(str::to_string)
        .unwrap_or_else(|| default_base(ctx));
    let mut base_commit = resolve(&ctx.store.git, &base)?.ok_or_else(|| {
        Error::usage("NOT_FOUND", format!("base '{base}' does not name a commit"))
            .hint("pass --base <branch or commit>, or set `git config swarm.base <branch>`")
    })?;
    let main = main_worktree(&ctx.store)?;
    let path = confined_lane_path(ctx, &main, feature)?;
    // Refuse an unusable swarm.planFile before anything is created.
    plan::plan_file_in(ctx, &path)?;
    let git = Git::new(&main);
    let marker = start_marker(&ctx.store, feature);
    let mut notes: Vec<String> = Vec::new();

    // A `lane new` of this feature that began here (its marker is left)
    // and was killed before it finished: its branch has no commit of its
    // own, so finishing it (worktree there) or undoing it (no worktree)
    // loses nothing.
    let mut resume = false;
    if let Some(tip) = ctx.store.ref_target(&branch_ref)? {
        let no_own_commits = ctx.store.is_ancestor(tip, base_commit)?;
        let on_branch = path.exists()
            && Git::new(&path).current_branch().ok().flatten().as_deref() == Some(branch.as_str());
        if marker.exists() && no_own_commits && on_branch {
            resume = true;
            base_commit = tip;
            notes.push(format!(
                "an earlier `git swarm lane new {feature}` was interrupted after creating {branch} and {}: finishing it",
                path.display()
            ));
        } else if marker.exists() && no_own_commits && !path.exists() {
            let _ = git.worktree_prune();
            git.branch_delete(&branch)?;
            notes.push(format!(
                "an earlier `git swarm lane new {feature}` was interrupted after creating {branch}: removed that branch (it had no commits) and started again"
            ));
        } else {
            let mut err = Error::usage(
                "LANE_EXISTS",
                format!("branch {branch} already exists"),
            )
            .hint(format!(
                "pick another feature name, or delete the branch (`git branch -d {branch}`) if its work is merged"
            ));
            if let Some(h) = &leftover_hint {
                err = err.hint(h.clone());
            }
            return Err(err);
        }
    }
    if !resume && path.exists() {
        let mut err = Error::usage("LANE_EXISTS", format!("{} already exists", path.display()))
            .hint("move it away, or pick another feature name");
        if let Some(h) = leftover_hint {
            err = err.hint(h);
        }
        return Err(err);
    }
    // Keep the plan file and the lanes directory out of `git status`.
    crate::init::ensure_excludes(ctx)?;

    if !resume {
        // Say, before anything is created, that a start is under way, so a
        // re-run after a kill knows the branch and worktree are its own.
        if let Some(dir) = marker.parent() {
            std::fs::create_dir_all(dir).map_err(|e| plan::io_error(dir, e))?;
        }
        std::fs::write(&marker, format!("{plan_name}\n"))
            .map_err(|e| plan::io_error(&marker, e))?;
        // A lock left on the branch by a killed process would fail `git
        // worktree add -b` (exit 4): take an old one away.
        if ctx.store.clear_stale_branch_lock(&branch_ref) {
            notes.push(format!(
                "removed a stale lock on {branch_ref} left by a killed process"
            ));
        }
        // Concurrent `git worktree add`s can trip over each other's half-made
        // metadata before creating anything; such a failure is retried.
        let mut attempt = 0;
        loop {
            match git.worktree_add(
                &ctx.store.common_dir(),
                &path,
                &branch,
                &base_commit.to_string(),
            ) {
                Ok(()) => break,
                Err(_)
                    if attempt < 3
                        && !path.exists()
                        && ctx.store.ref_target(&branch_ref)?.is_none() =>
                {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&marker);
                    return Err(e);
                }
            }
        }
    }
    crate::failpoint::point("lane:worktree");
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let rollback = |git: &Git| {
        // What an interrupted run made stays for the next re-run: the
        // worktree may hold work done since.
        if !resume {
            let _ = git.worktree_remove(&path);
            let _ = git.branch_delete(&branch);
            let _ = std::fs::remove_file(&marker);
        }
    };

    let plan_file = match plan::plan_file_in(ctx, &path) {
        Ok(f) => f,
        Err(e) => {
            rollback(&git);
            return Err(e);
        }
    };
    let wrote_plan = if plan.text.is_some() {
        match plan::write_plan_file(&ctx.store, &plan, &plan_file, false) {
            Ok(w) => w,
            Err(e) => {
                rollback(&git);
                return Err(e);
            }
        }
    } else {
        false
    };

    let now = rfc3339(ctx.store.clock.now());
    let (expected, extra, last_report) = match previous {
        Some(p) => (
            Some(p.commit),
            p.record.extra.clone(),
            p.record.last_report.clone(),
        ),
        None => (None, Extra::new(), None),
    };
    let record = LaneRecord {
        schema: SCHEMA.into(),
        feature: feature.into(),
        plan: plan_name.clone(),
        owner: owner.clone(),
        branch: branch.clone(),
        path: path.display().to_string(),
        base: base.clone(),
        base_commit: base_commit.to_string(),
        state: ACTIVE.into(),
        created_at: now.clone(),
        created_by: actor.clone(),
        updated_at: now,
        removed_at: None,
        removed_by: None,
        branch_kept: false,
        last_report,
        extra,
    };
    let summary = format!("lane {feature}: started on {branch} from {base} for plan {plan_name}");
    let event = Event::new("lane-started", &actor, summary.clone())
        .trailer("Swarm-Lane", feature)
        .trailer("Swarm-Plan", plan_name.as_str());
    let record_files = match files(&record) {
        Ok(f) => f,
        Err(e) => {
            rollback(&git);
            return Err(e);
        }
    };
    let lane_commit = match ctx
        .store
        .write(&lane_ref(feature), expected, &record_files, &event)
    {
        Ok(id) => id,
        Err(e) => {
            rollback(&git);
            return Err(e);
        }
    };
    crate::failpoint::point("lane:record");
    let claim = Event::new("lane-started", &actor, summary)
        .trailer("Swarm-Lane", feature)
        .trailer("Swarm-Lane-Record", lane_commit.to_string());
    if let Err(e) = plan::journal(ctx, &plan_name, &claim, Some(plan.head.commit), None) {
        let _ = ctx.store.cas(
            &lane_ref(feature),
            Some(lane_commit),
            expected,
            &actor,
            "lane start rolled back",
        );
        rollback(&git);
        if e.code == "CAS_FAILED" {
            return Err(Error::race(
                "CAS_FAILED",
                format!("plan '{plan_name}' changed while lane '{feature}' was starting (another lane may have started); nothing was kept"),
            )
            .hint("run `git swarm lane list`, then try again"));
        }
        return Err(e);
    }

    let json = serde_json::json!({
        "feature": feature,
        "plan": plan_name,
        "owner": owner,
        "branch": branch,
        "path": record.path,
        "base": base,
        "base_commit": base_commit.to_string(),
        "plan_file": wrote_plan.then(|| plan_file.display().to_string()),
        "record": lane_commit.to_string(),
        "resumed": resume,
    });
    let _ = std::fs::remove_file(&marker);
    let mut text = String::new();
    for note in &notes {
        text.push_str(&format!("{note}\n"));
    }
    text.push_str(&format!(
        "started lane {feature} for plan {plan_name}: worktree {} on {branch} from {base} ({})\n",
        record.path,
        short(base_commit)
    ));
    if wrote_plan {
        text.push_str(&format!(
            "{} checked out there, untracked (save edits with `git swarm plan save`)\n",
            ctx.settings.plan_file
        ));
    }
    text.push_str(&format!("cd {}\n", record.path));
    let mut out = Output::new(json, text);
    if !crate::init::hooks_installed(&ctx.store) {
        out = out.warn("the guard hooks are not installed in this repository, so commits in the lane are not checked: run `git swarm init`");
    }
    Ok(out)
}

/// How a lane's branch relates to its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Merged {
    /// The branch head is an ancestor of the base, and has commits of its own.
    Ancestry,
    /// A `verify` verdict note on the branch head says merged (squash, rebase).
    Verdict,
    /// The branch has no commit since the lane started.
    Empty,
    /// The branch has work the base does not have.
    No,
    /// The local branch is gone.
    BranchMissing,
}

impl Merged {
    pub fn is_merged(self) -> bool {
        matches!(self, Merged::Ancestry | Merged::Verdict)
    }
    /// Removing the branch loses no commit.
    pub fn loses_nothing(self) -> bool {
        !matches!(self, Merged::No)
    }
}

/// A recorded verdict: a JSON note `{"kind": "verdict", "state": "merged", …}` on `head`.
pub fn has_merged_verdict(store: &Store, head: ObjectId) -> Result<bool> {
    Ok(store.note_objects(head)?.iter().any(|n| {
        n.get("kind").and_then(|k| k.as_str()) == Some("verdict")
            && n.get("state").and_then(|s| s.as_str()) == Some("merged")
    }))
}

/// Where a lane stands in this clone.
#[derive(Debug, Clone, Serialize)]
pub struct LaneState {
    pub feature: String,
    pub plan: String,
    pub owner: String,
    pub branch: String,
    pub path: String,
    pub base: String,
    pub state: String,
    /// `present`, `missing` (registered here, directory gone) or `elsewhere`
    /// (another clone's lane); `removed` for a removed lane, or, when `lane rm`
    /// looks for what an interrupted removal left, `gone` (deleted here).
    pub worktree: String,
    pub head: Option<String>,
    pub ahead: Option<u64>,
    pub behind: Option<u64>,
    pub dirty: Vec<String>,
    /// The plan file in the worktree has edits the plan ref does not have.
    pub plan_unsaved: bool,
    pub merged: Option<Merged>,
    pub last_report: Option<LastReport>,
    #[serde(skip)]
    head_id: Option<ObjectId>,
}

impl LaneState {
    fn is_local(&self) -> bool {
        self.worktree != "elsewhere"
    }
    fn is_dirty(&self) -> bool {
        !self.dirty.is_empty() || self.plan_unsaved
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

fn inspect(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf]) -> Result<LaneState> {
    probe(ctx, lane, worktrees, false)
}

/// Where a lane stands in this clone. `leftovers`: for a removed lane too,
/// look at what an interrupted removal may have left here (its worktree,
/// its branch); its worktree is then `gone` once deleted from this clone.
fn probe(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf], leftovers: bool) -> Result<LaneState> {
    let r = &lane.record;
    let path = PathBuf::from(&r.path);
    // A lane's worktree is a linked one, or the main checkout (the first
    // entry of `git worktree list`) only where an accepted handoff moved the
    // lane: a forged record may name any directory.
    let registered = worktrees.iter().skip(1).any(|w| same_path(w, &path))
        || (worktrees.first().is_some_and(|w| same_path(w, &path))
            && crate::packet::handoff_accepted(&ctx.store, &lane.feature, &r.owner, &r.path)?);
    let worktree = if !r.is_active() && !leftovers {
        "removed"
    } else if registered && path.is_dir() {
        "present"
    } else if registered {
        "missing"
    } else if !r.is_active() && made_here(ctx, lane)? {
        "gone"
    } else {
        "elsewhere"
    };
    let mut st = LaneState {
        feature: lane.feature.clone(),
        plan: r.plan.clone(),
        owner: r.owner.clone(),
        branch: r.branch.clone(),
        path: r.path.clone(),
        base: r.base.clone(),
        state: r.state.clone(),
        worktree: worktree.to_string(),
        head: None,
        ahead: None,
        behind: None,
        dirty: Vec::new(),
        plan_unsaved: false,
        merged: None,
        last_report: r.last_report.clone(),
        head_id: None,
    };
    if worktree == "removed" || worktree == "elsewhere" {
        return Ok(st);
    }
    let git = &ctx.store.git;
    let head = ctx.store.ref_target(&format!("refs/heads/{}", r.branch))?;
    st.head_id = head;
    st.head = head.map(|h| h.to_string());
    let base = resolve(git, &r.base)?;
    if let (Some(h), Some(b)) = (head, base) {
        let (ahead, behind) = git.ahead_behind(&b.to_string(), &h.to_string())?;
        st.ahead = Some(ahead);
        st.behind = Some(behind);
    }
    st.merged = Some(merged(ctx, r, head, base)?);
    if worktree == "present" {
        (st.dirty, st.plan_unsaved) = uncommitted(ctx, &r.plan, &path)?;
    }
    Ok(st)
}

/// How the lane's branch (at `head`) relates to its base (at `base`).
fn merged(
    ctx: &Ctx,
    r: &LaneRecord,
    head: Option<ObjectId>,
    base: Option<ObjectId>,
) -> Result<Merged> {
    Ok(match head {
        None => Merged::BranchMissing,
        Some(h) => {
            if has_merged_verdict(&ctx.store, h)? {
                Merged::Verdict
            } else if base.is_some_and(|b| ctx.store.is_ancestor(h, b).unwrap_or(false)) {
                if ObjectId::from_hex(r.base_commit.as_bytes()).ok() == Some(h) {
                    Merged::Empty
                } else {
                    Merged::Ancestry
                }
            } else {
                Merged::No
            }
        }
    })
}

/// The lane's worktree path is where this clone puts that lane's worktree
/// (compared by its directory, which outlives the worktree).
fn made_here(ctx: &Ctx, lane: &Lane) -> Result<bool> {
    let main = main_worktree(&ctx.store)?;
    let here = lane_path(ctx, &main, &lane.feature);
    let recorded = Path::new(&lane.record.path);
    Ok(match (here.parent(), recorded.parent()) {
        (Some(a), Some(b)) => here.file_name() == recorded.file_name() && same_path(a, b),
        _ => false,
    })
}

/// Uncommitted work in a lane worktree: the paths `git status` shows (the
/// plan file, a git-excluded local copy, is not one of them), and whether
/// the plan file has edits the plan does not have.
fn uncommitted(ctx: &Ctx, plan: &str, path: &Path) -> Result<(Vec<String>, bool)> {
    let plan_file = ctx.settings.plan_file.trim_start_matches('/');
    let dirty = Git::new(path)
        .dirty_paths()?
        .into_iter()
        .filter(|p| p != plan_file)
        .collect();
    let unsaved = match plan::plan_file_in(ctx, path) {
        Ok(file) => plan_file_unsaved(&ctx.store, plan, &file)?,
        Err(_) => false,
    };
    Ok((dirty, unsaved))
}

/// The worktree's plan file has text that no saved version of the plan has.
/// A plan file that is a symlink, a FIFO or oversized is never read (it
/// could block, or point outside the repository) and counts as unsaved, so
/// removing the lane needs `--force`; an unreadable plan record likewise.
fn plan_file_unsaved(store: &Store, plan_name: &str, file: &Path) -> Result<bool> {
    let content =
        match crate::fsutil::read_limited(file, crate::fsutil::Follow::No, crate::fsutil::MAX_TEXT)
        {
            Ok(c) => c,
            Err(crate::fsutil::ReadError::Missing) => return Ok(false),
            Err(crate::fsutil::ReadError::Io(_)) => return Ok(false),
            Err(_) => return Ok(true),
        };
    let Ok(Some(plan)) = plan::load(store, plan_name) else {
        return Ok(true);
    };
    Ok(!plan::is_saved_version(store, &plan, &content)?)
}

/// `lane list`
pub fn list(ctx: &Ctx, include_removed: bool) -> Result<Output> {
    let worktrees = ctx.store.git.worktree_paths()?;
    let mut states = Vec::new();
    let mut removed = 0;
    let (lanes, unreadable) = all(&ctx.store)?;
    for lane in lanes {
        if !lane.record.is_active() && !include_removed {
            removed += 1;
            continue;
        }
        states.push(inspect(ctx, &lane, &worktrees)?);
    }
    let mut text = String::new();
    if states.is_empty() && unreadable.is_empty() {
        text.push_str(
            "no active lanes: start one with `git swarm lane new <feature> --plan <plan>`\n",
        );
    }
    for s in &states {
        let mut line = format!(
            "{}  plan {}  owner {}  {}",
            s.feature, s.plan, s.owner, s.branch
        );
        if let Some(h) = &s.head {
            line.push_str(&format!(" @ {}", &h[..12]));
        }
        match (s.ahead, s.behind) {
            (Some(a), Some(b)) => line.push_str(&format!("  +{a} -{b} vs {}", s.base)),
            _ => line.push_str(&format!("  from {}", s.base)),
        }
        if s.state != ACTIVE {
            line.push_str(&format!("  ({})", s.state));
        }
        text.push_str(&line);
        text.push('\n');
        let where_ = match s.worktree.as_str() {
            "missing" => " (directory missing)",
            "elsewhere" => " (in another clone)",
            _ => "",
        };
        text.push_str(&format!("  path    {}{where_}\n", s.path));
        if s.worktree == "present" {
            let mut dirty = s.dirty.join(", ");
            if s.plan_unsaved {
                if !dirty.is_empty() {
                    dirty.push_str(", ");
                }
                dirty.push_str("unsaved plan edits");
            }
            if dirty.is_empty() {
                dirty = "clean".into();
            }
            text.push_str(&format!("  dirty   {dirty}\n"));
        }
        if let Some(r) = &s.last_report {
            let cap = r
                .capacity
                .as_deref()
                .map(|c| format!("  capacity={c}"))
                .unwrap_or_default();
            text.push_str(&format!(
                "  report  {}{cap}  ({}, {})\n",
                r.text, r.by, r.at
            ));
        }
    }
    if removed > 0 {
        text.push_str(&format!(
            "({} not shown: `git swarm lane list --all`)\n",
            crate::output::count(removed, "removed lane", "removed lanes")
        ));
    }
    Ok(record::report_unreadable(
        Output::new(serde_json::json!({ "lanes": states }), text),
        &unreadable,
    ))
}

struct Removal {
    worktree_removed: bool,
    branch_deleted: bool,
    record: ObjectId,
}

/// What a removed lane still has in this clone: an interrupted `lane rm`
/// (or prune) wrote the record, then stopped before deleting these.
fn has_leftovers(lane: &Lane, st: &LaneState) -> bool {
    !lane.record.is_active()
        && (matches!(st.worktree.as_str(), "present" | "missing")
            || (st.worktree == "gone" && st.head.is_some() && !lane.record.branch_kept))
}

/// Remove a lane: first the record (`removed`, a compare-and-swap: a lost
/// race leaves everything on disk as it was), then the worktree, then the
/// branch. For a lane already recorded as removed, only what is left here.
/// Unless `force`, uncommitted work is looked for again right before the
/// worktree goes, and the branch is deleted only if that loses no commit.
fn remove(
    ctx: &Ctx,
    lane: &Lane,
    st: &LaneState,
    force: bool,
    keep_branch: bool,
    actor: &str,
    why: &str,
) -> Result<Removal> {
    let feature = lane.feature.as_str();
    let (record, id) = if lane.record.is_active() {
        let now = rfc3339(ctx.store.clock.now());
        let mut record = lane.record.clone();
        record.state = REMOVED.into();
        record.updated_at = now.clone();
        record.removed_at = Some(now);
        record.removed_by = Some(actor.to_string());
        record.branch_kept = keep_branch;
        let event = Event::new(
            "lane-removed",
            actor,
            format!("lane {feature}: removed ({why})"),
        )
        .trailer("Swarm-Lane", feature);
        let id = ctx.store.write(
            &lane_ref(feature),
            Some(lane.commit),
            &files(&record)?,
            &event,
        )?;
        (record, id)
    } else {
        (lane.record.clone(), lane.commit)
    };
    crate::failpoint::point("lane-rm:recorded");
    let keep_branch = keep_branch || record.branch_kept;
    let main = main_worktree(&ctx.store)?;
    let git = Git::new(&main);
    let path = PathBuf::from(&st.path);
    let mut worktree_removed = false;
    match st.worktree.as_str() {
        "present" if force => {
            git.worktree_remove(&path)?;
            worktree_removed = true;
        }
        "present" => {
            // Work may have appeared since the checks: look again, right
            // before deleting, and let git refuse a dirty worktree too.
            let (dirty, unsaved) = uncommitted(ctx, &record.plan, &path)?;
            if !dirty.is_empty() || unsaved {
                let mut what = dirty.clone();
                if unsaved {
                    what.push(format!(
                        "{} (edits not saved in the plan)",
                        ctx.settings.plan_file
                    ));
                }
                return Err(Error::check(
                    "LANE_DIRTY",
                    format!(
                        "lane '{feature}' is recorded as removed, but its worktree {} got uncommitted work meanwhile: {}; the worktree and the branch are left as they are",
                        st.path,
                        what.join(", ")
                    ),
                )
                .hint(format!(
                    "commit or stash it, then run `git swarm lane rm {feature}` again to finish (or add --force to discard it)"
                ))
                .with_detail(serde_json::json!({ "dirty": dirty, "plan_unsaved": unsaved, "record": id.to_string() })));
            }
            let shown = path.to_string_lossy();
            git.run(["worktree", "remove", shown.as_ref()])?;
            worktree_removed = true;
        }
        "missing" => git.worktree_prune()?,
        _ => {}
    }
    let mut branch_deleted = false;
    let r = &record;
    let head = ctx.store.ref_target(&format!("refs/heads/{}", r.branch))?;
    if !keep_branch && st.is_local() && head.is_some() {
        // Commits may have landed since the checks too.
        let base = resolve(&ctx.store.git, &r.base)?;
        if !force && !merged(ctx, r, head, base)?.loses_nothing() {
            return Err(Error::check(
                "LANE_UNMERGED",
                format!(
                    "lane '{feature}' is removed, but its branch {} got commits not merged into {} meanwhile; the branch is kept",
                    r.branch, r.base
                ),
            )
            .hint("merge it and delete it with `git branch -d`, or keep it"));
        }
        git.branch_delete(&r.branch)?;
        branch_deleted = true;
    }
    Ok(Removal {
        worktree_removed,
        branch_deleted,
        record: id,
    })
}

fn cwd_inside(path: &Path) -> bool {
    let (Ok(cwd), Ok(p)) = (
        std::env::current_dir().and_then(std::fs::canonicalize),
        std::fs::canonicalize(path),
    ) else {
        return false;
    };
    cwd.starts_with(p)
}

/// The worktree this clone made for an active lane that was handed over to
/// a checkout elsewhere since (`accept` moved the lane's `path`): left
/// behind, it no longer speaks for the lane.
fn left_behind(ctx: &Ctx, lane: &Lane, worktrees: &[PathBuf]) -> Result<Option<PathBuf>> {
    if !lane.record.is_active() {
        return Ok(None);
    }
    let main = main_worktree(&ctx.store)?;
    let mine = lane_path(ctx, &main, &lane.feature);
    let registered = worktrees.iter().any(|w| same_path(w, &mine));
    let moved = !same_path(&mine, Path::new(&lane.record.path));
    Ok((registered && moved && mine.is_dir()).then_some(mine))
}

/// Each active lane's owner and path, as this clone has them.
pub fn holders(store: &Store) -> BTreeMap<String, (String, String)> {
    all(store)
        .map(|(lanes, _)| lanes)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.record.is_active())
        .map(|l| (l.feature, (l.record.owner, l.record.path)))
        .collect()
}

/// After `sync`: the lanes whose record now names another owner or path
/// than `before` without an accepted handoff backing it, one warning each.
/// Such a move is not honoured by `lane prune` (see `prune_left_behind`).
pub fn unbacked_moves(store: &Store, before: &BTreeMap<String, (String, String)>) -> Vec<String> {
    let mut out = Vec::new();
    for (feature, (owner, path)) in holders(store) {
        let Some((old_owner, old_path)) = before.get(&feature) else {
            continue;
        };
        if *old_owner == owner && same_path(Path::new(old_path), Path::new(&path)) {
            continue;
        }
        if crate::packet::handoff_accepted(store, &feature, &owner, &path).unwrap_or(false) {
            continue;
        }
        out.push(format!(
            "lane {feature} now names {owner} at {path} (was {old_owner} at {old_path}) without an accepted handoff: `lane prune` and `lane rm` keep this clone's worktree; check `git log refs/swarm/lanes/{feature}`"
        ));
    }
    out
}

/// The lane whose old worktree we run in, if it was handed over since.
pub fn moved_from_here(ctx: &Ctx) -> Option<Lane> {
    let here = ctx.store.workdir()?.to_path_buf();
    let worktrees = ctx.store.git.worktree_paths().ok()?;
    all(&ctx.store).ok()?.0.into_iter().find(|lane| {
        left_behind(ctx, lane, &worktrees)
            .ok()
            .flatten()
            .is_some_and(|p| same_path(&p, &here))
    })
}

/// Ignored files in a worktree (`git status --ignored`): a `.env` or a
/// build output is lost when the worktree is deleted, so it keeps it.
fn ignored_paths(path: &Path) -> Result<Vec<String>> {
    let out = Git::new(path).run([
        "status",
        "--porcelain=v1",
        "-z",
        "--ignored=matching",
        "--untracked-files=all",
    ])?;
    Ok(out
        .split('\0')
        .filter_map(|e| e.strip_prefix("!! "))
        .map(str::to_string)
        .collect())
}

/// Said where a handed-over lane's old worktree is used.
fn moved_error(lane: &Lane, here: &Path) -> Error {
    let r = &lane.record;
    Error::check(
        "LANE_MOVED",
        format!(
            "{} was lane {}'s worktree, but the lane was handed over: {} owns it now, at {}",
            here.display(),
            lane.feature,
            r.owner,
            r.path
        ),
    )
    .hint(format!(
        "the lane's reports come from there (or pass --lane {} on purpose)",
        lane.feature
    ))
    .hint("`git swarm lane prune` removes this old worktree once nothing in it is uncommitted (the branch stays)")
    .with_detail(serde_json::json!({ "feature": lane.feature, "owner": r.owner, "path": r.path }))
}

/// `lane rm`. Run again after an interruption, it completes the removal.
pub fn rm(ctx: &Ctx, feature: &str, force: bool, keep_branch: bool) -> Result<Output> {
    let lane = require(&ctx.store, feature).map_err(|e| {
        if e.code == "NOT_FOUND" && start_marker(&ctx.store, feature).exists() {
            // The generic "list lanes" hint would not show this lane: the
            // one useful next step is to finish the start.
            let mut e = e;
            e.hints.clear();
            e.hint(format!(
                "an interrupted `git swarm lane new {feature}` left its branch and worktree without a record: run `git swarm lane new {feature}` again to finish it, then `git swarm lane rm {feature}` if you do not want it"
            ))
        } else {
            e
        }
    })?;
    // A start marker left by a `lane new` killed after its record: the lane
    // is being removed, so there is nothing left to finish.
    let _ = std::fs::remove_file(start_marker(&ctx.store, feature));
    let worktrees = ctx.store.git.worktree_paths()?;
    let st = probe(ctx, &lane, &worktrees, true)?;
    let resumed = !lane.record.is_active();
    if resumed && !has_leftovers(&lane, &st) {
        return Err(Error::usage(
            "NOT_FOUND",
            format!(
                "lane '{feature}' was already removed ({})",
                lane.record.removed_at.as_deref().unwrap_or("earlier")
            ),
        )
        .hint("`git log refs/swarm/lanes/<feature>` shows its history"));
    }
    let keep_branch = keep_branch || lane.record.branch_kept;
    let actor = ctx.actor()?;
    if st.worktree == "present" && cwd_inside(Path::new(&st.path)) {
        return Err(Error::usage(
            "USAGE",
            format!("you are inside lane {feature}'s worktree, which this would delete"),
        )
        .hint("run it from the main worktree (or any other directory of the repository)"));
    }
    if !force {
        if !st.is_local() {
            let mut err = match left_behind(ctx, &lane, &worktrees)? {
                Some(old) => Error::check(
                    "LANE_ELSEWHERE",
                    format!(
                        "lane '{feature}' was handed over: {} owns it now, at {} (another checkout); {} here is its old worktree",
                        st.owner,
                        st.path,
                        old.display()
                    ),
                )
                .hint("`git swarm lane prune` removes the old worktree here once nothing in it is uncommitted; the lane stays theirs"),
                None => Error::check(
                    "LANE_ELSEWHERE",
                    format!(
                        "lane '{feature}' has its worktree in another clone ({}, owner {}); nothing of it is here to check",
                        st.path, st.owner
                    ),
                ),
            };
            err = err.hint("remove the lane from the checkout that has it, or pass --force to mark the record removed (nothing on disk is touched)");
            return Err(err);
        }
        if st.is_dirty() {
            let mut what = st.dirty.clone();
            if st.plan_unsaved {
                what.push(format!(
                    "{} (edits not saved in the plan)",
                    ctx.settings.plan_file
                ));
            }
            return Err(Error::check(
                "LANE_DIRTY",
                format!(
                    "lane '{feature}' has uncommitted work in {}: {}",
                    st.path,
                    what.join(", ")
                ),
            )
            .hint("commit or stash it (save plan edits with `git swarm plan save`), or pass --force to discard it")
            .with_detail(serde_json::json!({ "dirty": st.dirty, "plan_unsaved": st.plan_unsaved })));
        }
        if !keep_branch && !st.merged.is_none_or(Merged::loses_nothing) {
            return Err(Error::check(
                "LANE_UNMERGED",
                format!(
                    "branch {} of lane '{feature}' has {} not merged into {}",
                    st.branch,
                    st.ahead
                        .map_or("commits".to_string(), |a| crate::output::count(
                            a as usize, "commit", "commits"
                        )),
                    st.base
                ),
            )
            .hint("merge it first (or record a merged verdict with `git swarm verify lane`)")
            .hint("keep the branch with --keep-branch, or delete it anyway with --force"));
        }
    }
    crate::failpoint::point("lane-rm:checked");
    let why = if force { "forced" } else { "by request" };
    let done = remove(ctx, &lane, &st, force, keep_branch, &actor, why)?;
    let mut text = if resumed {
        format!("completed the removal of lane {feature}")
    } else {
        format!("removed lane {feature}")
    };
    if done.worktree_removed {
        text.push_str(&format!(": worktree {} deleted", st.path));
    }
    if done.branch_deleted {
        text.push_str(&format!(
            ", branch {} deleted (was {})",
            st.branch,
            st.head.as_deref().map(|h| &h[..12]).unwrap_or("-")
        ));
    } else if st.head.is_some() && st.is_local() {
        text.push_str(&format!(", branch {} kept", st.branch));
    }
    text.push_str(&format!(
        "\nthe record stays in {} (state: removed)\n",
        lane_ref(feature)
    ));
    Ok(Output::new(
        serde_json::json!({
            "feature": feature,
            "worktree_removed": done.worktree_removed,
            "branch_deleted": done.branch_deleted,
            "branch_head": st.head,
            "record": done.record.to_string(),
            "forced": force,
            "resumed": resumed,
        }),
        text,
    ))
}

/// `lane prune`: remove this clone's lanes whose branch is merged into the
/// base (ancestry, or a recorded merged verdict) and whose worktree is clean;
/// also finish the removals an interrupted `lane rm` or prune left here.
pub fn prune(ctx: &Ctx, dry_run: bool) -> Result<Output> {
    let worktrees = ctx.store.git.worktree_paths()?;
    let actor = if dry_run { String::new() } else { ctx.actor()? };
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    let mut old_worktrees = Vec::new();
    let mut text = String::new();
    let (lanes, unreadable) = all(&ctx.store)?;
    for lane in lanes {
        let st = if lane.record.is_active() {
            inspect(ctx, &lane, &worktrees)?
        } else {
            let st = probe(ctx, &lane, &worktrees, true)?;
            if !has_leftovers(&lane, &st) {
                continue;
            }
            st
        };
        let keep_reason = if !lane.record.is_active() {
            // Removed already: only what an interrupted removal left here.
            if st.is_dirty() {
                Some(format!(
                    "removed, but its worktree has uncommitted changes (`git swarm lane rm {}` once they are saved)",
                    st.feature
                ))
            } else if !lane.record.branch_kept && st.merged == Some(Merged::No) {
                Some(format!(
                    "removed, but branch {} is not merged into {} (`git swarm lane rm {} --keep-branch`)",
                    st.branch, st.base, st.feature
                ))
            } else {
                None
            }
        } else if !st.is_local() {
            if let Some(old) = left_behind(ctx, &lane, &worktrees)? {
                let done = prune_left_behind(ctx, &lane, &old, dry_run)?;
                text.push_str(&done.0);
                match done.1 {
                    Ok(j) => old_worktrees.push(j),
                    Err(reason) => {
                        kept.push(serde_json::json!({ "feature": st.feature, "reason": reason }))
                    }
                }
                continue;
            }
            Some(format!(
                "its worktree is in another checkout ({}, owner {})",
                st.path, st.owner
            ))
        } else {
            match st.merged {
                Some(Merged::No) => Some(format!("not merged into {}", st.base)),
                Some(Merged::Empty) => Some("no commits yet".to_string()),
                Some(Merged::BranchMissing) | None => Some(format!(
                    "branch {} is missing (`git swarm lane rm {}` if its work is done)",
                    st.branch, st.feature
                )),
                Some(Merged::Ancestry | Merged::Verdict) if st.is_dirty() => {
                    Some("merged, but the worktree has uncommitted changes".to_string())
                }
                Some(Merged::Ancestry | Merged::Verdict) => None,
            }
        };
        if let Some(reason) = keep_reason {
            text.push_str(&format!("{:<13}{}: {reason}\n", "kept", st.feature));
            kept.push(serde_json::json!({ "feature": st.feature, "reason": reason }));
            continue;
        }
        if st.worktree == "present" && cwd_inside(Path::new(&st.path)) {
            let reason = "you are inside its worktree".to_string();
            text.push_str(&format!("{:<13}{}: {reason}\n", "kept", st.feature));
            kept.push(serde_json::json!({ "feature": st.feature, "reason": reason }));
            continue;
        }
        let how = match st.merged {
            _ if !lane.record.is_active() => "removal completed",
            Some(Merged::Verdict) => "merged (verified)",
            _ => "merged",
        };
        if dry_run {
            text.push_str(&format!("{:<13}{}: {how}\n", "would remove", st.feature));
        } else {
            remove(ctx, &lane, &st, false, false, &actor, how)?;
            text.push_str(&format!("{:<13}{}: {how}\n", "removed", st.feature));
        }
        removed
            .push(serde_json::json!({ "feature": st.feature, "why": how, "branch_head": st.head }));
    }
    if removed.is_empty() && kept.is_empty() && old_worktrees.is_empty() {
        text.push_str("no active lanes\n");
    }
    Ok(record::report_unreadable(
        Output::new(
            serde_json::json!({ "dry_run": dry_run, "removed": removed, "kept": kept, "old_worktrees": old_worktrees }),
            text,
        ),
        &unreadable,
    ))
}

/// `lane prune` for a lane handed over elsewhere: remove the worktree this
/// clone made for it, when nothing in it is uncommitted (the lane record
/// and the branch stay: the lane is its new owner's). Returns the line to
/// print and the JSON entry when removed (or would be), else why it stays.
fn prune_left_behind(
    ctx: &Ctx,
    lane: &Lane,
    old: &Path,
    dry_run: bool,
) -> Result<(String, std::result::Result<serde_json::Value, String>)> {
    let r = &lane.record;
    let (mut dirty, plan_unsaved) = uncommitted(ctx, &r.plan, old)?;
    let why = if cwd_inside(old) {
        Some("you are inside it".to_string())
    } else if Git::new(old).current_branch()?.as_deref() != Some(r.branch.as_str()) {
        Some(format!("it is not on the lane's branch {}", r.branch))
    } else if !crate::packet::handoff_accepted(&ctx.store, &lane.feature, &r.owner, &r.path)? {
        Some(format!(
            "no accepted handoff of lane {} by {} backs the move",
            lane.feature, r.owner
        ))
    } else {
        let plan_file = ctx.settings.plan_file.trim_start_matches('/');
        dirty.extend(ignored_paths(old)?.into_iter().filter(|p| p != plan_file));
        (!dirty.is_empty() || plan_unsaved)
            .then(|| format!("it has uncommitted work ({})", dirty.join(", ")))
    };
    if let Some(why) = why {
        if !dry_run {
            eprintln!(
                "warning: lane {}: kept the old worktree {}: {why}; to remove it by hand: `git worktree remove {}` (add --force to discard what is in it)",
                lane.feature,
                old.display(),
                old.display()
            );
        }
        let reason = format!(
            "handed over to {} at {}; the old worktree {} stays: {why}",
            r.owner,
            r.path,
            old.display()
        );
        return Ok((
            format!("{:<13}{}: {reason}\n", "kept", lane.feature),
            Err(reason),
        ));
    }
    let verb = if dry_run { "would remove" } else { "removed" };
    if !dry_run {
        // Not forced: git refuses once more if anything appeared meanwhile.
        ctx.store
            .git
            .run(["worktree", "remove", &old.display().to_string()])?;
    }
    Ok((
        format!(
            "{verb:<13}{}: old worktree {} (the lane was handed over to {}, at {}; branch {} kept)\n",
            lane.feature,
            old.display(),
            r.owner,
            r.path,
            r.branch
        ),
        Ok(serde_json::json!({ "feature": lane.feature, "worktree": old.display().to_string(), "owner": r.owner, "path": r.path })),
    ))
}

/// A lane report, in the fixed vocabulary.
#[derive(Debug, Clone)]
pub enum ReportKind {
    PlanReady,
    PrOpen(String),
    Blocked { class: String, what: String },
    Handoff(String),
    Done,
}

impl ReportKind {
    pub fn slug(&self) -> &'static str {
        match self {
            ReportKind::PlanReady => "plan-ready",
            ReportKind::PrOpen(_) => "pr-open",
            ReportKind::Blocked { .. } => "blocked",
            ReportKind::Handoff(_) => "handoff",
            ReportKind::Done => "done",
        }
    }
    pub fn line(&self) -> String {
        match self {
            ReportKind::PlanReady => "plan ready".into(),
            ReportKind::PrOpen(url) => format!("PR open {url}"),
            ReportKind::Blocked { class, what } => format!("blocked {class} {what}"),
            ReportKind::Handoff(packet) => format!("handoff {packet}"),
            ReportKind::Done => "done".into(),
        }
    }
    fn validate(&self) -> Result<()> {
        let one_line = |what: &str, v: &str| {
            if v.trim().is_empty() || v.contains('\n') || v.contains('\r') {
                Err(Error::usage(
                    "USAGE",
                    format!("report {}: {what} must be one non-empty line", self.slug()),
                ))
            } else {
                Ok(())
            }
        };
        let one_word = |what: &str, v: &str| {
            one_line(what, v)?;
            if v.split_whitespace().count() != 1 {
                return Err(Error::usage(
                    "USAGE",
                    format!("report {}: {what} must be one word, got '{v}'", self.slug()),
                ));
            }
            Ok(())
        };
        match self {
            ReportKind::PrOpen(url) => {
                one_word("the URL", url)?;
                let host = url
                    .strip_prefix("https://")
                    .or_else(|| url.strip_prefix("http://"))
                    .and_then(|rest| rest.split('/').next())
                    .unwrap_or("");
                if host.is_empty() {
                    return Err(Error::usage(
                        "USAGE",
                        format!("report pr-open: '{url}' is not an http(s) URL of a pull request"),
                    )
                    .hint("give the pull request's address, e.g. https://github.com/o/r/pull/7"));
                }
                Ok(())
            }
            ReportKind::Blocked { class, what } => {
                one_word("the class", class)?;
                one_line("what it needs", what)
            }
            ReportKind::Handoff(packet) => one_word("the packet", packet),
            ReportKind::PlanReady | ReportKind::Done => Ok(()),
        }
    }
}

/// Normalise `--capacity`: `ok 64% @work1` or `capacity=ok 64% @work1`;
/// the first word is the capacity state.
pub fn parse_capacity(text: &str) -> Result<String> {
    let t = text.trim();
    let t = t.strip_prefix("capacity=").unwrap_or(t).trim();
    let state = t.split_whitespace().next().unwrap_or("");
    if t.contains('\n') || !matches!(state, "ok" | "low" | "critical" | "unknown") {
        return Err(Error::usage(
            "USAGE",
            format!(
                "--capacity '{}' does not start with ok, low, critical or unknown",
                text.escape_debug()
            ),
        )
        .hint(
            "e.g. --capacity \"ok 64% @work1\" (without the kit, say \"unknown\", never \"ok\")",
        ));
    }
    Ok(t.to_string())
}

/// `report`: journal a lane report in the plan (event `lane-report`, trailer
/// `Swarm-Lane`) and keep it as the lane's `last_report`.
pub fn report(
    ctx: &Ctx,
    lane_flag: Option<&str>,
    kind: ReportKind,
    capacity: Option<&str>,
) -> Result<Output> {
    // Before anything else, so that not even an error message echoes it.
    crate::secret::check_fields(
        "the report",
        &[
            ("report", kind.line().as_str()),
            ("--capacity", capacity.unwrap_or("")),
        ],
    )?;
    kind.validate()?;
    if let ReportKind::Handoff(packet) = &kind {
        // The report points at a packet: it must be one that exists.
        crate::packet::locate(ctx, packet)?;
    }
    let capacity = capacity.map(parse_capacity).transpose()?;
    let feature = match lane_flag {
        Some(f) => f.to_string(),
        None => match ctx.lane_here() {
            Some(lane) => lane.feature,
            None => {
                if let (Some(moved), Some(here)) = (moved_from_here(ctx), ctx.store.workdir()) {
                    return Err(moved_error(&moved, here));
                }
                return Err(Error::usage(
                    "USAGE",
                    "which lane is reporting? you are not in a lane worktree",
                )
                .hint("pass --lane <feature>, or run it inside the lane's worktree"));
            }
        },
    };
    let lane = require(&ctx.store, &feature)?;
    if !lane.record.is_active() {
        return Err(Error::usage(
            "NOT_FOUND",
            format!("lane '{feature}' was removed; it cannot report"),
        ));
    }
    let actor = ctx.actor()?;
    let plan_name = lane.record.plan.clone();
    plan::require(&ctx.store, &plan_name)?;
    let line = kind.line();
    let mut entry = Event::new("lane-report", &actor, line.clone())
        .trailer("Swarm-Lane", feature.as_str())
        .trailer("Swarm-Report", kind.slug());
    if let Some(c) = &capacity {
        entry.body = Some(format!("capacity={c}"));
        entry = entry.trailer("Swarm-Capacity", c.as_str());
    }
    let journal = plan::journal(ctx, &plan_name, &entry, None, None)?
        .expect("an entry without `once` is always written");
    crate::failpoint::point("report:journalled");

    let report = LastReport {
        kind: kind.slug().into(),
        text: line.clone(),
        capacity: capacity.clone(),
        at: rfc3339(ctx.store.clock.now()),
        by: actor.clone(),
        commit: journal.to_string(),
        extra: Extra::new(),
    };
    let warnings: Vec<String> = keep_last_report(&ctx.store, lane, &report)?
        .into_iter()
        .collect();
    let mut text = format!("lane {feature} → plan {plan_name}: {line}\n");
    if let Some(c) = &capacity {
        text.push_str(&format!("capacity={c}\n"));
    }
    Ok(Output::new(
        serde_json::json!({
            "lane": feature,
            "plan": plan_name,
            "kind": kind.slug(),
            "text": line,
            "capacity": capacity,
            "commit": journal.to_string(),
            "warnings": warnings,
        }),
        text,
    ))
}

/// Keep a journalled report as the lane's `last_report`. The plan's journal
/// is the report; this copy is a convenience. A lane record moved by a
/// concurrent writer is re-read and written again, a few times; losing that
/// race every time, or the lane being removed meanwhile, costs only the copy
/// (returned as a warning). Any other failure is an error.
fn keep_last_report(store: &Store, mut lane: Lane, report: &LastReport) -> Result<Option<String>> {
    let feature = lane.feature.clone();
    let ours = ObjectId::from_hex(report.commit.as_bytes()).ok();
    for attempt in 0..5 {
        if attempt > 0 {
            let Some(now) = load(store, &feature)? else {
                return Ok(Some(format!("lane '{feature}' has no record any more")));
            };
            lane = now;
        }
        if !lane.record.is_active() {
            return Ok(Some(format!(
                "lane '{feature}' was removed meanwhile; its last_report was not updated"
            )));
        }
        // A report journalled after ours got there first: it is the last one.
        let theirs = lane
            .record
            .last_report
            .as_ref()
            .and_then(|r| ObjectId::from_hex(r.commit.as_bytes()).ok());
        if let (Some(o), Some(t)) = (ours, theirs) {
            if o != t && store.is_ancestor(o, t).unwrap_or(false) {
                return Ok(None);
            }
        }
        let mut record = lane.record.clone();
        record.last_report = Some(report.clone());
        record.updated_at = report.at.clone();
        let event = Event::new(
            "lane-report",
            &report.by,
            format!("lane {feature}: {}", report.text),
        )
        .trailer("Swarm-Lane", feature.as_str());
        match store.write(
            &lane_ref(&feature),
            Some(lane.commit),
            &files(&record)?,
            &event,
        ) {
            Ok(_) => return Ok(None),
            Err(e) if e.code == "CAS_FAILED" => continue,
            Err(e) => {
                return Err(e.hint(format!(
                    "the report itself is in plan '{}' ({}); only lane '{feature}''s last_report copy is missing, so do not report it again",
                    lane.record.plan,
                    &report.commit[..12]
                )))
            }
        }
    }
    Ok(Some(format!(
        "lane '{feature}' kept changing; its last_report was not updated"
    )))
}

/// After a successor accepts a handoff, the lane whose branch the packet
/// names belongs to them: rewrite the lane's owner (a new version of its
/// record; `sync` publishes it). Idempotent. Returns whether it wrote.
/// When the successor accepts in another checkout (another clone), the lane
/// now lives there: its `path` follows, so commands run in that checkout know
/// the lane and the old worktree no longer speaks for it.
pub fn hand_over(
    store: &Store,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<bool> {
    for _ in 0..10 {
        let Some(lane) = all(store)?
            .0
            .into_iter()
            .find(|l| l.record.state == "active" && l.record.branch == branch)
        else {
            return Ok(false);
        };
        let now = rfc3339(store.clock.now());
        let Some((record, event)) = handed(
            &lane.feature,
            &lane.record,
            new_owner,
            packet,
            checkout,
            &now,
        ) else {
            return Ok(false);
        };
        match store.write(
            &lane_ref(&lane.feature),
            Some(lane.commit),
            &files(&record)?,
            &event,
        ) {
            Ok(_) => return Ok(true),
            Err(e) if e.code == "CAS_FAILED" => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::race(
        "CAS_FAILED",
        "the lane record kept changing; its owner was not updated",
    )
    .hint("run `git swarm accept` again: it completes what is missing"))
}

/// The lane record handed to `new_owner` working at `checkout`, and the
/// journal event; None when it is theirs there already.
fn handed(
    feature: &str,
    current: &LaneRecord,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
    now: &str,
) -> Option<(LaneRecord, Event)> {
    let here = std::fs::canonicalize(checkout).unwrap_or_else(|_| checkout.to_path_buf());
    let moved = !same_path(Path::new(&current.path), &here);
    if current.owner == new_owner && !moved {
        return None;
    }
    let mut record = current.clone();
    let previous = std::mem::replace(&mut record.owner, new_owner.to_string());
    if moved {
        record.path = here.display().to_string();
    }
    record.updated_at = now.to_string();
    let event = Event::new(
        "handoff-accepted",
        new_owner,
        format!("lane {feature}: handed from {previous} to {new_owner} (packet {packet})"),
    )
    .trailer("Swarm-Packet", packet)
    .trailer("Swarm-Lane", feature.to_string());
    Some((record, event))
}

/// For `accept` with a remote: the next version of the lane record at
/// `base` (the newest version known here) that hands the lane to
/// `new_owner` at `checkout`, so it is published in the same atomic push as
/// the acceptance. None when the lane is not active on `branch`, or is
/// theirs there already.
pub fn handover_commit(
    store: &Store,
    feature: &str,
    base: ObjectId,
    branch: &str,
    new_owner: &str,
    packet: &str,
    checkout: &Path,
) -> Result<Option<ObjectId>> {
    let rec = store.read_commit(base)?;
    let bytes = rec.file(RECORD_FILE).ok_or_else(|| {
        Error::usage(
            "YAML_INVALID",
            format!("{}:{RECORD_FILE} is missing", lane_ref(feature)),
        )
    })?;
    let current = parse(feature, bytes)?;
    if !current.is_active() || current.branch != branch {
        return Ok(None);
    }
    let now = rfc3339(store.clock.now());
    let Some((record, event)) = handed(feature, &current, new_owner, packet, checkout, &now) else {
        return Ok(None);
    };
    let tree = store.write_tree(&files(&record)?)?;
    Ok(Some(store.commit(tree, &[base], &event)?))
}

impl crate::store::kind::Record for LaneRecord {
    const NAMESPACE: &'static str = "lanes";
    const KIND: &'static str = "lane";
    const DIVERGED: crate::store::kind::Diverged = crate::store::kind::Diverged::MergeJournals;
    type Key = String;

    fn to_files(&self) -> Result<crate::store::kind::Files> {
        files(self)
    }
    fn from_files(
        files: &crate::store::kind::Files,
        feature: &String,
        _what: &str,
    ) -> Result<Self> {
        let bytes = files.get(RECORD_FILE).ok_or_else(|| {
            Error::usage(
                "YAML_INVALID",
                format!("{}:{RECORD_FILE} is missing", lane_ref(feature)),
            )
        })?;
        parse(feature, bytes)
    }
    fn is_finished(&self, _: &String, _: &dyn Fn(&str, &str) -> bool) -> bool {
        self.state == REMOVED
    }
}
