//! The one format of git-swarm's deletable cache files (the hook's caches
//! under `<git common dir>/swarm/`, the record cache's shards, the conflict
//! forecast's entries, the GitHub ETag cache): a header (the cache's magic
//! bytes, its format version, the body's length), the body, and a CRC-32 of
//! everything before it. A file that is missing, unreadable, not a regular
//! file, over its size limit, torn at any length, edited, of another cache
//! or of another version reads as a miss, never as an error and never
//! trusted; a cache built on it is simply built again. A file is replaced
//! whole: written to a temporary file in the same directory, then renamed
//! over it, so a reader sees the old file or the new one and a writer
//! killed half-way leaves the old one readable. Writing is best effort for
//! every caller: a cache that cannot be written is rebuilt next time.
//!
//! The checksum tells a torn or edited file from a whole one; it is no
//! defence against an adversary (whoever can write the git directory can
//! write its refs and objects too). CRC-32 (the `crc32fast` crate, which
//! gix already builds for its packs) runs at several GB/s where the CPU has
//! carry-less multiplication and well over one elsewhere, so the hook's
//! caches, read on every commit, cost no more to check than the byte-wise
//! hash they had before.
//!
//! [`Writer`] and [`Reader`] are the binary field encoding the hot caches
//! share: little-endian integers, length-prefixed strings and object ids,
//! every read bounds-checked.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gix::ObjectId;

/// Bytes of the checksum that ends a file.
const SUM: usize = 4;
/// A temporary file older than this was left by a killed writer.
const STALE_TMP: Duration = Duration::from_secs(600);

/// One cache's file format: its magic bytes, its version (bumped whenever
/// the body's layout or meaning changes: files of another version are
/// misses) and the most a file may hold (larger ones are neither read nor
/// written).
#[derive(Debug, Clone, Copy)]
pub struct Format {
    magic: &'static [u8],
    version: u32,
    limit: u64,
    /// A failpoint passed half-way through writing the temporary file.
    failpoint: Option<&'static str>,
}

impl Format {
    pub const fn new(magic: &'static [u8], version: u32, limit: u64) -> Format {
        Format {
            magic,
            version,
            limit,
            failpoint: None,
        }
    }

    /// The same, passing failpoint `name` with half of a file written
    /// (crash tests kill a writer there).
    pub const fn failpoint(self, name: &'static str) -> Format {
        Format {
            failpoint: Some(name),
            ..self
        }
    }

    fn header_len(&self) -> usize {
        self.magic.len() + 4 + 8
    }

    /// A whole file holding `body`.
    pub fn seal(&self, body: &[u8]) -> Sealed {
        let mut w = Writer::new(self);
        w.reserve(body.len() + SUM);
        w.raw(body);
        w.seal()
    }

    /// The body of a whole file of this format, else None.
    pub fn body<'a>(&self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        let (start, end) = self.open(bytes)?;
        Some(&bytes[start..end])
    }

    /// Where the body of a whole file of this format lies in `bytes`.
    fn open(&self, bytes: &[u8]) -> Option<(usize, usize)> {
        if bytes.len() as u64 > self.limit {
            return None;
        }
        let end = bytes.len().checked_sub(SUM)?;
        let sum = u32::from_le_bytes(bytes[end..].try_into().ok()?);
        let rest = bytes[..end].strip_prefix(self.magic)?;
        let version = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
        let len = u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?);
        let start = self.header_len();
        let whole = version == self.version && len == (end - start) as u64;
        (whole && crc32fast::hash(&bytes[..end]) == sum).then_some((start, end))
    }

    /// The bytes of the file at `path`, unchecked (a [`Reader`] or
    /// [`Format::body`] checks them): None when it is missing, not a
    /// regular file or over the limit. A FIFO put there must not stall
    /// every commit, nor `/dev/zero` exhaust memory: the file is opened
    /// non-blocking, without following a symlink, and read only up to the
    /// limit.
    pub fn read(&self, path: &Path) -> Option<Vec<u8>> {
        crate::fsutil::read_limited(path, crate::fsutil::Follow::No, self.limit).ok()
    }

    /// Replace the file at `path` with `file`: see [`Pending`].
    pub fn write(&self, path: &Path, file: &Sealed) -> std::io::Result<()> {
        self.begin(path)?.commit(file)
    }

    /// Start replacing the file at `path`: its directory is created and a
    /// new temporary file beside it, which [`Pending::commit`] fills and
    /// renames over `path` (dropped uncommitted, it is removed).
    pub fn begin(&self, path: &Path) -> std::io::Result<Pending> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut attempt = 0u32;
        loop {
            let tmp = dir.join(format!("{name}.tmp-{}-{attempt}", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(file) => {
                    return Ok(Pending {
                        format: *self,
                        file: Some(file),
                        tmp,
                        path: path.to_path_buf(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The bytes of a whole file, header and checksum included.
pub struct Sealed(Vec<u8>);

impl Sealed {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// A file being replaced: its temporary file, created, not yet renamed.
pub struct Pending {
    format: Format,
    file: Option<File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl Pending {
    /// The temporary file (its metadata carries the file system's time now).
    pub fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// Write `sealed` to the temporary file and rename it over the path; a
    /// file over the format's limit is not written (and the old one stays).
    pub fn commit(mut self, sealed: &Sealed) -> std::io::Result<()> {
        self.fill(sealed)?;
        std::fs::rename(&self.tmp, &self.path)
    }

    /// The temporary file written, not yet renamed.
    fn fill(&mut self, sealed: &Sealed) -> std::io::Result<()> {
        let bytes = sealed.as_bytes();
        if bytes.len() as u64 > self.format.limit {
            return Err(std::io::Error::other("over the cache file's size limit"));
        }
        let mut file = self
            .file
            .take()
            .ok_or_else(|| std::io::Error::other("written"))?;
        let half = bytes.len() / 2;
        file.write_all(&bytes[..half])?;
        if let Some(name) = self.format.failpoint {
            crate::failpoint::point(name);
        }
        file.write_all(&bytes[half..])
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // Renamed already, or abandoned: either way no temporary file stays.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Remove the temporary files killed writers left in `dir` (those older
/// than ten minutes: a younger one may belong to a live writer).
pub fn remove_stale_temps(dir: &Path) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in list.flatten() {
        let name = entry.file_name();
        let Some((_, tail)) = name.to_str().and_then(|n| n.rsplit_once(".tmp-")) else {
            continue;
        };
        let ours = tail
            .split_once('-')
            .is_some_and(|(pid, n)| pid.parse::<u32>().is_ok() && n.parse::<u32>().is_ok());
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_TMP);
        if ours && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A file being written: the header, then the body's fields.
pub struct Writer {
    bytes: Vec<u8>,
    header: usize,
}

impl Writer {
    pub fn new(format: &Format) -> Writer {
        let header = format.header_len();
        let mut bytes = Vec::with_capacity(header + 64);
        bytes.extend_from_slice(format.magic);
        bytes.extend_from_slice(&format.version.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        Writer { bytes, header }
    }
    pub fn reserve(&mut self, n: usize) {
        self.bytes.reserve(n);
    }
    pub fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    pub fn u16(&mut self, v: usize) {
        self.raw(&(v as u16).to_le_bytes());
    }
    pub fn u32(&mut self, v: usize) {
        self.raw(&(v as u32).to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.raw(&v.to_le_bytes());
    }
    /// Bytes as they are (the reader knows their length).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }
    /// A string, its length first (`u32`).
    pub fn str(&mut self, s: &str) {
        self.u32(s.len());
        self.raw(s.as_bytes());
    }
    /// An object id, its length first (so another hash kind never parses).
    pub fn id(&mut self, id: &ObjectId) {
        self.u8(id.as_bytes().len() as u8);
        self.raw(id.as_bytes());
    }
    /// The whole file: the body's length in the header, the checksum last.
    pub fn seal(mut self) -> Sealed {
        let len = (self.bytes.len() - self.header) as u64;
        self.bytes[self.header - 8..self.header].copy_from_slice(&len.to_le_bytes());
        let sum = crc32fast::hash(&self.bytes);
        self.bytes.extend_from_slice(&sum.to_le_bytes());
        Sealed(self.bytes)
    }
}

/// A cursor over the body of a whole file; every read is bounds-checked.
/// Positions ([`Reader::at`]) are offsets in the file's bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    /// The body of `bytes` if they are a whole file of `format`, else None.
    pub fn open(bytes: &'a [u8], format: &Format) -> Option<Reader<'a>> {
        let (at, end) = format.open(bytes)?;
        Some(Reader { bytes, at, end })
    }
    /// Where the next read starts, in the file's bytes.
    pub fn at(&self) -> usize {
        self.at
    }
    /// The body's length: a bound for counts read from the file.
    pub fn len(&self) -> usize {
        self.end - self.at
    }
    pub fn is_empty(&self) -> bool {
        self.at == self.end
    }
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let stop = self.at.checked_add(n).filter(|&s| s <= self.end)?;
        let out = &self.bytes[self.at..stop];
        self.at = stop;
        Some(out)
    }
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Option<usize> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?) as usize)
    }
    pub fn u32(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    pub fn id(&mut self) -> Option<ObjectId> {
        let n = usize::from(self.u8()?);
        ObjectId::try_from(self.take(n)?).ok()
    }
    /// Whether every byte was read (a whole file has nothing left over).
    pub fn done(&self) -> bool {
        self.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: Format = Format::new(b"git-swarm test cache\n", 3, 1 << 10);

    fn sample() -> Sealed {
        let id = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let mut w = Writer::new(&TEST);
        w.u32(7);
        w.str("naïve");
        w.id(&id);
        w.u16(513);
        w.u64(u64::MAX);
        w.seal()
    }

    fn read_back(bytes: &[u8]) -> Option<(usize, String, ObjectId, usize, u64)> {
        let mut r = Reader::open(bytes, &TEST)?;
        let out = (r.u32()?, r.str()?.to_string(), r.id()?, r.u16()?, r.u64()?);
        r.done().then_some(out)
    }

    #[test]
    fn a_file_reads_back_field_by_field() {
        let file = sample();
        let (n, s, id, small, big) = read_back(file.as_bytes()).unwrap();
        assert_eq!((n, s.as_str(), small, big), (7, "naïve", 513, u64::MAX));
        assert_eq!(id.to_string(), "1".repeat(40));
        let mut r = Reader::open(file.as_bytes(), &TEST).unwrap();
        assert_eq!(r.at(), TEST.header_len());
        r.take(r.len()).unwrap();
        assert_eq!(r.u8(), None, "reading past the end gives nothing");
        let json = TEST.seal(b"{\"a\":1}");
        assert_eq!(TEST.body(json.as_bytes()), Some(&b"{\"a\":1}"[..]));
        assert_eq!(TEST.body(TEST.seal(b"").as_bytes()), Some(&b""[..]));
    }

    #[test]
    fn a_corrupt_body_truncated_file_or_other_format_is_a_miss() {
        let bytes = sample().into_bytes();
        for at in 0..bytes.len() {
            let mut edited = bytes.clone();
            edited[at] ^= 0x01;
            assert!(Reader::open(&edited, &TEST).is_none(), "byte {at} flipped");
        }
        for cut in 0..bytes.len() {
            assert!(TEST.body(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TEST.body(&longer).is_none(), "a byte appended");
        let newer = Format::new(b"git-swarm test cache\n", 4, 1 << 10);
        let other = Format::new(b"git-swarm other cache\n", 3, 1 << 10);
        assert!(newer.body(&bytes).is_none(), "another version");
        assert!(other.body(&bytes).is_none(), "another cache");
        assert!(TEST.body(newer.seal(b"x").as_bytes()).is_none());
    }

    #[test]
    fn a_file_over_the_limit_is_neither_written_nor_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("cache");
        let big = TEST.seal(&[7u8; 1 << 10]);
        assert!(TEST.write(&path, &big).is_err());
        assert!(!path.exists(), "not written");
        let roomy = Format::new(b"git-swarm test cache\n", 3, 1 << 12);
        roomy.write(&path, &big).unwrap();
        assert!(roomy.read(&path).is_some_and(|b| roomy.body(&b).is_some()));
        assert!(TEST.read(&path).is_none(), "over the limit: not read");
        assert!(TEST.body(big.as_bytes()).is_none());
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_write_replaces_the_file_and_a_missing_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        assert!(TEST.read(&path).is_none());
        TEST.write(&path, &TEST.seal(b"one")).unwrap();
        TEST.write(&path, &TEST.seal(b"two")).unwrap();
        let bytes = TEST.read(&path).unwrap();
        assert_eq!(TEST.body(&bytes), Some(&b"two"[..]));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        // Not a regular file: a miss, not a wait.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(TEST.read(&fifo).is_none());
    }

    #[test]
    fn a_writer_killed_before_its_rename_leaves_the_old_file_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        TEST.write(&path, &TEST.seal(b"old")).unwrap();
        // Killed after writing its temporary file, before the rename: no
        // destructor runs.
        let mut pending = TEST.begin(&path).unwrap();
        pending.fill(&TEST.seal(b"new")).unwrap();
        let tmp = pending.tmp.clone();
        std::mem::forget(pending);
        assert!(tmp.exists());
        let bytes = TEST.read(&path).unwrap();
        assert_eq!(TEST.body(&bytes), Some(&b"old"[..]));
        // A young temporary file may be a live writer's; an old one goes.
        remove_stale_temps(dir.path());
        assert!(tmp.exists());
        let then = std::time::SystemTime::now() - STALE_TMP - Duration::from_secs(1);
        File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(then)
            .unwrap();
        remove_stale_temps(dir.path());
        assert!(!tmp.exists());
        assert!(path.exists(), "the cache itself stays");
        // Dropped without committing: the temporary file is removed.
        let pending = TEST.begin(&path).unwrap();
        let tmp = pending.tmp.clone();
        drop(pending);
        assert!(!tmp.exists());
    }
}
