//! `git swarm pool add|list|rm`: the accounts the developer declares for
//! the runner (the record and its lease rule: `crate::records::pool`). Every
//! write is published at once, as a task claim is: of two clones changing
//! one account, the remote takes one and the other decides again.

use serde::Serialize;

use crate::error::{Code, Error, Result};
use crate::names;
use crate::records::pool::{self, Account, Declared, Op};
use crate::session::Ctx;
use crate::store::mirror;

/// What `pool add` or `pool rm` did.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    pub command: &'static str,
    pub account: Account,
    /// Nothing was written: it already was so.
    pub already: bool,
    pub published: bool,
    #[serde(skip)]
    pub warning: Option<String>,
}

pub fn add(ctx: &Ctx, d: &Declared) -> Result<Changed> {
    let account = pool::declare(d)?;
    change(ctx, "pool add", &d.account, &Op::Add(Box::new(account)))
}

pub fn remove(ctx: &Ctx, name: &str) -> Result<Changed> {
    names::validate_name("account", name)?;
    change(ctx, "pool rm", name, &Op::Remove)
}

fn change(ctx: &Ctx, command: &'static str, name: &str, op: &Op) -> Result<Changed> {
    let actor = ctx.actor()?;
    let (account, written) = pool::publish(&ctx.store, ctx.remote(), name, op, &actor)?;
    let account = account
        .ok_or_else(|| Error::new(Code::NotFound, format!("no account {name} in the pool")))?;
    Ok(Changed {
        command,
        already: written.commit().is_none(),
        published: written.publication.is_published(),
        warning: written.publication.warning(),
        account,
    })
}

/// One account as `pool list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub account: String,
    pub host: String,
    pub address: String,
    /// `free`, `leased` or `removed`.
    pub state: String,
    #[serde(flatten)]
    pub record: Account,
}

/// Every declared account (removed ones with `all`), after a fetch of the
/// pool's refs (a failed fetch lists what this clone knows).
pub fn list(ctx: &Ctx, all: bool) -> Result<(Vec<Listed>, Vec<String>)> {
    mirror::fetch_refs_from(&ctx.store, ctx.remote(), &[pool::PREFIX])?;
    let (accounts, bad) = pool::known(&ctx.store, ctx.remote())?;
    let now = ctx.store.clock.now();
    let listed = accounts
        .into_iter()
        .filter(|a| all || !a.removed)
        .map(|a| Listed {
            account: a.account.clone(),
            host: a.host.to_string(),
            address: a.address.clone(),
            state: if a.removed {
                "removed"
            } else if a.live_lease(now).is_some() {
                "leased"
            } else {
                "free"
            }
            .into(),
            record: a,
        })
        .collect();
    Ok((
        listed,
        bad.iter()
            .map(|u| format!("{} ({}): {}", u.refname, u.code, u.reason))
            .collect(),
    ))
}
