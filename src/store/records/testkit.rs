//! For the store's unit tests: a toy record kind (one number per key, one
//! namespace per `K`) and a `git` that runs outside the user's config.

use std::process::Command;

use crate::error::{Code, Error, Result};
use crate::store::records::{Diverged, Files, Record};

/// A toy kind per namespace: one number.
#[derive(Debug, Clone)]
pub(crate) struct N<const K: u8>(pub u64);

impl<const K: u8> Record for N<K> {
    const NAMESPACE: &'static str = if K == 0 { "counts" } else { "scores" };
    const KIND: &'static str = "n";
    const DIVERGED: Diverged = Diverged::MergeJournals;
    type Key = String;
    fn to_files(&self) -> Result<Files> {
        Ok(Files::from([(
            "n".to_string(),
            self.0.to_string().into_bytes(),
        )]))
    }
    fn from_files(files: &Files, _key: &String, what: &str) -> Result<Self> {
        let n = files
            .get("n")
            .and_then(|b| String::from_utf8_lossy(b).parse().ok());
        n.map(N)
            .ok_or_else(|| Error::new(Code::RecordInvalid, format!("{what}: no n")))
    }
}

/// Run git in `dir` (no system or global config); panics on failure.
pub(crate) fn git(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A bare `remote.git` in a fresh temporary directory and `n` clones of
/// it (`a`, `b`, …), each opened as a store. Keep the directory alive.
pub(crate) fn clones(n: usize) -> (tempfile::TempDir, Vec<crate::store::Store>) {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "--quiet", "--bare", "remote.git"]);
    let stores = (b'a'..)
        .take(n)
        .map(|c| {
            let name = (c as char).to_string();
            git(tmp.path(), &["clone", "--quiet", "remote.git", &name]);
            crate::store::Store::open(&tmp.path().join(&name)).unwrap()
        })
        .collect();
    (tmp, stores)
}
