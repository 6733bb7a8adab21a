//! The pool: the accounts the developer declared for agents to run on
//! (`refs/swarm/pool/<account>`, `account.yaml`, `swarm-pool/v1`), each
//! with the lease that gives it to one session at a time.
//!
//! An account names its host (`claude`, `codex`, `gemini`), the swarm
//! address its agents act under (`GIT_SWARM_AS`), and the environment its
//! host process gets on top of the runner's (`CLAUDE_CONFIG_DIR=…`,
//! `CODEX_HOME=…`: where the account's own login lives). Never a secret:
//! a value that looks like a credential, or a variable named like one
//! (`*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`), is refused.
//!
//! The lease is the account's claim: one holder (a runner: address,
//! machine, process), what it runs there (plan, task, lane, the agent's
//! session, pid, tokens), until when, and an epoch that grows with every
//! lease, so a runner whose lease lapsed and was taken is fenced when it
//! renews or frees. Every lease write is published at once in one leased
//! push (`Records::publish`): of two runners leasing one account, the
//! remote takes one. [`decide`] is that rule as a pure function.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::clock::rfc3339;
use crate::config::LeaseSetting;
use crate::error::{Code, Error, Result};
use crate::names;
use crate::store::records::{Diverged, Files, Record, Records, Update, Versioned, Written};
use crate::store::yaml::{self, Extra, Unreadable};
use crate::store::{Event, Store};

pub const SCHEMA: &str = "swarm-pool/v1";
pub const RECORD_FILE: &str = "account.yaml";
/// Where every account's ref lives.
pub const PREFIX: &str = "refs/swarm/pool/";
/// How long an account lease lasts unless renewed (`swarm.poolLease`).
pub const DEFAULT_LEASE: &str = "2m";

pub fn account_ref(account: &str) -> String {
    format!("{PREFIX}{account}")
}

open_enum! {
    /// The agent host an account runs.
    pub enum Host {
        Claude = "claude",
        Codex = "codex",
        Gemini = "gemini",
    }
}

/// One declared account and its lease.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Account {
    pub schema: String,
    pub account: String,
    pub host: Host,
    /// The swarm address its agents act under (`GIT_SWARM_AS`).
    pub address: String,
    /// Set on the host process on top of the runner's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `pool rm`: no longer offered; archived by gc once free.
    #[serde(default)]
    pub removed: bool,
    /// Grows with every lease.
    #[serde(default)]
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    #[serde(default)]
    pub updated_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Who holds an account, for what, until when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Lease {
    /// The runner: `<address>@<machine>#<pid>`, one per runner process.
    pub holder: String,
    pub machine: String,
    /// `lane` or `lead` (the coordinator's own account).
    #[serde(default)]
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    pub leased_at: String,
    pub until: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRun>,
}

/// The agent a lease runs, as its runner last recorded it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AgentRun {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub last_event: String,
    #[serde(default)]
    pub last_event_at: String,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Account {
    pub fn lease_until(&self) -> Option<Timestamp> {
        self.lease.as_ref().and_then(|l| l.until.parse().ok())
    }
    /// The live lease (held and not lapsed at `now`).
    pub fn live_lease(&self, now: Timestamp) -> Option<&Lease> {
        self.lease
            .as_ref()
            .filter(|_| self.lease_until().is_some_and(|u| now < u))
    }
    /// Offered to a new session at `now`: declared, not removed, not leased.
    pub fn is_free(&self, now: Timestamp) -> bool {
        !self.removed && self.live_lease(now).is_none()
    }
}

/// What the developer declares with `pool add`.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    pub account: String,
    pub host: String,
    pub address: Option<String>,
    pub env: Vec<String>,
    pub profile: Option<String>,
    pub note: Option<String>,
}

/// A variable name that says it holds a credential.
fn secret_name(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    ["SECRET", "PASSWORD", "PASSWD", "TOKEN", "CREDENTIAL"]
        .iter()
        .any(|w| k.contains(w))
        || k.ends_with("_KEY")
        || k == "KEY"
}

/// The account `pool add` writes, or why not: a bad name, host or `--env`,
/// or a value that looks like a credential (`SECRET_IN_TEXT`, the variable
/// named, never its value).
pub fn declare(d: &Declared) -> Result<Account> {
    names::validate_name("account", &d.account)?;
    let host = Host::parse(&d.host);
    if let Host::Other(h) = &host {
        return Err(Error::new(
            Code::Usage,
            format!("--host {h}: git-swarm launches claude, codex or gemini"),
        ));
    }
    let address = d.address.clone().unwrap_or_else(|| d.account.clone());
    names::validate_address(&address)?;
    let mut env = BTreeMap::new();
    let mut fields = Vec::new();
    for kv in &d.env {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(Error::new(
                Code::Usage,
                format!("--env {kv}: expected KEY=VALUE"),
            ));
        };
        let ok = !k.is_empty()
            && !k.starts_with(|c: char| c.is_ascii_digit())
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(Error::new(
                Code::Usage,
                format!("--env {k}: a variable name is letters, digits and _"),
            ));
        }
        if secret_name(k) {
            return Err(Error::new(
                Code::SecretInText,
                format!("the pool account was refused: `--env {k}` is named like a credential; nothing was written"),
            )
            .hint("a credential never goes into a record: leave it in the runner's environment, or in the account's own config directory (--env CLAUDE_CONFIG_DIR=…, CODEX_HOME=…, GEMINI_CLI_HOME=…)"));
        }
        env.insert(k.to_string(), v.to_string());
        fields.push((format!("--env {k}"), v.to_string()));
    }
    let mut named: Vec<(&str, &str)> = fields
        .iter()
        .map(|(f, v)| (f.as_str(), v.as_str()))
        .collect();
    if let Some(n) = &d.note {
        named.push(("--note", n));
    }
    if let Some(p) = &d.profile {
        named.push(("--profile", p));
    }
    crate::secret::check_fields("the pool account", &named)?;
    Ok(Account {
        schema: SCHEMA.into(),
        account: d.account.clone(),
        host,
        address,
        env,
        profile: d.profile.clone(),
        note: d.note.clone(),
        removed: false,
        epoch: 0,
        lease: None,
        updated_at: String::new(),
        extra: Extra::new(),
    })
}

/// A change to one account.
#[derive(Debug, Clone)]
pub enum Op {
    /// `pool add`: declare it, or change a declared one (its lease stays).
    Add(Box<Account>),
    /// `pool rm`: refused while a live lease holds it.
    Remove,
    /// A runner takes the account for a session; refused when another
    /// holds a live lease, or when `lead_account` names it for a lane.
    Lease { lease: Lease, ttl: SignedDuration },
    /// The holder at `epoch` renews (and records its agent's progress).
    Renew {
        holder: String,
        epoch: u64,
        ttl: SignedDuration,
        agent: Option<AgentRun>,
        lane: Option<String>,
    },
    /// The holder at `epoch` gives the account back.
    Free { holder: String, epoch: u64 },
}

/// The next version of the account for `op` by `actor` at `now`, or the
/// refusal (the pure rule every pool write runs on the freshest version).
pub fn decide(
    current: Option<&Versioned<Account>>,
    key: &str,
    op: &Op,
    actor: &str,
    now: Timestamp,
) -> Result<Update<Account>> {
    let at = At {
        cur: current.map(|v| &v.value),
        key,
        actor,
        now,
        stamp: rfc3339(now),
    };
    match op {
        Op::Add(new) => added(at, new),
        Op::Remove => removed(at),
        Op::Lease { lease, ttl } => leased(at, lease, *ttl),
        Op::Renew {
            holder,
            epoch,
            ttl,
            agent,
            lane,
        } => renewed(at, holder, *epoch, *ttl, agent, lane),
        Op::Free { holder, epoch } => freed(at, holder, *epoch),
    }
}

/// What one [`decide`] runs on: the account's current version (None: not
/// declared), its key, who writes, and when (`stamp`: `now` as written).
struct At<'a> {
    cur: Option<&'a Account>,
    key: &'a str,
    actor: &'a str,
    now: Timestamp,
    stamp: String,
}

/// `pool add`: the account declared, or a declared one changed (its lease,
/// epoch and unknown fields stay); unchanged, kept.
fn added(at: At, new: &Account) -> Result<Update<Account>> {
    let At {
        cur, key, actor, ..
    } = at;
    let mut next = new.clone();
    let summary = match cur {
        Some(c) => {
            next.epoch = c.epoch;
            next.lease = c.lease.clone();
            next.extra = c.extra.clone();
            if c.removed {
                format!("{actor} declares account {key} again ({})", next.host)
            } else {
                format!("{actor} updates account {key} ({})", next.host)
            }
        }
        None => format!("{actor} declares account {key} ({})", next.host),
    };
    if let Some(c) = cur {
        let same = Account {
            updated_at: c.updated_at.clone(),
            ..next.clone()
        };
        if &same == c {
            return Ok(Update::Keep);
        }
    }
    next.updated_at = at.stamp;
    Ok(Update::Write(next, Event::new("pool-add", actor, summary)))
}

/// `pool rm`: the account marked removed, refused while a live lease
/// holds it.
fn removed(at: At) -> Result<Update<Account>> {
    let At {
        key, actor, now, ..
    } = at;
    let c = require(at.cur, key)?;
    if c.removed {
        return Ok(Update::Keep);
    }
    if let Some(l) = c.live_lease(now) {
        return Err(held(key, l));
    }
    let mut next = c.clone();
    next.removed = true;
    next.lease = None;
    next.updated_at = at.stamp;
    Ok(Update::Write(
        next,
        Event::new("pool-rm", actor, format!("{actor} removes account {key}")),
    ))
}

/// A runner takes the account for `ttl` at the next epoch, refused when it
/// was removed or another holds a live lease.
fn leased(at: At, lease: &Lease, ttl: SignedDuration) -> Result<Update<Account>> {
    let At {
        key,
        actor,
        now,
        stamp,
        ..
    } = at;
    let c = require(at.cur, key)?;
    if c.removed {
        return Err(Error::new(
            Code::NotFound,
            format!("account {key} was removed from the pool"),
        ));
    }
    if let Some(l) = c.live_lease(now) {
        return Err(held(key, l));
    }
    let mut next = c.clone();
    next.epoch += 1;
    let mut l = lease.clone();
    l.leased_at = stamp.clone();
    l.until = rfc3339(now + ttl);
    let what = match (&l.lane, &l.task) {
        (Some(lane), _) => format!("lane {lane}"),
        (None, Some(t)) => format!("task {t}"),
        _ => l.role.clone(),
    };
    let summary = format!("{} leases account {key} for {what}", l.holder);
    next.lease = Some(l);
    next.updated_at = stamp;
    Ok(Update::Write(
        next,
        Event::new("pool-lease", actor, summary).epoch(c.epoch + 1),
    ))
}

/// The holder at `epoch` renews its lease for `ttl`, recording its agent's
/// progress and lane when given; `LEASE_NOT_HOLDER` when fenced.
fn renewed(
    at: At,
    holder: &str,
    epoch: u64,
    ttl: SignedDuration,
    agent: &Option<AgentRun>,
    lane: &Option<String>,
) -> Result<Update<Account>> {
    let At {
        key, actor, now, ..
    } = at;
    let c = require(at.cur, key)?;
    let l = holding(c, key, holder, epoch)?;
    let mut next = c.clone();
    let mut l = l.clone();
    l.until = rfc3339(now + ttl);
    if agent.is_some() {
        l.agent = agent.clone();
    }
    if lane.is_some() {
        l.lane = lane.clone();
    }
    next.lease = Some(l);
    next.updated_at = at.stamp;
    Ok(Update::Write(
        next,
        Event::new(
            "pool-renew",
            actor,
            format!("{holder} renews account {key}"),
        )
        .epoch(epoch),
    ))
}

/// The holder at `epoch` gives the account back; taken by someone else
/// since, or freed already, it is kept as it stands.
fn freed(at: At, holder: &str, epoch: u64) -> Result<Update<Account>> {
    let At { key, actor, .. } = at;
    let Some(c) = at.cur else {
        return Ok(Update::Keep);
    };
    if c.epoch != epoch || c.lease.as_ref().map(|l| l.holder.as_str()) != Some(holder) {
        // Taken by someone else since (or freed already): theirs.
        return Ok(Update::Keep);
    }
    let mut next = c.clone();
    next.lease = None;
    next.updated_at = at.stamp;
    Ok(Update::Write(
        next,
        Event::new("pool-free", actor, format!("{holder} frees account {key}")).epoch(epoch),
    ))
}

fn require<'a>(cur: Option<&'a Account>, key: &str) -> Result<&'a Account> {
    cur.ok_or_else(|| {
        Error::new(Code::NotFound, format!("no account {key} in the pool"))
            .hint("`git swarm pool list` shows the accounts; `git swarm pool add` declares one")
    })
}

fn held(key: &str, l: &Lease) -> Error {
    Error::new(
        Code::LeaseHeld,
        format!("account {key} is leased to {} until {}", l.holder, l.until),
    )
    .with_detail(serde_json::json!({"holder": l.holder, "until": l.until}))
}

/// The lease `holder` took at `epoch`, still its own; `LEASE_NOT_HOLDER`
/// when another took the account since (the runner is fenced).
fn holding<'a>(c: &'a Account, key: &str, holder: &str, epoch: u64) -> Result<&'a Lease> {
    match &c.lease {
        Some(l) if l.holder == holder && c.epoch == epoch => Ok(l),
        other => Err(Error::new(
            Code::LeaseNotHolder,
            format!(
                "account {key} is no longer leased to {holder} (epoch {epoch}; now {} at epoch {})",
                other.as_ref().map_or("free", |l| l.holder.as_str()),
                c.epoch
            ),
        )),
    }
}

/// The lease an account write asks for: `--lease`, else `git config
/// swarm.poolLease`, else 2 minutes (a runner renews at half of it while
/// its agent lives).
pub const LEASE: LeaseSetting = LeaseSetting {
    key: "swarm.poolLease",
    default: DEFAULT_LEASE,
    parse: parse_lease,
};

fn parse_lease(text: &str, source: &str) -> Result<SignedDuration> {
    match crate::clock::parse_duration(text) {
        Ok(d) if d.is_positive() => Ok(d),
        _ => Err(Error::new(
            Code::LeaseInvalidDuration,
            format!("{source} '{text}' is not a positive duration"),
        )
        .hint("use a number and a unit: 45s, 30m, 2h, 1d, or combined like 1h30m")),
    }
}

/// Run `op` on the account's freshest version and publish the result at
/// once (one leased push; a lost race decides again on the winner's
/// version). `remote` None: the local compare-and-swap decides.
pub fn publish(
    store: &Store,
    remote: Option<&str>,
    key: &str,
    op: &Op,
    actor: &str,
) -> Result<(Option<Account>, Written)> {
    let mut last = None;
    let written = Records::<Account>::new(store).publish(remote, &key.to_string(), |cur| {
        let now = store.clock.now();
        let u = decide(cur, key, op, actor, now)?;
        last = match &u {
            Update::Write(a, _) => Some(a.clone()),
            Update::Keep => cur.map(|c| c.value.clone()),
        };
        Ok(u)
    })?;
    Ok((last, written))
}

/// Every account this clone knows (local, or the remote's mirror as last
/// fetched), by name; unreadable ones listed.
pub fn known(store: &Store, remote: Option<&str>) -> Result<(Vec<Account>, Vec<Unreadable>)> {
    let (all, bad) = Records::<Account>::new(store).known(remote)?;
    Ok((all.into_iter().map(|v| v.value).collect(), bad))
}

/// Read one account version's YAML.
fn parse_record(bytes: &[u8], key: &str, what: &str) -> Result<Account> {
    let a: Account = yaml::parse(bytes, "swarm-pool", what)?;
    if a.account != key {
        return Err(Error::new(
            Code::RecordInvalid,
            format!("{what} holds account {} under the name {key}", a.account),
        ));
    }
    yaml::check_identities(what, &[("account", &a.account)], &[("address", &a.address)])?;
    Ok(a)
}

impl Record for Account {
    const NAMESPACE: &'static str = "pool";
    const KIND: &'static str = "account";
    /// A lease is never merged away: the published version wins.
    const DIVERGED: Diverged = Diverged::PublishedWinsIfRelated;
    type Key = String;

    crate::store::record_cache::json_cache!();
    fn to_files(&self) -> Result<Files> {
        yaml::yaml_file(RECORD_FILE, self)
    }
    fn from_files(files: &Files, key: &String, what: &str) -> Result<Self> {
        let bytes = yaml::the_file(files, RECORD_FILE, what)?;
        parse_record(bytes, key, what)
    }
    /// A removed account no lease holds.
    fn is_finished(&self, _key: &String, _elsewhere: &dyn Fn(&str, &str) -> bool) -> bool {
        self.removed && self.lease.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix::ObjectId;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }
    fn declared(env: &[&str]) -> Declared {
        Declared {
            account: "work1".into(),
            host: "claude".into(),
            env: env.iter().map(|s| s.to_string()).collect(),
            ..Declared::default()
        }
    }
    fn v(a: Account) -> Versioned<Account> {
        Versioned {
            key: a.account.clone(),
            value: a,
            commit: ObjectId::null(gix::hash::Kind::Sha1),
        }
    }
    fn refused(r: Result<Update<Account>>) -> Error {
        match r {
            Err(e) => e,
            Ok(_) => panic!("not refused"),
        }
    }
    fn written(u: Update<Account>) -> Account {
        match u {
            Update::Write(a, _) => a,
            Update::Keep => panic!("kept"),
        }
    }
    fn lease(holder: &str) -> Op {
        Op::Lease {
            lease: Lease {
                holder: holder.into(),
                machine: "m".into(),
                role: "lane".into(),
                ..Lease::default()
            },
            ttl: SignedDuration::from_mins(2),
        }
    }

    #[test]
    fn credentials_are_refused_by_value_and_by_name_and_never_echoed() {
        let ok = declare(&declared(&["CLAUDE_CONFIG_DIR=/home/a/.claude-work1"])).unwrap();
        assert_eq!(ok.address, "work1");
        assert_eq!(ok.env["CLAUDE_CONFIG_DIR"], "/home/a/.claude-work1");
        let key = "sk-ant-api03-".to_string() + &"A".repeat(93) + "AA";
        let e = declare(&declared(&[&format!("X={key}")])).unwrap_err();
        assert_eq!(e.code, Code::SecretInText, "{e}");
        assert!(!e.to_string().contains(&key), "{e}");
        let e = declare(&declared(&["ANTHROPIC_API_KEY=dummy"])).unwrap_err();
        assert_eq!(e.code, Code::SecretInText);
        assert!(e.to_string().contains("ANTHROPIC_API_KEY") && !e.to_string().contains("dummy"));
        assert_eq!(
            declare(&declared(&["NOEQUALS"])).unwrap_err().code,
            Code::Usage
        );
        let mut d = declared(&[]);
        d.host = "cursor".into();
        assert_eq!(declare(&d).unwrap_err().code, Code::Usage);
    }

    #[test]
    fn one_holder_at_a_time_fenced_by_epoch_and_free_after_the_lease() {
        let a = declare(&declared(&[])).unwrap();
        let t = now();
        let one = written(decide(Some(&v(a.clone())), "work1", &lease("r1"), "ann", t).unwrap());
        assert_eq!(one.epoch, 1);
        let e = refused(decide(
            Some(&v(one.clone())),
            "work1",
            &lease("r2"),
            "bob",
            t,
        ));
        assert_eq!(e.code, Code::LeaseHeld);
        assert!(e.to_string().contains("r1"), "{e}");
        // Lapsed: another runner takes it, the first is fenced.
        let later = t + SignedDuration::from_mins(3);
        let two =
            written(decide(Some(&v(one.clone())), "work1", &lease("r2"), "bob", later).unwrap());
        assert_eq!(two.epoch, 2);
        let renew = Op::Renew {
            holder: "r1".into(),
            epoch: 1,
            ttl: SignedDuration::from_mins(2),
            agent: None,
            lane: None,
        };
        let e = refused(decide(Some(&v(two.clone())), "work1", &renew, "ann", later));
        assert_eq!(e.code, Code::LeaseNotHolder);
        // The fenced runner's free leaves the new lease alone.
        let free = Op::Free {
            holder: "r1".into(),
            epoch: 1,
        };
        assert!(matches!(
            decide(Some(&v(two.clone())), "work1", &free, "ann", later).unwrap(),
            Update::Keep
        ));
        // rm is refused while leased, allowed once freed.
        let e = refused(decide(
            Some(&v(two.clone())),
            "work1",
            &Op::Remove,
            "ann",
            later,
        ));
        assert_eq!(e.code, Code::LeaseHeld);
        let free2 = Op::Free {
            holder: "r2".into(),
            epoch: 2,
        };
        let freed = written(decide(Some(&v(two)), "work1", &free2, "bob", later).unwrap());
        assert!(freed.is_free(later));
        let gone = written(decide(Some(&v(freed)), "work1", &Op::Remove, "ann", later).unwrap());
        assert!(gone.removed && !gone.is_free(later));
        assert!(gone.is_finished(&"work1".into(), &|_, _| false));
    }

    #[test]
    fn an_account_from_a_newer_version_keeps_its_unknown_fields() {
        let mut a = declare(&declared(&[])).unwrap();
        a.host = Host::parse("grok");
        let files = a.to_files().unwrap();
        let back = Account::from_files(&files, &"work1".to_string(), "x").unwrap();
        assert_eq!(back.host, Host::Other("grok".into()));
        assert_eq!(back.to_files().unwrap(), files);
    }
}
