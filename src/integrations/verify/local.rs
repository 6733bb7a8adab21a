//! What git says about the PR: the merge commit on the remote's base
//! branch, a local merge of base and head, the head's commit time.

use super::pr_state::{head_sha, is_safe_branch, is_sha};
use super::Report;
use crate::error::Result;
use crate::git::MergeTree;
use crate::integrations::github::client::RepoId;
use crate::integrations::github::model::PullRequest;
use crate::integrations::github::verdict::{
    api_merged, needs_conflict_check, BaseCheck, ConflictCheck, LocalFacts,
};
use crate::session::Ctx;

/// What git says: the merge commit on the remote's base branch, a local
/// merge of base and head, the head's commit time. Fetches what it needs
/// unless `--offline`.
pub(super) struct Local<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) repo: &'a RepoId,
    pub(super) number: u64,
    /// The remote-tracking base ref, once fetched (or found, offline).
    pub(super) base_ref: Option<Option<String>>,
}

impl Local<'_> {
    fn base_ref(&mut self, pr: &PullRequest) -> Result<Option<String>> {
        if let Some(known) = &self.base_ref {
            return Ok(known.clone());
        }
        let found = match (
            self.ctx.settings.code_remote.as_deref(),
            pr.base.as_ref().and_then(|b| b.ref_.as_deref()),
        ) {
            (Some(remote), Some(base)) if is_safe_branch(base) => {
                let tracking = format!("refs/remotes/{remote}/{base}");
                if !self.ctx.offline() {
                    self.ctx
                        .store
                        .git
                        .fetch(remote, &[format!("+refs/heads/{base}:{tracking}")])?;
                }
                self.ctx
                    .store
                    .git
                    .has_commit(&tracking)?
                    .then_some(tracking)
            }
            _ => None,
        };
        self.base_ref = Some(found.clone());
        Ok(found)
    }

    /// Make the head commit available locally if we can; true if it is.
    fn ensure_head(&mut self, pr: &PullRequest, sha: &str) -> Result<bool> {
        let git = &self.ctx.store.git;
        if git.has_commit(sha)? {
            return Ok(true);
        }
        let Some(remote) = self.ctx.code_remote() else {
            return Ok(false);
        };
        let head = pr.head.as_ref();
        let same_repo = head
            .and_then(|h| h.repo.as_ref())
            .and_then(|r| r.full_name.as_deref())
            .is_some_and(|f| f.eq_ignore_ascii_case(&self.repo.to_string()));
        if let Some(branch) = head.and_then(|h| h.ref_.as_deref()) {
            if same_repo && is_safe_branch(branch) {
                let spec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
                // The branch may be gone after a merge; that is not an error.
                let _ = git.fetch(remote, &[spec]);
                if git.has_commit(sha)? {
                    return Ok(true);
                }
            }
        }
        let _ = git.fetch(remote, &[format!("refs/pull/{}/head", self.number)]);
        git.has_commit(sha)
    }

    pub(super) fn facts(
        &mut self,
        pr: &PullRequest,
        report: &mut dyn Report,
    ) -> Result<(LocalFacts, bool)> {
        let mut facts = LocalFacts::default();
        let head = head_sha(pr);
        let head_local = match &head {
            Some(sha) => self.ensure_head(pr, sha)?,
            None => false,
        };
        if api_merged(pr) {
            facts.merge = Some(match pr.merge_commit_sha.as_deref() {
                None => BaseCheck::NoMergeCommit,
                Some(m) if !is_sha(m) => BaseCheck::NoMergeCommit,
                Some(m) => match self.base_ref(pr)? {
                    None => BaseCheck::Unavailable(self.no_base_reason(pr)),
                    Some(base_ref) => {
                        let git = &self.ctx.store.git;
                        if git.has_commit(m)? && git.is_ancestor(m, &base_ref)? {
                            BaseCheck::Confirmed { base_ref }
                        } else {
                            BaseCheck::NotOnBase { base_ref }
                        }
                    }
                },
            });
        }
        if needs_conflict_check(pr) {
            let base_ref = self.base_ref(pr)?;
            facts.conflict = Some(match (base_ref, &head, head_local) {
                (Some(base_ref), Some(sha), true) => {
                    match self.ctx.store.git.merge_tree(&base_ref, sha)? {
                        MergeTree::Clean { .. } => ConflictCheck::Clean,
                        MergeTree::Conflicts(paths) => ConflictCheck::Conflicts(paths),
                    }
                }
                (None, _, _) => ConflictCheck::Unavailable(self.no_base_reason(pr)),
                _ => ConflictCheck::Unavailable(
                    "the head commit is not available locally".to_string(),
                ),
            });
            if let Some(ConflictCheck::Unavailable(why)) = &facts.conflict {
                report.warn(&format!(
                    "GitHub reports a conflict that git could not check locally: {why}"
                ));
            }
        }
        if let (Some(sha), true) = (&head, head_local) {
            facts.head_time = self
                .ctx
                .store
                .git
                .committer_time(sha)?
                .and_then(|t| jiff::Timestamp::from_second(t).ok());
        }
        Ok((facts, head_local))
    }

    fn no_base_reason(&self, pr: &PullRequest) -> String {
        let base = pr
            .base
            .as_ref()
            .and_then(|b| b.ref_.clone())
            .unwrap_or_else(|| "(unknown)".into());
        match self.ctx.settings.code_remote.as_deref() {
            None => format!("this repository has no remote to find the base branch '{base}' on"),
            Some(r) if self.ctx.offline() => {
                format!("--offline and refs/remotes/{r}/{base} is not here")
            }
            Some(r) => format!("the base branch '{base}' is not on remote '{r}'"),
        }
    }
}
