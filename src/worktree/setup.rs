//! What `init` sets up in a repository: the hook shims git-swarm installs
//! (pure text, between marker lines so a user's own hook content
//! survives), whether they are installed, and the excludes that keep plan
//! files and lane worktrees untracked.

use std::path::PathBuf;

use crate::error::Result;
use crate::fsutil::io_error;
use crate::store::Store;

pub const HOOKS: &[&str] = &["pre-commit", "commit-msg", "pre-push"];
pub const BEGIN: &str =
    "# >>> git-swarm >>> (managed by `git swarm init`; keep your own lines outside this block)";
pub const END: &str = "# <<< git-swarm <<<";

/// Shell lines that stop the hook, failing closed (exit 4, as a guard that
/// cannot run), when the `git-swarm` binary is not on PATH: without them git
/// says only "'swarm' is not a git command" on every commit.
pub fn binary_check(hook: &str) -> String {
    format!(
        r#"if ! command -v git-swarm >/dev/null 2>&1; then
    echo "error[GUARD_ERROR]: the git-swarm {hook} hook cannot run: the git-swarm binary is not on PATH, so the guards fail closed" >&2
    echo "hint: install it (cargo install --locked --path <your git-swarm checkout>) and put its directory (e.g. ~/.cargo/bin) on PATH" >&2
    echo "hint: to stop using the guards here, delete the git-swarm lines from $0" >&2
    exit 4
fi"#
    )
}

/// The standalone shim shipped in `hooks/<hook>` (a test keeps those files
/// equal to this).
pub fn shim(hook: &str) -> String {
    format!(
        "#!/bin/sh\n# git-swarm guard shim: all logic lives in `git swarm hook {hook}`.\n{}\nexec git swarm hook {hook} \"$@\"\n",
        binary_check(hook)
    )
}

/// The shell lines of our block for one hook.
fn block(hook: &str) -> String {
    let check = binary_check(hook);
    let body = match hook {
        // pre-push reads the ref list on stdin: keep a copy so that the
        // user's own lines after our block can read it too.
        "pre-push" => "swarm_in=$(mktemp) || exit 1\ncat >\"$swarm_in\"\ngit swarm hook pre-push \"$@\" <\"$swarm_in\"\nswarm_rc=$?\nexec <\"$swarm_in\"\nrm -f \"$swarm_in\"\n[ \"$swarm_rc\" -eq 0 ] || exit \"$swarm_rc\"".to_string(),
        _ => format!("git swarm hook {hook} \"$@\" || exit $?"),
    };
    format!("{BEGIN}\n{check}\n{body}\n{END}\n")
}

/// Insert or refresh our block in an existing hook's text.
pub fn merge_hook(existing: Option<&str>, hook: &str) -> String {
    let ours = block(hook);
    let Some(existing) = existing else {
        return format!("#!/bin/sh\n{ours}");
    };
    if let (Some(start), Some(end)) = (existing.find(BEGIN), existing.find(END)) {
        if start < end {
            let after = end + END.len();
            let after = if existing[after..].starts_with('\n') {
                after + 1
            } else {
                after
            };
            return format!("{}{}{}", &existing[..start], ours, &existing[after..]);
        }
    }
    // Right after the shebang, so a user's `exit 0` at the end cannot skip us.
    if existing.starts_with("#!") {
        let line_end = existing.find('\n').map(|i| i + 1).unwrap_or(existing.len());
        let mut head = existing[..line_end].to_string();
        if !head.ends_with('\n') {
            head.push('\n');
        }
        format!("{head}{ours}{}", &existing[line_end..])
    } else {
        format!("#!/bin/sh\n{ours}{existing}")
    }
}

/// Whether our pre-commit block is in the hooks directory git uses.
pub fn hooks_installed(store: &Store) -> bool {
    hooks_dir(store)
        .ok()
        .and_then(|dir| std::fs::read_to_string(dir.join("pre-commit")).ok())
        .is_some_and(|text| text.contains(BEGIN))
}

/// The hooks directory git really uses (`core.hooksPath` included).
pub fn hooks_dir(store: &Store) -> Result<PathBuf> {
    let out = store
        .git
        .run(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?;
    Ok(PathBuf::from(out.trim()))
}

/// Add the plan file and the lane worktrees' root to `info/exclude`
/// unless listed there; the lines added.
pub fn ensure_excludes(store: &Store, plan_file: &str, worktree_root: &str) -> Result<Vec<String>> {
    let path = store.common_dir().join("info").join("exclude");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let wanted = [
        format!("/{}", plan_file.trim_start_matches('/')),
        format!("/{}/", worktree_root.trim_matches('/')),
    ];
    let mut added = Vec::new();
    let mut text = existing.clone();
    for w in wanted {
        if !existing.lines().any(|l| l.trim() == w) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&w);
            text.push('\n');
            added.push(w);
        }
    }
    if !added.is_empty() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        }
        std::fs::write(&path, text).map_err(|e| io_error(&path, e))?;
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_shims_are_the_generated_ones() {
        for hook in HOOKS {
            let path = format!("{}/hooks/{hook}", env!("CARGO_MANIFEST_DIR"));
            let shipped = std::fs::read_to_string(&path).unwrap();
            assert_eq!(shipped, shim(hook), "{path} differs from init::shim");
        }
    }

    #[test]
    fn an_old_block_is_upgraded_in_place() {
        let old = format!(
            "#!/bin/sh\n{BEGIN}\ngit swarm hook pre-commit \"$@\" || exit $?\n{END}\necho mine\n"
        );
        let new = merge_hook(Some(&old), "pre-commit");
        assert!(new.contains("command -v git-swarm"), "{new}");
        assert!(new.ends_with("echo mine\n"));
        assert_eq!(new.matches(BEGIN).count(), 1);
        assert_eq!(merge_hook(Some(&new), "pre-commit"), new);
    }

    #[test]
    fn merge_is_idempotent_and_keeps_user_lines() {
        let user = "#!/bin/bash\necho mine\nexit 0\n";
        let once = merge_hook(Some(user), "pre-commit");
        assert!(once.starts_with("#!/bin/bash\n# >>> git-swarm"));
        assert!(once.contains("echo mine\nexit 0\n"));
        assert_eq!(merge_hook(Some(&once), "pre-commit"), once);
        assert_eq!(
            merge_hook(None, "commit-msg"),
            merge_hook(Some(&merge_hook(None, "commit-msg")), "commit-msg")
        );
    }

    #[test]
    fn the_binary_check_fails_closed_naming_the_hook() {
        let check = binary_check("pre-push");
        assert!(check.starts_with("if ! command -v git-swarm"));
        assert!(check.contains("the git-swarm pre-push hook cannot run"));
        assert!(check.trim_end().ends_with("exit 4\nfi"));
        let shim = shim("commit-msg");
        assert!(shim.starts_with("#!/bin/sh\n"));
        assert!(shim.ends_with("exec git swarm hook commit-msg \"$@\"\n"));
    }

    #[test]
    fn our_block_goes_after_the_shebang_or_gets_one() {
        let merged = merge_hook(Some("echo mine\n"), "pre-commit");
        assert!(merged.starts_with(&format!("#!/bin/sh\n{BEGIN}\n")));
        assert!(merged.ends_with(&format!("{END}\necho mine\n")));
        let merged = merge_hook(Some("#!/bin/sh"), "pre-commit");
        assert!(merged.starts_with(&format!("#!/bin/sh\n{BEGIN}")));
        // pre-push keeps stdin for the user's own lines after our block.
        let push = merge_hook(None, "pre-push");
        assert!(push.contains("exec <\"$swarm_in\""));
        assert!(!merge_hook(None, "pre-commit").contains("swarm_in"));
    }
}
