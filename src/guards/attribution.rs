//! attribution: no AI attribution in commit messages — a `Co-authored-by:`
//! (or `Assisted-by:` / `Generated-by:`) trailer naming an AI assistant by
//! name or by its vendor's address, or a "Generated with …" footer naming
//! one (or marked with 🤖). `swarm.attribution`: `block` (default) refuses
//! the commit, `strip` removes those lines and lets it through, `allow`
//! turns the guard off. Ordinary human co-authors and footers such as
//! "Generated with protoc" pass.

use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::findings::{unreadable, Findings, Violation, ATTRIBUTION};
use crate::error::Result;
use crate::session::Ctx;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Block,
    Strip,
    Allow,
}

pub fn mode(ctx: &Ctx) -> Result<Mode> {
    match ctx.store.config("swarm.attribution") {
        None => Ok(Mode::Block),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "block" | "" => Ok(Mode::Block),
            "strip" => Ok(Mode::Strip),
            "allow" => Ok(Mode::Allow),
            other => Err(unreadable(
                ATTRIBUTION,
                "swarm.attribution",
                format!("'{other}' is not one of block, strip, allow"),
            )),
        },
    }
}

/// Names of AI assistants, as a regex alternation (matched case-insensitively).
const AI_NAMES: &str = r"claude(?:[ -]code)?|anthropic|chatgpt|openai|gpt-?[0-9][0-9a-z.-]*|(?:github[ -])?copilot|codex|gemini|cursor(?:[ -]?agent)?|devin(?:[ -]ai)?|devin-ai-integration|aider|codeium|windsurf|tabnine|amazon[ -]q|codewhisperer|grok|jules";

fn trailer_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)^\s*(co-authored-by|assisted-by|generated-by|ai-assisted-by|helped-by)\s*:\s*(.*?)\s*$")
            .expect("valid regex")
    })
}

fn ai_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // The whole co-author name is an assistant's name, optionally with a
    // model or version after it ("Claude Opus 4", "GPT-4o", "Codex CLI").
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"(?i)^(?:{AI_NAMES})(?:\s+(?:opus|sonnet|haiku|code|cli|agent|ai|assistant|bot|\[bot\]|[0-9][0-9a-z.-]*))*(?:\[bot\])?$"
        ))
        .expect("valid regex")
    })
}

fn footer_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r"(?i)^\W*(?:generated|created|written|authored|co-authored|made|produced|drafted)\s+(?:with|by|using|via|in)\s+\W*(?:an?\s+)?(?:{AI_NAMES}|ai|llm)\b"
        ))
        .expect("valid regex")
    })
}

const AI_DOMAINS: &[&str] = &[
    "anthropic.com",
    "openai.com",
    "cursor.com",
    "cursor.sh",
    "aider.chat",
    "cognition.ai",
    "cognition-labs.com",
    "codeium.com",
    "windsurf.com",
    "tabnine.com",
    "x.ai",
];

/// Bot accounts on GitHub's noreply domain (`12345+Copilot@users.noreply.github.com`).
const AI_GITHUB_USERS: &[&str] = &[
    "copilot",
    "claude",
    "devin-ai-integration[bot]",
    "chatgpt-codex-connector[bot]",
    "cursor[bot]",
    "gemini-code-assist[bot]",
];

fn is_ai_email(email: &str) -> bool {
    let email = email.trim().to_ascii_lowercase();
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    if AI_DOMAINS
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
    {
        return true;
    }
    if domain == "users.noreply.github.com" {
        let user = local.split_once('+').map_or(local, |(_, u)| u);
        return AI_GITHUB_USERS.contains(&user);
    }
    false
}

/// A zero-width or format character that renders as nothing.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}' | '\u{ad}'
    )
}

/// Why `line` is AI attribution, or None.
pub fn classify(line: &str) -> Option<&'static str> {
    // Invisible characters (zero-width, soft hyphen, BOM) would split a
    // name the patterns match ("Cl\u{200b}aude"): matching ignores them.
    let normal: String;
    let line = if line.chars().any(invisible) {
        normal = line.chars().filter(|c| !invisible(*c)).collect();
        normal.as_str()
    } else {
        line
    };
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(c) = trailer_re().captures(line) {
        let value = c.get(2).map_or("", |m| m.as_str());
        let (name, email) = match (value.find('<'), value.rfind('>')) {
            (Some(a), Some(b)) if a < b => (value[..a].trim(), &value[a + 1..b]),
            _ => (value.trim(), ""),
        };
        if ai_name_re().is_match(name) || is_ai_email(email) {
            return Some("a trailer crediting an AI assistant");
        }
        return None;
    }
    if footer_re().is_match(line) {
        return Some("a \"generated with\" footer naming an AI assistant");
    }
    let lower = line.to_lowercase();
    if line.contains('🤖')
        && ["generated", "created", "written", "authored", "co-authored"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return Some("a 🤖 \"generated\" footer");
    }
    None
}

/// The attribution lines of a message: (1-based line number, line, why).
pub fn find(message: &str) -> Vec<(usize, String, &'static str)> {
    message
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with('#'))
        .filter_map(|(i, l)| classify(l).map(|why| (i + 1, l.trim_end().to_string(), why)))
        .collect()
}

/// The message without its attribution lines, with the blank lines they
/// leave behind folded away.
pub fn strip(message: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut removed_since_kept = false;
    for line in message.split_inclusive('\n') {
        let is_comment = line.trim_start().starts_with('#');
        if !is_comment && classify(line).is_some() {
            removed_since_kept = true;
            continue;
        }
        let blank = line.trim().is_empty();
        if blank && removed_since_kept && out.last().is_some_and(|l| l.trim().is_empty()) {
            continue;
        }
        if !blank {
            removed_since_kept = false;
        }
        out.push(line);
    }
    // Trailing blank lines (before any comment block) are noise.
    let first_comment = out
        .iter()
        .position(|l| l.trim_start().starts_with('#'))
        .unwrap_or(out.len());
    let mut body: Vec<&str> = out[..first_comment].to_vec();
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    let mut text: String = body.concat();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for l in &out[first_comment..] {
        text.push_str(l);
    }
    text
}

/// commit-msg: check (and under `strip`, rewrite) the message file.
pub fn check_message_file(ctx: &Ctx, file: &Path, f: &mut Findings) -> Result<()> {
    let mode = mode(ctx)?;
    if mode == Mode::Allow {
        f.notes
            .push("attribution: allowed by swarm.attribution=allow".into());
        return Ok(());
    }
    let bytes = std::fs::read(file).map_err(|e| {
        unreadable(
            ATTRIBUTION,
            format!("the commit message {}", file.display()),
            e,
        )
    })?;
    let message = String::from_utf8_lossy(&bytes).into_owned();
    let found = find(&message);
    if found.is_empty() {
        return Ok(());
    }
    match mode {
        Mode::Strip => {
            let stripped = strip(&message);
            std::fs::write(file, stripped).map_err(|e| {
                unreadable(
                    ATTRIBUTION,
                    format!("the commit message {} (writing)", file.display()),
                    e,
                )
            })?;
            for (n, line, _) in found {
                f.notes.push(format!(
                    "attribution: removed line {n} from the commit message: {line}"
                ));
            }
        }
        _ => {
            for (n, line, why) in found {
                f.violations.push(Violation {
                    guard: ATTRIBUTION,
                    subject: format!("commit message line {n}: {line}"),
                    commit: None,
                    problem: format!("{why} (swarm.attribution=block)"),
                    fix: "commit again without that line; or `git config swarm.attribution strip` to have such lines removed automatically".into(),
                    proposed: None,
                });
            }
        }
    }
    Ok(())
}

/// check --range: every commit message, under block and strip alike (a
/// commit already made cannot be stripped by a hook any more).
pub fn check_commit_message(
    ctx: &Ctx,
    mode: Mode,
    id: gix::ObjectId,
    f: &mut Findings,
) -> Result<()> {
    if mode == Mode::Allow {
        return Ok(());
    }
    let commit = ctx
        .store
        .repo
        .find_commit(id)
        .map_err(|e| unreadable(ATTRIBUTION, format!("commit {id}"), e))?;
    let message = String::from_utf8_lossy(commit.message_raw_sloppy()).into_owned();
    let short = &id.to_string()[..12];
    for (n, line, why) in find(&message) {
        f.violations.push(Violation {
            guard: ATTRIBUTION,
            subject: format!("message line {n}: {line}"),
            commit: Some(id.to_string()),
            problem: format!("{why} in commit {short}"),
            fix: format!(
                "reword it without that line: `git commit --amend` if it is the last commit, else `git rebase -i {short}^` and mark it reword"
            ),
            proposed: None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ai_trailers_and_footers_are_found() {
        for line in [
            "Co-authored-by: Claude <noreply@anthropic.com>",
            "Co-Authored-By: Claude Opus 4 <noreply@anthropic.com>",
            "co-authored-by: ChatGPT <bot@example.com>",
            "Co-authored-by: Copilot <175728472+Copilot@users.noreply.github.com>",
            "Co-authored-by: Somebody <cursoragent@cursor.com>",
            "Co-authored-by: aider (gpt-4o) <noreply@aider.chat>",
            "🤖 Generated with [Claude Code](https://claude.com/claude-code)",
            "Generated with Claude Code",
            "Generated by ChatGPT",
            "🤖 Created with some tool",
        ] {
            assert!(classify(line).is_some(), "{line}");
        }
    }

    #[test]
    fn invisible_characters_do_not_hide_attribution() {
        for line in [
            "Co-authored-by: Cl\u{200b}aude <a@b.c>",
            "Co-authored-by: C\u{ad}laude\u{feff} <a@b.c>",
            "Co-\u{2060}authored-by: Claude <a@b.c>",
        ] {
            assert!(classify(line).is_some(), "{line:?}");
        }
        assert!(classify("Co-authored-by: Al\u{200b}ice <a@b.c>").is_none());
    }

    #[test]
    fn human_lines_pass() {
        for line in [
            "Co-authored-by: Jane Doe <jane@example.com>",
            "Co-authored-by: Claude Dupont <claude.dupont@example.fr>",
            "Co-authored-by: Devin Smith <devin@example.com>",
            "Generated with protoc 3.21",
            "Bindings generated by bindgen",
            "Fix the Claude Code integration tests",
        ] {
            assert!(classify(line).is_none(), "{line}");
        }
    }

    #[test]
    fn strip_removes_lines_and_the_blank_they_leave() {
        let msg = "Add login\n\nBody text.\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\n\nCo-authored-by: Claude <noreply@anthropic.com>\n";
        assert_eq!(strip(msg), "Add login\n\nBody text.\n");
        let mixed = "Fix\n\nCo-authored-by: Jane <jane@example.com>\nCo-authored-by: Claude <noreply@anthropic.com>\n";
        assert_eq!(
            strip(mixed),
            "Fix\n\nCo-authored-by: Jane <jane@example.com>\n"
        );
    }
}
