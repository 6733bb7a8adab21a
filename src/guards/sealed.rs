//! Sealed cache files, the format of the hook's binary caches under
//! `<git common dir>/swarm/`: a magic line, length-prefixed fields
//! (little-endian), and a 64-bit checksum of everything before it. A file
//! that is missing, torn at any length, edited, foreign or over its size
//! limit opens as nothing, so a cache built on it is never trusted; it is
//! replaced whole (written beside it, then renamed over it), best effort: a
//! cache that cannot be written is rebuilt next time.

use std::path::Path;

use gix::ObjectId;

/// 64-bit FNV-1a: enough to tell a torn or edited file from a whole one.
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A file's body being written, after its magic line.
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn new(magic: &[u8]) -> Writer {
        Writer(magic.to_vec())
    }
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: usize) {
        self.0.extend_from_slice(&(v as u32).to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn str(&mut self, s: &str) {
        self.u32(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    /// An object id, its length first (so another hash kind never parses).
    pub fn id(&mut self, id: &ObjectId) {
        self.u8(id.as_bytes().len() as u8);
        self.0.extend_from_slice(id.as_bytes());
    }
    /// The whole file: the body and its checksum.
    pub fn seal(mut self) -> Vec<u8> {
        let sum = checksum(&self.0);
        self.0.extend_from_slice(&sum.to_le_bytes());
        self.0
    }
}

/// A cursor over a body; every read is bounds-checked.
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The body of a whole file with this magic line, else None.
    pub fn open(bytes: &'a [u8], magic: &[u8]) -> Option<Reader<'a>> {
        let body = bytes.get(..bytes.len().checked_sub(8)?)?;
        let sum = u64::from_le_bytes(bytes[body.len()..].try_into().ok()?);
        if sum != checksum(body) {
            return None;
        }
        Some(Reader(body.strip_prefix(magic)?))
    }
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
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
        self.0.is_empty()
    }
}

/// The bytes of the file at `path`, if it is there and at most `limit` long.
pub fn read(path: &Path, limit: u64) -> Option<Vec<u8>> {
    // A regular file only, opened non-blocking: a FIFO put here must not
    // stall every commit.
    crate::fsutil::read_limited(path, crate::fsutil::Follow::No, limit).ok()
}

/// Replace the file at `path` with `bytes`, best effort.
pub fn replace(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_file_opens_only_whole_and_unchanged() {
        let id = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let mut w = Writer::new(b"magic v1\n");
        w.u32(7);
        w.str("naïve");
        w.id(&id);
        w.u64(u64::MAX);
        let bytes = w.seal();
        let mut r = Reader::open(&bytes, b"magic v1\n").unwrap();
        assert_eq!(r.u32(), Some(7));
        assert_eq!(r.str(), Some("naïve"));
        assert_eq!(r.id(), Some(id));
        assert_eq!(r.u64(), Some(u64::MAX));
        assert!(r.done());
        assert_eq!(r.u8(), None, "reading past the end gives nothing");
        assert!(Reader::open(&bytes, b"magic v2\n").is_none());
        for cut in 0..bytes.len() {
            assert!(
                Reader::open(&bytes[..cut], b"magic v1\n").is_none(),
                "cut at {cut}"
            );
        }
        for at in 0..bytes.len() {
            let mut edited = bytes.clone();
            edited[at] ^= 0x01;
            assert!(Reader::open(&edited, b"magic v1\n").is_none(), "byte {at}");
        }
    }
}
