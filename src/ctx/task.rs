//! The session's view of tasks: every task this clone knows of (the newer
//! of the local ref and the remote's mirror), the configured task lease,
//! and whether a task's branch is merged.

use gix::ObjectId;
use jiff::SignedDuration;

use super::Ctx;
use crate::error::Result;
use crate::model::task::{parse_lease, TaskKey, TaskRecord, DEFAULT_LEASE};
use crate::store::kind::{self, Records};
use crate::store::record::Unreadable;
use crate::store::Store;

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
    let under = plan.map(|p| format!("{p}/")).unwrap_or_default();
    let (known, bad) = Records::<TaskRecord>::new(store).known_under(remote_name, &under)?;
    Ok((known.into_iter().map(Known::from).collect(), bad))
}

impl From<kind::Known<TaskRecord>> for Known {
    fn from(k: kind::Known<TaskRecord>) -> Self {
        Known {
            key: k.version.key,
            record: k.version.value,
            commit: k.version.commit,
            local: k.tip.local,
            published: k.tip.remote,
        }
    }
}

/// The task `id` of `plan`, as this clone knows it.
pub fn find(
    store: &Store,
    remote_name: Option<&str>,
    plan: &str,
    id: &str,
) -> Result<Option<Known>> {
    let key = TaskKey::new(plan, id);
    let found = Records::<TaskRecord>::new(store).known_one(remote_name, &key)?;
    Ok(found.map(Known::from))
}

/// The lease a task command asks for: its `--lease` flag, else `git config
/// swarm.taskLease`, else 30 minutes.
pub fn lease_for(ctx: &Ctx, flag: Option<&str>) -> Result<SignedDuration> {
    ctx.lease(flag, "swarm.taskLease", DEFAULT_LEASE, parse_lease)
}
