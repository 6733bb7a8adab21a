//! The conditional-request cache: ETags and bodies, in memory for one run
//! and on disk ([`DiskCache`]) across runs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One conditional-request cache entry: the answer we can reuse on a 304.
/// On disk as JSON: the full URL it answers (checked on read, so a hash
/// collision is a miss), the ETag, the next-page link and the body. Never
/// a header we sent, so never the token.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Cached {
    pub(super) url: String,
    pub(super) etag: String,
    pub(super) body: String,
    pub(super) next: Option<String>,
}

/// Entries kept on disk at most; the least recently written go first.
const DISK_CACHE_ENTRIES: usize = 512;
/// Bodies larger than this are not written to disk.
const DISK_CACHE_MAX_BODY: usize = 4 << 20;

/// The ETag cache that outlives one run: one file per URL under `dir`
/// (`<git-common-dir>/swarm/cache/github/`), named by the SHA-256 of the
/// URL, written atomically (a temporary file renamed into place). A torn,
/// foreign or unreadable entry is a miss; failing to write is not an error.
pub struct DiskCache {
    dir: std::path::PathBuf,
}

impl DiskCache {
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
        let text = std::fs::read_to_string(self.file(url)).ok()?;
        let entry: Cached = serde_json::from_str(&text).ok()?;
        (entry.url == url && !entry.etag.is_empty()).then_some(entry)
    }

    pub(super) fn store(&self, entry: &Cached) {
        if entry.body.len() > DISK_CACHE_MAX_BODY {
            return;
        }
        let _ = self.try_store(entry);
        self.prune();
    }

    fn try_store(&self, entry: &Cached) -> std::io::Result<()> {
        use std::io::Write;
        std::fs::create_dir_all(&self.dir)?;
        let target = self.file(&entry.url);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = self
            .dir
            .join(format!(".tmp-{}-{nanos}", std::process::id()));
        let result = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&serde_json::to_vec(entry).map_err(std::io::Error::other)?)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Keep at most [`DISK_CACHE_ENTRIES`] entries (oldest written go), and
    /// drop temporary files a crashed run left behind.
    fn prune(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut entries = Vec::new();
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let modified = e.metadata().and_then(|m| m.modified()).ok();
            if name.starts_with(".tmp-") {
                let stale = modified
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(3600));
                if stale {
                    let _ = std::fs::remove_file(e.path());
                }
            } else if name.ends_with(".json") {
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
