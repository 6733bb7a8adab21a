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

/// Record a session's cumulative totals (merged with what was recorded:
/// the larger figure of each, the newest attribution where one is given).
pub fn record(store: &Store, report: &SessionSpend) -> SessionSpend {
    let path = dir(store).join(format!("{}.json", super::safe(&report.session)));
    let old: Option<SessionSpend> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
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
    }
    if s.at.is_empty() {
        s.at = crate::clock::rfc3339(store.clock.now());
    }
    if let Ok(text) = serde_json::to_string(&s) {
        super::write_file(&path, &format!("{text}\n"));
    }
    s
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

/// The four sums `status --json` shows.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub lanes: BTreeMap<String, Totals>,
    /// By `<plan>/<task>`.
    pub tasks: BTreeMap<String, Totals>,
    pub agents: BTreeMap<String, Totals>,
    pub plans: BTreeMap<String, Totals>,
}

pub fn summary(sessions: &[SessionSpend]) -> Summary {
    Summary {
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

/// [`check`] with the plan's configured budget and this clone's sessions.
pub fn check_budget(store: &Store, plan: &str) -> Result<BudgetCheck> {
    Ok(check(budget_of(store, plan)?, plan, &sessions(store)))
}
