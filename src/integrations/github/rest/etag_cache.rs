//! The conditional-request cache: ETags and bodies, in memory for one run
//! and on disk ([`DiskCache`]) across runs.

use std::time::UNIX_EPOCH;

use crate::store::cachefile::{self, Format};

/// One conditional-request cache entry: the answer we can reuse on a 304.
/// On disk as JSON in a cache file: the full URL it answers (checked on
/// read, so a hash collision is a miss), the ETag, the next-page link and
/// the body. Never a header we sent, so never the token.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Cached {
    pub(super) url: String,
    pub(super) etag: String,
    pub(super) body: String,
    pub(super) next: Option<String>,
}

/// Entries kept on disk at most; the least recently written go first.
const DISK_CACHE_ENTRIES: usize = 512;

/// The ETag cache that outlives one run: one file per URL under `dir`
/// (`<git-common-dir>/swarm/cache/github/`), named by the SHA-256 of the
/// URL, a [`cachefile`] (written whole, then renamed into place). A torn,
/// foreign or unreadable entry is a miss; failing to write is not an error.
pub struct DiskCache {
    dir: std::path::PathBuf,
}

impl DiskCache {
    /// An entry's file: entries over 4 MiB are neither written nor read.
    pub const FORMAT: Format = Format::new(b"git-swarm github etag entry\n", 1, 4 << 20);

    pub fn new(dir: std::path::PathBuf) -> DiskCache {
        DiskCache { dir }
    }

    fn file(&self, url: &str) -> std::path::PathBuf {
        use sha2::Digest;
        let hash = sha2::Sha256::digest(url.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}.json"))
    }

    pub(super) fn load(&self, url: &str) -> Option<Cached> {
        let bytes = Self::FORMAT.read(&self.file(url))?;
        let entry: Cached = serde_json::from_slice(Self::FORMAT.body(&bytes)?).ok()?;
        (entry.url == url && !entry.etag.is_empty()).then_some(entry)
    }

    pub(super) fn store(&self, entry: &Cached) {
        let Ok(body) = serde_json::to_vec(entry) else {
            return;
        };
        let _ = Self::FORMAT.write(&self.file(&entry.url), &Self::FORMAT.seal(&body));
        self.prune();
    }

    /// Keep at most [`DISK_CACHE_ENTRIES`] entries (oldest written go), and
    /// drop temporary files a crashed run left behind.
    fn prune(&self) {
        cachefile::remove_stale_temps(&self.dir);
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries = Vec::new();
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().ends_with(".json") {
                let modified = e.metadata().and_then(|m| m.modified()).ok();
                entries.push((modified.unwrap_or(UNIX_EPOCH), e.path()));
            }
        }
        if entries.len() > DISK_CACHE_ENTRIES {
            entries.sort();
            let excess = entries.len() - DISK_CACHE_ENTRIES;
            for (_, path) in entries.into_iter().take(excess) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}
