//! Bounded reading of import files: a device (`/dev/zero`), a pipe without end or a file far
//! larger than any export is refused with the bound in the message, instead of exhausting
//! memory.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::ImportError;
use crate::model::json_array;

/// The most bytes read from one results file (JSON of a harness or Proton, rocprof CSV): far
/// above any real one, and a bound for an endless stream.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The text of `path`, at most `max` bytes; `what` names the format in the refusals
/// (`rocprof`). A NUL byte ends the read at once: no text format kgate reads has one, and a
/// device such as `/dev/zero` is refused without reading up to the bound.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String, ImportError> {
    let mut reader = TextReader::open(path, what, max)?;
    let mut text = String::new();
    reader
        .read_to_string(&mut text)
        .map_err(|e| reader.refusal(e))?;
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
        Some(Refusal(message)) => ImportError::Content {
            path: path.to_path_buf(),
            message: message.clone(),
        },
        None => ImportError::Read {
            path: path.to_path_buf(),
            source: error,
        },
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
            crate::model::fsutil::open_maybe_gzip(path).map_err(|source| ImportError::Read {
                path: path.to_path_buf(),
                source,
            })?;
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
        String::from_utf8(head).map_err(|e| ImportError::Content {
            path: self.path.clone(),
            message: not_utf8(&self.what, from + e.utf8_error().valid_up_to() as u64),
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
            return Err(self.refuse(format!(
                "is not text (a NUL byte at offset {}), so it is not {what} output; pass the file the tool wrote",
                self.offset + (kept + at) as u64
            )));
        }
        if self.offset + self.buf.len() as u64 > self.max {
            return Err(self.refuse(format!(
                "is larger than {} MiB, more than kgate reads from one {what} file (or an endless stream); pass the file the tool wrote, split into smaller files if it really is that large",
                self.max >> 20
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

/// [`read_json`] of a document whose bulk is the array under `key`: each element goes to
/// `each` (with its index) as a `serde_json::Value` as it is read from the file, so that one
/// element is held at a time and not the file's text ([`json_array::split`]); the file is
/// checked as [`read_text`] checks it, chunk by chunk (a pipe, which cannot be read a second
/// time for serde_json's messages, is read whole). Returns the rest of the document.
pub fn for_each_json_element(
    path: &Path,
    what: &str,
    key: &str,
    mut each: impl FnMut(usize, Value) -> Result<(), ImportError>,
) -> Result<json_array::Document, ImportError> {
    let handed = match split_json(path, what, key, json_array::as_written, &mut each)? {
        json_array::Split::Done(document) => return Ok(document),
        json_array::Split::Stopped(e) => return Err(e),
        json_array::Split::Io(e) => return Err(refusal_of(path, e)),
        json_array::Split::Unusual { handed } => handed,
    };
    // Read again whole by serde_json, for its error or its rule, past the elements already
    // handed over.
    let text = read_text(path, what, MAX_FILE_BYTES)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let skipping = |i, v| if i < handed { Ok(()) } else { each(i, v) };
    json_array::for_each_element(text, key, skipping).map_err(|e| match e {
        json_array::ArrayError::Stopped(e) => e,
        json_array::ArrayError::Json(e) => not_json(path, what, &e),
    })
}

/// [`json_array::split`] of the JSON file at `path`, read as [`json_stream`] reads it. A file
/// that cannot be read twice ([`json_array::rereadable`]: a pipe) is not split: it is left
/// whole to the reading the caller falls back to (`Unusual`, nothing handed over).
pub fn split_json<T: serde::de::DeserializeOwned, E>(
    path: &Path,
    what: &str,
    key: &str,
    rewrite: fn(&str) -> std::borrow::Cow<'_, str>,
    each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<json_array::Split<E>, ImportError> {
    if !json_array::rereadable(path) {
        return Ok(json_array::Split::Unusual { handed: 0 });
    }
    Ok(json_array::split(
        json_stream(path, what)?,
        key,
        rewrite,
        each,
    ))
}

/// The text of the JSON file at `path`, checked as [`read_text`] checks it as it is read, a
/// leading byte-order mark (Windows editors and PowerShell write one) left out.
pub fn json_stream(path: &Path, what: &str) -> Result<impl Read, ImportError> {
    let mut reader = TextReader::open(path, what, MAX_FILE_BYTES)?;
    let head = reader.head(3)?;
    let head = head.strip_prefix('\u{feff}').unwrap_or(&head).to_string();
    Ok(std::io::Cursor::new(head).chain(reader))
}

pub(crate) fn not_json(path: &Path, what: &str, e: &serde_json::Error) -> ImportError {
    ImportError::Content {
        path: path.to_path_buf(),
        message: format!(
            "is not valid JSON (line {}, column {}: {}), so it is not {what} output; pass the file the tool wrote, whole",
            e.line(),
            e.column(),
            crate::model::text::plain_serde(None, &e.to_string())
        ),
    }
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
            format!(
                "is not text (byte {} is not UTF-8)",
                e.utf8_error().valid_up_to()
            )
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
        for at in [
            0,
            5,
            TEXT_CHUNK - 1,
            TEXT_CHUNK,
            TEXT_CHUNK + 1,
            2 * TEXT_CHUNK + 7,
        ] {
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
