//! The README documents every error code and every config key — and only
//! those — from the same lists the code uses; and every code the source
//! raises is in the list, with the class (exit code) the list gives it.

use std::collections::BTreeMap;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
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

#[test]
fn readme_lists_exactly_the_error_codes_and_config_keys() {
    let readme = readme();
    let rows = table_after(&readme, "<!-- error-codes -->");
    for (code, class, meaning) in git_swarm::error::CODES {
        let row = format!("| `{code}` | {} | {meaning} |", class.exit_code());
        assert_eq!(rows.get(*code), Some(&row), "README error row for {code}");
    }
    for code in rows.keys() {
        assert!(
            git_swarm::error::CODES.iter().any(|(c, _, _)| c == code),
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

/// Every `Error::check|usage|race|env("CODE", …)` in src/ uses a listed code
/// with the listed class, so an exit code cannot drift from the table.
#[test]
fn every_error_raised_in_the_source_is_listed_with_its_class() {
    let re = regex::Regex::new(r#"Error::(check|usage|race|env)\(\s*"([A-Z_]+)""#).unwrap();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for cap in re.captures_iter(&text) {
                seen += 1;
                let code = &cap[2];
                let exit = match &cap[1] {
                    "check" => 1,
                    "usage" => 2,
                    "race" => 3,
                    _ => 4,
                };
                let listed = git_swarm::error::CODES
                    .iter()
                    .find(|(c, _, _)| *c == code)
                    .unwrap_or_else(|| panic!("{}: {code} is not in error::CODES", path.display()));
                assert_eq!(
                    listed.1.exit_code(),
                    exit,
                    "{}: {code} raised with exit {exit}",
                    path.display()
                );
            }
        }
    }
    assert!(
        seen > 100,
        "the scan found only {seen} errors: is the pattern still right?"
    );
}

/// The README's secrets section names every kind the detector reports, and
/// no kind it does not know.
#[test]
fn readme_lists_every_secret_kind() {
    let readme = readme();
    let start = readme
        .find("### Secrets: refused")
        .expect("README has a secrets section");
    let section = &readme[start..];
    let section = &section[..section[4..].find("\n### ").map_or(section.len(), |e| e + 4)];
    let kinds = git_swarm::secret::kinds();
    for (kind, _) in &kinds {
        assert!(
            section.contains(&format!("`{kind}`")),
            "README does not list {kind}"
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
            "README lists {k}, which the detector does not know"
        );
    }
    assert_eq!(listed.len(), kinds.len());
}
