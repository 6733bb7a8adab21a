//! The agent guide: one text, printed by `git swarm agent guide`, installed
//! as a Claude Code skill (`.claude/skills/git-swarm/SKILL.md`, also in the
//! repository's plugin layout) and as a managed block in `AGENTS.md`
//! (between marker lines, so the rest of the file is the user's; Claude
//! Code reads it through `@AGENTS.md`, Codex and Gemini CLI directly).

/// The protocol an agent needs (≤ ~1,500 words; a test counts).
pub const GUIDE: &str = include_str!("guide.md");

/// The skill's name (frontmatter `name`: lowercase and hyphens, ≤ 64).
pub const SKILL_NAME: &str = "git-swarm";
/// The skill's description (frontmatter, ≤ 1,024 characters): when to use it.
pub const SKILL_DESCRIPTION: &str = "How to work as one of several coding agents in a git-swarm repository: claim a task, reserve paths, commit, report, ask and answer messages, wait at zero tokens, hand off, and finish. Use it when a repository has git swarm set up (a lane worktree, `git swarm` commands, refs/swarm) or when a hook mentions git swarm.";

pub const BEGIN: &str = "<!-- >>> git-swarm agent guide >>> (managed by `git swarm agent install`; keep your own text outside this block) -->";
pub const END: &str = "<!-- <<< git-swarm agent guide <<< -->";

/// The text of `SKILL.md`: YAML frontmatter, then the guide.
pub fn skill() -> String {
    // A JSON string is a YAML double-quoted scalar: the description's
    // colons and backticks stay text.
    let description = serde_json::to_string(SKILL_DESCRIPTION).expect("a string serialises");
    format!("---\nname: {SKILL_NAME}\ndescription: {description}\n---\n\n{GUIDE}")
}

/// `AGENTS.md` with our block inserted or refreshed (appended to an
/// existing file, after a blank line). Idempotent.
pub fn merge_agents_md(existing: Option<&str>) -> String {
    let block = format!("{BEGIN}\n{GUIDE}{END}\n");
    let Some(existing) = existing else {
        return block;
    };
    if let Some((before, after)) = split_block(existing) {
        return format!("{before}{block}{after}");
    }
    // One newline before the block (so it starts on its own line after a
    // blank one, or after the last line's missing newline): exactly what
    // `strip_agents_md` takes away again.
    let sep = if existing.is_empty() { "" } else { "\n" };
    format!("{existing}{sep}{block}")
}

/// `AGENTS.md` without our block; None when the block is not there. The
/// newline added before an appended block goes with it.
pub fn strip_agents_md(existing: &str) -> Option<String> {
    let (before, after) = split_block(existing)?;
    let before = match before.strip_suffix('\n') {
        Some(b) if after.is_empty() => b,
        _ => before,
    };
    Some(format!("{before}{after}"))
}

/// The text before our block and after it (its END line and newline).
fn split_block(text: &str) -> Option<(&str, &str)> {
    let start = text.find(BEGIN)?;
    let end = start + text[start..].find(END)? + END.len();
    let end = if text[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    Some((&text[..start], &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_is_short_and_covers_the_protocol() {
        let words = GUIDE.split_whitespace().count();
        assert!(words <= 1500, "{words} words");
        for step in [
            "Claim", "Reserve", "Commit", "Report", "Ask", "Wait", "Hand off", "Done",
        ] {
            assert!(GUIDE.contains(&format!(". {step}")), "{step}");
        }
    }

    #[test]
    fn the_skill_frontmatter_is_valid() {
        let s = skill();
        let front = s.strip_prefix("---\n").unwrap();
        let (front, _) = front.split_once("\n---\n").unwrap();
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(front).unwrap();
        let name = v["name"].as_str().unwrap();
        assert!(name.len() <= 64);
        assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        assert!(v["description"].as_str().unwrap().len() <= 1024);
    }

    #[test]
    fn agents_md_block_round_trips() {
        for original in ["", "# Mine\n", "# Mine\n\n", "no newline", "a\n\nb\n"] {
            let once = merge_agents_md(Some(original));
            assert_eq!(merge_agents_md(Some(&once)), once, "idempotent");
            assert_eq!(strip_agents_md(&once).unwrap(), original, "{original:?}");
        }
        let fresh = merge_agents_md(None);
        assert_eq!(strip_agents_md(&fresh).unwrap(), "");
        // The block in the middle of a file is refreshed in place.
        let mid = format!("top\n{BEGIN}\nold\n{END}\nbottom\n");
        let merged = merge_agents_md(Some(&mid));
        assert!(merged.starts_with("top\n") && merged.ends_with("bottom\n"));
        assert!(!merged.contains("old\n"));
        assert_eq!(strip_agents_md(&merged).unwrap(), "top\nbottom\n");
    }
}
