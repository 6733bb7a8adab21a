//! The reservations as stored, read with git: every part under
//! `refs/swarm/reservations/` (the shards and the one-ref ledger of older
//! clones) and their entries merged by id, as git-swarm merges them.

use std::path::Path;

use git_swarm::records::reservation::shard;
use serde_yaml_ng::Value;

use super::harness::{Run, TestEnv};

/// The local reservations prefix.
pub const LOCAL: &str = "refs/swarm/reservations/";

/// Every part under `prefix` in `dir`: (ref, commit), sorted by ref.
pub fn parts(env: &TestEnv, dir: &Path, prefix: &str) -> Vec<(String, String)> {
    env.git(
        dir,
        &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
    )
    .lines()
    .filter_map(|l| l.split_once(' '))
    .map(|(r, c)| (r.to_string(), c.to_string()))
    .collect()
}

/// Where every part stands: one line per part, to compare before and
/// after a command that must leave them alone.
pub fn stamp(env: &TestEnv, dir: &Path, prefix: &str) -> String {
    parts(env, dir, prefix)
        .iter()
        .map(|(r, c)| format!("{r} {c}\n"))
        .collect()
}

/// The ref of the first shard holding entries for `path`, under `prefix`:
/// its one shard, or `shard-00` for a pattern in every shard (`src/`,
/// `README.md`, a glob in its first two components).
pub fn shard_of(prefix: &str, path: &str) -> String {
    let set = shard::of_pattern(&git_swarm::records::reservation::Pattern(path.to_string()));
    format!("{prefix}{}", shard::key(shard::home(set)))
}

/// Whether `path` belongs to one shard only.
pub fn in_one_shard(path: &str) -> bool {
    let set = shard::of_pattern(&git_swarm::records::reservation::Pattern(path.to_string()));
    set.count_ones() == 1
}

/// Every entry under `prefix` in `dir`, merged: each id once, released
/// when any part holds it released.
pub fn entries(env: &TestEnv, dir: &Path, prefix: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (refname, _) in parts(env, dir, prefix) {
        let yaml = env.git(dir, &["show", &format!("{refname}:reservations.yaml")]);
        let part: Value = serde_yaml_ng::from_str(&yaml).expect("reservations.yaml is YAML");
        for e in part["entries"].as_sequence().cloned().unwrap_or_default() {
            match out.iter_mut().find(|o| o["id"] == e["id"]) {
                Some(o) if o["released_at"].is_null() && !e["released_at"].is_null() => *o = e,
                Some(_) => {}
                None => out.push(e),
            }
        }
    }
    out
}

/// The ids of every entry under `prefix`, sorted.
pub fn ids(env: &TestEnv, dir: &Path, prefix: &str) -> Vec<String> {
    let mut ids: Vec<String> = entries(env, dir, prefix)
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default().to_string())
        .collect();
    ids.sort();
    ids
}

/// The id of the entry a `reserve … --json` run made.
pub fn reserved_id(run: &Run) -> String {
    run.json()["entry"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no entry id: {run:#?}"))
        .to_string()
}

/// Push from `dir` to origin's `refname` a version whose
/// `reservations.yaml` is `yaml` (on `parent`, when given), as a forged or
/// an older writer would; returns its commit.
pub fn push_version(
    env: &TestEnv,
    dir: &Path,
    refname: &str,
    yaml: &[u8],
    parent: Option<&str>,
) -> String {
    let blob = env.git_stdin(dir, &["hash-object", "-w", "--stdin"], yaml);
    let line = format!("100644 blob {blob}\treservations.yaml\n");
    let tree = env.git_stdin(dir, &["mktree"], line.as_bytes());
    let mut args = vec!["commit-tree", tree.as_str(), "-m", "written by hand"];
    if let Some(p) = parent {
        args.extend(["-p", p]);
    }
    let commit = env.git(dir, &args);
    let spec = format!("{commit}:{refname}");
    env.git(dir, &["push", "--quiet", "--no-verify", "origin", &spec]);
    commit
}
