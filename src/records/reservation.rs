//! Path reservations (`refs/swarm/reservations/shard-*`, `reservations.yaml`,
//! `swarm-reservations/v1`): who holds which paths, exclusively or shared,
//! until when, and the pure rules for reserving, releasing, renewing and
//! recovering them and for judging a change against them.
//!
//! # One ledger, stored in shards
//!
//! The rules decide on ONE ledger: two reservations can overlap across
//! plans and lanes, so a decision must see both. It is stored in
//! sixty-four shard records ([`shard`]) so that reservations of unrelated paths never
//! contend for one ref: two overlapping reservations always share a shard,
//! and every change publishes the shards it changed with the store's
//! publish loop (one atomic push whose leases are the shards just fetched,
//! [`stored`]). Of two overlapping reservations made at once on two
//! machines, the remote takes exactly one push; the loser fetches again,
//! finds the winner's entry overlapping its own and exits 3 naming the
//! holder. A loser whose entry does not overlap simply decides again
//! (bounded retries), so unrelated reservations made at once all succeed.
//!
//! Released entries and entries expired for longer than [`PRUNE_AFTER`]
//! leave the live ledger at the next write of their shard; the shard's
//! history keeps them.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::config::LeaseSetting;
use crate::error::{Code, Error, Result};
use crate::store::records::{Diverged, Files, Record, Replayed};
use crate::store::yaml::{self, Extra};

mod path;
mod replay;
pub mod shard;
pub mod stored;
#[cfg(test)]
mod tests;

pub use path::{covers, glob_match, normalise, overlap, Pattern, Shape};

pub const SCHEMA: &str = "swarm-reservations/v1";
pub const RECORD_FILE: &str = "reservations.yaml";
/// The key of the one ledger record.
pub const LEDGER: &str = "ledger";
pub const LEDGER_REF: &str = "refs/swarm/reservations/ledger";
/// The lease when neither `--lease` nor `swarm.reservationLease` sets one.
pub const DEFAULT_LEASE: &str = "2h";
/// The lease a reservation is renewed or carried with: `git config
/// swarm.reservationLease`, else 2 hours (`reserve` itself refuses a zero
/// `--lease`: [`RESERVE_LEASE`]).
pub const LEASE: LeaseSetting = LeaseSetting {
    key: "swarm.reservationLease",
    default: DEFAULT_LEASE,
    parse: |text, _| crate::clock::parse_duration(text),
};
/// The lease `reserve` asks for: [`LEASE`], refusing one that is not longer
/// than zero.
pub const RESERVE_LEASE: LeaseSetting = LeaseSetting {
    parse: |text, _| {
        let d = crate::clock::parse_duration(text)?;
        if d.is_zero() || d.is_negative() {
            return Err(Error::new(Code::Usage, "a lease must be longer than zero")
                .hint("use a number and a unit: 45s, 30m, 2h, 1d, or combined like 1h30m"));
        }
        Ok(d)
    },
    ..LEASE
};
/// How long an expired, unreleased entry stays in the live ledger (so it can
/// be listed and recovered) before a write drops it.
pub const PRUNE_AFTER: SignedDuration = SignedDuration::from_hours(7 * 24);

/// How `swarm.reservations` says the guards treat reservations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforce {
    Enforce,
    Warn,
    Off,
}

impl Enforce {
    /// The setting's value; anything unknown enforces (a typo must not
    /// switch the guard off).
    pub fn parse(value: Option<&str>) -> Enforce {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("warn") => Enforce::Warn,
            Some("off" | "false" | "no" | "0") => Enforce::Off,
            _ => Enforce::Enforce,
        }
    }
}

/// A recovery: who held an expired entry, until when, and why it was taken.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Recovery {
    pub id: String,
    pub previous_holder: String,
    pub expired_at: String,
    pub reason: String,
}

/// Whether a lease ending at `lease_until` (RFC 3339) still runs at `now`;
/// an unreadable end runs (fail closed).
pub fn lease_running(lease_until: &str, now: Timestamp) -> bool {
    lease_until.parse::<Timestamp>().map_or(true, |t| now < t)
}

/// One reservation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub id: String,
    pub holder: String,
    pub paths: Vec<Pattern>,
    #[serde(default)]
    pub shared: bool,
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    pub created_at: String,
    pub lease_until: String,
    #[serde(default)]
    pub released_at: Option<String>,
    #[serde(default)]
    pub recovered_from: Option<Recovery>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Entry {
    pub fn until(&self) -> Option<Timestamp> {
        self.lease_until.parse().ok()
    }
    /// Not released and its lease not over (an unreadable lease is live:
    /// fail closed).
    pub fn live(&self, now: Timestamp) -> bool {
        self.released_at.is_none() && lease_running(&self.lease_until, now)
    }
    /// Released, or expired for longer than [`PRUNE_AFTER`]: what [`prune`]
    /// drops.
    pub fn prunable(&self, now: Timestamp) -> bool {
        self.released_at.is_some() || self.until().is_some_and(|t| now >= t + PRUNE_AFTER)
    }
    pub fn expired(&self, now: Timestamp) -> bool {
        self.released_at.is_none() && self.until().is_some_and(|t| now >= t)
    }
    /// "alice (task T3) until 2026-…", for messages.
    pub fn describe(&self) -> String {
        let task = self
            .task
            .as_deref()
            .map(|t| format!(", task {t}"))
            .unwrap_or_default();
        format!(
            "{} held by {}{task}, {} until {}",
            self.id,
            self.holder,
            if self.shared { "shared" } else { "exclusive" },
            self.lease_until
        )
    }
    /// Whether this entry stands in the way of `holder` reserving `p`
    /// (`shared`): a live entry of someone else overlapping it, unless both
    /// are shared.
    pub fn blocks(
        &self,
        holder: &str,
        p: &Pattern,
        shared: bool,
        now: Timestamp,
        ic: bool,
    ) -> bool {
        self.live(now)
            && self.holder != holder
            && !(self.shared && shared)
            && self.paths.iter().any(|q| overlap(q, p, ic))
    }
}

/// The ledger record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ledger {
    pub schema: String,
    /// The number of the next id (`r<n>`).
    pub next: u64,
    #[serde(default)]
    pub entries: Vec<Entry>,
    /// In a ledger merged from the shards ([`shard::Shards::merged`]): the
    /// next number of each shard, which new ids come from instead of
    /// `next`. Never stored.
    #[serde(skip)]
    pub counters: Option<Vec<u64>>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            schema: SCHEMA.into(),
            next: 1,
            entries: Vec::new(),
            counters: None,
            extra: Extra::new(),
        }
    }
}

impl Ledger {
    /// The number of a new entry reserving `paths`: its first shard's next
    /// (a merged ledger), else `next`.
    fn allocate(&mut self, paths: &[Pattern]) -> u64 {
        if let Some(c) = self.counters.as_mut() {
            let i = shard::home(shard::of_paths(paths));
            let n = c[i];
            c[i] += shard::SHARDS as u64;
            return n;
        }
        let n = self.next;
        self.next += 1;
        n
    }
}

/// A part of the reservations from its `reservations.yaml` (`what`: where
/// it was read, for the error).
pub fn parse_ledger(bytes: &[u8], what: &str) -> Result<Ledger> {
    let ledger: Ledger = yaml::parse(bytes, "swarm-reservations", what)?;
    let holders: Vec<(&str, &str)> = ledger
        .entries
        .iter()
        .map(|e| ("holder", e.holder.as_str()))
        .collect();
    yaml::check_identities(what, &[], &holders)?;
    Ok(ledger)
}

impl Record for Ledger {
    const NAMESPACE: &'static str = "reservations";
    const KIND: &'static str = "reservations";
    const DIVERGED: Diverged = Diverged::PublishedWinsIfRelated;
    type Key = String;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        yaml::yaml_file(RECORD_FILE, self)
    }
    fn from_files(files: &Files, _key: &String, what: &str) -> Result<Self> {
        let bytes = yaml::the_file(files, RECORD_FILE, what)?;
        parse_ledger(bytes, what)
    }
    fn replay(
        &self,
        base: Option<&Self>,
        published: &Self,
        store: &crate::store::Store,
    ) -> Option<Replayed<Self>> {
        let ic = store
            .repo
            .config_snapshot()
            .boolean("core.ignoreCase")
            .unwrap_or(false);
        Some(replay::replay(base, self, published, store.clock.now(), ic))
    }
}

/// The id of a reservation made where no remote arbitrates (`--offline`):
/// `r<n>-<holder>`. An online id `r<n>` is unique because the remote's
/// compare-and-swap on the ledger hands out each `n` once; offline nothing
/// does, so the id carries its holder's address, which no other actor
/// has: two clones offline at once cannot make one id, and `sync` keeps it
/// as it is (a packet, a message or a terminal that names it stays right).
/// (Renumbering at `sync` instead would leave every copy of the old id
/// that `sync` cannot rewrite — output already shown, text in messages —
/// naming nothing, or another's reservation.)
pub fn offline_id(n: u64, holder: &str) -> String {
    format!("r{n}-{holder}")
}

/// Whether `text` is a reservation id (`r3`, or an offline one,
/// `r3-ann`) rather than a path.
pub fn is_id(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('r') else {
        return false;
    };
    let (n, holder) = match rest.split_once('-') {
        Some((n, h)) => (n, Some(h)),
        None => (rest, None),
    };
    !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit())
        && holder.is_none_or(crate::names::is_valid_address)
}

/// A request to reserve.
#[derive(Debug, Clone)]
pub struct Request {
    pub holder: String,
    pub paths: Vec<Pattern>,
    pub shared: bool,
    pub task: Option<String>,
    pub reason: Option<String>,
    pub lease: SignedDuration,
}

/// One conflict: a path asked for and the entry in its way.
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    pub path: Pattern,
    pub entry: Entry,
}

/// The live entries of others in the way of `req`.
pub fn conflicts(ledger: &Ledger, req: &Request, now: Timestamp, ic: bool) -> Vec<Conflict> {
    let mut out = Vec::new();
    for p in &req.paths {
        for e in &ledger.entries {
            if e.blocks(&req.holder, p, req.shared, now, ic) {
                out.push(Conflict {
                    path: p.clone(),
                    entry: e.clone(),
                });
            }
        }
    }
    out
}

/// The refusal of a reservation that conflicts (exit 3), naming the holders.
pub fn conflict_error(found: &[Conflict]) -> Error {
    let lines: Vec<String> = found
        .iter()
        .map(|c| format!("{} overlaps {}", c.path, c.entry.describe()))
        .collect();
    let holders: Vec<&str> = found.iter().map(|c| c.entry.holder.as_str()).collect();
    Error::new(
        Code::ReservationConflict,
        format!("reserved already: {}; nothing was written", lines.join("; ")),
    )
    .hint(format!(
        "ask {} to release it, wait for the lease to end, or reserve --shared if both sides only read",
        holders.first().copied().unwrap_or("the holder")
    ))
    .with_detail(serde_json::json!({ "conflicts": found }))
}

/// Drop released entries and entries expired for longer than [`PRUNE_AFTER`].
pub fn prune(ledger: &mut Ledger, now: Timestamp) {
    ledger.entries.retain(|e| !e.prunable(now));
}

/// Reserve: refuse a conflict; the same holder asking for exactly the paths
/// of one of their live entries renews it (same id). Returns the entry.
pub fn reserve(ledger: &mut Ledger, req: &Request, now: Timestamp, ic: bool) -> Result<Entry> {
    reserve_as(ledger, req, now, ic, true)
}

/// [`reserve`], allocating a new entry's id as `online` says: `r<n>` when
/// the remote arbitrates the write, else [`offline_id`].
pub fn reserve_as(
    ledger: &mut Ledger,
    req: &Request,
    now: Timestamp,
    ic: bool,
    online: bool,
) -> Result<Entry> {
    let found = conflicts(ledger, req, now, ic);
    if !found.is_empty() {
        return Err(conflict_error(&found));
    }
    let lease_until = crate::clock::lease_end(now, req.lease, Code::Usage)?;
    prune(ledger, now);
    let mut wanted = req.paths.clone();
    wanted.sort();
    if let Some(e) = ledger.entries.iter_mut().find(|e| {
        let mut have = e.paths.clone();
        have.sort();
        e.holder == req.holder
            && e.released_at.is_none()
            && e.shared == req.shared
            && have == wanted
    }) {
        e.lease_until = lease_until;
        if req.task.is_some() {
            e.task = req.task.clone();
        }
        if req.reason.is_some() {
            e.reason = req.reason.clone();
        }
        return Ok(e.clone());
    }
    let n = ledger.allocate(&req.paths);
    let entry = Entry {
        id: if online {
            format!("r{n}")
        } else {
            offline_id(n, &req.holder)
        },
        holder: req.holder.clone(),
        paths: req.paths.clone(),
        shared: req.shared,
        task: req.task.clone(),
        reason: req.reason.clone(),
        created_at: rfc3339(now),
        lease_until,
        released_at: None,
        recovered_from: None,
        extra: Extra::new(),
    };
    ledger.entries.push(entry.clone());
    Ok(entry)
}

fn not_found(target: &str) -> Error {
    Error::new(
        Code::ReservationNotFound,
        format!(
            "no live reservation '{}' (by id, or by a path you reserved)",
            crate::text::clean(target)
        ),
    )
    .hint("list them with `git swarm reservations --all`")
}

/// Release the entries named by id (`r3`) or by a path one of `holder`'s
/// live entries reserved. Returns the ids released.
pub fn release(
    ledger: &mut Ledger,
    holder: &str,
    targets: &[(String, Option<Pattern>)],
    now: Timestamp,
    ic: bool,
) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for (text, pattern) in targets {
        let by_id = ledger
            .entries
            .iter()
            .find(|e| e.id == *text && e.released_at.is_none());
        if let Some(e) = by_id {
            if e.holder != holder {
                return Err(Error::new(
                    Code::ReservationNotHolder,
                    format!("{} is not yours to release; nothing was written", e.describe()),
                )
                .hint(format!("ask {} to release it, or once it expired take it with `git swarm reserve --recover {} --reason …`", e.holder, e.id)));
            }
            ids.push(e.id.clone());
            continue;
        }
        let mine: Vec<String> = ledger
            .entries
            .iter()
            .filter(|e| e.holder == holder && e.released_at.is_none())
            .filter(|e| {
                // `mydir` names the directory reserved as `mydir/` (the
                // slash is how it was stored, not how it is typed).
                pattern.as_ref().is_some_and(|p| {
                    e.paths
                        .iter()
                        .any(|q| as_typed(&fold(q, ic)) == as_typed(&fold(p, ic)))
                })
            })
            .map(|e| e.id.clone())
            .collect();
        if mine.is_empty() {
            return Err(not_found(text));
        }
        ids.extend(mine);
    }
    let stamp = rfc3339(now);
    for e in ledger.entries.iter_mut().filter(|e| ids.contains(&e.id)) {
        e.released_at = Some(stamp.clone());
    }
    prune(ledger, now);
    ids.dedup();
    Ok(ids)
}

/// Whether an entry's `task` names task `id` of `plan`: `<plan>/<id>`, as
/// a lane with a task fills it in, or the bare id, as `--task` may be
/// typed.
fn for_task(entry: &Entry, plan: &str, id: &str) -> bool {
    entry
        .task
        .as_deref()
        .is_some_and(|t| t == id || t.split_once('/') == Some((plan, id)))
}

/// `task done`: release the entries `holder` still holds for task `id` of
/// `plan` ([`for_task`]; lapsed ones too, which would otherwise linger in
/// the live ledger). Returns the ids released (none: nothing changed).
pub fn release_task(
    ledger: &mut Ledger,
    holder: &str,
    plan: &str,
    id: &str,
    now: Timestamp,
) -> Vec<String> {
    let stamp = rfc3339(now);
    let mut ids = Vec::new();
    for e in ledger
        .entries
        .iter_mut()
        .filter(|e| e.holder == holder && e.released_at.is_none() && for_task(e, plan, id))
    {
        e.released_at = Some(stamp.clone());
        ids.push(e.id.clone());
    }
    if !ids.is_empty() {
        prune(ledger, now);
    }
    ids
}

/// `finish`: release every entry still held (by anyone, lapsed ones too)
/// for one of `tasks` (plan, id) ([`for_task`]). Returns the ids released.
pub fn release_for_tasks(
    ledger: &mut Ledger,
    tasks: &[(String, String)],
    now: Timestamp,
) -> Vec<String> {
    let stamp = rfc3339(now);
    let mut ids = Vec::new();
    for e in ledger
        .entries
        .iter_mut()
        .filter(|e| e.released_at.is_none() && tasks.iter().any(|(p, id)| for_task(e, p, id)))
    {
        e.released_at = Some(stamp.clone());
        ids.push(e.id.clone());
    }
    if !ids.is_empty() {
        prune(ledger, now);
    }
    ids
}

/// A pattern without the trailing `/` that marks a directory.
fn as_typed(p: &str) -> &str {
    p.strip_suffix('/').unwrap_or(p)
}

fn fold(p: &Pattern, ic: bool) -> String {
    if ic {
        p.0.to_lowercase()
    } else {
        p.0.clone()
    }
}

/// Take over an expired entry: it is released, and a new one for `holder`
/// with the same paths records the previous holder, expiry and reason.
pub fn recover(
    ledger: &mut Ledger,
    holder: &str,
    id: &str,
    reason: &str,
    lease: SignedDuration,
    now: Timestamp,
    ic: bool,
) -> Result<Entry> {
    recover_as(ledger, holder, id, reason, (lease, now), ic, true)
}

/// [`recover`], allocating the new entry's id as `online` says.
pub fn recover_as(
    ledger: &mut Ledger,
    holder: &str,
    id: &str,
    reason: &str,
    (lease, now): (SignedDuration, Timestamp),
    ic: bool,
    online: bool,
) -> Result<Entry> {
    let old = ledger
        .entries
        .iter()
        .find(|e| e.id == id && e.released_at.is_none())
        .cloned()
        .ok_or_else(|| not_found(id))?;
    if !old.expired(now) {
        return Err(Error::new(
            Code::ReservationNotExpired,
            format!("{} has not expired; nothing was written", old.describe()),
        )
        .hint(format!(
            "ask {} to release it, or wait until {}",
            old.holder, old.lease_until
        )));
    }
    let req = Request {
        holder: holder.to_string(),
        paths: old.paths.clone(),
        shared: old.shared,
        task: old.task.clone(),
        reason: Some(reason.to_string()),
        lease,
    };
    // The old entry is expired, so it blocks nothing; others still might.
    let found = conflicts(ledger, &req, now, ic);
    if !found.is_empty() {
        return Err(conflict_error(&found));
    }
    let stamp = rfc3339(now);
    for e in ledger.entries.iter_mut().filter(|e| e.id == id) {
        e.released_at = Some(stamp.clone());
    }
    let mut entry = reserve_as(ledger, &req, now, ic, online)?;
    let recovery = Recovery {
        id: old.id.clone(),
        previous_holder: old.holder.clone(),
        expired_at: old.lease_until.clone(),
        reason: reason.to_string(),
    };
    let id = entry.id.clone();
    for e in ledger.entries.iter_mut().filter(|e| e.id == id) {
        e.recovered_from = Some(recovery.clone());
        entry = e.clone();
    }
    Ok(entry)
}

/// What a change to `path` by `actor` meets: the live exclusive entry of
/// someone else covering it (a refusal), else an expired entry of someone
/// else covering it (a warning).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict<'l> {
    Free,
    Blocked(&'l Entry),
    Expired(&'l Entry),
}

pub fn judge<'l>(
    ledger: &'l Ledger,
    actor: &str,
    path: &str,
    now: Timestamp,
    ic: bool,
) -> Verdict<'l> {
    let mut expired = None;
    for e in &ledger.entries {
        if e.holder == actor || e.shared || e.released_at.is_some() {
            continue;
        }
        if !e.paths.iter().any(|p| covers(p, path, ic)) {
            continue;
        }
        if e.live(now) {
            return Verdict::Blocked(e);
        }
        expired.get_or_insert(e);
    }
    expired.map_or(Verdict::Free, Verdict::Expired)
}

/// Hand the entries `ids` held by `from` over to `to` (an accepted
/// handoff): each keeps its id and paths, gets `to` as holder and a lease
/// until at least `lease_until`. Returns the ids now `to`'s and one line
/// per entry that could not move (released, or held by someone else now,
/// e.g. recovered after it expired).
pub fn hand_over(
    ledger: &mut Ledger,
    ids: &[String],
    from: &str,
    to: &str,
    lease_until: &str,
) -> (Vec<String>, Vec<String>) {
    let (mut moved, mut not_moved) = (Vec::new(), Vec::new());
    for id in ids {
        let Some(e) = ledger
            .entries
            .iter_mut()
            .find(|e| e.id == *id && e.released_at.is_none())
        else {
            not_moved.push(format!(
                "reservation {id}: released or gone from the ledger"
            ));
            continue;
        };
        if e.holder == to {
            moved.push(id.clone());
        } else if e.holder != from {
            not_moved.push(format!(
                "reservation {id}: held by {} now, not {from}",
                e.holder
            ));
        } else {
            e.holder = to.to_string();
            let later = match (e.until(), lease_until.parse::<Timestamp>().ok()) {
                (Some(a), Some(b)) => a >= b,
                _ => false,
            };
            if !later {
                e.lease_until = lease_until.to_string();
            }
            moved.push(id.clone());
        }
    }
    (moved, not_moved)
}
