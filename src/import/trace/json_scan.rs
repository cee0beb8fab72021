//! A pull scanner over JSON text in a byte buffer, for the trace imports' hot loop.
//!
//! A Chrome trace is hundreds of megabytes of small event objects, of which kgate needs a few
//! fields. Building values for every event (a DOM or a serde visitor per field) costs most of the
//! time; this scanner instead walks the bytes once, hands out string contents as slices of the
//! buffer, parses only the numbers asked for, and skips the rest by counting brackets outside
//! strings. Skipped values are checked for closed strings and as many closing brackets as opening
//! ones, not for the rest of JSON's grammar. The buffer may end anywhere: [`Stop::Incomplete`]
//! tells the caller to read more and scan the value again.

use std::borrow::Cow;

use crate::capture::bytes::{bytes_equal_to, word_at};

/// Why scanning stopped short of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The buffer ends inside the value: read more input, then scan it again.
    Incomplete,
    /// The text is not JSON here: what was expected, and the buffer offset where.
    Invalid { expected: &'static str, at: usize },
}

/// A string's contents as they appear between its quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawStr<'a> {
    pub bytes: &'a [u8],
    /// Whether it holds a backslash escape (then its text must be decoded).
    pub escaped: bool,
}

impl<'a> RawStr<'a> {
    /// The string's text, escapes resolved; borrowed when there are none.
    pub fn text(&self) -> Result<Cow<'a, str>, &'static str> {
        if !self.escaped {
            return std::str::from_utf8(self.bytes)
                .map(Cow::Borrowed)
                .map_err(|_| "UTF-8 text");
        }
        // Escapes are rare in traces: let serde_json resolve them.
        let mut quoted = Vec::with_capacity(self.bytes.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(self.bytes);
        quoted.push(b'"');
        serde_json::from_slice(&quoted)
            .map(Cow::Owned)
            .map_err(|_| "a valid JSON string escape")
    }
}

/// What a [`Value`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// No value (a field the object did not have).
    #[default]
    Absent,
    Str,
    /// A string holding a backslash escape.
    EscapedStr,
    Num,
    True,
    False,
    Null,
    /// An object or array.
    Container,
}

/// A value as it stands in the buffer, read no further than its extent: numbers are parsed
/// and strings decoded only when asked for. A flat struct (not an enum with payloads) so
/// that values copy with plain aligned moves in the hot loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Value<'a> {
    pub kind: Kind,
    /// A string's contents without its quotes, a number's text, a container with its
    /// brackets, or a literal's word.
    pub bytes: &'a [u8],
    /// Where the value starts in the buffer.
    pub at: usize,
}

impl<'a> Value<'a> {
    pub fn is_present(&self) -> bool {
        self.kind != Kind::Absent
    }

    pub fn is_str(&self) -> bool {
        matches!(self.kind, Kind::Str | Kind::EscapedStr)
    }

    /// A string value's contents.
    pub fn raw_str(&self) -> Option<RawStr<'a>> {
        self.is_str().then_some(RawStr {
            bytes: self.bytes,
            escaped: self.kind == Kind::EscapedStr,
        })
    }

    /// A number, also when written as a string (XProf writes big integers and NaN that way).
    /// Other values read as absent; a malformed number is an error.
    pub fn number(&self) -> Result<Option<f64>, Stop> {
        match self.kind {
            Kind::Num => parse_number(self.bytes).map(Some).ok_or(Stop::Invalid {
                expected: "a JSON number",
                at: self.at,
            }),
            Kind::Str => Ok(std::str::from_utf8(self.bytes)
                .ok()
                .and_then(|t| t.trim().parse().ok())),
            _ => Ok(None),
        }
    }

    /// A number (also when written as a string) times 10^`digits`, rounded to the nearest
    /// integer, computed from the decimal text: exact where an `f64` is not. Kineto writes
    /// epoch microseconds with three decimals (`1764600000123456.789`), which an `f64` holds
    /// only to a quarter of a microsecond; `fixed(6)` gives those as integer picoseconds.
    /// Other values, and strings that are not numbers, read as absent.
    pub fn fixed(&self, digits: u32) -> Result<Option<i128>, Stop> {
        match self.kind {
            Kind::Num => fixed_point(self.bytes, digits)
                .map(Some)
                .ok_or(Stop::Invalid {
                    expected: "a JSON number",
                    at: self.at,
                }),
            Kind::Str => Ok(fixed_point(self.bytes.trim_ascii(), digits)),
            _ => Ok(None),
        }
    }

    /// A string's text, or a number's as written; absent and `null` read as empty. `None`
    /// for a boolean or a container, or a string that does not decode.
    pub fn text(&self) -> Option<Cow<'a, str>> {
        match self.kind {
            Kind::Str | Kind::EscapedStr => self.raw_str()?.text().ok(),
            // A number's text is ASCII.
            Kind::Num => std::str::from_utf8(self.bytes).ok().map(Cow::Borrowed),
            Kind::Absent | Kind::Null => Some(Cow::Borrowed("")),
            Kind::True | Kind::False | Kind::Container => None,
        }
    }
}

/// A JSON number's text as an `f64` (a leading `+` is not JSON).
fn parse_number(text: &[u8]) -> Option<f64> {
    if text.first() == Some(&b'+') {
        return None;
    }
    crate::capture::decimal::parse_plain(text)
        .or_else(|| std::str::from_utf8(text).ok()?.parse().ok())
}

/// `text` (an optional `-`, digits, an optional fraction and exponent) times 10^`digits`,
/// rounded half away from zero; `None` when it is not such a number or does not fit.
fn fixed_point(text: &[u8], digits: u32) -> Option<i128> {
    let (negative, rest) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    // A trace's times are plain decimals of at most 19 digits: read as one u64, without an
    // i128 multiplication per digit.
    let scaled = match crate::capture::decimal::short_decimal_digits(rest) {
        Some((mantissa, fraction)) => {
            scale(i128::from(mantissa), i64::from(digits) - fraction as i64)?
        }
        None => fixed_point_general(rest, digits)?,
    };
    Some(if negative { -scaled } else { scaled })
}

/// [`fixed_point`] of an unsigned number of any length, with an exponent or not.
fn fixed_point_general(rest: &[u8], digits: u32) -> Option<i128> {
    const LIMIT: i128 = 10i128.pow(35);
    let (mantissa, exponent) = match rest.iter().position(|&b| b == b'e' || b == b'E') {
        Some(i) => {
            let exp = std::str::from_utf8(&rest[i + 1..]).ok()?;
            let exp = exp.strip_prefix('+').unwrap_or(exp);
            (&rest[..i], exp.parse::<i32>().ok()?)
        }
        None => (rest, 0),
    };
    let mut value: i128 = 0;
    let mut fraction_digits: i32 = 0;
    let mut in_fraction = false;
    let mut seen_digit = false;
    for &b in mantissa {
        match b {
            b'0'..=b'9' => {
                seen_digit = true;
                if value < LIMIT {
                    value = value * 10 + i128::from(b - b'0');
                    if in_fraction {
                        fraction_digits += 1;
                    }
                } else if !in_fraction {
                    return None; // an integer part beyond 10^35
                }
                // Fraction digits beyond 35 significant ones are below any time kgate keeps.
            }
            b'.' if !in_fraction => in_fraction = true,
            _ => return None,
        }
    }
    if !seen_digit {
        return None;
    }
    scale(
        value,
        i64::from(digits) + i64::from(exponent) - i64::from(fraction_digits),
    )
}

/// `value` (not negative) times 10^`shift`, rounded half up; `None` when it does not fit.
fn scale(value: i128, shift: i64) -> Option<i128> {
    /// 10^0 to 10^38, every power of ten an i128 holds.
    const POW10: [i128; 39] = {
        let mut table = [1i128; 39];
        let mut k = 1;
        while k < 39 {
            table[k] = table[k - 1] * 10;
            k += 1;
        }
        table
    };
    if shift >= 0 {
        return value.checked_mul(*POW10.get(usize::try_from(shift).ok()?)?);
    }
    if shift < -38 {
        return Some(0);
    }
    let divisor = POW10[shift.unsigned_abs() as usize];
    // Within u64 the division is one instruction, not a call for 128 bits.
    if let (Ok(v), Ok(d)) = (u64::try_from(value), u64::try_from(divisor))
        && v <= u64::MAX - d / 2
    {
        return Some(i128::from((v + d / 2) / d));
    }
    Some((value + divisor / 2) / divisor)
}

/// Bytes that end a run of uninteresting bytes when skipping a container.
const STRUCTURAL: [bool; 256] = {
    let mut table = [false; 256];
    table[b'"' as usize] = true;
    table[b'{' as usize] = true;
    table[b'}' as usize] = true;
    table[b'[' as usize] = true;
    table[b']' as usize] = true;
    table
};

/// A position in a buffer of JSON text.
pub struct Scanner<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(buf: &'a [u8], pos: usize) -> Scanner<'a> {
        Scanner { buf, pos }
    }

    fn invalid<T>(&self, expected: &'static str) -> Result<T, Stop> {
        Err(Stop::Invalid {
            expected,
            at: self.pos,
        })
    }

    /// The next byte that is not whitespace, left unconsumed.
    #[inline]
    pub fn peek(&mut self) -> Result<u8, Stop> {
        while let Some(&b) = self.buf.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Ok(b);
            }
            self.pos += 1;
        }
        Err(Stop::Incomplete)
    }

    /// Consumes `byte` after any whitespace.
    #[inline]
    pub fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), Stop> {
        if self.peek()? != byte {
            return self.invalid(expected);
        }
        self.pos += 1;
        Ok(())
    }

    /// After an object's member or an array's element: true when another follows (the `,`
    /// is consumed), false at the closing `close` (consumed too).
    #[inline]
    pub fn more(&mut self, close: u8, expected: &'static str) -> Result<bool, Stop> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            b if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => self.invalid(expected),
        }
    }

    /// After an object's `{`: true when a member follows, false (consuming `}`) when empty.
    #[inline]
    pub fn first_member(&mut self) -> Result<bool, Stop> {
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// A member's key and its `:`.
    #[inline]
    pub fn key(&mut self) -> Result<RawStr<'a>, Stop> {
        if self.peek()? != b'"' {
            return self.invalid("a quoted key");
        }
        let key = self.string_after_quote()?;
        self.expect(b':', "`:` after the key")?;
        Ok(key)
    }

    /// A string; the next non-whitespace byte must be its opening quote.
    #[inline]
    pub fn string(&mut self) -> Result<RawStr<'a>, Stop> {
        if self.peek()? != b'"' {
            return self.invalid("a string");
        }
        self.string_after_quote()
    }

    /// The string whose opening quote is at `pos`.
    #[inline]
    fn string_after_quote(&mut self) -> Result<RawStr<'a>, Stop> {
        let start = self.pos + 1;
        let (end, escaped) = string_end(self.buf, start)?;
        self.pos = end + 1;
        Ok(RawStr {
            bytes: &self.buf[start..end],
            escaped,
        })
    }

    /// Any value, scanned to its end.
    #[inline]
    pub fn value(&mut self) -> Result<Value<'a>, Stop> {
        let first = self.peek()?;
        let at = self.pos;
        // Strings and plain numbers, most of a trace's values, are told apart by two tests
        // before the rest go to one `match` (a jump table, an indirect branch): 3 % less CPU
        // time on a trace half counter readings, measured turn by turn.
        if first == b'"' {
            let raw = self.string_after_quote()?;
            let kind = if raw.escaped {
                Kind::EscapedStr
            } else {
                Kind::Str
            };
            return Ok(Value {
                kind,
                bytes: raw.bytes,
                at,
            });
        }
        if first.is_ascii_digit() {
            return self.number(at);
        }
        let (kind, bytes) = match first {
            b'{' | b'[' => {
                self.skip_container()?;
                (Kind::Container, &self.buf[at..self.pos])
            }
            b't' => (Kind::True, self.literal(b"true")?),
            b'f' => (Kind::False, self.literal(b"false")?),
            b'n' => (Kind::Null, self.literal(b"null")?),
            // Not JSON, but what Python's `json.dumps` writes for non-finite floats by default
            // (PyTorch's and JAX's trace writers among its users): read as numbers, so that a
            // reading of NaN is left out with a note rather than failing the whole file.
            b'N' => (Kind::Num, self.literal(b"NaN")?),
            b'I' => (Kind::Num, self.literal(b"Infinity")?),
            b'-' if self.buf.get(at + 1) == Some(&b'I') => {
                self.pos += 1;
                let word = self.literal(b"Infinity")?;
                (Kind::Num, &self.buf[at..at + 1 + word.len()])
            }
            b'-' => return self.number(at),
            _ => return self.invalid("a JSON value"),
        };
        Ok(Value { kind, bytes, at })
    }

    /// The number starting at `at` (the scanner's position), scanned to its end.
    #[inline]
    fn number(&mut self, at: usize) -> Result<Value<'a>, Stop> {
        let rest = &self.buf[at..];
        // A number that touches the end of the buffer is incomplete: inside an event a
        // number is always followed by `,`, `]` or `}`.
        let len = rest
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .ok_or(Stop::Incomplete)?;
        self.pos += len;
        Ok(Value {
            kind: Kind::Num,
            bytes: &rest[..len],
            at,
        })
    }

    /// Skips any value.
    #[inline]
    pub fn skip_value(&mut self) -> Result<(), Stop> {
        self.value().map(drop)
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<&'a [u8], Stop> {
        let rest = &self.buf[self.pos..];
        if rest.len() < word.len() {
            return if word.starts_with(rest) {
                Err(Stop::Incomplete)
            } else {
                self.invalid("a JSON value")
            };
        }
        if &rest[..word.len()] != word {
            return self.invalid("a JSON value");
        }
        let start = self.pos;
        self.pos += word.len();
        Ok(&self.buf[start..self.pos])
    }

    /// Skips the object or array at `pos` by counting brackets outside strings: 64 bytes at
    /// a time with bit masks while no backslash is in sight, byte by byte after one.
    fn skip_container(&mut self) -> Result<(), Stop> {
        let buf = self.buf;
        let mut depth = 0usize;
        let mut i = self.pos;
        // All ones while the previous block ended inside a string.
        let mut inside = 0u64;
        while let Some(block) = buf.get(i..i + 64) {
            let block: &[u8; 64] = block.try_into().expect("a 64-byte slice");
            if eq_mask(block, b'\\') != 0 {
                break;
            }
            // Bits from each opening quote up to (not including) its closing quote.
            let strings = prefix_xor(eq_mask(block, b'"')) ^ inside;
            inside = 0u64.wrapping_sub(strings >> 63);
            let opens = (eq_mask(block, b'{') | eq_mask(block, b'[')) & !strings;
            let closes = (eq_mask(block, b'}') | eq_mask(block, b']')) & !strings;
            let mut brackets = opens | closes;
            while brackets != 0 {
                let k = brackets.trailing_zeros();
                if opens >> k & 1 == 1 {
                    depth += 1;
                } else {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + k as usize + 1;
                        return Ok(());
                    }
                }
                brackets &= brackets - 1;
            }
            i += 64;
        }
        if inside != 0 {
            i = string_end(buf, i)?.0 + 1;
        }
        loop {
            while i < buf.len() && !STRUCTURAL[usize::from(buf[i])] {
                i += 1;
            }
            let Some(&b) = buf.get(i) else {
                return Err(Stop::Incomplete);
            };
            match b {
                b'"' => i = string_end(buf, i + 1)?.0,
                b'{' | b'[' => depth += 1,
                _ => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return Ok(());
                    }
                }
            }
            i += 1;
        }
    }
}

/// Bit `i` set where `block[i] == byte`: SSE2 compares (part of every x86-64 CPU), portable
/// code elsewhere.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn eq_mask(block: &[u8; 64], byte: u8) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let mut mask = 0u64;
    for (lane, bytes) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is enabled at compile time (the cfg above), and the unaligned load
        // reads the 16 bytes of `bytes`, a chunk of exactly that length.
        let bits = unsafe {
            let v = _mm_loadu_si128(bytes.as_ptr().cast::<__m128i>());
            _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(byte as i8)))
        };
        mask |= u64::from(bits as u16) << (16 * lane);
    }
    mask
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn eq_mask(block: &[u8; 64], byte: u8) -> u64 {
    block
        .iter()
        .enumerate()
        .fold(0, |mask, (i, &b)| mask | (u64::from(b == byte) << i))
}

/// Each bit becomes the XOR of itself and all lower bits: set from an odd-numbered quote up
/// to the next one.
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// The index of the closing quote of the string whose contents start at `start`, and
/// whether a backslash escape came before it.
#[inline]
fn string_end(buf: &[u8], start: usize) -> Result<(usize, bool), Stop> {
    let mut i = start;
    // Keys and short names end soon: eight bytes at a time as one word beats both a loop per
    // byte and a vectorised search there. Long strings, an escape and the buffer's last bytes
    // go on below.
    while i - start < 32
        && let Some(word) = word_at(buf, i)
    {
        let found = bytes_equal_to(word, b'"') | bytes_equal_to(word, b'\\');
        if found != 0 {
            let at = i + (found.trailing_zeros() / 8) as usize;
            if buf[at] == b'"' {
                return Ok((at, false));
            }
            i = at;
            break;
        }
        i += 8;
    }
    let mut escaped = false;
    loop {
        match memchr::memchr2(b'"', b'\\', &buf[i..]) {
            None => return Err(Stop::Incomplete),
            Some(k) if buf[i + k] == b'"' => return Ok((i + k, escaped)),
            // A backslash escapes the next byte, whatever it is.
            Some(k) => {
                escaped = true;
                i += k + 2;
                if i > buf.len() {
                    return Err(Stop::Incomplete);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Scanner<'_> {
        Scanner::new(text.as_bytes(), 0)
    }

    #[test]
    fn short_numbers_read_as_the_general_path_reads_them() {
        let mut rng = fastrand::Rng::with_seed(21);
        for _ in 0..200_000 {
            let mut text = String::new();
            if rng.u8(..4) == 0 {
                text.push('-');
            }
            for _ in 0..rng.usize(0..14) {
                text.push(char::from(b'0' + rng.u8(0..10)));
            }
            if rng.bool() {
                text.push('.');
                for _ in 0..rng.usize(0..10) {
                    text.push(char::from(b'0' + rng.u8(0..10)));
                }
            }
            let digits = rng.u32(0..40);
            let (negative, rest) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.as_str()),
            };
            let general =
                fixed_point_general(rest.as_bytes(), digits).map(|v| if negative { -v } else { v });
            let fast = fixed_point(text.as_bytes(), digits);
            assert_eq!(fast, general, "{text} at {digits}");
            // And as by hand: the point moved `digits` places, rounded on the next digit.
            let (whole, fraction) = rest.split_once('.').unwrap_or((rest, ""));
            if digits < 25 && !(whole.is_empty() && fraction.is_empty()) {
                let d = digits as usize;
                let moved: String = whole
                    .chars()
                    .chain(fraction.chars().chain(std::iter::repeat('0')).take(d))
                    .collect();
                let mut by_hand: i128 = if moved.is_empty() {
                    0
                } else {
                    moved.parse().unwrap()
                };
                if fraction.as_bytes().get(d).is_some_and(|&b| b >= b'5') {
                    by_hand += 1;
                }
                let by_hand = if negative { -by_hand } else { by_hand };
                assert_eq!(fast, Some(by_hand), "{text} at {digits}");
            }
        }
    }

    #[test]
    fn fixed_point_is_exact_at_epoch_scale() {
        // 1764600000123456.789 µs: an f64 holds it only to 0.25 µs.
        for (text, digits, fixed) in [
            (
                "1764600000123456.789",
                6,
                Some(1_764_600_000_123_456_789_000),
            ),
            ("14.109999999999999", 3, Some(14_110)),
            ("-2.5", 0, Some(-3)),
            ("1.5e3", 0, Some(1_500)),
            ("25E-1", 1, Some(25)),
            ("7", 6, Some(7_000_000)),
            ("1e40", 6, None),
            ("1e-60", 6, Some(0)),
        ] {
            assert_eq!(fixed_point(text.as_bytes(), digits), fixed, "{text}");
        }
        for bad in ["", "-", ".", "1.2.3", "+1", "1e", "0x10", "NaN"] {
            assert_eq!(fixed_point(bad.as_bytes(), 6), None, "{bad}");
        }
        let string = |bytes| Value {
            kind: Kind::Str,
            bytes,
            at: 0,
        };
        assert_eq!(string(b" 12.5 ").fixed(3), Ok(Some(12_500)));
        assert_eq!(string(b"NaN").fixed(3), Ok(None));
    }

    /// The byte-at-a-time skip, as a reference for the 64-byte-block one.
    fn skip_reference(text: &[u8]) -> Result<usize, Stop> {
        let (mut depth, mut i, mut in_string) = (0usize, 0usize, false);
        while i < text.len() {
            match (in_string, text[i]) {
                (true, b'\\') => i += 1,
                (true, b'"') | (false, b'"') => in_string = !in_string,
                (false, b'{' | b'[') => depth += 1,
                (false, b'}' | b']') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(Stop::Incomplete)
    }

    #[test]
    fn strings_with_escapes_and_raw_contents() {
        let mut s = scan(r#"  "a\"b\\" "plain""#);
        let raw = s.string().unwrap();
        assert_eq!(raw.bytes, br#"a\"b\\"#);
        assert!(raw.escaped);
        assert_eq!(raw.text().unwrap(), r#"a"b\"#);
        let plain = s.string().unwrap();
        assert_eq!((plain.bytes, plain.escaped), (&b"plain"[..], false));
        assert!(matches!(plain.text().unwrap(), Cow::Borrowed("plain")));
        assert_eq!(s.peek(), Err(Stop::Incomplete));
        let bad = RawStr {
            bytes: b"\xff",
            escaped: false,
        };
        assert_eq!(bad.text(), Err("UTF-8 text"));
    }

    #[test]
    fn string_ends_agree_with_a_byte_by_byte_reading() {
        let by_bytes = |buf: &[u8], start: usize| {
            let mut i = start;
            let mut escaped = false;
            while i < buf.len() {
                match buf[i] {
                    b'"' => return Ok((i, escaped)),
                    b'\\' => {
                        escaped = true;
                        i += 2;
                    }
                    _ => i += 1,
                }
            }
            Err(Stop::Incomplete)
        };
        let mut rng = fastrand::Rng::with_seed(3);
        let alphabet = b"ab\"\\\xe9\x00\xff\x22\x5c\xa2\xdc}";
        for _ in 0..50_000 {
            let len = rng.usize(0..60);
            let buf = crate::capture::bytes::random_text(&mut rng, len, alphabet, 8, b'a'..=b'z');
            let shown = String::from_utf8_lossy(&buf);
            for start in 0..=len {
                let expected = by_bytes(&buf, start);
                assert_eq!(string_end(&buf, start), expected, "{shown:?} from {start}");
            }
        }
    }

    #[test]
    fn long_strings_and_escapes_at_the_buffer_end_are_incomplete() {
        let long = format!("\"{}\\\"{}\"", "x".repeat(40), "y".repeat(40));
        let whole = scan(&long).string().unwrap();
        assert_eq!(whole.bytes.len(), 82);
        assert!(whole.escaped);
        for cut in 1..long.len() {
            let cut_off = scan(&long[..cut]).string();
            assert_eq!(cut_off, Err(Stop::Incomplete), "cut {cut}");
        }
    }

    #[test]
    fn values_are_scanned_lazily() {
        let text = "[-1.5e3, 7, true, false, null, \"9\", {\"a\": [1, \"]\"]}, 1.2.3, +1]";
        let mut s = scan(text);
        s.expect(b'[', "[").unwrap();
        let mut seen = Vec::new();
        loop {
            match s.value() {
                Ok(v) => seen.push((v.kind, String::from_utf8_lossy(v.bytes).into_owned())),
                Err(e) => {
                    let at = text.len() - 3;
                    assert_eq!(
                        e,
                        Stop::Invalid {
                            expected: "a JSON value",
                            at
                        }
                    );
                    break;
                }
            }
            assert!(s.more(b']', "`,` or `]`").unwrap());
        }
        let kinds: Vec<Kind> = seen.iter().map(|(k, _)| *k).collect();
        use Kind::*;
        assert_eq!(kinds, [Num, Num, True, False, Null, Str, Container, Num]);
        assert_eq!(seen[6].1, "{\"a\": [1, \"]\"]}");
        let mut s = scan(text);
        s.pos = 1;
        assert_eq!(s.value().unwrap().number(), Ok(Some(-1500.0)));
        let malformed = Value {
            kind: Num,
            bytes: b"1.2.3",
            at: 40,
        };
        let invalid = Stop::Invalid {
            expected: "a JSON number",
            at: 40,
        };
        assert_eq!(malformed.number(), Err(invalid));
        assert_eq!(scan("\"9\"").value().unwrap().number(), Ok(Some(9.0)));
        assert_eq!(scan("null").value().unwrap().text().unwrap(), "");
        assert_eq!(scan("true").value().unwrap().text(), None);
        assert_eq!(scan("12").value(), Err(Stop::Incomplete));
        assert_eq!(scan("tr").value(), Err(Stop::Incomplete));
        assert!(matches!(scan("tru ").value(), Err(Stop::Invalid { .. })));
    }

    #[test]
    fn containers_skip_strings_holding_brackets() {
        let text = r#"{"a": {"b": ["}", "\"]", {}]}, "c": 1} tail"#;
        let mut s = scan(text);
        s.skip_value().unwrap();
        assert_eq!(&text[s.pos..], " tail");
        for cut in 1..text.len() - 5 {
            assert_eq!(scan(&text[..cut]).skip_value(), Err(Stop::Incomplete));
        }
    }

    #[test]
    fn block_skip_agrees_with_the_byte_loop() {
        // Random nestings of objects, arrays and strings holding brackets, quotes and
        // escapes, long enough to cross several 64-byte blocks.
        #[rustfmt::skip]
        let pieces = [
            "{", "}", "[", "]", "\"a}\"", "\"[\\\"]\"", "\"\\\\\"", " ", "1", ",", "\"x\":",
            "\"long string with no brackets at all\"",
        ];
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..3000 {
            let mut text = String::from("{");
            let len = rng.usize(1..120);
            for _ in 0..len {
                text.push_str(pieces[rng.usize(..pieces.len())]);
            }
            let expected = skip_reference(text.as_bytes());
            let mut s = scan(&text);
            let got = s.skip_value().map(|()| s.pos);
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn objects_member_by_member() {
        let mut s = scan(r#"{"k": 1 , "v" : "x"} {} {"k" 1}"#);
        s.expect(b'{', "{").unwrap();
        assert!(s.first_member().unwrap());
        assert_eq!(s.key().unwrap().bytes, b"k");
        s.skip_value().unwrap();
        assert!(s.more(b'}', "`,` or `}`").unwrap());
        assert_eq!(s.key().unwrap().bytes, b"v");
        s.skip_value().unwrap();
        assert!(!s.more(b'}', "`,` or `}`").unwrap());
        s.expect(b'{', "{").unwrap();
        assert!(!s.first_member().unwrap());
        s.expect(b'{', "{").unwrap();
        let invalid = Stop::Invalid {
            expected: "`:` after the key",
            at: 29,
        };
        assert_eq!(s.key(), Err(invalid));
    }
}
