//! A JSON document whose bulk is one array under a top-level key (`benchmarks` of kgate's own
//! results files, of google/benchmark and of pytest-benchmark, `results` of hyperfine), read
//! element by element as it is parsed. [`split`] reads the file a piece at a time and holds
//! one element's text; a `serde_json::Value` of the whole document took several times the
//! file, and the file's text as much as the file. What `split` does not read (a syntax error, a
//! key written twice) is read again whole by [`for_each_element`], so that serde_json's errors
//! and rules hold; a file that cannot be read twice ([`rereadable`]) is read whole at once.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What the document held besides the array's elements.
#[derive(Debug)]
pub struct Document {
    /// Whether the key held an array (whose elements went to the callback).
    pub array: Found,
    /// Every other top-level key, as it was written (of a key written twice, the last: [`split`]
    /// leaves such a document to serde_json, whose struct reading refuses it).
    pub others: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The key is not there, or the document is not an object.
    Absent,
    /// The key holds something else than an array.
    NotAnArray,
    Array,
}

/// Why a document could not be read to its end.
#[derive(Debug)]
pub enum ArrayError<E> {
    /// Not JSON (or the array's key written twice), with serde_json's line and column.
    Json(serde_json::Error),
    /// The callback's error, which stopped the parse.
    Stopped(E),
}

/// Parses `text`, handing each element of the top-level array under `key` to `each` (with its
/// index) as it is read, as a `T`. An error of `each` stops the parse and is returned as
/// [`ArrayError::Stopped`]; elements before it have been handed over.
pub fn for_each_element<'de, T: Deserialize<'de>, E>(
    text: &'de str,
    key: &str,
    mut each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<Document, ArrayError<E>> {
    let mut reader = Reader {
        key,
        each: &mut each,
        failure: None,
        document: Document {
            array: Found::Absent,
            others: Map::new(),
        },
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = de.deserialize_any(&mut reader).and_then(|()| de.end());
    if let Some(e) = reader.failure {
        return Err(ArrayError::Stopped(e));
    }
    parsed.map_err(ArrayError::Json)?;
    Ok(reader.document)
}

/// What [`split`] made of a document.
#[derive(Debug)]
pub enum Split<E> {
    /// Read to its end.
    Done(Document),
    /// The callback's error, which stopped the reading.
    Stopped(E),
    /// The source could not be read.
    Io(std::io::Error),
    /// Something [`split`] leaves to serde_json's reading of the whole document (a syntax
    /// error, a key written twice, a document that is not an object, a key whose value is
    /// not an array), after `handed` elements went to the callback: read the document again
    /// with [`for_each_element`], skipping those.
    Unusual { handed: usize },
}

/// Whether the file at `path` can be read again from its start, as [`split`]'s callers do when
/// it leaves a document to serde_json ([`Split::Unusual`]): a regular file can; a pipe
/// (`/dev/stdin`, a shell's `<(…)`) gives nothing the second time, so its callers read it
/// whole from the start instead.
pub fn rereadable(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The text of a file that cannot be read twice (a pipe, a device), read once and at most
/// `max` bytes: a NUL byte, which no JSON text holds, ends the reading at once with a refusal,
/// so that `/dev/zero` is refused rather than read until memory runs out.
pub fn read_once(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Some(at) = memchr::memchr(0, &chunk[..n]) {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("a NUL byte at byte {}: not JSON text", bytes.len() + at),
            ));
        }
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() as u64 > max {
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("more than {max} bytes from a stream; give it as a file"),
            ));
        }
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::new(ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// `text` without a leading byte-order mark, which Windows editors and PowerShell write and
/// which is not JSON: a results file, report or history record saved by one reads as before.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// `source` read past a leading byte-order mark (see [`without_bom`]).
pub fn skip_bom<R: std::io::BufRead>(mut source: R) -> std::io::Result<R> {
    const BOM: &[u8] = "\u{feff}".as_bytes();
    if source.fill_buf()?.starts_with(BOM) {
        source.consume(BOM.len());
    }
    Ok(source)
}

/// The `rewrite` of [`split`] for a document that is JSON as written.
pub fn as_written(text: &str) -> std::borrow::Cow<'_, str> {
    std::borrow::Cow::Borrowed(text)
}

/// Reads a document from `source` a piece at a time, handing each element of the array under
/// `key` to `each` as it is read, and keeps only the element being read: each element's text
/// is found by a scan of brackets and strings and parsed by serde_json from that text, which is
/// faster than serde_json's reading from a stream (it takes the string path). `rewrite` turns
/// a value's text into JSON first (google/benchmark's bare `NaN`). Anything unusual is left
/// to serde_json's own reading ([`Split::Unusual`]), so that its errors and rules hold.
pub fn split<T: serde::de::DeserializeOwned, E>(
    source: impl std::io::Read,
    key: &str,
    rewrite: fn(&str) -> std::borrow::Cow<'_, str>,
    each: impl FnMut(usize, T) -> Result<(), E>,
) -> Split<E> {
    let parse = |_, bytes: &[u8]| parse_value(bytes, rewrite);
    read_split(Pieces::of(source), key, rewrite, parse, each).unwrap_or_else(Split::Io)
}

/// [`split`] with each element parsed by `parse` from its text (given with its index; `None`
/// for what the whole reading should judge): a caller that needs only part of some elements
/// parses those as something smaller.
pub fn split_parsed<T, E>(
    source: impl std::io::Read,
    key: &str,
    parse: impl FnMut(usize, &[u8]) -> Option<T>,
    each: impl FnMut(usize, T) -> Result<(), E>,
) -> Split<E> {
    read_split(Pieces::of(source), key, as_written, parse, each).unwrap_or_else(Split::Io)
}

/// [`split`] of `text`: a read error is the `Err`.
fn read_split<T, E>(
    mut text: Pieces<impl std::io::Read>,
    key: &str,
    rewrite: fn(&str) -> std::borrow::Cow<'_, str>,
    mut parse: impl FnMut(usize, &[u8]) -> Option<T>,
    mut each: impl FnMut(usize, T) -> Result<(), E>,
) -> std::io::Result<Split<E>> {
    let mut handed = 0;
    let mut document = Document {
        array: Found::Absent,
        others: Map::new(),
    };
    let unusual = |handed| Ok(Split::Unusual { handed });
    // `{`, then `"key": value` pairs separated by commas, then `}` and the end.
    if text.next_token()? != Some(b'{') {
        return unusual(handed);
    }
    text.pos += 1;
    if text.next_token()? == Some(b'}') {
        text.pos += 1;
    } else {
        loop {
            if text.next_token()? != Some(b'"') {
                return unusual(handed);
            }
            let Some(end) = text.value_end()? else {
                return unusual(handed);
            };
            let Ok(name) = serde_json::from_slice::<String>(&text.buf[text.pos..end]) else {
                return unusual(handed);
            };
            text.pos = end;
            if text.next_token()? != Some(b':') {
                return unusual(handed);
            }
            text.pos += 1;
            if name == key {
                if document.array != Found::Absent || text.next_token()? != Some(b'[') {
                    return unusual(handed);
                }
                text.pos += 1;
                let mut first = true;
                loop {
                    match text.next_token()? {
                        Some(b']') if first => break,
                        Some(_) => {}
                        None => return unusual(handed),
                    }
                    let Some(end) = text.value_end()? else {
                        return unusual(handed);
                    };
                    let Some(element) = parse(handed, &text.buf[text.pos..end]) else {
                        return unusual(handed);
                    };
                    text.pos = end;
                    if let Err(e) = each(handed, element) {
                        return Ok(Split::Stopped(e));
                    }
                    handed += 1;
                    first = false;
                    match text.next_token()? {
                        Some(b',') => text.pos += 1,
                        Some(b']') => break,
                        _ => return unusual(handed),
                    }
                    text.forget_read();
                }
                text.pos += 1;
                document.array = Found::Array;
            } else {
                if text.next_token()?.is_none() {
                    return unusual(handed);
                }
                let Some(end) = text.value_end()? else {
                    return unusual(handed);
                };
                let Some(NoRepeatedKeys(value)) =
                    parse_value::<NoRepeatedKeys>(&text.buf[text.pos..end], rewrite)
                else {
                    return unusual(handed);
                };
                text.pos = end;
                if document.others.insert(name, value).is_some() {
                    return unusual(handed);
                }
            }
            text.forget_read();
            match text.next_token()? {
                Some(b',') => text.pos += 1,
                Some(b'}') => {
                    text.pos += 1;
                    break;
                }
                _ => return unusual(handed),
            }
        }
    }
    match text.next_token()? {
        None => Ok(Split::Done(document)),
        Some(_) => unusual(handed),
    }
}

/// A value parsed from its text, rewritten first; `None` for what serde_json refuses (its
/// message comes from its reading of the whole document).
pub fn parse_value<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    rewrite: fn(&str) -> std::borrow::Cow<'_, str>,
) -> Option<T> {
    let text = std::str::from_utf8(bytes).ok()?;
    serde_json::from_str(&rewrite(text)).ok()
}

/// The bytes that open or close a string, an object or an array.
const OPENS_OR_CLOSES: [bool; 256] = {
    let mut table = [false; 256];
    let mut k = 0;
    while k < 5 {
        table[b"\"{}[]"[k] as usize] = true;
        k += 1;
    }
    table
};

/// Where the first byte that opens or closes a string, an object or an array is in `bytes`.
/// Eight bytes are tested at once: a results file's arrays of numbers are most of its text.
fn opening_or_closing(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Whether a byte of `w` is zero (exactly: no byte is missed, none is invented).
    let has_zero = |w: u64| (w.wrapping_sub(ONES) & !w & HIGHS) != 0;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        // `[` and `]` are `{` and `}` with the 0x20 bit clear.
        let folded = w | (ONES * 0x20);
        if has_zero(w ^ (ONES * u64::from(b'"')))
            || has_zero(folded ^ (ONES * u64::from(b'{')))
            || has_zero(folded ^ (ONES * u64::from(b'}')))
        {
            return word
                .iter()
                .position(|&c| OPENS_OR_CLOSES[usize::from(c)])
                .map(|p| at + p);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| OPENS_OR_CLOSES[usize::from(c)])
        .map(|p| at + p)
}

/// The text of a document as it is read: what is not yet handed over, from `pos` on.
struct Pieces<R> {
    source: R,
    buf: Vec<u8>,
    pos: usize,
    at_end: bool,
}

impl<R: std::io::Read> Pieces<R> {
    fn of(source: R) -> Pieces<R> {
        Pieces {
            source,
            buf: Vec::new(),
            pos: 0,
            at_end: false,
        }
    }

    /// Reads more at the end of `buf`; false at the end of the source.
    fn more(&mut self) -> std::io::Result<bool> {
        if self.at_end {
            return Ok(false);
        }
        let had = self.buf.len();
        self.buf.resize(had + (1 << 16).max(had / 2), 0);
        let n = loop {
            match self.source.read(&mut self.buf[had..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.buf.truncate(had);
                    return Err(e);
                }
            }
        };
        self.buf.truncate(had + n);
        self.at_end = n == 0;
        Ok(n > 0)
    }

    /// Lets go of the text before `pos`, once it is most of what is held.
    fn forget_read(&mut self) {
        if self.pos > (1 << 16) && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// The next byte that is not JSON whitespace (left at `pos`), or `None` at the end.
    fn next_token(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            while let Some(&b) = self.buf.get(self.pos) {
                if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.more()? {
                return Ok(None);
            }
        }
    }

    /// Where the value that starts at `pos` ends: a string to its closing quote, an object or
    /// array to its closing bracket (strings inside skipped), anything else to the next
    /// comma, bracket or whitespace. `None` when the text ends first, or a bracket closes
    /// what it does not open (left to serde_json to word).
    fn value_end(&mut self) -> std::io::Result<Option<usize>> {
        let mut i = self.pos;
        let mut depth: Vec<u8> = Vec::new();
        let mut in_string = false;
        loop {
            let Some(&b) = self.buf.get(i) else {
                if !self.more()? {
                    return Ok(None);
                }
                continue;
            };
            if in_string {
                match memchr::memchr2(b'"', b'\\', &self.buf[i..]) {
                    None => i = self.buf.len(),
                    Some(at) if self.buf[i + at] == b'\\' => {
                        // The escaped character is skipped with its backslash.
                        if i + at + 1 >= self.buf.len() && !self.more()? {
                            return Ok(None);
                        }
                        i += at + 2;
                    }
                    Some(at) => {
                        in_string = false;
                        i += at + 1;
                        if depth.is_empty() {
                            return Ok(Some(i));
                        }
                    }
                }
                continue;
            }
            if !depth.is_empty() && !OPENS_OR_CLOSES[usize::from(b)] {
                // Inside a container only quotes and brackets matter: skip to the next.
                i += opening_or_closing(&self.buf[i..]).unwrap_or(self.buf.len() - i);
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' => depth.push(b'}'),
                b'[' => depth.push(b']'),
                b'}' | b']' => {
                    if depth.pop() != Some(b) {
                        return Ok(if i > self.pos { Some(i) } else { None });
                    }
                    if depth.is_empty() {
                        return Ok(Some(i + 1));
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' if depth.is_empty() => return Ok(Some(i)),
                _ => {}
            }
            i += 1;
        }
    }
}

/// A JSON value as serde_json's `Value` reads it, but an object that names a key twice, at
/// any depth, is an error rather than its last value: a struct's reading refuses such a key,
/// so a document whose other keys hold one is left to the reading of the whole document (it
/// alone says whether that key is a struct's field or a map's), and both readers agree.
struct NoRepeatedKeys(Value);

impl<'de> Deserialize<'de> for NoRepeatedKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(NoRepeatedKeysVisitor)
            .map(NoRepeatedKeys)
    }
}

struct NoRepeatedKeysVisitor;

impl<'de> Visitor<'de> for NoRepeatedKeysVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(NoRepeatedKeys(v)) = seq.next_element()? {
            values.push(v);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let NoRepeatedKeys(value) = map.next_value()?;
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{key}` is written twice"
                )));
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

struct Reader<'k, 'f, T, E> {
    key: &'k str,
    each: &'f mut dyn FnMut(usize, T) -> Result<(), E>,
    failure: Option<E>,
    document: Document,
}

impl<'de, T: Deserialize<'de>, E> Visitor<'de> for &mut Reader<'_, '_, T, E> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key != self.key {
                let value: Value = map.next_value()?;
                self.document.others.insert(key, value);
                continue;
            }
            if self.document.array != Found::Absent {
                return Err(serde::de::Error::custom(format_args!(
                    "the key `{key}` is written twice"
                )));
            }
            self.document.array = map.next_value_seed(Elements(&mut *self))?;
        }
        Ok(())
    }

    // A document that is not an object has no array under the key.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<X>(self, _: bool) -> Result<(), X> {
        Ok(())
    }

    fn visit_i64<X>(self, _: i64) -> Result<(), X> {
        Ok(())
    }

    fn visit_u64<X>(self, _: u64) -> Result<(), X> {
        Ok(())
    }

    fn visit_f64<X>(self, _: f64) -> Result<(), X> {
        Ok(())
    }

    fn visit_str<X>(self, _: &str) -> Result<(), X> {
        Ok(())
    }

    fn visit_unit<X>(self) -> Result<(), X> {
        Ok(())
    }
}

/// The value under the key: an array, whose elements go to the callback one by one.
struct Elements<'r, 'k, 'f, T, E>(&'r mut Reader<'k, 'f, T, E>);

impl<'de, T: Deserialize<'de>, E> DeserializeSeed<'de> for Elements<'_, '_, '_, T, E> {
    type Value = Found;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found, D::Error> {
        // Anything but an array is read whole and left: the caller says what it expected.
        let value = deserializer.deserialize_any(self)?;
        Ok(value)
    }
}

impl<'de, T: Deserialize<'de>, E> Visitor<'de> for Elements<'_, '_, '_, T, E> {
    type Value = Found;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        let mut i = 0;
        while let Some(element) = seq.next_element::<T>()? {
            if let Err(e) = (self.0.each)(i, element) {
                self.0.failure = Some(e);
                return Err(serde::de::Error::custom("stopped by an element"));
            }
            i += 1;
        }
        Ok(Found::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Found::NotAnArray)
    }

    fn visit_bool<X>(self, _: bool) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }

    fn visit_i64<X>(self, _: i64) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }

    fn visit_u64<X>(self, _: u64) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }

    fn visit_f64<X>(self, _: f64) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }

    fn visit_str<X>(self, _: &str) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }

    fn visit_unit<X>(self) -> Result<Found, X> {
        Ok(Found::NotAnArray)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_at_a_time_search_finds_what_a_byte_at_a_time_one_does() {
        let mut rng = fastrand::Rng::with_seed(5);
        let alphabet = b"\"{}[]:,.0123456789eE+- \n\\ZYz{\x80\xfb\x5c\x7f\x02\x00";
        for _ in 0..20_000 {
            let bytes: Vec<u8> = (0..rng.usize(0..40))
                .map(|_| {
                    if rng.u8(0..4) == 0 {
                        alphabet[rng.usize(0..alphabet.len())]
                    } else {
                        rng.u8(..)
                    }
                })
                .collect();
            let naive = bytes.iter().position(|&c| b"\"{}[]".contains(&c));
            assert_eq!(opening_or_closing(&bytes), naive, "{bytes:?}");
        }
    }

    type Read = Result<Document, ArrayError<String>>;

    /// Hands out its text `piece` bytes at a time.
    struct Pieces<'t>(&'t [u8], usize);

    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn each(seen: &mut Vec<(usize, Value)>, i: usize, v: Value) -> Result<(), String> {
        if v == "stop" {
            return Err(format!("stopped at {i}"));
        }
        seen.push((i, v));
        Ok(())
    }

    /// Reads `text` whole with serde_json, and with [`split`] in pieces of several sizes,
    /// falling back as the imports do; the two must agree. The whole reading's outcome.
    fn read(text: &str) -> (Read, Vec<(usize, Value)>) {
        read_split(text).0
    }

    /// [`read`], and whether [`split`] left the document to serde_json (in any piece size).
    fn read_split(text: &str) -> ((Read, Vec<(usize, Value)>), bool) {
        let mut unusual = false;
        let mut seen = Vec::new();
        let result = for_each_element(text, "runs", |i, v| each(&mut seen, i, v));
        for piece in [1, 2, 3, 7, 64, 1 << 20] {
            let mut split_seen = Vec::new();
            let split_result = match split(
                Pieces(text.as_bytes(), piece),
                "runs",
                as_written,
                |i, v| each(&mut split_seen, i, v),
            ) {
                Split::Done(document) => Ok(document),
                Split::Stopped(e) => Err(ArrayError::Stopped(e)),
                Split::Io(e) => panic!("{e}"),
                Split::Unusual { handed } => {
                    unusual = true;
                    for_each_element(text, "runs", |i, v| {
                        if i < handed {
                            Ok(())
                        } else {
                            each(&mut split_seen, i, v)
                        }
                    })
                }
            };
            assert_eq!(split_seen, seen, "{text} in pieces of {piece}");
            assert_eq!(
                format!("{split_result:?}"),
                format!("{result:?}"),
                "{text} in pieces of {piece}"
            );
        }
        ((result, seen), unusual)
    }

    #[test]
    fn a_document_read_in_pieces_is_read_as_serde_json_reads_it_whole() {
        // What serde_json reads, read without it.
        for text in [
            r#"{"runs": [{"a": "x ] } [ { \" \\ \u005d"}, [[]], "s,", -1.5e3, true, null], "b": {"c": [1, {"d": "]"}]}}"#,
            "{\r\n\t\"runs\" :\n[ 1 ,\t2\r\n] ,\"z\":\"h\u{f6}st \u{4e2d}\"\n}\n",
            r#"{"r\u0075ns": [1], "runs2": []}"#,
            r#"{"runs": [1], "x": "stop"}"#,
            r#"{}"#,
        ] {
            let ((result, _), unusual) = read_split(text);
            assert!(result.is_ok() && !unusual, "{text}");
        }
        // What it refuses, or reads by rules of its own, left to it.
        for text in [
            r#"{"runs": [1,]}"#,
            r#"{"runs": [1 2]}"#,
            r#"{"runs": [{"a": 1}}"#,
            r#"{"runs": [1], "x": NaN}"#,
            r#"{"runs": [1]"#,
            r#"{"runs": ["a\"#,
            r#"{"runs": []} ]"#,
            r#"{"runs": [], }"#,
            r#"{"runs" [1]}"#,
            r#"{runs: [1]}"#,
            r#"{"runs": [1], "runs": [2]}"#,
            r#"{"runs": {"a": 1}}"#,
            "[1]",
            "",
            "  ",
        ] {
            assert!(read_split(text).1, "{text}");
        }
        // Documents of random shape, compact and indented.
        let mut rng = fastrand::Rng::with_seed(5);
        fn value(rng: &mut fastrand::Rng, depth: u32) -> Value {
            match rng.u32(0..if depth > 3 { 4 } else { 6 }) {
                0 => Value::Null,
                1 => serde_json::json!(rng.f64() * 1e6 - 5e5),
                2 => {
                    let chars = [
                        'a', ']', '}', '[', '{', '"', '\\', ',', ' ', '\n', 'é', '中',
                    ];
                    let s: String = (0..rng.usize(0..8))
                        .map(|_| chars[rng.usize(0..chars.len())])
                        .collect();
                    Value::String(s)
                }
                3 => Value::Bool(rng.bool()),
                4 => Value::Array(
                    (0..rng.usize(0..4))
                        .map(|_| value(rng, depth + 1))
                        .collect(),
                ),
                _ => Value::Object(
                    (0..rng.usize(0..4))
                        .map(|k| (format!("k{k}]"), value(rng, depth + 1)))
                        .collect(),
                ),
            }
        }
        for _ in 0..200 {
            let runs: Vec<Value> = (0..rng.usize(0..6)).map(|_| value(&mut rng, 1)).collect();
            let doc = serde_json::json!({"before": value(&mut rng, 1), "runs": runs, "after": value(&mut rng, 1)});
            let (compact, pretty) = (doc.to_string(), serde_json::to_string_pretty(&doc).unwrap());
            for text in [compact, pretty] {
                let ((result, seen), unusual) = read_split(&text);
                assert!(result.is_ok() && !unusual, "{text}");
                assert_eq!(seen.len(), runs.len());
            }
        }
    }

    #[test]
    fn a_key_written_twice_inside_another_key_is_left_to_the_whole_reading() {
        let split_of = |text: &str| {
            split(text.as_bytes(), "runs", as_written, |_, _: Value| {
                Ok::<(), String>(())
            })
        };
        for text in [
            r#"{"env": {"cores": 2, "cores": 3}, "runs": [1]}"#,
            r#"{"runs": [1], "env": {"git": {"dirty": false, "dirty": true}}}"#,
            r#"{"env": [{"a": 1}, {"b": 2, "b": 2}], "runs": []}"#,
        ] {
            assert!(matches!(split_of(text), Split::Unusual { .. }), "{text}");
        }
        // Every other value reads as serde_json's `Value` reads it.
        let text = r#"{"env": {"cores": 2, "list": [{"a": 1.5e300, "b": -7}, null, true, "s\n", 18446744073709551615, 0.1]}, "runs": []}"#;
        let Split::Done(document) = split_of(text) else {
            panic!("a document of distinct keys is read to its end");
        };
        let whole: Value = serde_json::from_str(text).unwrap();
        assert_eq!(document.others["env"], whole["env"]);
    }

    #[test]
    fn elements_are_handed_over_in_order_and_other_keys_kept() {
        let (doc, seen) =
            read(r#"{"before": {"a": [1]}, "runs": [1, {"x": 2}, [3]], "after": "v", "after": 4}"#);
        let doc = doc.unwrap();
        assert_eq!(doc.array, Found::Array);
        assert_eq!(
            seen,
            [
                (0, serde_json::json!(1)),
                (1, serde_json::json!({"x": 2})),
                (2, serde_json::json!([3]))
            ]
        );
        assert_eq!(
            Value::Object(doc.others),
            serde_json::json!({"before": {"a": [1]}, "after": 4})
        );
    }

    #[test]
    fn what_is_not_an_array_is_told_apart_from_what_is_absent() {
        for (text, found) in [
            (r#"{"runs": {"a": 1}}"#, Found::NotAnArray),
            (r#"{"runs": null}"#, Found::NotAnArray),
            (r#"{"runs": "x"}"#, Found::NotAnArray),
            (r#"{"other": []}"#, Found::Absent),
            (r#"[1, 2]"#, Found::Absent),
            (r#"3"#, Found::Absent),
        ] {
            assert_eq!(read(text).0.unwrap().array, found, "{text}");
        }
    }

    #[test]
    fn a_callback_error_stops_the_parse_and_bad_json_is_a_json_error() {
        let (doc, seen) = read(r#"{"runs": [1, "stop", 3]}"#);
        assert!(matches!(doc, Err(ArrayError::Stopped(e)) if e == "stopped at 1"));
        assert_eq!(seen.len(), 1);
        for text in [
            r#"{"runs": [1, 2"#,
            r#"{"runs": [], "runs": []}"#,
            r#"{} x"#,
        ] {
            assert!(matches!(read(text).0, Err(ArrayError::Json(_))), "{text}");
        }
        let Err(ArrayError::Json(e)) = read(r#"{"runs": [], "runs": []}"#).0 else {
            panic!()
        };
        assert!(
            e.to_string().contains("the key `runs` is written twice"),
            "{e}"
        );
    }
}
