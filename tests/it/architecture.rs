//! The layers of `src/` (docs/DESIGN "Layout"), enforced: every file may
//! import only from its own layer or below, model modules and workflows do
//! not import each other, and guards use store, model, the session and L0.
//!
//! An import is a `use crate::…` / `use super::…` / `use git_swarm::…`
//! statement (groups expanded) or an inline path `crate::x::y` anywhere in
//! the code. Comments and string literals are skipped; `#[cfg(test)]`
//! modules are checked like the rest, except that `super::` inside an
//! inline module (which names the file's own module) is not followed.
//!
//! A swarm ref name is written as a string literal only in `src/store`
//! and `src/model` (each kind's namespace); elsewhere code uses the kind's
//! `PREFIX`, ref helper or `Record::refname`.
//!
//! [`ALLOWLIST`] is empty: the record-model restructure removed every
//! violation. A future move in several steps may list violations there
//! while in flight; they are counted, not failed. `GIT_SWARM_ARCH_DUMP=1 cargo test --test it architecture::` prints the
//! current violations in the allowlist's format.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

/// Layer of each top-level module, times two (ctx is L2.5).
fn layer_of(module: &str) -> Option<u8> {
    Some(match module {
        "error" | "clock" | "names" | "text" | "fsutil" | "failpoint" | "secret" | "output"
        | "git" => 0,
        "store" | "config" | "worktree" => 2,
        "model" | "github" => 4,
        "ctx" => 5,
        "workflow" | "guard" => 6,
        "cli" | "complete" | "lib" | "main" => 8,
        _ => return None,
    })
}

fn layer_name(layer: u8) -> String {
    if layer.is_multiple_of(2) {
        format!("L{}", layer / 2)
    } else {
        format!("L{}.5", layer / 2)
    }
}

/// What guards may import besides themselves.
const GUARD_MAY_USE: &[&str] = &["store", "model", "ctx"];

/// One import that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    import: String,
    /// The imported module as the allowlist names it: `lane`, `model::plan`.
    target: String,
    rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` imports {}: {}",
            self.file, self.line, self.import, self.target, self.rule
        )
    }
}

/// A source file's module: `src/model/lane.rs` -> ["model", "lane"].
fn module_path(file: &str) -> Vec<String> {
    let rel = file.strip_prefix("src/").unwrap_or(file);
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        return Vec::new();
    }
    parts
}

/// The top-level module a file belongs to, for its layer (`lib`, `main` for the roots).
fn top_of(file: &str) -> String {
    let rel = file.strip_prefix("src/").unwrap_or(file);
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// What a span of source text is, for [`spans`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    Comment,
    /// A string literal, plain or raw, byte or not (quotes included).
    Str,
    Char,
}

/// The text with comments, string and char literals blanked (lines kept).
fn code_only(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    for (from, to, _) in spans(text) {
        for c in &mut out[from..to.min(text.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only whole literals become spaces")
}

/// The comments, string and char literals of the text: (start, end, what).
fn spans(text: &str) -> Vec<(usize, usize, Span)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
            out.push((i, end, Span::Comment));
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            out.push((i, j, Span::Comment));
            i = j;
        } else if !prev_ident && (b[i] == b'r' || b[i..].starts_with(b"br")) && {
            let k = i + if b[i] == b'b' { 2 } else { 1 };
            let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
            b.get(k + hashes) == Some(&b'"')
        } {
            let k = i + if b[i] == b'b' { 2 } else { 1 };
            let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = k + hashes + 1;
            let end = text[body..]
                .find(&close)
                .map_or(b.len(), |e| body + e + close.len());
            out.push((i, end, Span::Str));
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push((i, j + 1, Span::Str));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('a', '\n', '\u{..}', 'é') or a lifetime ('static).
            let rest = &text[i + 1..];
            let len = if rest.starts_with('\\') {
                rest.find('\'').map(|e| e + 1)
            } else {
                rest.chars()
                    .next()
                    .filter(|_| rest.chars().nth(1) == Some('\''))
                    .map(|c| c.len_utf8() + 1)
            };
            match len {
                Some(len) => {
                    out.push((i, i + 1 + len, Span::Char));
                    i += 1 + len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Spans of inline `mod x { … }` bodies, where `super::` is the file's own module.
fn inline_modules(code: &str) -> Vec<(usize, usize)> {
    let re = regex::Regex::new(r"\bmod\s+\w+\s*\{").unwrap();
    re.find_iter(code)
        .map(|m| {
            let open = m.end() - 1;
            let mut depth = 0;
            let mut end = code.len();
            for (k, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            (open, end)
        })
        .collect()
}

/// `a::{b, c::{d}}, e` -> ["a::b", "a::c::d", "e"] (enough to know modules).
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (k, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    for part in parts {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        match part.find('{') {
            Some(open) if part.ends_with('}') => {
                let prefix = part[..open].trim_end_matches("::").trim();
                for inner in expand(&part[open + 1..part.len() - 1]) {
                    if prefix.is_empty() {
                        out.push(inner);
                    } else {
                        out.push(format!("{prefix}::{inner}"));
                    }
                }
            }
            _ => out.push(part.split(" as ").next().unwrap_or(part).trim().to_string()),
        }
    }
    out
}

/// Every import of a file: (line, the text as written, crate-absolute segments).
fn imports(file: &str, text: &str) -> Vec<(usize, String, Vec<String>)> {
    let code = code_only(text);
    let here = module_path(file);
    let inline = inline_modules(&code);
    let line_at = |pos: usize| code[..pos].matches('\n').count() + 1;
    let root = |head: &str, pos: usize| -> Option<Vec<String>> {
        match head {
            "crate" | "git_swarm" | "$crate" => Some(Vec::new()),
            "super" if inline.iter().any(|&(s, e)| s < pos && pos < e) => None,
            "super" => Some(here[..here.len().saturating_sub(1)].to_vec()),
            _ => None,
        }
    };
    let mut out = Vec::new();
    let mut in_use = Vec::new();
    let use_re =
        regex::Regex::new(r"(?m)\buse\s+(\$crate|crate|super|git_swarm)::((?:[^;])*);").unwrap();
    for m in use_re.captures_iter(&code) {
        let whole = m.get(0).unwrap();
        in_use.push((whole.start(), whole.end()));
        let Some(base) = root(&m[1], whole.start()) else {
            continue;
        };
        let shown = whole
            .as_str()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for path in expand(&m[2]) {
            let mut segs = base.clone();
            segs.extend(path.split("::").map(|s| s.trim().to_string()));
            out.push((line_at(whole.start()), shown.clone(), segs));
        }
    }
    let path_re = regex::Regex::new(r"(\$crate|\bcrate|\bgit_swarm|\bsuper)((?:::\w+)+)").unwrap();
    for m in path_re.captures_iter(&code) {
        let whole = m.get(0).unwrap();
        if in_use
            .iter()
            .any(|&(s, e)| s <= whole.start() && whole.start() < e)
        {
            continue;
        }
        // `super` only as a path head, not inside `super::super` chains' tails.
        let Some(mut segs) = root(&m[1], whole.start()) else {
            continue;
        };
        segs.extend(
            m[2].split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        out.push((line_at(whole.start()), whole.as_str().to_string(), segs));
    }
    out
}

/// Check every file against the layer rules. `files`: (path from the
/// repository root, like `src/store/mod.rs`, and its text).
fn check(files: &[(String, String)]) -> Vec<Violation> {
    let paths: BTreeSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let is_submodule = |top: &str, name: &str| {
        paths.contains(format!("src/{top}/{name}.rs").as_str())
            || paths
                .iter()
                .any(|p| p.starts_with(&format!("src/{top}/{name}/")))
    };
    let mut out = Vec::new();
    for (file, text) in files {
        let top = top_of(file);
        let here = module_path(file);
        let Some(layer) = layer_of(&top) else {
            out.push(Violation {
                file: file.clone(),
                line: 1,
                import: String::new(),
                target: "<no layer>".into(),
                rule: format!("module `{top}` is in no layer of the table (move it into one)"),
            });
            continue;
        };
        // model/<a> or workflow/<a>, when the file is one (not mod.rs).
        let own_unit = match (here.first().map(String::as_str), here.get(1)) {
            (Some(t @ ("model" | "workflow")), Some(unit)) => Some((t.to_string(), unit.clone())),
            _ => None,
        };
        let mut seen = BTreeSet::new();
        for (line, import, segs) in imports(file, text) {
            let Some(target_top) = segs.first().cloned() else {
                continue;
            };
            let target = match segs.get(1) {
                Some(unit)
                    if (target_top == "model" || target_top == "workflow")
                        && is_submodule(&target_top, unit) =>
                {
                    format!("{target_top}::{unit}")
                }
                _ => target_top.clone(),
            };
            if target_top == top && own_unit.is_none() {
                continue; // within one module (store/* -> store, guard/* -> guard)
            }
            let rule = match layer_of(&target_top) {
                None if !paths.contains(format!("src/{target_top}.rs").as_str())
                    && !paths
                        .iter()
                        .any(|p| p.starts_with(&format!("src/{target_top}/"))) =>
                {
                    continue; // an item of the crate root or a macro, not a module
                }
                None => Some(format!(
                    "`{target_top}` is in no layer of the table, so {} cannot import it",
                    layer_name(layer)
                )),
                Some(t) if t > layer => Some(format!(
                    "upward import: {top} is {}, {target_top} is {}",
                    layer_name(layer),
                    layer_name(t)
                )),
                Some(_) => match &own_unit {
                    Some((kind, unit)) if target_top == *kind => {
                        let other = segs.get(1).filter(|u| is_submodule(kind, u));
                        match other {
                            Some(other) if other != unit => Some(format!(
                                "sideways import between two {kind} modules ({kind}::{unit} -> {kind}::{other})"
                            )),
                            _ => None,
                        }
                    }
                    _ if top == "guard"
                        && target_top != "guard"
                        && !GUARD_MAY_USE.contains(&target_top.as_str())
                        && layer_of(&target_top) != Some(0) =>
                    {
                        Some(format!(
                            "guards use only store, model, ctx and L0, not {target_top}"
                        ))
                    }
                    _ => None,
                },
            };
            if let Some(rule) = rule {
                if seen.insert((line, target.clone())) {
                    out.push(Violation {
                        file: file.clone(),
                        line,
                        import,
                        target,
                        rule,
                    });
                }
            }
        }
    }
    out
}

fn read_src() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.join("src")];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn imports_go_only_down_the_layers() {
    let violations = check(&read_src());
    if std::env::var_os("GIT_SWARM_ARCH_DUMP").is_some() {
        let keys: BTreeSet<(&str, &str)> = violations
            .iter()
            .map(|v| (v.file.as_str(), v.target.as_str()))
            .collect();
        for (file, target) in keys {
            println!("    ({file:?}, {target:?}),");
        }
    }
    let allowed: BTreeSet<(&str, &str)> = ALLOWLIST.iter().copied().collect();
    let (known, new): (Vec<&Violation>, Vec<&Violation>) = violations
        .iter()
        .partition(|v| allowed.contains(&(v.file.as_str(), v.target.as_str())));
    let used: BTreeSet<(&str, &str)> = known
        .iter()
        .map(|v| (v.file.as_str(), v.target.as_str()))
        .collect();
    eprintln!(
        "architecture: {} import(s) break the layers but are allowlisted ({} of {} ALLOWLIST entries still needed); empty ALLOWLIST when the restructure is done",
        known.len(),
        used.len(),
        ALLOWLIST.len()
    );
    let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for v in &new {
        by_file
            .entry(v.file.as_str())
            .or_default()
            .push(v.to_string());
    }
    assert!(
        new.is_empty(),
        "{} import(s) break the layers (see tests/it/architecture.rs):\n{}",
        new.len(),
        by_file
            .into_values()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn run(files: &[(&str, &str)]) -> Vec<Violation> {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    check(&files)
}

#[test]
fn an_injected_upward_import_fails() {
    let v = run(&[
        (
            "src/store/mod.rs",
            "use crate::error::Error;\nuse crate::workflow::lane::start;\n",
        ),
        ("src/workflow/lane.rs", "pub fn start() {}\n"),
        ("src/error.rs", ""),
    ]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].file, "src/store/mod.rs");
    assert_eq!(v[0].line, 2);
    assert_eq!(v[0].target, "workflow::lane");
    assert!(
        v[0].rule
            .contains("upward import: store is L1, workflow is L3"),
        "{}",
        v[0]
    );
    assert_eq!(
        v[0].to_string(),
        "src/store/mod.rs:2: `use crate::workflow::lane::start;` imports workflow::lane: upward import: store is L1, workflow is L3"
    );
}

#[test]
fn inline_paths_and_groups_count_comments_and_strings_do_not() {
    let v = run(&[
        (
            "src/model/lane.rs",
            "// crate::ctx::Ctx in a comment\n\
             /* crate::cli::x */\n\
             const S: &str = \"crate::workflow::x\";\n\
             const R: &str = r#\"crate::workflow::x\"#;\n\
             fn f<'a>(c: &'a char) { let _ = '\"'; }\n\
             use crate::{error::Error, store::{Store, kind::Records}};\n\
             fn g() { crate::ctx::Ctx::open(); }\n",
        ),
        ("src/ctx/mod.rs", ""),
        ("src/store/mod.rs", ""),
        ("src/error.rs", ""),
    ]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].line, v[0].target.as_str()), (7, "ctx"));
    assert_eq!(v[0].import, "crate::ctx::Ctx::open");
}

#[test]
fn model_modules_and_workflows_do_not_import_each_other() {
    let v = run(&[
        ("src/model/mod.rs", "pub mod lane;\npub mod plan;\nuse crate::model::lane::X;\n"),
        ("src/model/lane.rs", "use super::plan::PlanDoc;\nuse crate::model::Record;\n"),
        ("src/model/plan.rs", "use crate::model::lane::LaneRecord;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ("src/workflow/accept/mod.rs", "mod publish;\nuse self::publish::p;\nuse crate::workflow::accept::publish::q;\n"),
        ("src/workflow/accept/publish.rs", "use super::p;\nuse crate::workflow::sync::run;\nuse crate::model::plan::PlanDoc;\n"),
        ("src/workflow/sync.rs", ""),
        ("src/workflow/mod.rs", "pub mod accept;\npub mod sync;\nuse crate::workflow::sync::run;\n"),
    ]);
    let got: Vec<(String, usize, String)> = v
        .iter()
        .map(|v| (v.file.clone(), v.line, v.target.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "src/model/lane.rs".to_string(),
                1,
                "model::plan".to_string()
            ),
            (
                "src/model/plan.rs".to_string(),
                1,
                "model::lane".to_string()
            ),
            (
                "src/workflow/accept/publish.rs".to_string(),
                2,
                "workflow::sync".to_string()
            ),
        ],
        "{v:#?}"
    );
    assert!(v[0]
        .rule
        .contains("sideways import between two model modules"));
    assert!(v[2]
        .rule
        .contains("sideways import between two workflow modules"));
}

#[test]
fn guards_use_only_store_model_ctx_and_l0() {
    let v = run(&[
        ("src/guard/cache.rs", "use crate::store::Store;\nuse crate::model::Record;\nuse crate::ctx::Ctx;\nuse crate::git::Git;\nuse crate::guard::staged;\nuse crate::github::verdict;\nuse crate::config::Config;\n"),
        ("src/guard/staged.rs", ""),
        ("src/store/mod.rs", ""),
        ("src/model/mod.rs", ""),
        ("src/ctx/mod.rs", ""),
        ("src/git.rs", ""),
        ("src/github/mod.rs", ""),
        ("src/config.rs", ""),
    ]);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.target.as_str())).collect();
    assert_eq!(got, [(6, "github"), (7, "config")], "{v:#?}");
}

#[test]
fn unlayered_modules_and_the_binary_are_handled() {
    let v = run(&[
        ("src/lane.rs", "use crate::store::Store;\n"),
        ("src/store/mod.rs", "use crate::lane::LaneRecord;\n"),
        (
            "src/cli/mod.rs",
            "use git_swarm::workflow::x;\nuse super::Global;\n",
        ),
        ("src/main.rs", "mod cli;\n"),
        ("src/workflow/mod.rs", ""),
        (
            "src/error.rs",
            "macro_rules! m { () => { $crate::clock::now() } }\n",
        ),
        ("src/clock.rs", ""),
    ]);
    let got: Vec<(&str, &str)> = v
        .iter()
        .map(|v| (v.file.as_str(), v.target.as_str()))
        .collect();
    assert_eq!(
        got,
        [("src/lane.rs", "<no layer>"), ("src/store/mod.rs", "lane")],
        "{v:#?}"
    );
}

/// Where a ref-name literal may be written: each kind's namespace lives
/// with the kind (`src/model`) or the store (`src/store`).
const REF_LITERAL_HOMES: &[&str] = &["src/store/", "src/model/"];

/// The string literals that begin a swarm ref name (`"refs/swarm/…`,
/// `"refs/swarm-remotes/…`) outside [`REF_LITERAL_HOMES`], as
/// `file:line: literal`. Comments and doc comments may name refs, and so
/// may a message that quotes one mid-sentence: only a literal that starts
/// with the ref is a hand-written ref name.
fn ref_literals(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        if REF_LITERAL_HOMES.iter().any(|home| file.starts_with(home)) {
            continue;
        }
        for (from, to, what) in spans(text) {
            if what != Span::Str {
                continue;
            }
            let literal = &text[from..to.min(text.len())];
            let body = literal.trim_start_matches(['b', 'r', '#']);
            let Some(body) = body.strip_prefix('"') else {
                continue;
            };
            if body.starts_with("refs/swarm/") || body.starts_with("refs/swarm-remotes/") {
                let line = text[..from].matches('\n').count() + 1;
                out.push(format!("{file}:{line}: {literal}"));
            }
        }
    }
    out
}

#[test]
fn ref_names_are_written_only_in_store_and_model() {
    let found = ref_literals(&read_src());
    assert!(
        found.is_empty(),
        "{} ref-name literal(s) outside src/store and src/model; use the kind's namespace (its `PREFIX`, ref helper or `Record::refname`) instead:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn an_injected_ref_literal_fails_and_comments_do_not() {
    let files: Vec<(String, String)> = [
        (
            "src/workflow/x.rs",
            "//! Reads `refs/swarm/lanes/<feature>`.\n\
             /// \"refs/swarm/plans/\" in a doc comment\n\
             /* \"refs/swarm/tasks/\" */\n\
             fn f() -> String { format!(\"refs/swarm/lanes/{}\", 1) }\n\
             const M: &str = r#\"refs/swarm-remotes/origin/\"#;\n\
             const H: &str = \"see `git log refs/swarm/lanes/x`\";\n",
        ),
        (
            "src/model/lane.rs",
            "pub const PREFIX: &str = \"refs/swarm/lanes/\";\n",
        ),
        (
            "src/store/mirror.rs",
            "fn m() -> String { format!(\"refs/swarm-remotes/{}/\", 1) }\n",
        ),
    ]
    .iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    assert_eq!(
        ref_literals(&files),
        [
            "src/workflow/x.rs:4: \"refs/swarm/lanes/{}\"",
            "src/workflow/x.rs:5: r#\"refs/swarm-remotes/origin/\"#",
        ]
    );
}

/// Violations tolerated while a restructure is in flight (file, imported
/// module). Empty: every import goes down the layers.
const ALLOWLIST: &[(&str, &str)] = &[];
