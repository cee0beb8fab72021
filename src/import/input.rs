//! Bounded reading of import files: a device (`/dev/zero`), a pipe without end or a file far
//! larger than any export is refused with the bound in the message, instead of exhausting
//! memory.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{ImportError, content, read_error};

/// The most bytes read from one results file (JSON of a harness or Proton, rocprof CSV): far
/// above any real one, and a bound for an endless stream.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The text of `path`, at most `max` bytes; `what` names the format in the refusals
/// (`rocprof`). A NUL byte ends the read at once: no text format kgate reads has one, and a
/// device such as `/dev/zero` is refused without reading up to the bound.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String, ImportError> {
    let mut reader = TextReader::open(path, what, max)?;
    let mut text = String::new();
    let read = reader.read_to_string(&mut text);
    read.map_err(|e| reader.refusal(e))?;
    Ok(text)
}

/// A text file read in pieces, with [`read_text`]'s refusals as it goes: a NUL byte, more
/// than `max` bytes, bytes that are not UTF-8. What it hands out is checked text, cut at
/// character boundaries, so a large export is read without holding it whole.
pub struct TextReader {
    /// The file's bytes (decompressed, when it is gzip), at most `max + 1` of them.
    file: std::io::Take<Box<dyn Read + Send>>,
    path: std::path::PathBuf,
    what: String,
    max: u64,
    /// Checked text not yet handed out: `buf[start..ready]`; `buf[ready..]` is the start of
    /// a character whose other bytes have not been read yet.
    buf: Vec<u8>,
    start: usize,
    ready: usize,
    /// Bytes read from the file before `buf[0]`.
    offset: u64,
    at_end: bool,
}

/// Why a [`TextReader`] stopped, carried by the `io::Error` it returns (see
/// [`TextReader::refusal`]).
#[derive(Debug)]
struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// The import error of `path` that an error of its [`TextReader`] (or of a reader around it)
/// stands for: a refusal as it was worded, anything else as a read error of the file.
pub fn refusal_of(path: &Path, error: std::io::Error) -> ImportError {
    match error.get_ref().and_then(|e| e.downcast_ref::<Refusal>()) {
        Some(Refusal(message)) => content(path, message.clone()),
        None => read_error(path)(error),
    }
}

/// The refusal of a file whose byte `at` is not UTF-8.
fn not_utf8(what: &str, at: u64) -> String {
    format!(
        "is not text (byte {at} is not UTF-8), so it is not {what} output; pass the file the tool wrote"
    )
}

/// How much [`TextReader`] reads from the file at a time.
const TEXT_CHUNK: usize = 1 << 16;

impl TextReader {
    pub fn open(path: &Path, what: &str, max: u64) -> Result<TextReader, ImportError> {
        let (file, _gzip) =
            crate::store::fsutil::open_maybe_gzip(path).map_err(read_error(path))?;
        Ok(TextReader {
            file: file.take(max + 1),
            path: path.to_path_buf(),
            what: what.to_string(),
            max,
            buf: Vec::new(),
            start: 0,
            ready: 0,
            offset: 0,
            at_end: false,
        })
    }

    /// The import error an error of this reader stands for (see [`refusal_of`]).
    pub fn refusal(&self, error: std::io::Error) -> ImportError {
        refusal_of(&self.path, error)
    }

    /// The text from where the reader stands, at least `at_least` bytes of it (less only at
    /// the end of the file), ending where a character ends: the head of a file read to tell
    /// what it is, the rest left to be read on.
    pub fn head(&mut self, at_least: usize) -> Result<String, ImportError> {
        let from = self.offset + self.start as u64;
        let mut head = Vec::new();
        while head.len() < at_least {
            if self.start == self.ready {
                match self.fill() {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => return Err(self.refusal(e)),
                }
            }
            // What a fill made ready ends where a character ends.
            head.extend_from_slice(&self.buf[self.start..self.ready]);
            self.start = self.ready;
        }
        // Checked as it was read; a fault here would be this reader's own.
        String::from_utf8(head).map_err(|e| {
            content(
                &self.path,
                not_utf8(&self.what, from + e.utf8_error().valid_up_to() as u64),
            )
        })
    }

    /// Whether everything was read and handed out.
    pub fn finished(&self) -> bool {
        self.at_end && self.start == self.ready
    }

    fn refuse(&self, message: String) -> std::io::Error {
        std::io::Error::other(Refusal(message))
    }

    /// Reads the next chunk and checks it; false at the end of the file.
    fn fill(&mut self) -> std::io::Result<bool> {
        // Keep only the unfinished character, if any, at the front.
        self.buf.drain(..self.ready);
        self.offset += self.ready as u64;
        self.start = 0;
        self.ready = 0;
        let kept = self.buf.len();
        self.buf.resize(kept + TEXT_CHUNK, 0);
        let n = loop {
            match self.file.read(&mut self.buf[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.buf.truncate(kept + n);
        let what = &self.what;
        if let Some(at) = memchr::memchr(0, &self.buf[kept..]) {
            let offset = self.offset + (kept + at) as u64;
            return Err(self.refuse(format!(
                "is not text (a NUL byte at offset {offset}), so it is not {what} output; pass the file the tool wrote"
            )));
        }
        if self.offset + self.buf.len() as u64 > self.max {
            let mib = self.max >> 20;
            return Err(self.refuse(format!(
                "is larger than {mib} MiB, more than kgate reads from one {what} file (or an endless stream); pass the file the tool wrote, split into smaller files if it really is that large"
            )));
        }
        if n == 0 {
            self.at_end = true;
        }
        self.ready = match std::str::from_utf8(&self.buf) {
            Ok(_) => self.buf.len(),
            // A character cut by the chunk's end waits for the next chunk.
            Err(e) if e.error_len().is_none() && !self.at_end => e.valid_up_to(),
            Err(e) => {
                let at = self.offset + e.valid_up_to() as u64;
                return Err(self.refuse(not_utf8(what, at)));
            }
        };
        Ok(n > 0 || self.ready > 0)
    }
}

impl Read for TextReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.start == self.ready {
            if self.at_end || !self.fill()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.ready - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

/// The JSON document of `path`, read with [`read_text`]'s bound; a leading byte-order mark
/// is skipped.
pub fn read_json(path: &Path, what: &str) -> Result<Value, ImportError> {
    let text = read_text(path, what, MAX_FILE_BYTES)?;
    // A leading byte-order mark (Windows editors and PowerShell write one) is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text).map_err(|e| not_json(path, what, &e))
}

/// What a JSON document held besides the elements of its array under the key.
#[derive(Debug)]
pub struct Document {
    /// Whether the key held an array (whose elements went to the callback).
    pub array: Found,
    /// Every other top-level key, as it was written.
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
pub enum ArrayError {
    /// Not JSON (or the array's key written twice), with serde_json's line and column.
    Json(serde_json::Error),
    /// The callback's error, which stopped the parse.
    Stopped(ImportError),
}

/// Parses `text` with serde_json, handing each element of the top-level array under `key` to
/// `each` (with its index) as a `T` as soon as it is parsed, so that the elements are never
/// all held at once (a parsed document of a harness's runs takes several times its text). An
/// error of `each` stops the parse; elements before it have been handed over.
pub fn for_each_element<'de, T: Deserialize<'de>>(
    text: &'de str,
    key: &str,
    mut each: impl FnMut(usize, T) -> Result<(), ImportError>,
) -> Result<Document, ArrayError> {
    let mut reader = DocumentReader {
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

/// [`for_each_element`] of the JSON file at `path`, read with [`read_text`]'s bound (a
/// leading byte-order mark skipped), each element a `serde_json::Value`; `what` names the
/// format in the refusals.
pub fn read_json_array(
    path: &Path,
    what: &str,
    key: &str,
    each: impl FnMut(usize, Value) -> Result<(), ImportError>,
) -> Result<Document, ImportError> {
    let text = read_text(path, what, MAX_FILE_BYTES)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    for_each_element(text, key, each).map_err(|e| match e {
        ArrayError::Stopped(e) => e,
        ArrayError::Json(e) => not_json(path, what, &e),
    })
}

/// A visitor's answer to a scalar, which holds nothing to read.
macro_rules! answer_scalars {
    ($found:expr) => {
        answer_scalars!($found; visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64);
        answer_scalars!($found; visit_str: &str);
        fn visit_unit<X>(self) -> Result<Self::Value, X> {
            Ok($found)
        }
    };
    ($found:expr; $($visit:ident: $scalar:ty),*) => {$(
        fn $visit<X>(self, _: $scalar) -> Result<Self::Value, X> {
            Ok($found)
        }
    )*};
}

pub(super) use answer_scalars;

struct DocumentReader<'k, 'f, T> {
    key: &'k str,
    each: &'f mut dyn FnMut(usize, T) -> Result<(), ImportError>,
    failure: Option<ImportError>,
    document: Document,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for &mut DocumentReader<'_, '_, T> {
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

    answer_scalars!(());
}

/// The value under the key: an array, whose elements go to the callback one by one;
/// anything else is read and left (the caller says what it expected).
struct Elements<'r, 'k, 'f, T>(&'r mut DocumentReader<'k, 'f, T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Elements<'_, '_, '_, T> {
    type Value = Found;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Elements<'_, '_, '_, T> {
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

    answer_scalars!(Found::NotAnArray);
}

pub(crate) fn not_json(path: &Path, what: &str, e: &serde_json::Error) -> ImportError {
    let (line, column) = (e.line(), e.column());
    let why = crate::model::text::plain_serde(None, &e.to_string());
    content!(
        path,
        "is not valid JSON (line {line}, column {column}: {why}), so it is not {what} output; pass the file the tool wrote, whole"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What reading a file whole and checking it afterwards says (how [`read_text`] read
    /// before it read in pieces), for files with at most one fault.
    fn whole_file(bytes: &[u8], max: u64) -> Result<String, String> {
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            return Err(format!("is not text (a NUL byte at offset {at})"));
        }
        if bytes.len() as u64 > max {
            return Err(format!("is larger than {} MiB", max >> 20));
        }
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            format!("is not text (byte {at} is not UTF-8)")
        })
    }

    fn in_pieces(bytes: &[u8], max: u64) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.csv");
        std::fs::write(&path, bytes).unwrap();
        read_text(&path, "rocprof", max).map_err(|e| match e {
            ImportError::Content { message, .. } => message,
            other => other.to_string(),
        })
    }

    #[test]
    fn text_read_in_pieces_is_refused_where_the_whole_file_was() {
        // Characters of 2, 3 and 4 bytes, so that chunk ends fall inside them.
        let line = "kernel_é,€,𝄞,1234\n".repeat(9_000);
        assert!(line.len() > 3 * TEXT_CHUNK);
        let text = line.as_bytes().to_vec();
        let mut cases: Vec<(String, Vec<u8>, u64)> = vec![
            ("plain".into(), text.clone(), 1 << 30),
            ("empty".into(), Vec::new(), 1 << 30),
            ("over the bound".into(), text.clone(), 100_000),
        ];
        #[rustfmt::skip]
        let places = [0, 5, TEXT_CHUNK - 1, TEXT_CHUNK, TEXT_CHUNK + 1, 2 * TEXT_CHUNK + 7];
        for at in places {
            let mut nul = text.clone();
            nul[at] = 0;
            cases.push((format!("NUL at {at}"), nul, 1 << 30));
            let mut latin1 = text.clone();
            latin1[at] = 0xE9;
            cases.push((format!("0xE9 at {at}"), latin1, 1 << 30));
        }
        // A character cut short by the end of the file.
        let mut cut = text.clone();
        cut.extend_from_slice(&"€".as_bytes()[..2]);
        cases.push(("a cut character at the end".into(), cut, 1 << 30));
        for (name, bytes, max) in cases {
            let expected = whole_file(&bytes, max);
            let got = in_pieces(&bytes, max);
            match (&expected, &got) {
                (Ok(a), Ok(b)) => assert!(a == b, "{name}: the text differs"),
                (Err(a), Err(b)) => {
                    assert!(b.starts_with(a.as_str()), "{name}: {b} (expected {a})")
                }
                _ => panic!("{name}: {got:?} where reading whole gave {expected:?}"),
            }
        }
    }
}
