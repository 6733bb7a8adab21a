//! Rebuilding a tree stored in a pack as one delta against a tree already
//! in memory. Lane branches' changeset directories are the base's plus a
//! few names, and packs store them as small deltas against the base's
//! tree; gix resolves a delta by inflating its base again every time (its
//! delta cache holds resolved deltas, never the plain base a chain ends
//! in), so a first run over 500 lanes inflated the 84 KB base 500 times.
//! Here the delta (tens of bytes) is inflated and applied to the base we
//! hold. Anything else — a loose object, another base, a damaged entry —
//! gives `None` and the tree is read the usual way.

use gix::odb::pack::data::entry::{Header, Location};
use gix::odb::pack::Find;
use gix::ObjectId;

/// A tree held in memory and where its pack stores it (if it does).
pub struct Known {
    pub id: ObjectId,
    location: Option<Location>,
    /// A handle that may ask packs for raw entries (gix requires packs to
    /// stay mapped for that); None when replace refs are in use, since a
    /// raw entry would bypass them.
    packs: Option<gix::Repository>,
}

impl Known {
    pub fn new(repo: &gix::Repository, id: ObjectId) -> Known {
        let packs = repo
            .objects
            .store_ref()
            .replacements()
            .next()
            .is_none()
            .then(|| {
                let mut packs = repo.clone();
                packs.objects.prevent_pack_unload();
                packs
            });
        let mut buf = Vec::new();
        let location = packs
            .as_ref()
            .and_then(|p| p.objects.location_by_oid(&id, &mut buf).ok().flatten());
        Known {
            id,
            location,
            packs,
        }
    }

    /// The raw data of tree `id` when the pack stores it as one delta
    /// against this tree, whose raw data is `base`.
    pub fn delta_of(&self, id: ObjectId, base: &[u8]) -> Option<Vec<u8>> {
        let packs = self.packs.as_ref()?;
        let mut buf = Vec::new();
        let at = packs.objects.location_by_oid(&id, &mut buf).ok()??;
        let entry = packs.objects.entry_by_location(&at)?;
        let header = gix::odb::pack::data::Entry::from_bytes(
            &entry.data,
            at.pack_offset,
            packs.object_hash(),
        )
        .ok()?;
        let against_us = match header.header {
            Header::OfsDelta { base_distance } => self.location.as_ref().is_some_and(|l| {
                l.pack_id == at.pack_id
                    && header.checked_base_pack_offset(base_distance) == Some(l.pack_offset)
            }),
            Header::RefDelta { base_id } => base_id == self.id,
            _ => false,
        };
        if !against_us {
            return None;
        }
        let size = usize::try_from(header.decompressed_size).ok()?;
        // A delta is never larger than the object it builds plus its header.
        if size > base.len() + (1 << 20) {
            return None;
        }
        let mut delta = vec![0; size];
        let compressed = entry.data.get(header.header_size()..)?;
        let (_, _, produced) = gix::zlib::Inflate::default()
            .once(compressed, &mut delta)
            .ok()?;
        (produced == size).then_some(())?;
        apply(base, &delta)
    }
}

/// A size in git's delta header: 7 bits a byte, least significant first.
fn varint(d: &[u8], at: &mut usize) -> Option<usize> {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let b = *d.get(*at)?;
        *at += 1;
        v |= usize::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Apply a git delta (source size, target size, then copy and insert
/// instructions) to `base`; None when it is malformed or not for `base`.
pub fn apply(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    if varint(delta, &mut at)? != base.len() {
        return None;
    }
    let size = varint(delta, &mut at)?;
    // The target size is the delta's word: reserve no more than is plausible.
    // Copies may repeat the base's bytes (a new tree entry copies its mode
    // and object id from others), so the target can outgrow the base plus
    // the delta; twice the base covers that without trusting a huge word.
    let mut out =
        Vec::with_capacity(size.min(base.len().saturating_mul(2).saturating_add(delta.len())));
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            // Which bytes of the offset (4) and size (3) follow, least first.
            let mut field = |bits: u8, bytes: usize| -> Option<usize> {
                let mut v = 0usize;
                for i in 0..bytes {
                    if bits & (1 << i) != 0 {
                        v |= usize::from(*delta.get(at)?) << (8 * i);
                        at += 1;
                    }
                }
                Some(v)
            };
            let offset = field(op & 0x0f, 4)?;
            let mut len = field((op >> 4) & 0x07, 3)?;
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(offset..offset.checked_add(len)?)?);
        } else if op != 0 {
            let n = usize::from(op);
            out.extend_from_slice(delta.get(at..at + n)?);
            at += n;
        } else {
            return None;
        }
        if out.len() > size {
            return None;
        }
    }
    (out.len() == size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str], input: &str) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn trees_rebuilt_from_pack_deltas_are_the_trees_git_stores() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"], "");
        // Like the benchmark: main with 300 changesets, 20 branches each
        // adding one (fast-import stores their trees as deltas of main's).
        let who = "committer t <t@example.invalid> 1700000000 +0000";
        let mut stream = format!(
            "blob\nmark :1\ndata 2\nx\ncommit refs/heads/main\nmark :2\n{who}\ndata 1\nm\n"
        );
        for i in 0..300 {
            stream.push_str(&format!("M 100644 :1 cs/c{i:03}.md\n"));
        }
        stream.push('\n');
        for b in 0..20 {
            stream.push_str(&format!(
                "commit refs/heads/b{b}\n{who}\ndata 1\nb\nfrom :2\nM 100644 :1 cs/lane-{b}.md\n\n"
            ));
        }
        git(
            d,
            &["-c", "fastimport.unpackLimit=0", "fast-import", "--quiet"],
            &stream,
        );
        let repo = gix::open(d).unwrap();
        let tree_at =
            |rev: &str| ObjectId::from_hex(git(d, &["rev-parse", rev], "").as_bytes()).unwrap();
        let base = tree_at("main:cs");
        let base_data = repo.find_tree(base).unwrap().data.clone();
        let known = Known::new(&repo, base);
        for b in 0..20 {
            let id = tree_at(&format!("b{b}:cs"));
            let rebuilt = known
                .delta_of(id, &base_data)
                .expect("a delta of main's tree");
            assert_eq!(rebuilt, repo.find_tree(id).unwrap().data, "b{b}");
        }
        // The base itself is no delta of itself; against other data, or
        // for a loose tree, nothing is rebuilt.
        assert!(known.delta_of(base, &base_data).is_none());
        let other = tree_at("b1:cs");
        assert!(known.delta_of(other, b"not the base").is_none());
        let loose = git(
            d,
            &["mktree", "--missing"],
            "100644 blob d8f8d46b4e5fb5c0b8a5ca8c0e6e4d5d3f1e8f1b\tz.md\n",
        );
        let loose = ObjectId::from_hex(loose.as_bytes()).unwrap();
        assert!(known.delta_of(loose, &base_data).is_none());
    }

    #[test]
    fn deltas_apply_and_bad_ones_are_refused() {
        let base = b"0123456789abcdef";
        // source 16, target 9: copy 4 bytes at offset 10, insert "XY", copy 3 at 0.
        let delta = [16, 9, 0x91, 10, 4, 2, b'X', b'Y', 0x90, 3];
        assert_eq!(apply(base, &delta).as_deref(), Some(&b"abcdXY012"[..]));
        // Another source size, a copy past the base, a short insert, a
        // wrong target size, the reserved opcode: refused.
        assert!(apply(b"short", &delta).is_none());
        assert!(apply(base, &[16, 4, 0x91, 14, 4]).is_none());
        assert!(apply(base, &[16, 4, 4, b'a']).is_none());
        assert!(apply(base, &[16, 5, 0x90, 4]).is_none());
        assert!(apply(base, &[16, 1, 0]).is_none());
        // Two-byte offsets and sizes; size 0 means 0x10000.
        let big: Vec<u8> = (0..0x20000u32).map(|i| i as u8).collect();
        let delta = [0x80, 0x80, 0x08, 0x80, 0x80, 0x04, 0x82, 0x01];
        let out = apply(&big, &delta).unwrap();
        assert_eq!(out, &big[0x100..0x10100]);
    }

    #[test]
    fn a_target_longer_than_base_and_delta_is_built_without_growing() {
        // A lane's changeset tree is main's plus one entry whose mode and
        // object id are copied from main's: the target (84,076 bytes in the
        // hook benchmark) outgrows the base plus the delta (84,037 + 26), and
        // a buffer reserved for those grew once more, copying the whole tree
        // whenever the allocator could not extend it in place.
        let base = b"0123456789abcdef";
        // source 16, target 34: the base copied twice, then "XY" inserted, in
        // 9 bytes of delta (16 + 9 < 34).
        let delta = [16, 34, 0x90, 16, 0x90, 16, 2, b'X', b'Y'];
        let out = apply(base, &delta).unwrap();
        assert_eq!(out, b"0123456789abcdef0123456789abcdefXY");
        assert_eq!(out.capacity(), out.len());
    }
}
