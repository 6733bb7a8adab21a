//! The layers of `src/`, enforced. The table is the one in
//! docs/development.md ("Code layout"), read by this test: every file may
//! import only from its own layer or below, record kinds do not import each
//! other, guards use store, records, the session and L0, and every
//! top-level module is in exactly one row (a row naming a module that does
//! not exist fails too). A row may name a folder below a top-level module
//! (`integrations/github/`): its files take that row's layer, the rest of
//! the module the module's. Operations (`ops/`) may call each other; the
//! cycle test below is what keeps them apart.
//!
//! An import is a `use crate::…` / `use super::…` / `use git_swarm::…`
//! statement (groups expanded) or an inline path `crate::x::y` anywhere in
//! the code. Comments and string literals are skipped; `#[cfg(test)]`
//! modules are checked like the rest, except that `super::` inside an
//! inline module (which names the file's own module) is not followed.
//!
//! No import cycle between files ([`cycles`]), inside a top-level module as
//! much as between two: an import is an edge to the file that defines what
//! it names (followed through a parent's `pub use` of its children), and a
//! module importing its own submodules (a parent using or re-exporting its
//! children) is not an edge, so a parent and its children are one unit.
//!
//! Rendering is the CLI's: `output` (what a command prints) is used only
//! in `src/cli/` and `src/main.rs`.
//!
//! A swarm ref name is written as a string literal only in `src/store`
//! and `src/records` (each kind's namespace); elsewhere code uses the kind's
//! `PREFIX`, ref helper or `Record::refname`.
//!
//! The session (`src/session/`) holds no kind reader: it does not use the
//! store's generic kinds (`store::records`); a kind's reads live with the kind
//! in `src/records/`.
//!
//! No process-global static but those listed in [`STATICS_ALLOWED`], each
//! with why it may be one: a command's policy and counters live in its
//! session (`store::CommandState`), passed down.
//!
//! No function over [`MAX_FUNCTION_LINES`] lines outside tests and the
//! demo's scenes.
//!
//! No new hint below `src/cli/` that names a `git swarm` command: those
//! left are counted per file in [`HINTS_TO_MOVE`], which may only go down.
//!
//! [`ALLOWLIST`] is empty. A move in several steps may list violations
//! there while in flight; they are counted, not failed. `GIT_SWARM_ARCH_DUMP=1 cargo test --test it architecture::` prints the
//! current violations in the allowlist's format.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

/// The layer table: each top-level module (`cli`, `main`, `git`, …) or
/// nested folder (`integrations/github`) and its layer times two (session
/// is L2.5), read from the "Code layout" table of
/// docs/development.md: rows `| L<n> | `module/`, `file.rs` | what |`.
fn layer_table(doc: &str) -> BTreeMap<String, u8> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Code layout"))
        .expect("docs/development.md has a \"## Code layout\" section with the layer table");
    let mut table = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with("| L")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let label = cells[1].trim_start_matches('L');
        let layer = match label.split_once('.') {
            Some((whole, "5")) => whole.parse::<u8>().unwrap() * 2 + 1,
            _ => label.parse::<u8>().unwrap() * 2,
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`');
            let module = module
                .strip_suffix('/')
                .or_else(|| module.strip_suffix(".rs"))
                .unwrap_or_else(|| {
                    panic!("layer table: `{module}` is neither `dir/` nor `file.rs`")
                });
            let before = table.insert(module.to_string(), layer);
            assert!(before.is_none(), "layer table: `{module}` is in two rows");
        }
    }
    assert!(
        !table.is_empty(),
        "docs/development.md: the layer table has no rows"
    );
    table
}

fn docs_table() -> BTreeMap<String, u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    layer_table(&std::fs::read_to_string(root.join("docs/development.md")).unwrap())
}

fn layer_name(layer: u8) -> String {
    if layer.is_multiple_of(2) {
        format!("L{}", layer / 2)
    } else {
        format!("L{}.5", layer / 2)
    }
}

/// What guards may import besides themselves.
const GUARD_MAY_USE: &[&str] = &["store", "records", "session"];

/// One import that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Violation {
    file: String,
    line: usize,
    import: String,
    /// The imported module as the allowlist names it: `lane`, `records::plan`.
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

/// A source file's module: `src/records/lane.rs` -> ["records", "lane"].
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

/// The table row a module path belongs to: a nested row
/// (`integrations/github`) when the table has one for its first two
/// segments, else its top-level module.
fn unit_of(table: &BTreeMap<String, u8>, segs: &[String]) -> Option<String> {
    let first = segs.first()?;
    if let Some(second) = segs.get(1) {
        let nested = format!("{first}/{second}");
        if table.contains_key(&nested) {
            return Some(nested);
        }
    }
    Some(first.clone())
}

/// The table row of a file (`lib`, `main` for the roots).
fn unit_of_file(table: &BTreeMap<String, u8>, file: &str) -> String {
    unit_of(table, &module_path(file)).unwrap_or_else(|| top_of(file))
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
fn check(files: &[(String, String)], table: &BTreeMap<String, u8>) -> Vec<Violation> {
    // The crate root only declares the modules.
    let layer_of = |module: &str| match module {
        "lib" => Some(u8::MAX),
        _ => table.get(module).copied(),
    };
    let paths: BTreeSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let is_submodule = |top: &str, name: &str| {
        paths.contains(format!("src/{top}/{name}.rs").as_str())
            || paths
                .iter()
                .any(|p| p.starts_with(&format!("src/{top}/{name}/")))
    };
    let mut out = Vec::new();
    for (file, text) in files {
        let top = unit_of_file(table, file);
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
        // records/<a>, when the file is one (not mod.rs).
        let own_unit = match (here.first().map(String::as_str), here.get(1)) {
            (Some(t @ "records"), Some(unit)) => Some((t.to_string(), unit.clone())),
            _ => None,
        };
        let mut seen = BTreeSet::new();
        for (line, import, segs) in imports(file, text) {
            let Some(target_top) = unit_of(table, &segs) else {
                continue;
            };
            let target = match segs.get(1) {
                Some(unit) if target_top == "records" && is_submodule(&target_top, unit) => {
                    format!("{target_top}::{unit}")
                }
                _ => target_top.clone(),
            };
            if target_top == top && own_unit.is_none() {
                continue; // within one module (store/* -> store, guards/* -> guards)
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
                    _ if top == "guards"
                        && target_top != "guards"
                        && !GUARD_MAY_USE.contains(&target_top.as_str())
                        && layer_of(&target_top) != Some(0) =>
                    {
                        Some(format!(
                            "guards use only store, records, session and L0, not {target_top}"
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
    let violations = check(&read_src(), &docs_table());
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
    check(&files, &docs_table())
}

#[test]
fn an_injected_upward_import_fails() {
    let v = run(&[
        (
            "src/store/mod.rs",
            "use crate::error::Error;\nuse crate::ops::lane::start;\n",
        ),
        ("src/ops/lane.rs", "pub fn start() {}\n"),
        ("src/error.rs", ""),
    ]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].file, "src/store/mod.rs");
    assert_eq!(v[0].line, 2);
    assert_eq!(v[0].target, "ops");
    assert!(
        v[0].rule.contains("upward import: store is L1, ops is L3"),
        "{}",
        v[0]
    );
    assert_eq!(
        v[0].to_string(),
        "src/store/mod.rs:2: `use crate::ops::lane::start;` imports ops: upward import: store is L1, ops is L3"
    );
}

#[test]
fn inline_paths_and_groups_count_comments_and_strings_do_not() {
    let v = run(&[
        (
            "src/records/lane.rs",
            "// crate::session::Ctx in a comment\n\
             /* crate::cli::x */\n\
             const S: &str = \"crate::ops::x\";\n\
             const R: &str = r#\"crate::ops::x\"#;\n\
             fn f<'a>(c: &'a char) { let _ = '\"'; }\n\
             use crate::{error::Error, store::{Store, records::Records}};\n\
             fn g() { crate::session::Ctx::open(); }\n",
        ),
        ("src/session/mod.rs", ""),
        ("src/store/mod.rs", ""),
        ("src/error.rs", ""),
    ]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].line, v[0].target.as_str()), (7, "session"));
    assert_eq!(v[0].import, "crate::session::Ctx::open");
}

#[test]
fn record_kinds_do_not_import_each_other_and_ops_may() {
    let v = run(&[
        ("src/records/mod.rs", "pub mod lane;\npub mod plan;\nuse crate::records::lane::X;\n"),
        ("src/records/lane.rs", "use super::plan::PlanDoc;\nuse crate::records::Record;\n"),
        ("src/records/plan.rs", "use crate::records::lane::LaneRecord;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ("src/ops/accept/mod.rs", "mod publish;\nuse self::publish::p;\nuse crate::ops::accept::publish::q;\n"),
        ("src/ops/accept/publish.rs", "use super::p;\nuse crate::ops::sync::run;\nuse crate::records::plan::PlanDoc;\nuse crate::views::status::show;\n"),
        ("src/ops/sync.rs", ""),
        ("src/ops/mod.rs", "pub mod accept;\npub mod sync;\nuse crate::ops::sync::run;\n"),
        ("src/views/status.rs", "use crate::ops::sync::run;\n"),
    ]);
    let got: Vec<(String, usize, String)> = v
        .iter()
        .map(|v| (v.file.clone(), v.line, v.target.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "src/records/lane.rs".to_string(),
                1,
                "records::plan".to_string()
            ),
            (
                "src/records/plan.rs".to_string(),
                1,
                "records::lane".to_string()
            ),
        ],
        "{v:#?}"
    );
    assert!(v[0]
        .rule
        .contains("sideways import between two records modules"));
}

#[test]
fn guards_use_only_store_records_session_and_l0() {
    let v = run(&[
        ("src/guards/cache.rs", "use crate::store::Store;\nuse crate::records::Record;\nuse crate::session::Ctx;\nuse crate::git::Git;\nuse crate::guards::staged;\nuse crate::integrations::github::verdict;\nuse crate::config::Config;\nuse crate::ops::sync;\n"),
        ("src/guards/staged.rs", ""),
        ("src/store/mod.rs", ""),
        ("src/records/mod.rs", ""),
        ("src/session/mod.rs", ""),
        ("src/git.rs", ""),
        ("src/integrations/github/mod.rs", ""),
        ("src/ops/sync.rs", ""),
        ("src/config.rs", ""),
    ]);
    let got: Vec<(usize, &str)> = v.iter().map(|v| (v.line, v.target.as_str())).collect();
    assert_eq!(
        got,
        [
            (4, "git"),
            (6, "integrations/github"),
            (7, "config"),
            (8, "ops")
        ],
        "{v:#?}"
    );
}

#[test]
fn a_nested_row_has_its_own_layer() {
    let v = run(&[
        (
            "src/integrations/github/client.rs",
            "use crate::error::Error;\nuse crate::integrations::agent::x;\nuse crate::session::Ctx;\n",
        ),
        (
            "src/integrations/agent/mod.rs",
            "use crate::integrations::github::client;\nuse crate::session::Ctx;\n",
        ),
        ("src/session/mod.rs", ""),
        ("src/error.rs", ""),
    ]);
    let got: Vec<(&str, usize, &str)> = v
        .iter()
        .map(|v| (v.file.as_str(), v.line, v.target.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("src/integrations/github/client.rs", 2, "integrations"),
            ("src/integrations/github/client.rs", 3, "session"),
        ],
        "{v:#?}"
    );
    assert!(
        v[0].rule
            .contains("upward import: integrations/github is L2, integrations is L3"),
        "{}",
        v[0]
    );
}

#[test]
fn unlayered_modules_and_the_binary_are_handled() {
    let v = run(&[
        ("src/lane.rs", "use crate::store::Store;\n"),
        ("src/store/mod.rs", "use crate::lane::LaneRecord;\n"),
        (
            "src/cli/mod.rs",
            "use git_swarm::ops::x;\nuse super::Global;\n",
        ),
        ("src/main.rs", "mod cli;\n"),
        ("src/ops/mod.rs", ""),
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
/// with the kind (`src/records`) or the store (`src/store`).
const REF_LITERAL_HOMES: &[&str] = &["src/store/", "src/records/"];

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
fn ref_names_are_written_only_in_store_and_records() {
    let found = ref_literals(&read_src());
    assert!(
        found.is_empty(),
        "{} ref-name literal(s) outside src/store and src/records; use the kind's namespace (its `PREFIX`, ref helper or `Record::refname`) instead:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn an_injected_ref_literal_fails_and_comments_do_not() {
    let files: Vec<(String, String)> = [
        (
            "src/ops/x.rs",
            "//! Reads `refs/swarm/lanes/<feature>`.\n\
             /// \"refs/swarm/plans/\" in a doc comment\n\
             /* \"refs/swarm/tasks/\" */\n\
             fn f() -> String { format!(\"refs/swarm/lanes/{}\", 1) }\n\
             const M: &str = r#\"refs/swarm-remotes/origin/\"#;\n\
             const H: &str = \"see `git log refs/swarm/lanes/x`\";\n",
        ),
        (
            "src/records/lane.rs",
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
            "src/ops/x.rs:4: \"refs/swarm/lanes/{}\"",
            "src/ops/x.rs:5: r#\"refs/swarm-remotes/origin/\"#",
        ]
    );
}

/// Violations tolerated while a restructure is in flight (file, imported
/// module). Empty: every import goes down the layers.
const ALLOWLIST: &[(&str, &str)] = &[];

#[test]
fn the_layer_table_names_only_modules_that_exist() {
    let files = read_src();
    let missing: Vec<String> = docs_table()
        .into_keys()
        .filter(|m| {
            !files
                .iter()
                .any(|(f, _)| *f == format!("src/{m}.rs") || f.starts_with(&format!("src/{m}/")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/development.md's layer table names modules src/ does not have: {missing:?}"
    );
}

#[test]
fn the_layer_table_is_read_from_the_docs() {
    let doc = "# Dev\n\n## Code layout\n\n| layer | modules | holds |\n|---|---|---|\n\
               | L4 | `cli/`, `main.rs` | x |\n| L2.5 | `session/` | y |\n| L2 | `integrations/github/` | w |\n| L0 | `error.rs` | z |\n\n\
               ## Other\n\n| L9 | `nope/` | not the table |\n";
    let table = layer_table(doc);
    let got: Vec<(&str, u8)> = table.iter().map(|(m, l)| (m.as_str(), *l)).collect();
    assert_eq!(
        got,
        [
            ("cli", 8),
            ("error", 0),
            ("integrations/github", 4),
            ("main", 8),
            ("session", 5)
        ]
    );
    let real = docs_table();
    assert!(real["store"] < real["records"] && real["records"] < real["session"]);
    assert!(real["session"] < real["ops"] && real["ops"] < real["cli"]);
    assert!(real["integrations/github"] < real["session"]);
    assert!(real["ops"] == real["views"] && real["ops"] == real["integrations"]);
}

/// Rendering is the CLI's: `output` (and `cli::output`) used anywhere
/// else, as `file:line: import`.
fn output_outside_cli(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        if file.starts_with("src/cli/") || file == "src/main.rs" {
            continue;
        }
        for (line, import, segs) in imports(file, text) {
            let first: Vec<&str> = segs.iter().take(2).map(String::as_str).collect();
            if first.first() == Some(&"output") || first == ["cli", "output"] {
                out.push(format!("{file}:{line}: {import}"));
            }
        }
    }
    out
}

#[test]
fn output_is_used_only_in_cli() {
    let found = output_outside_cli(&read_src());
    assert!(
        found.is_empty(),
        "rendering is the CLI's: `output` used outside src/cli (return an outcome struct and render it in cli/):\n{}",
        found.join("\n")
    );
    let injected: Vec<(String, String)> = [
        (
            "src/store/yaml.rs",
            "fn f() -> crate::output::Output { todo!() }\n",
        ),
        ("src/records/lane/rules.rs", "use crate::output::count;\n"),
        (
            "src/cli/commands/lane.rs",
            "use crate::cli::output::{count, Output};\n",
        ),
        (
            "src/main.rs",
            "fn m() { crate::cli::output::text_only(); }\n",
        ),
    ]
    .iter()
    .map(|(p, t)| (p.to_string(), t.to_string()))
    .collect();
    assert_eq!(
        output_outside_cli(&injected),
        [
            "src/store/yaml.rs:1: crate::output::Output",
            "src/records/lane/rules.rs:1: use crate::output::count;",
        ]
    );
}

/// The session is the session only: a file in `src/session/` reading or
/// writing records through the store's generic kinds (`store::records`:
/// `Records`, `Publish`) holds a kind's reader, which lives with the kind
/// in `records/`. As `file:line: import`.
fn kind_reads_in_session(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        if !file.starts_with("src/session/") {
            continue;
        }
        let mut seen = BTreeSet::new();
        for (line, import, segs) in imports(file, text) {
            // A group (`records::{self, Records}`) is one line, said once.
            if segs.len() >= 2 && segs[0] == "store" && segs[1] == "records" && seen.insert(line) {
                out.push(format!("{file}:{line}: {import}"));
            }
        }
    }
    out
}

#[test]
fn the_session_holds_no_kind_reader() {
    let found = kind_reads_in_session(&read_src());
    assert!(
        found.is_empty(),
        "session/ is the session only (who, where, settings, which lane): read records in the kind's module (records/<kind>) over `Records`, and call that:\n{}",
        found.join("\n")
    );
    let injected = files_of(&[
        (
            "src/session/task.rs",
            "use crate::store::records::{self, Records};\n",
        ),
        (
            "src/session/lane.rs",
            "fn f(s: &Store) { crate::store::records::Records::<LaneRecord>::new(s); }\n",
        ),
        (
            "src/records/task.rs",
            "use crate::store::records::Records;\n",
        ),
        ("src/session/mod.rs", "use crate::store::Store;\n"),
    ]);
    assert_eq!(
        kind_reads_in_session(&injected),
        [
            "src/session/task.rs:1: use crate::store::records::{self, Records};",
            "src/session/lane.rs:1: crate::store::records::Records",
        ]
    );
}

/// Every module of the files: its path (`["store", "records"]`) -> its file.
fn module_files(files: &[(String, String)]) -> BTreeMap<Vec<String>, String> {
    files
        .iter()
        .filter(|(f, _)| f != "src/main.rs")
        .map(|(f, _)| (module_path(f), f.clone()))
        .collect()
}

/// The submodules a file declares (`mod x;`, `pub mod x;`).
fn declared_children(code: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\bmod\s+(\w+)\s*;").unwrap();
    re.captures_iter(code).map(|c| c[1].to_string()).collect()
}

/// (position, `pub`, crate-absolute path, the name it binds).
type UseItem = (usize, bool, Vec<String>, String);

/// The `use` items of a file, crate-absolute: (position, `pub`, path,
/// the name it binds). Besides `crate::`/`super::`, `self::` and a
/// declared submodule (`use kind::Records;` in `store/mod.rs`) as heads.
fn use_items(file: &str, code: &str) -> Vec<UseItem> {
    let here = module_path(file);
    let children = declared_children(code);
    let inline = inline_modules(code);
    let re = regex::Regex::new(r"\b(pub(?:\([^)]*\))?\s+)?use\s+((?:\$crate|\w+)(?:::[^;]*)?);")
        .unwrap();
    let mut out = Vec::new();
    for m in re.captures_iter(code) {
        let at = m.get(0).unwrap().start();
        if inline.iter().any(|&(s, e)| s < at && at < e) {
            continue; // a test module's `use super::*` names its own file
        }
        for (path, alias) in expand_aliased(&m[2]) {
            let mut segs: Vec<String> = path
                .split("::")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            let Some(head) = segs.first().cloned() else {
                continue;
            };
            let mut base = match head.as_str() {
                "crate" | "git_swarm" | "$crate" => Vec::new(),
                "super" => here[..here.len().saturating_sub(1)].to_vec(),
                "self" => here.clone(),
                h if children.contains(h) => {
                    let mut b = here.clone();
                    b.push(h.to_string());
                    b
                }
                _ => continue,
            };
            segs.remove(0);
            if segs.last().is_some_and(|s| s == "self") {
                segs.pop();
            }
            base.extend(segs);
            let Some(last) = base.last().cloned() else {
                continue;
            };
            out.push((at, m.get(1).is_some(), base, alias.unwrap_or(last)));
        }
    }
    out
}

/// As [`expand`], keeping each path's `as` name.
fn expand_aliased(tree: &str) -> Vec<(String, Option<String>)> {
    let tree = tree.trim();
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
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
    let mut out = Vec::new();
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        match part.find('{') {
            Some(open) if part.ends_with('}') => {
                let prefix = part[..open].trim_end_matches("::").trim();
                for (inner, alias) in expand_aliased(&part[open + 1..part.len() - 1]) {
                    let path = if prefix.is_empty() {
                        inner
                    } else {
                        format!("{prefix}::{inner}")
                    };
                    out.push((path, alias));
                }
            }
            _ => {
                let mut bits = part.split(" as ");
                let path = bits.next().unwrap_or(part).trim().to_string();
                out.push((path, bits.next().map(|a| a.trim().to_string())));
            }
        }
    }
    out
}

/// The file-level import graph: file -> the files it imports from. An
/// import names the file that defines the item (through a parent's
/// `pub use` of a child); a module importing its own submodules is no
/// edge, nor is a file importing itself or the crate root.
fn import_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mods = module_files(files);
    let codes: BTreeMap<&str, String> = files
        .iter()
        .map(|(f, t)| (f.as_str(), code_only(t)))
        .collect();
    let uses: BTreeMap<&str, Vec<UseItem>> =
        codes.iter().map(|(f, c)| (*f, use_items(f, c))).collect();
    // module -> name -> where a `pub use` points it.
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (f, items) in &uses {
        for (_, public, path, name) in items {
            if *public && name != "*" {
                reexports
                    .entry(module_path(f))
                    .or_default()
                    .insert(name.clone(), path.clone());
            }
        }
    }
    let resolve = |segs: &[String]| -> Option<String> {
        let mut segs = segs.to_vec();
        for _ in 0..8 {
            let k = (0..=segs.len())
                .rev()
                .find(|&k| mods.contains_key(&segs[..k]))?;
            let (module, rest) = segs.split_at(k);
            match rest.first().and_then(|n| reexports.get(module)?.get(n)) {
                Some(target) if target.as_slice() != segs.as_slice() => {
                    segs = target.iter().chain(&rest[1..]).cloned().collect();
                }
                _ => return mods.get(module).cloned(),
            }
        }
        None
    };
    let inline_path = regex::Regex::new(r"(?:^|[^\w:])(\w+)((?:::\w+)+)").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in files {
        let here = module_path(file);
        let mut targets = Vec::new();
        for (_, _, path, _) in &uses[file.as_str()] {
            targets.push(path.clone());
        }
        for (_, _, segs) in imports(file, text) {
            targets.push(segs);
        }
        // Inline paths through a module a `use` named (`remote::publish(…)`
        // after `use crate::store::remote;`).
        let aliases: BTreeMap<&str, &Vec<String>> = uses[file.as_str()]
            .iter()
            .filter(|(_, _, path, _)| mods.contains_key(path))
            .map(|(_, _, path, name)| (name.as_str(), path))
            .collect();
        if !aliases.is_empty() {
            let code = &codes[file.as_str()];
            for c in inline_path.captures_iter(code) {
                if let Some(base) = aliases.get(&c[1]) {
                    let mut segs = (*base).clone();
                    segs.extend(
                        c[2].split("::")
                            .filter(|s| !s.is_empty())
                            .map(str::to_string),
                    );
                    targets.push(segs);
                }
            }
        }
        for segs in targets {
            let Some(to) = resolve(&segs) else { continue };
            let there = module_path(&to);
            let own_child = there.len() > here.len() && there[..here.len()] == here[..];
            if to != *file && !there.is_empty() && !own_child {
                graph.entry(file.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// The import cycles of the files: each strongly connected set of two or
/// more files, as one cycle through it (`a -> b -> a`).
fn cycles(files: &[(String, String)]) -> Vec<String> {
    let graph = import_graph(files);
    // Tarjan's strongly connected components, iteratively.
    let nodes: Vec<&String> = graph.keys().collect();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut low: BTreeMap<&str, usize> = BTreeMap::new();
    let mut on_stack = BTreeSet::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut sets: Vec<Vec<&str>> = Vec::new();
    let empty = BTreeSet::new();
    let next = |v: &str| {
        graph
            .get(v)
            .unwrap_or(&empty)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    };
    for start in nodes {
        if index.contains_key(start.as_str()) {
            continue;
        }
        let mut work: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 && !index.contains_key(v) {
                let n = index.len();
                index.insert(v, n);
                low.insert(v, n);
                stack.push(v);
                on_stack.insert(v);
            }
            let succ = next(v);
            if let Some(&w) = succ.get(*i) {
                *i += 1;
                if !index.contains_key(w) {
                    work.push((w, 0));
                } else if on_stack.contains(w) {
                    let m = low[v].min(index[w]);
                    low.insert(v, m);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                let m = low[parent].min(low[v]);
                low.insert(parent, m);
            }
            if low[v] == index[v] {
                let mut set = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack.remove(w);
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    sets.push(set);
                }
            }
        }
    }
    // One cycle through each set: a shortest way back to its first file.
    sets.iter()
        .map(|set| {
            let inside: BTreeSet<&str> = set.iter().copied().collect();
            let from = set[0];
            let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([from]);
            let mut back = None;
            while let Some(v) = queue.pop_front() {
                for w in next(v).into_iter().filter(|w| inside.contains(w)) {
                    if w == from {
                        back = Some(v);
                        queue.clear();
                        break;
                    }
                    if !prev.contains_key(w) {
                        prev.insert(w, v);
                        queue.push_back(w);
                    }
                }
            }
            let mut path = vec![from];
            let mut v = back.expect("a strongly connected set leads back");
            while v != from {
                path.push(v);
                v = prev[v];
            }
            path.push(from);
            let end = path.len() - 1;
            path[1..end].reverse();
            format!("{} files: {}", set.len(), path.join(" -> "))
        })
        .collect()
}

#[test]
fn no_import_cycle_between_files() {
    let found = cycles(&read_src());
    assert!(
        found.is_empty(),
        "{} import cycle(s) between files (move what both need below both, or hand it in):\n{}",
        found.len(),
        found.join("\n")
    );
}

fn files_of(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn an_injected_cycle_inside_a_module_fails() {
    let found = cycles(&files_of(&[
        (
            "src/store/mod.rs",
            "pub mod archive;\npub mod notes;\npub mod remote;\npub struct Store;\n",
        ),
        (
            "src/store/archive.rs",
            "use super::remote::push;\nuse super::Store;\n",
        ),
        (
            "src/store/remote.rs",
            "use crate::store::notes::read;\npub fn push() {}\n",
        ),
        (
            "src/store/notes.rs",
            "pub fn read() { crate::store::archive::gc(); }\n",
        ),
    ]));
    assert_eq!(
        found,
        ["3 files: src/store/archive.rs -> src/store/remote.rs -> src/store/notes.rs -> src/store/archive.rs"]
    );
}

#[test]
fn a_parent_re_exporting_its_children_is_no_cycle_but_imports_through_it_count() {
    let tree = [
        ("src/store/mod.rs", "mod records;\nmod remote;\npub use records::{Record, Records};\npub use self::remote::push;\npub struct Store;\nfn f() { records::g(); }\n"),
        ("src/store/records.rs", "use super::Store;\npub struct Records;\npub fn g() {}\n"),
        ("src/store/remote.rs", "use crate::store::Store;\npub fn push() {}\n"),
        ("src/config.rs", "use crate::store::Store;\n"),
    ];
    assert_eq!(cycles(&files_of(&tree)), Vec::<String>::new());
    // store/records.rs reaches remote.rs, which imports Records: the
    // re-export names records.rs, so that is a cycle.
    let mut looped = tree.to_vec();
    looped[1].1 =
        "use super::Store;\nuse super::remote;\npub struct Records;\nfn h() { remote::push(); }\n";
    looped[2].1 = "use crate::store::{Records, Store};\npub fn push() {}\n";
    assert_eq!(
        cycles(&files_of(&looped)),
        ["2 files: src/store/records.rs -> src/store/remote.rs -> src/store/records.rs"]
    );
    // And two top-level modules: config <-> store.
    let mut both = tree.to_vec();
    both[0].1 =
        "mod kind;\nmod remote;\npub struct Store;\nfn open() { crate::config::params(); }\n";
    assert_eq!(
        cycles(&files_of(&both)),
        ["2 files: src/config.rs -> src/store/mod.rs -> src/config.rs"]
    );
}

/// The process-global statics `src/` may keep (file, name, why). Policy a
/// command sets belongs in the session or an owned value, passed down: a
/// static is a constant, a cache of something constant for the process, or
/// what only a static can be.
const STATICS_ALLOWED: &[(&str, &str, &str)] = &[
    ("src/cli/commands/run.rs", "STOP", "a signal handler takes no argument: it reaches the runner's stop flag (run::Options::stop) through this"),
    ("src/failpoint.rs", "PASSES", "test instrumentation: how often this process passed each failpoint"),
    ("src/git/net.rs", "SEED", "the jitter's seed, one per process by design (agents that failed together do not come back together)"),
    ("src/git/sign.rs", "SEQ", "a unique name for a temporary key file in this process"),
    ("src/git/version.rs", "VERSION", "the git binary's version, the same for the whole process"),
    ("src/guards/attribution.rs", "RE", "a compiled constant pattern"),
    ("src/records/mod.rs", "KINDS", "the constant registry of record kinds"),
    ("src/records/mod.rs", "LANE", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "LEAD", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "MESSAGE", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "PACKET", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "PLAN", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "POOL", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "RESERVATIONS", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "SNAPSHOT", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "TASK", "a record kind (constant, zero-sized)"),
    ("src/records/mod.rs", "WIP", "a record kind (constant, zero-sized)"),
    ("src/secret/assignment.rs", "RE", "a compiled constant pattern"),
    ("src/secret/rules.rs", "RE", "a compiled constant pattern"),
    ("src/secret/rules.rs", "RULES", "the compiled constant detector rules"),
    ("src/store/record_cache.rs", "ID", "this build's identity (the executable does not change under the process)"),
];

/// Every `static NAME:` item of the code (comments and strings skipped;
/// `&'static` is a lifetime, not an item), as (file, name), sorted.
fn statics(files: &[(String, String)]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (file, text) in files {
        let code = code_only(text);
        let words: Vec<&str> = code
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        for (i, w) in words.iter().enumerate() {
            if *w != "static" {
                continue;
            }
            let mut next = i + 1;
            if words.get(next) == Some(&"mut") {
                next += 1;
            }
            let Some(name) = words.get(next) else {
                continue;
            };
            let name = name.trim_end_matches(':');
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                out.insert((file.clone(), name.to_string()));
            }
        }
    }
    out
}

/// What [`statics`] finds that [`STATICS_ALLOWED`] lacks, and the entries
/// of it that are gone.
fn unlisted_statics(files: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let found = statics(files);
    let listed = |f: &str, n: &str| {
        STATICS_ALLOWED
            .iter()
            .any(|(af, an, _)| *af == f && *an == n)
    };
    let unlisted = found
        .iter()
        .filter(|(f, n)| !listed(f, n))
        .map(|(f, n)| format!("{f}: static {n}"))
        .collect();
    let stale = STATICS_ALLOWED
        .iter()
        .map(|(f, n, _)| (f, n))
        .filter(|(f, n)| !found.contains(&(f.to_string(), n.to_string())))
        .map(|(f, n)| format!("{f}: {n}"))
        .collect();
    (unlisted, stale)
}

#[test]
fn no_process_global_static_but_the_listed_ones() {
    let (unlisted, stale) = unlisted_statics(&read_src());
    assert!(
        unlisted.is_empty(),
        "process-global static(s) in no list; pass the state down (the session, an owned value) instead, or list a constant one in STATICS_ALLOWED with why:\n{}",
        unlisted.join("\n")
    );
    assert!(
        stale.is_empty(),
        "STATICS_ALLOWED lists statics that are gone; take them off:\n{}",
        stale.join("\n")
    );
}

#[test]
fn an_injected_static_fails_and_lifetimes_and_comments_do_not() {
    let files = files_of(&[(
        "src/store/x.rs",
        "//! static DOC: u8 = 0;\n\
         static COUNT: AtomicU64 = AtomicU64::new(0);\n\
         static mut FLAG: bool = false;\n\
         fn f() -> &'static str { \"static S: u8\" }\n\
         fn g() { static RE: OnceLock<u8> = OnceLock::new(); }\n",
    )]);
    let found: Vec<String> = statics(&files).into_iter().map(|(_, n)| n).collect();
    assert_eq!(found, ["COUNT", "FLAG", "RE"]);
    let (unlisted, _) = unlisted_statics(&files);
    assert_eq!(unlisted.len(), 3, "{unlisted:?}");
}

/// The most lines a function of `src/` may take (its signature to its
/// closing brace), outside tests and the demo's narrated scenes.
const MAX_FUNCTION_LINES: usize = 80;

/// Every function of the files longer than [`MAX_FUNCTION_LINES`], as
/// (file, name, lines), outside `#[cfg(test)]` modules, `tests.rs` files
/// and `src/ops/demo/`.
fn long_functions(files: &[(String, String)]) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    for (file, text) in files {
        if file.ends_with("/tests.rs") || file.starts_with("src/ops/demo/") {
            continue;
        }
        let code = code_only(text);
        let code = match code.find("\n#[cfg(test)]\nmod ") {
            Some(at) => &code[..at],
            None => &code[..],
        };
        let b = code.as_bytes();
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while let Some(at) = code[i..].find("fn ").map(|e| i + e) {
            i = at + 3;
            if at > 0 && ident(b[at - 1]) {
                continue;
            }
            let name: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `fn(` is a pointer type; a declaration without a body ends at `;`.
            let Some(open) = code[i..].find(['{', ';']).map(|e| i + e) else {
                continue;
            };
            if name.is_empty() || b[open] == b';' {
                continue;
            }
            let mut depth = 0usize;
            let mut close = open;
            for (k, c) in b.iter().enumerate().skip(open) {
                match c {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let lines = code[at..=close].matches('\n').count() + 1;
            if lines > MAX_FUNCTION_LINES {
                out.push((file.clone(), name, lines));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_function_over_80_lines() {
    let found: Vec<String> = long_functions(&read_src())
        .iter()
        .map(|(f, n, l)| format!("{f}: fn {n} ({l} lines)"))
        .collect();
    assert!(
        found.is_empty(),
        "function(s) over {MAX_FUNCTION_LINES} lines: split them into steps with names:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_long_function_is_found_and_a_short_one_a_test_and_a_pointer_type_are_not() {
    let long_body = "    let _ = 1;\n".repeat(MAX_FUNCTION_LINES);
    let files = files_of(&[
        (
            "src/store/x.rs",
            &format!(
                "type F = fn(u8) -> u8;\npub fn long() {{\n{long_body}}}\nfn short() {{ let s = \"}}\"; }}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{long_body}    }}\n}}\n"
            ),
        ),
        ("src/ops/demo/scene.rs", &format!("fn scene() {{\n{long_body}}}\n")),
    ]);
    assert_eq!(
        long_functions(&files),
        [(
            "src/store/x.rs".to_string(),
            "long".to_string(),
            MAX_FUNCTION_LINES + 2
        )]
    );
}

/// The hints below `src/cli/` that name a `git swarm` command, per file:
/// a hint is the CLI's wording, added at the edge (`cli/error.rs`) from
/// what the error carries. Each file's count here is what is still to
/// move; it may only go down (the test fails on a file that has more, and
/// on one that has fewer than listed: lower its count).
const HINTS_TO_MOVE: &[(&str, usize)] = &[
    ("src/git/push.rs", 1),
    ("src/guards/range.rs", 1),
    ("src/guards/reserved/ledger.rs", 1),
    ("src/integrations/agent/backup.rs", 1),
    ("src/integrations/agent/install.rs", 2),
    ("src/integrations/forecast/mod.rs", 1),
    ("src/integrations/github/client.rs", 1),
    ("src/integrations/verify/target.rs", 2),
    ("src/ops/accept/lane.rs", 5),
    ("src/ops/accept/restore.rs", 3),
    ("src/ops/demo/drill.rs", 1),
    ("src/ops/finish/mod.rs", 4),
    ("src/ops/handoff/publish.rs", 2),
    ("src/ops/init.rs", 2),
    ("src/ops/lane/remove.rs", 3),
    ("src/ops/lane/start/making.rs", 1),
    ("src/ops/lane/start/mod.rs", 1),
    ("src/ops/lane/start/publish.rs", 1),
    ("src/ops/lane/start/task.rs", 1),
    ("src/ops/lead/merge/queue.rs", 1),
    ("src/ops/lead/mod.rs", 2),
    ("src/ops/message/mod.rs", 3),
    ("src/ops/message/read.rs", 1),
    ("src/ops/packet/withdraw.rs", 1),
    ("src/ops/plan/mod.rs", 2),
    ("src/ops/plan/save.rs", 2),
    ("src/ops/reserve.rs", 5),
    ("src/ops/sync.rs", 1),
    ("src/ops/task/batch.rs", 2),
    ("src/ops/task/fields.rs", 2),
    ("src/ops/task/resolve.rs", 2),
    ("src/ops/task/next.rs", 1),
    ("src/records/lane/known.rs", 1),
    ("src/records/lane/rules.rs", 6),
    ("src/records/lead/rules.rs", 9),
    ("src/records/packet.rs", 3),
    ("src/records/packet/known.rs", 2),
    ("src/records/packet/verdict.rs", 2),
    ("src/records/plan.rs", 4),
    ("src/records/plan/journal.rs", 1),
    ("src/records/pool.rs", 1),
    ("src/records/task/rules.rs", 7),
    ("src/session/lane.rs", 1),
    ("src/session/plan.rs", 4),
    ("src/store/archive.rs", 1),
    ("src/store/mod.rs", 1),
    ("src/store/remote/mod.rs", 2),
    ("src/store/trust/signing.rs", 1),
    ("src/worktree/restore.rs", 1),
];

/// The `.hint(…)` calls of the files outside `src/cli/` whose text names a
/// command (`git swarm <verb>`), counted per file, outside `#[cfg(test)]`
/// modules and `tests.rs` files.
fn command_hints(files: &[(String, String)]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (file, text) in files {
        if file.starts_with("src/cli/") || file == "src/main.rs" || file.ends_with("/tests.rs") {
            continue;
        }
        let code = code_only(text);
        let end = code.find("\n#[cfg(test)]\nmod ").unwrap_or(code.len());
        let b = code.as_bytes();
        let mut i = 0;
        while let Some(at) = code[i..end].find(".hint(").map(|e| i + e) {
            let open = at + ".hint".len();
            let mut depth = 0usize;
            let mut close = open;
            for (k, c) in b.iter().enumerate().take(end).skip(open) {
                match c {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = k;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if text[open..=close].contains("git swarm ") {
                *out.entry(file.clone()).or_insert(0) += 1;
            }
            i = close.max(open) + 1;
        }
    }
    out
}

#[test]
fn no_new_hint_names_a_command_below_the_cli() {
    let found = command_hints(&read_src());
    if std::env::var_os("GIT_SWARM_ARCH_DUMP").is_some() {
        for (f, n) in &found {
            eprintln!("    (\"{f}\", {n}),");
        }
    }
    let listed = |f: &str| {
        HINTS_TO_MOVE
            .iter()
            .find(|(lf, _)| *lf == f)
            .map_or(0, |(_, n)| *n)
    };
    let mut wrong: Vec<String> = found
        .iter()
        .filter(|(f, n)| **n != listed(f))
        .map(|(f, n)| format!("{f}: {n} hint(s) naming a command, {} listed", listed(f)))
        .collect();
    wrong.extend(
        HINTS_TO_MOVE
            .iter()
            .filter(|(f, _)| !found.contains_key(*f))
            .map(|(f, n)| format!("{f}: none left, {n} listed: take it off")),
    );
    assert!(
        wrong.is_empty(),
        "a hint that names a `git swarm` command is the CLI's: return what the error is about and let cli/ word the hint (or, once moved, lower HINTS_TO_MOVE):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn an_injected_command_hint_in_the_store_is_found_and_one_in_the_cli_or_a_comment_is_not() {
    let files = files_of(&[
        (
            "src/store/x.rs",
            "fn f() -> Error { e.hint(format!(\"run `git swarm sync` ({})\", (1))) }\n\
             // .hint(\"git swarm sync\")\n\
             fn g() -> Error { e.hint(\"fix the file\") }\n",
        ),
        (
            "src/cli/x.rs",
            "fn f() { e.hint(\"run `git swarm sync`\"); }\n",
        ),
    ]);
    assert_eq!(
        command_hints(&files),
        BTreeMap::from([("src/store/x.rs".to_string(), 1)])
    );
}
