//! Reading a file's text: a pipe or device read once and bounded (a NUL byte refused at once),
//! a leading byte-order mark read past.

/// Whether the file at `path` can be read again from its start: a regular file can; a pipe
/// (`/dev/stdin`, a shell's `<(…)`) gives nothing the second time, so it is read once, bounded
/// ([`read_once`]).
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
