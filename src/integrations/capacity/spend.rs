//! What the swarm spends: per host session, cumulative totals of tokens
//! (input, cache read, cache write, output) and the cost where the host
//! reported it, attributed to the session's lane, task, agent address,
//! account and plan. One file per session id under
//! `capacity/spend/<session>.json`; [`record`] keeps, field by field, the
//! larger of what was recorded and what is reported (each report is the
//! session's total so far), so the stop hook's and the runner's reports
//! of one session never double count. No price table: cost is what the
//! host reported, tokens always.
//!
//! Published with the lane's records: [`publish`] appends a `spend` entry
//! (the session's totals so far, as trailers) to the journal of the lane's
//! plan, locally, so it rides with the lane's next push and never makes a
//! push of its own; [`known`] reads this clone's sessions and every
//! `spend` entry of the plans' journals (local and as last fetched), the
//! larger figure of each session winning, so another clone sums the same.
//!
//! A budget (`swarm.<plan>.budget`, else `swarm.budget`: `2M tokens`,
//! `500k tokens`, `50 USD`) is checked by [`check_budget`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Code, Error, Result};
use crate::store::Store;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    #[serde(default)]
    pub output: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.cache_read + self.cache_write + self.output
    }
    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.output += o.output;
    }
    fn max(&self, o: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(o.input),
            cache_read: self.cache_read.max(o.cache_read),
            cache_write: self.cache_write.max(o.cache_write),
            output: self.output.max(o.output),
        }
    }
}

/// One host session's spend so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSpend {
    pub session: String,
    #[serde(default)]
    pub host: String,
    /// The agent's swarm address.
    #[serde(default)]
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// The task, `<id>` of `plan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default)]
    pub tokens: Tokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub at: String,
}

fn dir(store: &Store) -> std::path::PathBuf {
    store
        .common_dir()
        .join("swarm")
        .join("capacity")
        .join("spend")
}

/// `report` merged into `old`: the larger figure of each, the newest
/// attribution where one is given.
fn merge(old: Option<SessionSpend>, report: &SessionSpend) -> SessionSpend {
    let mut s = report.clone();
    if let Some(o) = old {
        s.tokens = o.tokens.max(&report.tokens);
        s.cost_usd = match (o.cost_usd, report.cost_usd) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let keep = |new: &Option<String>, old: Option<String>| new.clone().or(old);
        s.account = keep(&report.account, o.account);
        s.lane = keep(&report.lane, o.lane);
        s.task = keep(&report.task, o.task);
        s.plan = keep(&report.plan, o.plan);
        if s.host.is_empty() {
            s.host = o.host;
        }
        if s.agent.is_empty() {
            s.agent = o.agent;
        }
        if s.at.is_empty() || (s.tokens == o.tokens && s.cost_usd == o.cost_usd) {
            s.at = o.at;
        }
    }
    s
}

/// Record a session's cumulative totals (merged with what was recorded:
/// the larger figure of each, the newest attribution where one is given).
pub fn record(store: &Store, report: &SessionSpend) -> SessionSpend {
    record_changed(store, report).0
}

/// [`record`], and whether the totals grew (a first report counts).
pub fn record_changed(store: &Store, report: &SessionSpend) -> (SessionSpend, bool) {
    let path = dir(store).join(format!("{}.json", super::safe(&report.session)));
    let old: Option<SessionSpend> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let changed = old.as_ref().is_none_or(|o| {
        o.tokens.max(&report.tokens) != o.tokens || grew(o.cost_usd, report.cost_usd)
    });
    let mut s = merge(old, report);
    if s.at.is_empty() {
        s.at = crate::clock::rfc3339(store.clock.now());
    }
    if changed {
        if let Ok(text) = serde_json::to_string(&s) {
            super::write_file(&path, &format!("{text}\n"));
        }
    }
    (s, changed)
}

fn grew(old: Option<f64>, new: Option<f64>) -> bool {
    match (old, new) {
        (Some(a), Some(b)) => b > a,
        (None, Some(_)) => true,
        _ => false,
    }
}

/// The journal entry kind of a session's spend.
pub const EVENT: &str = "spend";

/// The `spend` journal entry of `s`: its totals as trailers.
pub fn event(s: &SessionSpend) -> crate::store::Event {
    let t = &s.tokens;
    let mut summary = format!("spend: session {} {} tokens", s.session, t.total());
    if let Some(c) = s.cost_usd {
        summary.push_str(&format!(", {c:.4} USD"));
    }
    let actor = if s.agent.is_empty() {
        "git-swarm"
    } else {
        &s.agent
    };
    let mut e = crate::store::Event::new(EVENT, actor, summary)
        .trailer("Swarm-Session", s.session.as_str())
        .trailer(
            "Swarm-Tokens",
            format!(
                "input={} cache_read={} cache_write={} output={}",
                t.input, t.cache_read, t.cache_write, t.output
            ),
        );
    if let Some(c) = s.cost_usd {
        e = e.trailer("Swarm-Cost-USD", format!("{c}"));
    }
    let more = [
        ("Swarm-Host", Some(s.host.as_str())),
        ("Swarm-Agent", Some(s.agent.as_str())),
        ("Swarm-Account", s.account.as_deref()),
        ("Swarm-Lane", s.lane.as_deref()),
        ("Swarm-Task", s.task.as_deref()),
        ("Swarm-Plan", s.plan.as_deref()),
        ("Swarm-Spend-At", Some(s.at.as_str())),
    ];
    for (k, v) in more {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            e = e.trailer(k, v);
        }
    }
    e
}

/// A `spend` journal entry read back (None: not one, or unreadable).
pub fn from_entry(e: &crate::store::JournalEntry) -> Option<SessionSpend> {
    if e.event != EVENT {
        return None;
    }
    let get = |k: &str| e.trailers.get(k).cloned().filter(|v| !v.is_empty());
    let session = get("Swarm-Session")?;
    let mut tokens = Tokens::default();
    for part in get("Swarm-Tokens")?.split_whitespace() {
        let (k, v) = part.split_once('=')?;
        let n: u64 = v.parse().ok()?;
        match k {
            "input" => tokens.input = n,
            "cache_read" => tokens.cache_read = n,
            "cache_write" => tokens.cache_write = n,
            "output" => tokens.output = n,
            _ => {}
        }
    }
    Some(SessionSpend {
        session,
        host: get("Swarm-Host").unwrap_or_default(),
        agent: get("Swarm-Agent").unwrap_or_else(|| e.actor.clone()),
        account: get("Swarm-Account"),
        lane: get("Swarm-Lane"),
        task: get("Swarm-Task"),
        plan: get("Swarm-Plan"),
        tokens,
        cost_usd: get("Swarm-Cost-USD").and_then(|c| c.parse().ok()),
        at: get("Swarm-Spend-At").unwrap_or_else(|| e.time.clone()),
    })
}

/// Record `report` here and, when its totals grew, append its `spend`
/// entry to the journal of `journal_plan` (the lane's plan) locally: it is
/// published with the next push (no push of its own). A plan that does not
/// exist here keeps the record in this clone only.
pub fn publish(store: &Store, journal_plan: Option<&str>, report: &SessionSpend) -> SessionSpend {
    let (s, changed) = record_changed(store, report);
    if let (true, Some(plan)) = (changed, journal_plan) {
        let _ = crate::records::plan::journal(store, None, plan, &event(&s), None, None);
    }
    s
}

/// Every session known here: this clone's records and the `spend`
/// entries of every plan's journal, local and as last fetched from
/// `remote`; of two figures of one session the larger wins.
pub fn known(store: &Store, remote: Option<&str>) -> Vec<SessionSpend> {
    let mut by: BTreeMap<String, SessionSpend> = BTreeMap::new();
    let mut take = |s: SessionSpend| {
        let old = by.remove(&s.session);
        let m = match old {
            // The local record's attribution wins over a journal's.
            Some(o) => merge(Some(s), &o),
            None => s,
        };
        by.insert(m.session.clone(), m);
    };
    for s in journalled(store, remote) {
        take(s);
    }
    for s in sessions(store) {
        take(s);
    }
    by.into_values().collect()
}

/// The sessions of the journals' `spend` entries, from a cache by journal
/// tips (`capacity/spend-journals.json`): a journal is walked again only
/// when one of its tips moved.
fn journalled(store: &Store, remote: Option<&str>) -> Vec<SessionSpend> {
    #[derive(Default, Serialize, Deserialize)]
    struct Cache {
        #[serde(default)]
        plans: BTreeMap<String, (String, Vec<SessionSpend>)>,
    }
    let path = dir(store).with_file_name("spend-journals.json");
    let old: Cache = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let Ok(tips) = crate::store::remote::tips_under(store, remote, crate::records::plan::PREFIX)
    else {
        return Vec::new();
    };
    let mut new = Cache::default();
    let mut moved = old.plans.len() != tips.len();
    for (plan, tip) in tips {
        let heads: Vec<gix::ObjectId> = [tip.local, tip.remote]
            .into_iter()
            .flatten()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let key = heads
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some((k, found)) = old.plans.get(&plan).filter(|(k, _)| *k == key) {
            new.plans.insert(plan, (k.clone(), found.clone()));
            continue;
        }
        moved = true;
        let mut found: BTreeMap<String, SessionSpend> = BTreeMap::new();
        for h in heads {
            for e in store.journal(h, None).unwrap_or_default() {
                if let Some(s) = from_entry(&e) {
                    let o = found.remove(&s.session);
                    let m = merge(o, &s);
                    found.insert(m.session.clone(), m);
                }
            }
        }
        new.plans.insert(plan, (key, found.into_values().collect()));
    }
    if moved {
        if let Ok(text) = serde_json::to_string(&new) {
            super::write_file(&path, &text);
        }
    }
    new.plans.into_values().flat_map(|(_, s)| s).collect()
}

/// Every session this clone recorded.
pub fn sessions(store: &Store) -> Vec<SessionSpend> {
    let Ok(entries) = std::fs::read_dir(dir(store)) else {
        return Vec::new();
    };
    let mut out: Vec<SessionSpend> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    out.sort_by(|a, b| a.session.cmp(&b.session));
    out
}

/// A sum of sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub tokens: Tokens,
    pub total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub sessions: usize,
}

impl Totals {
    pub fn add(&mut self, s: &SessionSpend) {
        self.tokens.add(&s.tokens);
        self.total_tokens = self.tokens.total();
        if let Some(c) = s.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
        self.sessions += 1;
    }
}

/// The sessions summed by `key` (sessions without one are left out).
pub fn sum_by(
    sessions: &[SessionSpend],
    key: impl Fn(&SessionSpend) -> Option<String>,
) -> BTreeMap<String, Totals> {
    let mut out: BTreeMap<String, Totals> = BTreeMap::new();
    for s in sessions {
        if let Some(k) = key(s) {
            out.entry(k).or_default().add(s);
        }
    }
    out
}

/// The four sums `status --json` shows, and the sessions summed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Each session's totals, by session id.
    pub sessions: Vec<SessionSpend>,
    pub lanes: BTreeMap<String, Totals>,
    /// By `<plan>/<task>`.
    pub tasks: BTreeMap<String, Totals>,
    pub agents: BTreeMap<String, Totals>,
    pub plans: BTreeMap<String, Totals>,
}

pub fn summary(sessions: &[SessionSpend]) -> Summary {
    Summary {
        sessions: sessions.to_vec(),
        lanes: sum_by(sessions, |s| s.lane.clone()),
        tasks: sum_by(sessions, |s| {
            s.task.as_ref().map(|t| match &s.plan {
                Some(p) if !t.contains('/') => format!("{p}/{t}"),
                _ => t.clone(),
            })
        }),
        agents: sum_by(sessions, |s| (!s.agent.is_empty()).then(|| s.agent.clone())),
        plans: sum_by(sessions, |s| s.plan.clone()),
    }
}

/// A plan's budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    Tokens(u64),
    Usd(f64),
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Tokens(n) => write!(f, "{n} tokens"),
            Budget::Usd(x) => write!(f, "{x} USD"),
        }
    }
}

/// `2M tokens`, `500k tokens`, `2000000`, `50 USD`, `$50`, `12.5 usd`.
pub fn parse_budget(text: &str) -> Result<Budget> {
    let bad = || {
        Error::new(
            Code::ConfigInvalid,
            format!("swarm.budget '{}' is neither tokens nor USD", text.trim()),
        )
        .hint("set it like `git config swarm.budget \"2M tokens\"` or `\"50 USD\"`")
    };
    let t = text.trim().to_ascii_lowercase();
    if let Some(rest) = t
        .strip_prefix('$')
        .or_else(|| t.strip_suffix("usd"))
        .or_else(|| t.strip_suffix("$"))
    {
        let x: f64 = rest.trim().parse().map_err(|_| bad())?;
        return (x.is_finite() && x >= 0.0)
            .then_some(Budget::Usd(x))
            .ok_or_else(bad);
    }
    let rest = t
        .strip_suffix("tokens")
        .or_else(|| t.strip_suffix("token"))
        .unwrap_or(&t)
        .trim();
    let (num, mult) = match rest.chars().last() {
        Some('k') => (&rest[..rest.len() - 1], 1e3),
        Some('m') => (&rest[..rest.len() - 1], 1e6),
        Some('g' | 'b') => (&rest[..rest.len() - 1], 1e9),
        _ => (rest, 1.0),
    };
    let x: f64 = num.trim().replace('_', "").parse().map_err(|_| bad())?;
    if !x.is_finite() || x < 0.0 {
        return Err(bad());
    }
    Ok(Budget::Tokens((x * mult).round() as u64))
}

/// The budget of `plan`: `swarm.<plan>.budget`, else `swarm.budget`.
pub fn budget_of(store: &Store, plan: &str) -> Result<Option<Budget>> {
    let v = store
        .config(&format!("swarm.{plan}.budget"))
        .or_else(|| store.config("swarm.budget"));
    match v.as_deref().map(str::trim) {
        None | Some("") | Some("off") | Some("none") => Ok(None),
        Some(v) => parse_budget(v).map(Some),
    }
}

/// Under or reached.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "budget")]
pub enum BudgetCheck {
    /// No budget set.
    None,
    Under {
        limit: Budget,
        spent: Totals,
    },
    Reached {
        limit: Budget,
        spent: Totals,
    },
}

impl BudgetCheck {
    pub fn reached(&self) -> bool {
        matches!(self, BudgetCheck::Reached { .. })
    }
}

/// Whether `plan`'s spend (the sessions given, usually [`sessions`])
/// reached its budget. A USD budget counts only the cost hosts reported.
pub fn check(limit: Option<Budget>, plan: &str, sessions: &[SessionSpend]) -> BudgetCheck {
    let Some(limit) = limit else {
        return BudgetCheck::None;
    };
    let mut spent = Totals::default();
    for s in sessions.iter().filter(|s| s.plan.as_deref() == Some(plan)) {
        spent.add(s);
    }
    let reached = match limit {
        Budget::Tokens(n) => spent.tokens.total() >= n,
        Budget::Usd(x) => spent.cost_usd.unwrap_or(0.0) >= x,
    };
    if reached {
        BudgetCheck::Reached { limit, spent }
    } else {
        BudgetCheck::Under { limit, spent }
    }
}

/// [`check`] with the plan's configured budget and every session known
/// here ([`known`]: this clone's and those the journals carry). Without a
/// budget nothing is read.
pub fn check_budget(store: &Store, remote: Option<&str>, plan: &str) -> Result<BudgetCheck> {
    let Some(limit) = budget_of(store, plan)? else {
        return Ok(BudgetCheck::None);
    };
    Ok(check(Some(limit), plan, &known(store, remote)))
}
