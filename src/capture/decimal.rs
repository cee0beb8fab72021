//! Plain decimal numbers (`123`, `-4.25`) to `f64` without the general float parser.
//!
//! Profiler exports are mostly millions of such numbers (ncu's raw page, trace durations),
//! and the general parser's generality costs most of their import time. A number whose digits
//! fit in 53 bits and that has at most 22 digits after the point is exact by Clinger's fast
//! path: the digits and the power of ten are both exact `f64`s, and one IEEE division rounds
//! correctly. Anything else (exponents, longer digit strings) is left to the caller's
//! general parser, so results are the same bit for bit.

use super::bytes::bytes_equal_to;

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value of an optional `-`, digits and at most one `.`, when the fast path is exact;
/// `None` for any other text, and for numbers the caller must hand to the general parser.
#[inline]
pub fn parse_plain(text: &[u8]) -> Option<f64> {
    parse_plain_scaled(text, 0)
}

/// [`parse_plain`] of the number times 10^`exp10`, with the decimal point moved in the text
/// before the one rounding: `2.026` microseconds read as nanoseconds (`exp10` 3) is exactly
/// 2026, where `2.026 * 1000.0` is 2025.9999999999998. `None` where the fast path is not
/// exact; the caller then parses and multiplies.
#[inline]
pub fn parse_plain_scaled(text: &[u8], exp10: i32) -> Option<f64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if let Some((mantissa, fraction)) = short_decimal_digits(digits) {
        return scaled(negative, mantissa, exp10, fraction);
    }
    parse_plain_scaled_long(negative, digits, exp10)
}

/// The digits of an unsigned plain decimal of at most 19 bytes (digits and at most one `.`)
/// as one integer, and how many of them follow the point: `12.50` is (1250, 2). `None` for any
/// other text, and for longer text, whose digits might not fit. Most numbers of a profiler's
/// export are this short, so their digits cannot overflow a `u64`; up to 8 bytes (most of an
/// ncu raw page's cells) are read as one word ([`eight_byte_decimal`]), without a branch per
/// digit.
#[inline]
pub(crate) fn short_decimal_digits(digits: &[u8]) -> Option<(u64, usize)> {
    match digits.len() {
        1..=8 => eight_byte_decimal(digits),
        9..=19 => decimal_digits_bytewise(digits),
        _ => None,
    }
}

/// [`short_decimal_digits`] of 1 to 8 bytes, as one word: the text right-aligned behind `0`s
/// (which leave the value as it is), the point taken out by moving the digits before it one
/// byte along, all eight bytes checked to be digits at once, and the digits combined by three
/// multiplications ([`eight_digits`]). The same answers as [`decimal_digits_bytewise`];
/// measured on numbers of an ncu raw page's shapes, a quarter less time per number. (A
/// 128-bit word for up to 16 bytes was slower than the byte loop: its shifts by a variable
/// amount cost more than the loop's branches.)
#[inline]
fn eight_byte_decimal(digits: &[u8]) -> Option<(u64, usize)> {
    aligned_decimal(right_aligned(digits), digits.len())
}

/// [`parse_plain_scaled`] of the unsigned number in the first `len` (1 to 8) bytes of `word`
/// (little-endian: the first byte the lowest), for a caller that has loaded the bytes already:
/// the same answer as `parse_plain_scaled` of those bytes where it is `Some`; `None` where the
/// caller must use `parse_plain_scaled` on the text (a sign, spaces, anything but digits and
/// one point).
#[inline(always)]
pub(crate) fn parse_unsigned_in_word(word: u64, len: usize, exp10: i32) -> Option<f64> {
    debug_assert!((1..=8).contains(&len));
    let shift = 8 * (8 - len as u32);
    let aligned = (word << shift) | ASCII_ZEROS.checked_shr(8 * len as u32).unwrap_or(0);
    let (mantissa, fraction) = aligned_decimal(aligned, len)?;
    scaled(false, mantissa, exp10, fraction)
}

/// [`eight_byte_decimal`] of a word that holds its `len` bytes right-aligned behind `0`s.
#[inline(always)]
fn aligned_decimal(word: u64, len: usize) -> Option<(u64, usize)> {
    const HIGH_NIBBLES: u64 = u64::from_le_bytes([0xF0; 8]);
    const SIXES: u64 = u64::from_le_bytes([6; 8]);
    // Only bits above the first point's can be wrong, and only the first is used.
    let dots = bytes_equal_to(word, b'.');
    let (word, fraction) = if dots == 0 {
        (word, 0)
    } else {
        // The first point's byte: the digits before it move one byte towards the end, and a
        // `0` comes in at the front. A second point stays, and fails the digit test.
        let at = dots.trailing_zeros() / 8;
        let before = (1u64 << (8 * at)) - 1;
        let point = 0xFFu64 << (8 * at);
        let moved = ((word & before) << 8) | (word & !(before | point)) | u64::from(b'0');
        (moved, 7 - at as usize)
    };
    // Every byte a digit: its high nibble is 3, and adding 6 to its low one does not carry.
    let all_digits = word & HIGH_NIBBLES == ASCII_ZEROS
        && word.wrapping_add(SIXES) & HIGH_NIBBLES == ASCII_ZEROS;
    // Text that is one `.` alone holds no digit.
    if !all_digits || (dots != 0 && len == 1) {
        return None;
    }
    Some((eight_digits(word - ASCII_ZEROS), fraction))
}

/// Each of the eight bytes of a word equal to `b'0'`.
const ASCII_ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);

/// 1 to 8 bytes as a word with byte `8 - len + i` holding `digits[i]` and `0`s before them,
/// read in two overlapping loads (or three bytes) rather than a byte at a time.
#[inline(always)]
fn right_aligned(digits: &[u8]) -> u64 {
    let len = digits.len();
    let pad = 8 - len;
    let zeros = ASCII_ZEROS.checked_shr(8 * len as u32).unwrap_or(0);
    let body = if len >= 4 {
        let first = u32::from_le_bytes(digits[..4].try_into().expect("four bytes"));
        let last = u32::from_le_bytes(digits[len - 4..].try_into().expect("four bytes"));
        (u64::from(last) << 32) | (u64::from(first) << (8 * pad))
    } else {
        (u64::from(digits[len - 1]) << 56)
            | (u64::from(digits[len / 2]) << (8 * (pad + len / 2)))
            | (u64::from(digits[0]) << (8 * pad))
    };
    body | zeros
}

/// The value of eight digit values (0 to 9, one a byte, the most significant in the lowest
/// byte): pairs, then fours, then the eight, each by one multiplication.
#[inline(always)]
fn eight_digits(values: u64) -> u64 {
    const LOW_BYTES: u64 = 0x0000_00FF_0000_00FF;
    const HUNDREDS: u64 = 100 + (1_000_000 << 32);
    const UNITS: u64 = 1 + (10_000 << 32);
    let pairs = values.wrapping_mul(10).wrapping_add(values >> 8);
    let eight = (pairs & LOW_BYTES)
        .wrapping_mul(HUNDREDS)
        .wrapping_add(((pairs >> 16) & LOW_BYTES).wrapping_mul(UNITS))
        >> 32;
    u64::from(eight as u32)
}

/// [`short_decimal_digits`] a byte at a time: the integer digits, then those after the point,
/// in two tight loops. For 9 to 19 bytes, and the reference of the word-at-a-time reading.
fn decimal_digits_bytewise(digits: &[u8]) -> Option<(u64, usize)> {
    if digits.len() > 19 {
        return None;
    }
    let (whole, mantissa) = digit_run(digits, 0);
    let (point, (fraction, mantissa)) = match digits.get(whole) {
        Some(b'.') => (1, digit_run(&digits[whole + 1..], mantissa)),
        _ => (0, (0, mantissa)),
    };
    (whole + point + fraction == digits.len() && (1..=19).contains(&(whole + fraction)))
        .then_some((mantissa, fraction))
}

/// How many ASCII digits `bytes` starts with, and `mantissa` with them appended. The caller
/// bounds the length, so that the mantissa cannot overflow.
#[inline]
fn digit_run(bytes: &[u8], mut mantissa: u64) -> (usize, u64) {
    let mut n = 0;
    while let Some(d) = bytes
        .get(n)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|d| *d < 10)
    {
        mantissa = mantissa * 10 + u64::from(d);
        n += 1;
    }
    (n, mantissa)
}

/// The value of `mantissa` × 10^(`exp10` − `fraction`), negated where `negative`, when
/// Clinger's fast path makes it exact.
#[inline]
fn scaled(negative: bool, mantissa: u64, exp10: i32, fraction: usize) -> Option<f64> {
    if mantissa > 1 << 53 {
        return None;
    }
    // The digits and the power of ten are exact, so one multiplication or division rounds
    // correctly (Clinger's fast path).
    let exponent = exp10 - i32::try_from(fraction).ok()?;
    let power = POW10.get(exponent.unsigned_abs() as usize)?;
    let value = if exponent >= 0 {
        mantissa as f64 * power
    } else {
        mantissa as f64 / power
    };
    Some(if negative { -value } else { value })
}

/// [`parse_plain_scaled`] of digits that may be more than 19 (leading zeros, a long
/// fraction): significant digits counted one by one, so the mantissa cannot overflow.
fn parse_plain_scaled_long(negative: bool, digits: &[u8], exp10: i32) -> Option<f64> {
    let mut mantissa: u64 = 0;
    let mut significant = 0u32;
    let mut seen_digit = false;
    let mut fraction: Option<usize> = None;
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                seen_digit = true;
                if mantissa > 0 || b != b'0' {
                    significant += 1;
                    if significant > 19 {
                        return None; // could overflow u64: the general parser decides
                    }
                }
                mantissa = mantissa * 10 + u64::from(b - b'0');
                if let Some(f) = fraction.as_mut() {
                    *f += 1;
                }
            }
            b'.' if fraction.is_none() => fraction = Some(0),
            _ => return None,
        }
    }
    if !seen_digit {
        return None;
    }
    scaled(negative, mantissa, exp10, fraction.unwrap_or(0))
}

/// `k` when `factor` is the `f64` nearest 10^k for some `k` from -22 to 22 (a unit prefix), for
/// [`parse_plain_scaled`].
pub fn power_of_ten(factor: f64) -> Option<i32> {
    if let Some(k) = POW10.iter().position(|&p| p == factor) {
        return Some(k as i32);
    }
    const NEGATIVE: [f64; 22] = [
        1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14,
        1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22,
    ];
    NEGATIVE
        .iter()
        .position(|&p| p == factor)
        .map(|k| -(k as i32) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_decimals_match_the_general_parser_bit_for_bit() {
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..200_000 {
            let int_digits = rng.usize(0..17);
            let frac_digits = rng.usize(0..8);
            let mut text = String::new();
            if rng.bool() {
                text.push('-');
            }
            for _ in 0..int_digits {
                text.push(char::from(b'0' + rng.u8(0..10)));
            }
            if frac_digits > 0 || rng.u8(0..4) == 0 {
                text.push('.');
                for _ in 0..frac_digits {
                    text.push(char::from(b'0' + rng.u8(0..10)));
                }
            }
            let fast = parse_plain(text.as_bytes());
            let general = text.parse::<f64>().ok();
            if let Some(v) = fast {
                assert_eq!(Some(v.to_bits()), general.map(f64::to_bits), "{text}");
            } else {
                let left = general.is_none() || int_digits + frac_digits > 15;
                assert!(left, "{text} left to the general parser");
            }
        }
    }

    #[test]
    fn a_unit_prefix_moves_the_decimal_point_before_the_rounding() {
        assert_ne!(2.026 * 1e3, 2026.0);
        assert_eq!(parse_plain_scaled(b"2.026", 3), Some(2026.0));
        assert_eq!(parse_plain_scaled(b"1.10", 3), Some(1100.0));
        assert_eq!(parse_plain_scaled(b"-4.012", 3), Some(-4012.0));
        assert_eq!(parse_plain_scaled(b"123456", -3), Some(123.456));
        assert_eq!(parse_plain_scaled(b"1.5", 22), Some(1.5e22));
        // Beyond the exact powers the caller multiplies.
        assert_eq!(parse_plain_scaled(b"1", 23), None);
        // Long digit strings take the counted path, which cannot overflow.
        assert_eq!(parse_plain(b"99999999999999999999"), None);
        assert_eq!(parse_plain(b"00000000000000000000000012.5"), Some(12.5));
        assert_eq!(parse_plain(b"9007199254740992"), Some(9007199254740992.0));
        assert_eq!(parse_plain(b"9007199254740993"), None);
        for text in ["", "-", ".", "-.", "1.2.3", "1e5", "+1", " 1", "1 "] {
            assert_eq!(parse_plain(text.as_bytes()), None, "{text:?}");
        }
        assert_eq!(parse_plain(b"5."), Some(5.0));
        assert_eq!(parse_plain(b"-.25"), Some(-0.25));
        let mut rng = fastrand::Rng::with_seed(9);
        for _ in 0..100_000 {
            let text = format!("{}.{:03}", rng.u32(0..100_000), rng.u32(0..1000));
            let k = rng.i32(-9..=9);
            let (digits, fraction) = text.split_once('.').unwrap();
            let general: f64 = format!("{digits}{fraction}e{}", k - 3).parse().unwrap();
            assert_eq!(
                parse_plain_scaled(text.as_bytes(), k).map(f64::to_bits),
                Some(general.to_bits()),
                "{text} e{k}"
            );
        }
        for k in -22..=22 {
            assert_eq!(power_of_ten(format!("1e{k}").parse().unwrap()), Some(k));
        }
        assert_eq!(power_of_ten(2.5), None);
        assert_eq!(power_of_ten(1e-6 * 1e9), Some(3));
    }

    #[test]
    fn other_text_is_left_to_the_caller() {
        for text in [
            "", "-", ".", "1e5", "1.2.3", "+1", "1,234", "n/a", "NaN", " 1",
        ] {
            assert_eq!(parse_plain(text.as_bytes()), None, "{text:?}");
        }
        let negative_zero = parse_plain(b"-0").map(f64::to_bits);
        assert_eq!(negative_zero, Some((-0.0f64).to_bits()));
        assert_eq!(parse_plain(b"12345.67"), Some(12345.67));
        assert_eq!(parse_plain(b"1700000000012.5"), Some(1700000000012.5));
        assert_eq!(parse_plain(b"0.000001"), Some(1e-6));
    }

    #[test]
    fn the_word_at_a_time_reading_is_the_bytewise_one() {
        let mut rng = fastrand::Rng::with_seed(16);
        let alphabet = b"0123456789.0123456789.-+e /:9";
        let random = (0..300_000).map(|_| {
            let len = rng.usize(0..21);
            (0..len)
                .map(|_| match rng.u8(0..6) {
                    0 => alphabet[rng.usize(..alphabet.len())],
                    1 => rng.u8(..),
                    _ => b'0' + rng.u8(0..10),
                })
                .collect::<Vec<u8>>()
        });
        let fixed = [
            "0", ".", "..", "5.", ".5", "1.2.3", "99999999", "9999999.", ".9999999", "9999.999",
            "1234567.", "12345678", "123", "12",
        ];
        for text in fixed.iter().map(|t| t.as_bytes().to_vec()).chain(random) {
            assert_eq!(
                short_decimal_digits(&text),
                decimal_digits_bytewise(&text),
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
        assert_eq!(short_decimal_digits(b"12.50"), Some((1250, 2)));
        assert_eq!(short_decimal_digits(b"99999999"), Some((99_999_999, 0)));
        assert_eq!(short_decimal_digits(b".0000001"), Some((1, 7)));
    }
}
