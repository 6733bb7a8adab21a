//! The README documents every error code and every config key — and only
//! those — from the same lists the code uses; and every code the source
//! raises is in the list, with the class (exit code) the list gives it.
//! docs/security.md lists every secret kind the detector knows, and only those.

use std::collections::BTreeMap;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// A reference page under docs/.
fn doc(page: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Rows of the README table that follows `marker`: first cell (unquoted) -> whole row.
fn table_after(readme: &str, marker: &str) -> BTreeMap<String, String> {
    let start = readme
        .find(marker)
        .unwrap_or_else(|| panic!("README lacks {marker}"));
    readme[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let first = l
                .split('|')
                .nth(1)
                .unwrap()
                .trim()
                .trim_matches('`')
                .to_string();
            (first, l.to_string())
        })
        .collect()
}

/// The README's error table, generated from `git_swarm::error::Code`: the
/// marker line, the header and one row per code in the enum's order.
fn error_table() -> String {
    let mut table =
        String::from("<!-- error-codes -->\n| code | exit | meaning |\n| --- | --- | --- |\n");
    for code in git_swarm::error::Code::ALL {
        table.push_str(&format!(
            "| `{code}` | {} | {} |\n",
            code.exit_code(),
            code.description()
        ));
    }
    table
}

/// The README's error table is exactly the one generated from the enum.
/// `GIT_SWARM_BLESS=1 cargo test --test it docs::` rewrites it in place
/// after a code was added or changed in `src/error.rs`.
#[test]
fn readme_error_table_is_generated_from_the_codes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = readme();
    let start = readme
        .find("<!-- error-codes -->")
        .expect("README has an <!-- error-codes --> marker");
    let len: usize = readme[start..]
        .split_inclusive('\n')
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.starts_with('|'))
        .map(|(_, l)| l.len())
        .sum();
    let current = &readme[start..start + len];
    let generated = error_table();
    if current != generated && std::env::var_os("GIT_SWARM_BLESS").is_some() {
        let updated = format!("{}{generated}{}", &readme[..start], &readme[start + len..]);
        std::fs::write(path, updated).unwrap();
        return;
    }
    assert_eq!(
        current, generated,
        "README's error table differs from src/error.rs; run GIT_SWARM_BLESS=1 cargo test --test it docs::"
    );
}

#[test]
fn readme_lists_exactly_the_error_codes_and_config_keys() {
    let readme = readme();
    let rows = table_after(&readme, "<!-- error-codes -->");
    for code in git_swarm::error::Code::ALL {
        let row = format!(
            "| `{code}` | {} | {} |",
            code.exit_code(),
            code.description()
        );
        assert_eq!(
            rows.get(code.as_str()),
            Some(&row),
            "README error row for {code}"
        );
    }
    for code in rows.keys() {
        assert!(
            git_swarm::error::Code::from_name(code).is_some(),
            "README documents {code}, which the code does not know"
        );
    }
    let keys = table_after(&readme, "<!-- config-keys -->");
    for (key, default, meaning) in git_swarm::config::KEYS {
        let row = format!("| `{key}` | {default} | {meaning} |");
        assert_eq!(keys.get(*key), Some(&row), "README config row for {key}");
    }
    for key in keys.keys() {
        assert!(
            git_swarm::config::KEYS.iter().any(|(k, _, _)| k == key),
            "README documents {key}, which the code does not know"
        );
    }
}

/// The secrets section of docs/security.md names every kind the detector
/// reports, and no kind it does not know.
#[test]
fn docs_list_every_secret_kind() {
    let page = doc("security.md");
    let start = page
        .find("\n## Secrets: refused")
        .expect("docs/security.md has a secrets section")
        + 1;
    let section = &page[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let kinds = git_swarm::secret::kinds();
    for (kind, _) in &kinds {
        assert!(
            section.contains(&format!("`{kind}`")),
            "docs/security.md does not list {kind}"
        );
    }
    let table = table_after(section, "<!-- secret-kinds -->");
    let listed: Vec<String> = table
        .values()
        .flat_map(|row| {
            row.split('|')
                .nth(2)
                .unwrap()
                .split(',')
                .map(|k| k.trim().trim_matches('`').to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    for k in &listed {
        assert!(
            kinds.iter().any(|(known, _)| known == k),
            "docs/security.md lists {k}, which the detector does not know"
        );
    }
    assert_eq!(listed.len(), kinds.len());
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped
/// (but `-` and `_`), spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown page: its headings, outside code blocks.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The README links every page under docs/ (its "Documentation" list), and
/// every relative link in the README and the docs/ pages reaches a file
/// that exists and, with a `#fragment`, a heading of that file.
#[test]
fn readme_links_every_docs_page_and_every_relative_link_resolves() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = crate::support::harness::project_docs();
    let readme = readme();
    let index = &readme[readme
        .find("\n## Documentation\n")
        .expect("README has a Documentation section")..];
    for (path, _) in &docs[1..] {
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(
            index.contains(&format!("](docs/{name})")),
            "README's Documentation list does not link docs/{name}"
        );
    }
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut checked = 0;
    for (path, text) in &docs {
        let dir = path.parent().unwrap();
        for cap in link.captures_iter(text) {
            let target = &cap[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let file = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            // An image or other file: it must exist; only pages have anchors.
            if file.extension().is_some_and(|x| x != "md") && fragment.is_empty() {
                assert!(
                    file.is_file(),
                    "{}: link {target}: no file {}",
                    path.display(),
                    file.display()
                );
                checked += 1;
                continue;
            }
            let page = std::fs::read_to_string(&file).unwrap_or_else(|e| {
                panic!("{}: link {target}: {}: {e}", path.display(), file.display())
            });
            if !fragment.is_empty() {
                assert!(
                    anchors(&page).iter().any(|a| a == fragment),
                    "{}: link {target}: no heading #{fragment} in {}",
                    path.display(),
                    file.strip_prefix(root).unwrap_or(&file).display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "only {checked} relative links checked");
}
