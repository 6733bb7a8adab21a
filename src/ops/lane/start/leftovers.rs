//! What a `git worktree add` killed half-way leaves for a `lane new` of
//! ours to clear before it starts again.

use crate::session::Ctx;

/// The administrative half of this feature's worktree that a killed `git
/// worktree add` left still marked "initializing" (or empty), taken away
/// before anything lists the worktrees. Called only while this feature's
/// start marker is here.
pub(super) fn clear_half_made_admin(ctx: &Ctx, feature: &str) -> Option<String> {
    let admin = ctx.store.common_dir().join("worktrees");
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(&admin).ok()?.flatten() {
        let ours = entry.file_name().to_str().is_some_and(|n| {
            n.strip_prefix(feature)
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
        });
        let dir = entry.path();
        let locked = std::fs::read_to_string(dir.join("locked")).ok();
        let empty = std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
        let half_made = empty || locked.as_deref().map(str::trim) == Some("initializing");
        if ours && half_made && std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(format!("the half-made worktree {}", dir.display()));
        }
    }
    (!removed.is_empty()).then(|| removed.join(" and "))
}

/// What a `git worktree add` killed half-way left for `path` (on `branch`):
/// its administrative directory still locked as "initializing" (git
/// removes that lock last), and the directory itself when it holds nothing
/// but what git began to write. Removed; says what, or None when nothing
/// was half-made. Called only while this feature's start marker is here (a
/// start of ours was interrupted), so nothing of anyone else's is touched.
pub(super) fn clear_half_made(ctx: &Ctx, path: &std::path::Path, branch: &str) -> Option<String> {
    let admin = ctx.store.common_dir().join("worktrees");
    let want_gitdir = path.join(".git");
    let branch_ref = format!("ref: refs/heads/{branch}");
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(&admin).ok()?.flatten() {
        let dir = entry.path();
        let locked = std::fs::read_to_string(dir.join("locked")).ok();
        let empty = std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_none());
        if !empty && locked.as_deref().map(str::trim) != Some("initializing") {
            continue;
        }
        let gitdir = std::fs::read_to_string(dir.join("gitdir")).ok();
        let head = std::fs::read_to_string(dir.join("HEAD")).unwrap_or_default();
        // git names the directory after the worktree's (`<name>`, else
        // `<name><n>`); one begun so far that it names nothing yet is ours
        // by that name alone.
        let named = entry.file_name().to_str().is_some_and(|n| {
            path.file_name().and_then(|b| b.to_str()).is_some_and(|b| {
                n.strip_prefix(b)
                    .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
            })
        });
        let ours = match &gitdir {
            Some(g) => crate::fsutil::same_path(std::path::Path::new(g.trim()), &want_gitdir),
            None => named,
        } || head.trim() == branch_ref;
        if ours && std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(format!("the half-made worktree {}", dir.display()));
        }
    }
    // The directory: gone with its administrative half, or never more
    // than git's first files (a `.git` pointing nowhere, or empty).
    // A `.git` git had opened but not yet written (killed in between) is
    // empty or cut short.
    let dangling = match std::fs::read_to_string(path.join(".git")) {
        Ok(link) => match link.trim().strip_prefix("gitdir:") {
            Some(d) => !std::path::Path::new(d.trim()).exists(),
            None => "gitdir:".starts_with(link.trim()),
        },
        Err(_) => std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none()),
    };
    if path.exists() && dangling && std::fs::remove_dir_all(path).is_ok() {
        removed.push(path.display().to_string());
    }
    (!removed.is_empty()).then(|| removed.join(" and "))
}
