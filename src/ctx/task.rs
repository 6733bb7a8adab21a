//! The session's view of tasks: every task this clone knows of (the newer
//! of the local ref and the remote's mirror), the configured task lease,
//! and whether a task's branch is merged.

use gix::ObjectId;
use jiff::SignedDuration;

use super::Ctx;
use crate::error::Result;
use crate::model::task::{
    parse_lease, plan_prefix, task_ref, TaskKey, TaskRecord, DEFAULT_LEASE, PREFIX,
};
use crate::store::kind::{RecordKey, Records};
use crate::store::record::Unreadable;
use crate::store::{remote, Store};

/// One task as this clone sees it.
#[derive(Debug, Clone)]
pub struct Known {
    pub key: TaskKey,
    pub record: TaskRecord,
    pub commit: ObjectId,
    /// The local ref holds this version (else only the mirror does, or the
    /// local ref is ahead: not published yet).
    pub local: Option<ObjectId>,
    pub published: Option<ObjectId>,
}

/// Every task (of `plan`, or of all plans), local and published, newest of
/// the two; and those that cannot be read.
pub fn all(
    store: &Store,
    remote_name: Option<&str>,
    plan: Option<&str>,
) -> Result<(Vec<Known>, Vec<Unreadable>)> {
    let prefix = match plan {
        Some(p) => plan_prefix(p),
        None => PREFIX.to_string(),
    };
    let records = Records::<TaskRecord>::new(store);
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for (below, tip) in remote::tips_under(store, remote_name, &prefix)? {
        let refname = format!("{prefix}{below}");
        let path = &refname[PREFIX.len()..];
        let Some(key) = TaskKey::from_path(path) else {
            let e = crate::error::Error::new(
                crate::error::Code::RecordInvalid,
                format!("{refname} is not a valid task ref name"),
            );
            bad.push(Unreadable::new("task", path, &refname, &e));
            continue;
        };
        let Some(base) = tip.base else {
            continue;
        };
        match records.at(&key, base) {
            Ok(v) => good.push(Known {
                key,
                record: v.value,
                commit: base,
                local: tip.local,
                published: tip.remote,
            }),
            Err(e) => bad.push(Unreadable::new("task", path, &refname, &e)),
        }
    }
    Ok((good, bad))
}

/// The task `id` of `plan`, as this clone knows it.
pub fn find(
    store: &Store,
    remote_name: Option<&str>,
    plan: &str,
    id: &str,
) -> Result<Option<Known>> {
    let key = TaskKey {
        plan: plan.to_string(),
        id: id.to_string(),
    };
    let tip = remote::tip(store, remote_name, &task_ref(plan, id))?;
    let Some(base) = tip.base.filter(|_| !tip.archived) else {
        return Ok(None);
    };
    let v = Records::<TaskRecord>::new(store).at(&key, base)?;
    Ok(Some(Known {
        key,
        record: v.value,
        commit: base,
        local: tip.local,
        published: tip.remote,
    }))
}

/// The lease a task command asks for: its `--lease` flag, else `git config
/// swarm.taskLease`, else 30 minutes.
pub fn lease_for(ctx: &Ctx, flag: Option<&str>) -> Result<SignedDuration> {
    ctx.lease(flag, "swarm.taskLease", DEFAULT_LEASE, parse_lease)
}
