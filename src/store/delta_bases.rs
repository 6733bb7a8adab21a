//! A delta-base cache for gix's pack decoding, installed on the store's
//! repository when it is opened (each clone of the handle makes its own):
//! reading many objects that are deltas of one another — records of one
//! kind in a pack (every task record is a delta of another), every lane
//! branch's changeset directory — inflates each base once, not once per
//! object that builds on it.

/// Delta bases for gix's pack decoding, which this build of gix (without its
/// `max-performance` feature) does not cache at all: lane branches' trees
/// at the changeset directory are mostly deltas against the base branch's
/// tree, so without this every one of them inflates that base again. The
/// most recently used objects are kept, up to `LIMIT` bytes.
#[derive(Default)]
pub struct DeltaBases {
    /// (pack id, offset, kind, compressed size, data), most recent last.
    entries: Vec<(u32, u64, gix::object::Kind, usize, Vec<u8>)>,
    bytes: usize,
}

impl DeltaBases {
    const LIMIT: usize = 8 << 20;
    const ENTRIES: usize = 64;

    /// Give `repo` (a clone: handles share the object store) this cache.
    pub fn install(repo: &mut gix::Repository) {
        repo.objects.set_pack_cache(|| Box::<DeltaBases>::default());
    }
}

impl gix::odb::pack::cache::DecodeEntry for DeltaBases {
    fn put(
        &mut self,
        pack_id: u32,
        offset: u64,
        data: &[u8],
        kind: gix::object::Kind,
        compressed_size: usize,
    ) {
        if data.len() > Self::LIMIT / 4
            || self.entries.iter().any(|e| e.0 == pack_id && e.1 == offset)
        {
            return;
        }
        while !self.entries.is_empty()
            && (self.entries.len() >= Self::ENTRIES || self.bytes + data.len() > Self::LIMIT)
        {
            let old = self.entries.remove(0);
            self.bytes -= old.4.len();
        }
        self.bytes += data.len();
        self.entries
            .push((pack_id, offset, kind, compressed_size, data.to_vec()));
    }

    fn get(
        &mut self,
        pack_id: u32,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Option<(gix::object::Kind, usize)> {
        let i = self
            .entries
            .iter()
            .rposition(|e| e.0 == pack_id && e.1 == offset)?;
        let entry = self.entries.remove(i);
        out.clear();
        out.extend_from_slice(&entry.4);
        let found = (entry.2, entry.3);
        self.entries.push(entry);
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use gix::odb::pack::cache::DecodeEntry;

    use super::*;

    #[test]
    fn keeps_the_most_recent_entries_within_the_limits() {
        let blob = gix::object::Kind::Blob;
        let mut c = DeltaBases::default();
        let mut out = Vec::new();
        c.put(1, 10, b"ten", blob, 3);
        assert_eq!(c.get(1, 10, &mut out), Some((blob, 3)));
        assert_eq!(out, b"ten");
        assert_eq!(c.get(2, 10, &mut out), None);
        // Too big for the cache: not kept.
        c.put(1, 20, &vec![0; DeltaBases::LIMIT / 4 + 1], blob, 1);
        assert_eq!(c.get(1, 20, &mut out), None);
        // The oldest entry goes first once the count is reached; a read
        // makes an entry the most recent.
        for i in 0..DeltaBases::ENTRIES as u64 - 1 {
            c.put(2, i, b"x", blob, 1);
        }
        assert!(c.get(1, 10, &mut out).is_some());
        c.put(3, 0, b"y", blob, 1);
        assert_eq!(c.get(2, 0, &mut out), None);
        assert!(c.get(1, 10, &mut out).is_some());
        assert_eq!(c.entries.len(), DeltaBases::ENTRIES);
    }
}
