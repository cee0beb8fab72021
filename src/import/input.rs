//! Bounded reading of import files: a device (`/dev/zero`), a pipe without end or a file far
//! larger than any export is refused with the bound in the message, instead of exhausting
//! memory.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::ImportError;

/// The most bytes read from one results file (JSON of a harness or Proton, rocprof CSV): far
/// above any real one, and a bound for an endless stream.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The text of `path`, at most `max` bytes; `what` names the format in the refusals
/// (`rocprof`). A NUL byte ends the read at once: no text format kgate reads has one, and a
/// device such as `/dev/zero` is refused without reading up to the bound.
pub fn read_text(path: &Path, what: &str, max: u64) -> Result<String, ImportError> {
    let read_error = |source| ImportError::Read {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |message: String| ImportError::Content {
        path: path.to_path_buf(),
        message,
    };
    let mut file = std::fs::File::open(path).map_err(read_error)?.take(max + 1);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        };
        if let Some(at) = chunk[..n].iter().position(|&b| b == 0) {
            return Err(refuse(format!(
                "is not text (a NUL byte at offset {}), so it is not {what} output; pass the file the tool wrote",
                bytes.len() + at
            )));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    if bytes.len() as u64 > max {
        return Err(refuse(format!(
            "is larger than {} MiB, more than kgate reads from one {what} file (or an endless stream); pass the file the tool wrote, split into smaller files if it really is that large",
            max >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        refuse(format!(
            "is not text (byte {} is not UTF-8), so it is not {what} output; pass the file the tool wrote",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The JSON document of `path`, read with [`read_text`]'s bound; a leading byte-order mark
/// is skipped.
pub fn read_json(path: &Path, what: &str) -> Result<Value, ImportError> {
    let text = read_text(path, what, MAX_FILE_BYTES)?;
    // A leading byte-order mark (Windows editors and PowerShell write one) is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    serde_json::from_str(text).map_err(|e| ImportError::Content {
        path: path.to_path_buf(),
        message: format!(
            "is not valid JSON (line {}, column {}: {e}), so it is not {what} output; pass the file the tool wrote, whole",
            e.line(),
            e.column()
        ),
    })
}
