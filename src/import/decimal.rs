//! Plain decimal numbers (`123`, `-4.25`) to `f64` without the general float parser.
//!
//! Profiler exports are mostly millions of such numbers (ncu's raw page, trace durations),
//! and the general parser's generality costs most of their import time. A number whose digits
//! fit in 53 bits and that has at most 22 digits after the point is exact by Clinger's fast
//! path: the digits and the power of ten are both exact `f64`s, and one IEEE division rounds
//! correctly. Anything else (exponents, longer digit strings) is left to the caller's
//! general parser, so results are the same bit for bit.

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value of an optional `-`, digits and at most one `.`, when the fast path is exact;
/// `None` for any other text, and for numbers the caller must hand to the general parser.
#[inline]
pub fn parse_plain(text: &[u8]) -> Option<f64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
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
    let scale = fraction.unwrap_or(0);
    if !seen_digit || mantissa > 1 << 53 || scale >= POW10.len() {
        return None;
    }
    let value = mantissa as f64 / POW10[scale];
    Some(if negative { -value } else { value })
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
                assert!(
                    general.is_none() || int_digits + frac_digits > 15,
                    "{text} left to the general parser"
                );
            }
        }
    }

    #[test]
    fn other_text_is_left_to_the_caller() {
        for text in [
            "", "-", ".", "1e5", "1.2.3", "+1", "1,234", "n/a", "NaN", " 1",
        ] {
            assert_eq!(parse_plain(text.as_bytes()), None, "{text:?}");
        }
        assert_eq!(
            parse_plain(b"-0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(parse_plain(b"12345.67"), Some(12345.67));
        assert_eq!(parse_plain(b"1700000000012.5"), Some(1700000000012.5));
        assert_eq!(parse_plain(b"0.000001"), Some(1e-6));
    }
}
