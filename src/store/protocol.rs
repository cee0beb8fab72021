//! Reading a protocol file (the JSON lines a benchmark writes to `KGATE_PROTOCOL_FILE`) line by
//! line, bounded; what each line means is [`crate::model::protocol`].

use std::io::{BufRead, Read};
use std::path::Path;

use crate::model::protocol::{ProtocolError, ProtocolLine, parse_line};

/// The longest protocol line read: one JSON object of a few keys is far shorter, and a file
/// without line breaks (a device such as `/dev/zero`, a binary) is refused at this length
/// instead of being read whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes read from one protocol file, a bound for an endless stream.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Reads a protocol file line by line within [`MAX_LINE_BYTES`] and [`MAX_FILE_BYTES`],
/// skipping a leading byte-order mark: `each` gets every line with its number as soon as it is
/// read, so that a caller that keeps less than the lines keeps memory flat (a file of millions
/// of measurements is held as its samples). An error `each` returns stops the reading and is
/// reported with that line's number.
pub fn for_each_line(
    path: &Path,
    mut each: impl FnMut(usize, ProtocolLine) -> Result<(), String>,
) -> Result<(), ProtocolError> {
    let read_error = |source| ProtocolError::Read {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |line: usize, message: String| ProtocolError::Line {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    let mut total: u64 = 0;
    for number in 1.. {
        buf.clear();
        let n = loop {
            match (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
            {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other.map_err(read_error)?,
            }
        };
        if n == 0 {
            break;
        }
        total += n as u64;
        if buf.contains(&0) {
            return Err(refuse(
                number,
                "holds a NUL byte, so this is not a text file of protocol lines (a device or a binary?); pass the file the benchmark wrote to $KGATE_PROTOCOL_FILE".into(),
            ));
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(refuse(
                number,
                format!(
                    "is longer than {} MiB; a protocol line is one small JSON object, so this is not a protocol file (or it lacks line breaks)",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        if total > MAX_FILE_BYTES {
            return Err(refuse(
                number,
                format!(
                    "the file goes on past {} MiB, more than kgate reads from one protocol file (an endless stream?); split it into one file per repetition",
                    MAX_FILE_BYTES >> 20
                ),
            ));
        }
        let text = std::str::from_utf8(&buf).map_err(|e| {
            refuse(
                number,
                format!(
                    "is not UTF-8 text (byte {} of the line); protocol lines are JSON",
                    e.valid_up_to() + 1
                ),
            )
        })?;
        let text = if number == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(text)
        } else {
            text
        };
        match parse_line(text) {
            Ok(Some(line)) => each(number, line).map_err(|message| refuse(number, message))?,
            Ok(None) => {}
            Err(message) => return Err(refuse(number, message)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(path: &Path) -> Result<Vec<ProtocolLine>, ProtocolError> {
        let mut lines = Vec::new();
        for_each_line(path, |_, line| {
            lines.push(line);
            Ok(())
        })?;
        Ok(lines)
    }

    #[test]
    fn file_errors_name_the_line_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let two = "{\"metric\": \"t\", \"value\": 1}\n\n{\"metric\": \"t\", \"value\": 2}\n";
        std::fs::write(&path, format!("{two}kernel_time=3\n")).unwrap();
        let err = read_all(&path).unwrap_err().to_string();
        assert_contains!(err, "p.jsonl` line 4: not a JSON object");
        std::fs::write(&path, two).unwrap();
        assert_eq!(read_all(&path).unwrap().len(), 2);
    }
}
