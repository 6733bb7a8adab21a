//! The small pieces the name cache is built from: bitmaps over the name
//! table, and a fast hasher for its maps.

/// A fast non-cryptographic hasher (the rustc "Fx" hash) for the name
/// table and the object-id maps: building a cache hashes every name of
/// every lane's directory, and loading one hashes every id it holds.
#[derive(Default, Clone, Copy)]
pub struct FxBuild;

pub struct Fx(u64);

impl std::hash::BuildHasher for FxBuild {
    type Hasher = Fx;
    fn build_hasher(&self) -> Fx {
        Fx(0)
    }
}

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Is bit `i` set? Bits beyond the words are clear.
pub fn has_bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// Toggle bit `i`, growing the bitmap as needed.
pub fn flip(bits: &mut Vec<u64>, i: usize) {
    if bits.len() <= i / 64 {
        bits.resize(i / 64 + 1, 0);
    }
    bits[i / 64] ^= 1 << (i % 64);
}

/// Set bit `i`.
pub fn set(bits: &mut Vec<u64>, i: usize) {
    if !has_bit(bits, i) {
        flip(bits, i);
    }
}

/// Clear bit `i`.
pub fn clear(bits: &mut Vec<u64>, i: usize) {
    if has_bit(bits, i) {
        flip(bits, i);
    }
}

/// The positions of the set bits, ascending.
pub fn ones(bits: &[u64]) -> impl Iterator<Item = usize> + '_ {
    bits.iter().enumerate().flat_map(|(w, word)| {
        let mut x = *word;
        std::iter::from_fn(move || {
            (x != 0).then(|| {
                let b = x.trailing_zeros() as usize;
                x &= x - 1;
                w * 64 + b
            })
        })
    })
}

/// Whether a bit at or beyond `n` is set (a bitmap that does not fit a
/// table of `n` names).
pub fn any_beyond(bits: &[u64], n: usize) -> bool {
    bits.iter()
        .enumerate()
        .rev()
        .find(|(_, w)| **w != 0)
        .is_some_and(|(i, w)| i * 64 + 63 - w.leading_zeros() as usize >= n)
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hasher};

    use super::*;

    #[test]
    fn bitmaps() {
        let mut b = Vec::new();
        assert!(!has_bit(&b, 200));
        flip(&mut b, 130);
        assert_eq!(b.len(), 3);
        assert!(has_bit(&b, 130));
        set(&mut b, 130);
        set(&mut b, 0);
        set(&mut b, 63);
        assert_eq!(ones(&b).collect::<Vec<_>>(), vec![0, 63, 130]);
        clear(&mut b, 63);
        clear(&mut b, 64);
        assert_eq!(ones(&b).collect::<Vec<_>>(), vec![0, 130]);
        assert!(any_beyond(&b, 130));
        assert!(!any_beyond(&b, 131));
        assert!(!any_beyond(&[0, 0], 0));
    }

    #[test]
    fn the_hash_depends_on_every_byte() {
        let hash = |bytes: &[u8]| {
            let mut h = FxBuild.build_hasher();
            h.write(bytes);
            h.finish()
        };
        assert_eq!(hash(b"abc"), hash(b"abc"));
        assert_ne!(hash(b"abcdefghi"), hash(b"abcdefghj"));
        assert_ne!(hash(b"a"), hash(b"b"));
    }
}
