//! Byte searches for the importers' hot loops, a machine word at a time.
//!
//! The text kgate scans is mostly short fields (a trace's keys, an ncu cell's number) that end
//! within a few bytes. A loop per byte pays a branch for each, and a vectorised search
//! (`memchr`) pays its set-up before it finds anything; eight bytes tested as one `u64` find
//! such an end in one or two steps. Longer stretches are left to `memchr`.

/// The high bit of each byte of `word` that equals `byte`. A bit can be set wrongly only above
/// (after) a byte that truly matches, so the lowest set bit is always the first match.
#[inline(always)]
pub(crate) fn bytes_equal_to(word: u64, byte: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let zero_where_equal = word ^ (ONES * u64::from(byte));
    zero_where_equal.wrapping_sub(ONES) & !zero_where_equal & (ONES << 7)
}

/// The eight bytes of `bytes` from `at` as a little-endian word (the first the lowest), when
/// eight are there.
#[inline(always)]
pub(crate) fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let eight = bytes.get(at..at + 8)?;
    Some(u64::from_le_bytes(
        eight.try_into().expect("an eight-byte slice"),
    ))
}

/// The index of the first `byte` in `bytes`: the first 32 bytes a word at a time, `memchr`
/// past them and for the last few.
#[inline]
pub(crate) fn find(byte: u8, bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < 32
        && let Some(word) = word_at(bytes, i)
    {
        let found = bytes_equal_to(word, byte);
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    memchr::memchr(byte, &bytes[i..]).map(|k| i + k)
}

/// Random text for the tests of word-at-a-time searches: `filler` bytes, and one in `one_in`
/// of them from `tricky` (the bytes searched for, and those a word test could confuse with
/// them).
#[cfg(test)]
pub(crate) fn random_text(
    rng: &mut fastrand::Rng,
    len: usize,
    tricky: &[u8],
    one_in: u8,
    filler: std::ops::RangeInclusive<u8>,
) -> Vec<u8> {
    (0..len)
        .map(|_| match rng.u8(..one_in) {
            0 => tricky[rng.usize(..tricky.len())],
            _ => rng.u8(filler.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_byte_whatever_surrounds_it() {
        let mut rng = fastrand::Rng::with_seed(8);
        // Bytes one bit away from the target, and 0x00 and 0xFF, which a word test can
        // confuse with it.
        let tricky = [b'"', b'"' | 0x80, b'"' ^ 1, b'"' - 1, 0x00, 0xFF, b','];
        for _ in 0..20_000 {
            let len = rng.usize(0..80);
            let bytes = random_text(&mut rng, len, &tricky, 4, b'0'..=b'9');
            for start in 0..=len {
                let rest = &bytes[start..];
                let expected = rest.iter().position(|&b| b == b'"');
                assert_eq!(find(b'"', rest), expected, "{rest:?}");
            }
        }
    }

    #[test]
    fn a_match_sets_only_its_own_byte_and_none_below_it() {
        for byte in [0u8, 1, b'"', b'\\', 0x7F, 0x80, 0xFF] {
            for at in 0..8 {
                for filler in [0u8, 1, byte ^ 0x80, byte.wrapping_sub(1), 0xFF] {
                    if filler == byte {
                        continue;
                    }
                    let mut eight = [filler; 8];
                    eight[at] = byte;
                    let found = bytes_equal_to(u64::from_le_bytes(eight), byte);
                    assert_eq!(found.trailing_zeros() / 8, at as u32, "{byte:#x} at {at}");
                }
            }
        }
    }
}
