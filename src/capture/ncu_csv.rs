//! The records of an ncu `--csv` log, split by kgate itself.
//!
//! A raw page is one line per launch with thousands of quoted numbers, so splitting it is most
//! of an import's time. This reader finds lines with `memchr` in a large buffer of its own,
//! keeps only the CSV records among them (from the `"ID",…` header on: lines that open with a
//! quote, and the continuation lines of a quoted field that spans lines), and splits each
//! record in place: a field is a range of the buffer, doubled quotes inside a quoted field are
//! undoubled where they stand, and nothing is allocated per field. The rules are those of
//! ncu's output and of the CSV reader kgate used before: fields separated by commas, quoted
//! with `"` (a quoted field may hold commas, newlines and `""`), text after a closing quote
//! kept as part of the field, records ended by LF or CRLF, a byte-order mark at a line's start
//! dropped. Everything else in the log (`==PROF==`, `==ERROR==`, the program's own output) is
//! skipped, and ncu's messages are kept for error reports.
//!
//! Input is bounded: a line (or a quoted field spanning lines) longer than the line bound and
//! an input longer than the input bound are refused, so that a device or an endless stream
//! ends in an error instead of exhausting memory. A quoted field still open at the end of the
//! input is an error naming the line it opened on.

use std::io::Read;

use super::bytes::find;

/// How much is read from the input at a time.
const CHUNK: usize = 4 << 20;

/// Why the records could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The input is not (whole) ncu CSV: the message says where and what to do.
    #[error("{0}")]
    Content(String),
}

/// The CSV records of an ncu log, one at a time; see the module documentation.
pub struct Records<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the current record (or of the unread data between records), and end of the
    /// data read into `buf`.
    pos: usize,
    end: usize,
    /// Length of the current record in `buf`, its terminator included.
    taken: usize,
    /// Length of the current record's first line, its terminator excluded.
    first_line: usize,
    eof: bool,
    /// Lines read so far; the first line of the current record.
    lines: u64,
    record_line: u64,
    started: bool,
    /// The fields of the current record, as ranges relative to `pos`.
    fields: Vec<(u32, u32)>,
    messages: Vec<String>,
    max_line: usize,
    max_input: u64,
    read: u64,
}

impl<R: Read> Records<R> {
    /// Records of `inner`, refusing a line (or a quoted field spanning lines) of more than
    /// `max_line` bytes and an input of more than `max_input`.
    pub fn new(inner: R, max_line: usize, max_input: u64) -> Records<R> {
        Records {
            inner,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            taken: 0,
            first_line: 0,
            eof: false,
            lines: 0,
            record_line: 0,
            started: false,
            fields: Vec::new(),
            messages: Vec::new(),
            max_line,
            max_input,
            read: 0,
        }
    }

    /// Moves to the next record; false at the end of the input. The first record is the
    /// `"ID",…` header.
    pub fn next_record(&mut self) -> Result<bool, RecordError> {
        if !self.next_unsplit()? {
            return Ok(false);
        }
        self.split_current()?;
        Ok(true)
    }

    /// Moves to the next record without splitting it into fields: [`Records::first_line`]
    /// gives its text, and [`Records::split_current`] splits it (with the lines a quoted field
    /// may carry it over) when the caller cannot read it whole. False at the end of the input.
    pub fn next_unsplit(&mut self) -> Result<bool, RecordError> {
        self.pos += self.taken;
        self.taken = 0;
        self.fields.clear();
        loop {
            let Some(mut line_end) = self.line_end(0)? else {
                return Ok(false);
            };
            self.lines += 1;
            if self.buf[self.pos..self.pos + line_end].starts_with("\u{feff}".as_bytes()) {
                self.pos += 3;
                line_end -= 3;
            }
            let line = &self.buf[self.pos..self.pos + line_end];
            let is_record = if self.started {
                line.first() == Some(&b'"')
            } else if line.starts_with(b"\"ID\",") {
                self.started = true;
                true
            } else {
                false
            };
            if is_record {
                self.record_line = self.lines;
                self.first_line = line_end;
                self.taken = (line_end + 1).min(self.end - self.pos);
                return Ok(true);
            }
            if line.starts_with(b"==") {
                let text = String::from_utf8_lossy(line).trim_end().to_string();
                if self.messages.len() >= 64 {
                    self.messages.remove(0);
                }
                self.messages.push(text);
            }
            self.pos = (self.pos + line_end + 1).min(self.end);
        }
    }

    /// Splits the current record, read by [`Records::next_unsplit`], into its fields.
    pub fn split_current(&mut self) -> Result<(), RecordError> {
        self.fields.clear();
        self.split(self.first_line)
    }

    /// The first line of the current record, without its line ending's `\n` (a `\r` before it
    /// stays). A record whose quoted field holds a newline goes on past it.
    pub fn first_line(&self) -> &[u8] {
        &self.buf[self.pos..self.pos + self.first_line]
    }

    /// The current record's line (1-based) in the input: the first, for a record spanning
    /// lines.
    pub fn line(&self) -> u64 {
        self.record_line
    }

    /// Field `i` of the current record.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.fields
            .get(i)
            .map(|&(s, e)| &self.buf[self.pos + s as usize..self.pos + e as usize])
    }

    /// The fields of the current record, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let record = &self.buf[self.pos..];
        self.fields
            .iter()
            .map(move |&(s, e)| &record[s as usize..e as usize])
    }

    /// What to say when the input held no `"ID",…` header.
    pub fn no_csv_message(&self) -> String {
        if self.read == 0 {
            return "is empty: ncu wrote nothing there; pass the file that `ncu --csv` or `--log-file` wrote (with `--log-file`, the CSV goes to that file, not to standard output)".into();
        }
        let errors: Vec<&str> = self
            .messages
            .iter()
            .filter(|m| m.starts_with("==ERROR==") || m.starts_with("==WARNING=="))
            .map(String::as_str)
            .collect();
        if errors.is_empty() {
            format!(
                "ncu wrote no CSV (no `\"ID\",…` header), so there is nothing to import: either no kernel was profiled (check that the program launches a kernel, and ncu's --kernel-name, --launch-skip and --target-processes) or this is not ncu `--csv` output{}",
                self.last_messages()
            )
        } else {
            format!(
                "ncu wrote no CSV; it said: {} (nothing to import: fix the profiled run and profile again)",
                errors.join(" ")
            )
        }
    }

    /// ncu's last message, as a clause to append (empty when it wrote none).
    pub fn last_messages(&self) -> String {
        match self.messages.last() {
            Some(m) => format!(" (ncu's last message: `{m}`)"),
            None => String::new(),
        }
    }

    /// Splits the record at `pos` whose first line is `line_end` bytes long, into `fields`.
    fn split(&mut self, mut line_end: usize) -> Result<(), RecordError> {
        let mut i = 0usize;
        loop {
            if i < line_end && self.buf[self.pos + i] == b'"' {
                // A quoted field: up to the quote that is not doubled.
                let start = i + 1;
                let opened = self.lines;
                let mut j = start;
                // Where undoubled content ends, once a `""` has been seen.
                let mut write: Option<usize> = None;
                let close = loop {
                    let found = find(b'"', &self.buf[self.pos + j..self.pos + line_end]);
                    let Some(q) = found.map(|q| j + q) else {
                        // The field goes on past this line.
                        if let Some(w) = write.as_mut() {
                            self.buf
                                .copy_within(self.pos + j..self.pos + line_end, self.pos + *w);
                            *w += line_end - j;
                        }
                        j = line_end;
                        line_end = self.continue_quoted(line_end, opened)?;
                        continue;
                    };
                    if let Some(w) = write.as_mut() {
                        self.buf
                            .copy_within(self.pos + j..self.pos + q, self.pos + *w);
                        *w += q - j;
                    }
                    if q + 1 < line_end && self.buf[self.pos + q + 1] == b'"' {
                        // `""`: one quote of the content.
                        let w = write.get_or_insert(q);
                        self.buf[self.pos + *w] = b'"';
                        *w += 1;
                        j = q + 2;
                        continue;
                    }
                    break q;
                };
                let mut content_end = write.unwrap_or(close);
                let mut after = close + 1;
                // Text after the closing quote belongs to the field, up to a comma.
                if after < line_end && self.buf[self.pos + after] != b',' {
                    let rest = &self.buf[self.pos + after..self.pos + line_end];
                    let n = memchr::memchr(b',', rest).unwrap_or(rest.len());
                    let tail = trim_cr(&rest[..n], after + n == line_end).len();
                    self.buf.copy_within(
                        self.pos + after..self.pos + after + tail,
                        self.pos + content_end,
                    );
                    content_end += tail;
                    after += n;
                }
                self.push(start, content_end)?;
                if after >= line_end {
                    break;
                }
                i = after + 1; // past the comma
            } else {
                let rest = &self.buf[self.pos + i..self.pos + line_end];
                match memchr::memchr(b',', rest) {
                    Some(n) => {
                        self.push(i, i + n)?;
                        i += n + 1;
                    }
                    None => {
                        let n = trim_cr(rest, true).len();
                        self.push(i, i + n)?;
                        break;
                    }
                }
            }
        }
        self.taken = (line_end + 1).min(self.end - self.pos);
        Ok(())
    }

    fn push(&mut self, start: usize, end: usize) -> Result<(), RecordError> {
        // A record is at most `max_line` bytes, checked when its lines were read; `u32` holds
        // offsets within it as long as that bound does.
        let (Ok(s), Ok(e)) = (u32::try_from(start), u32::try_from(end)) else {
            let line = self.record_line;
            let message = format!("line {line}: a CSV record longer than 4 GiB");
            return Err(RecordError::Content(message));
        };
        self.fields.push((s, e));
        Ok(())
    }

    /// A quoted field of the current record runs past the line ending at `line_end`: the end of
    /// the next line, or the error that it has none.
    fn continue_quoted(&mut self, line_end: usize, opened: u64) -> Result<usize, RecordError> {
        let next = if self.pos + line_end >= self.end && self.eof {
            None // the last line, without a newline
        } else {
            self.line_end(line_end + 1)?
        };
        match next {
            Some(next) => {
                self.lines += 1;
                Ok(next)
            }
            None => Err(RecordError::Content(format!(
                "line {opened}: a quoted CSV field opened there is not closed by the end of the file (line {}), so the file is cut short or is not ncu `--csv` output; pass the whole file that `ncu --csv` or `--log-file` wrote",
                self.lines
            ))),
        }
    }

    /// The end (relative to `pos`, before its newline) of the line starting `from` bytes after
    /// `pos`, reading more input as needed; `None` when no byte is left there.
    fn line_end(&mut self, from: usize) -> Result<Option<usize>, RecordError> {
        let mut searched = from;
        loop {
            if let Some(n) = memchr::memchr(b'\n', &self.buf[self.pos + searched..self.end]) {
                let end = searched + n;
                self.check_length(from, end)?;
                return Ok(Some(end));
            }
            searched = self.end - self.pos;
            self.check_length(from, searched)?;
            if self.eof {
                return Ok((searched > from).then_some(searched));
            }
            self.fill()?;
        }
    }

    /// Refuses a line (from `from` to `end`) or a quoted record (from 0 to `end`) beyond the
    /// bound.
    fn check_length(&self, from: usize, end: usize) -> Result<(), RecordError> {
        if end - from > self.max_line {
            return Err(RecordError::Content(format!(
                "has a line longer than {}, so it is not ncu `--csv` output (ncu writes one row per line; this looks like binary data or an endless stream); pass the file that `ncu --csv` or `--log-file` wrote",
                size_words(self.max_line as u64)
            )));
        }
        if end > self.max_line {
            return Err(RecordError::Content(format!(
                "has a quoted CSV field that runs on for more than {} without closing, so it is not ncu `--csv` output; pass the file that `ncu --csv` or `--log-file` wrote",
                size_words(self.max_line as u64)
            )));
        }
        Ok(())
    }

    /// Reads more input after `end`, first moving the current record to the buffer's start.
    fn fill(&mut self) -> Result<(), RecordError> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.end < CHUNK / 2 {
            self.buf.resize(self.end + CHUNK, 0);
        }
        let n = loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        };
        if n == 0 {
            self.eof = true;
            return Ok(());
        }
        self.end += n;
        self.read += n as u64;
        if self.read > self.max_input {
            return Err(RecordError::Content(format!(
                "is larger than {}, more than kgate reads from one ncu export (or an endless stream); export fewer launches per file (`--launch-skip`, `--launch-count`, `--kernel-name`) and pass the files together",
                size_words(self.max_input)
            )));
        }
        Ok(())
    }
}

/// `field` without the `\r` of a CRLF when it ends its line.
fn trim_cr(field: &[u8], ends_line: bool) -> &[u8] {
    match field.split_last() {
        Some((b'\r', rest)) if ends_line => rest,
        _ => field,
    }
}

/// A byte count in words: `16 MiB`, `8 GiB`.
fn size_words(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text` as strings, or the first error's message.
    fn split_all(text: &[u8]) -> Result<Vec<Vec<String>>, String> {
        split_with(text, 1 << 20, 1 << 30)
    }

    fn split_with<R: Read>(
        text: R,
        max_line: usize,
        max_input: u64,
    ) -> Result<Vec<Vec<String>>, String> {
        let mut records = Records::new(text, max_line, max_input);
        let mut out = Vec::new();
        while records.next_record().map_err(|e| e.to_string())? {
            out.push(fields(&records));
        }
        Ok(out)
    }

    fn fields<R: Read>(records: &Records<R>) -> Vec<String> {
        records
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect()
    }

    #[test]
    fn records_split_as_written() {
        let cases: [(&[u8], &[&[&str]]); 5] = [
            // Quoted commas and doubled quotes stay in their field.
            (
                b"\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"void k<1, 2>(int, \"\"a\"\")\",\"1,234\"\n\"1\",\"\"\"\"\"\",\"\"\"\"\n",
                &[&["ID", "Kernel Name", "x"], &["0", "void k<1, 2>(int, \"a\")", "1,234"], &["1", "\"\"", "\""]],
            ),
            // Empty cells and ragged rows are kept as written.
            (
                b"\"ID\",\"a\",\"b\"\n\"\",\"\",\"\"\n\"0\",,\n\"1\"\n\"2\",\"x\",\"y\",\"z\"\n",
                &[&["ID", "a", "b"], &["", "", ""], &["0", "", ""], &["1"], &["2", "x", "y", "z"]],
            ),
            // A final line without a newline is a record.
            (b"\"ID\",\"a\"\n\"0\",\"5\"", &[&["ID", "a"], &["0", "5"]]),
            (b"\"ID\",\"a\"\r\n\"0\",5\r", &[&["ID", "a"], &["0", "5"]]),
            // Text after a closing quote belongs to the field.
            (b"\"ID\",\"a\"b,\"c\" \n", &[&["ID", "ab", "c "]]),
        ];
        for (text, expected) in cases {
            let shown = String::from_utf8_lossy(text);
            assert_eq!(split_all(text).unwrap(), expected, "{shown}");
        }
    }

    #[test]
    fn crlf_ends_records_and_stays_inside_quoted_fields() {
        let text = b"\"ID\",\"a\"\r\n\"0\",\"line one\r\nline two\"\r\n\"1\",unquoted\r\n";
        let mut records = Records::new(&text[..], 1 << 20, 1 << 30);
        let mut lines = Vec::new();
        let mut out = Vec::new();
        while records.next_record().unwrap() {
            lines.push(records.line());
            out.push(fields(&records));
        }
        assert_eq!(
            out,
            [
                &["ID", "a"][..],
                &["0", "line one\r\nline two"],
                &["1", "unquoted"]
            ]
        );
        // A record spanning lines is named by its first; the next one counts both.
        assert_eq!(lines, vec![1, 2, 4]);
    }

    #[test]
    fn log_lines_a_bom_and_blank_lines_are_skipped_and_messages_kept() {
        let text = "\u{feff}==PROF== Connected to process 1\nhello from the app\n\"ID\",\"a\"\n\n==PROF== in between\n\u{feff}\"0\",\"1\"\nplain output\n==PROF== Disconnected\n";
        let mut records = Records::new(text.as_bytes(), 1 << 20, 1 << 30);
        assert!(records.next_record().unwrap());
        assert_eq!(records.line(), 3);
        assert!(records.next_record().unwrap());
        assert_eq!(records.line(), 6);
        assert_eq!(records.get(1), Some(&b"1"[..]));
        assert!(!records.next_record().unwrap());
        let last = records.last_messages();
        assert_eq!(last, " (ncu's last message: `==PROF== Disconnected`)");
    }

    #[test]
    fn an_unterminated_quote_is_an_error_naming_its_line() {
        let text = b"\"ID\",\"a\"\n\"0\",\"1\"\n\"1\",\"open\nmore\nand more\n";
        let e = split_all(text).unwrap_err();
        let unclosed =
            "line 3: a quoted CSV field opened there is not closed by the end of the file (line 5)";
        assert!(e.starts_with(unclosed), "{e}");
        // Also without a final newline, and in the header.
        let e = split_all(b"\"ID\",\"a").unwrap_err();
        let opened = "line 1: a quoted CSV field opened there";
        assert!(e.starts_with(opened), "{e}");
    }

    #[test]
    fn records_across_buffer_refills_split_the_same() {
        // Lines longer than a read, and quoted fields with doubled quotes and newlines that
        // straddle where one read ends and the next begins.
        let mut text = String::from("\"ID\",\"v\"\n");
        let mut expected = vec![vec!["ID".to_string(), "v".to_string()]];
        for r in 0..40 {
            let (xs, ys) = ("x".repeat(r * 9_000), "y".repeat(r * 7_000 % 5_000));
            let cell = format!("{xs}\"\"{r}\n{ys}");
            text.push_str(&format!("\"{r}\",\"{cell}\"\n"));
            expected.push(vec![r.to_string(), cell.replace("\"\"", "\"")]);
        }
        let out = split_with(Trickle(text.as_bytes()), 1 << 20, 1 << 30).unwrap();
        assert_eq!(out, expected);
    }

    /// A reader that hands out at most 10,007 bytes at a time.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(10_007);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn an_endless_stream_of_lines_stops_at_the_input_bound() {
        let endless = std::io::repeat(b'\n');
        let mut records = Records::new(endless, 64, 4096);
        let e = records.next_record().unwrap_err().to_string();
        assert_eq!(
            e,
            "is larger than 4096 bytes, more than kgate reads from one ncu export (or an endless stream); export fewer launches per file (`--launch-skip`, `--launch-count`, `--kernel-name`) and pass the files together"
        );
    }

    #[test]
    fn a_long_line_and_a_quoted_field_without_end_stop_at_the_line_bound() {
        let e = split_with(&[0u8; 1000][..], 64, 1 << 20).unwrap_err();
        assert!(e.starts_with("has a line longer than 64 bytes"), "{e}");
        let text = format!("\"ID\",\"Kernel Name\"\n\"0\",\"{}", "x\n".repeat(100));
        let e = split_with(text.as_bytes(), 64, 1 << 20).unwrap_err();
        let runs_on = "has a quoted CSV field that runs on for more than 64 bytes";
        assert!(e.starts_with(runs_on), "{e}");
    }

    #[test]
    fn no_header_is_reported_with_ncus_words() {
        let mut records = Records::new(&b""[..], 64, 4096);
        assert!(!records.next_record().unwrap());
        assert!(records.no_csv_message().starts_with("is empty"));
        let text = b"==ERROR== The application returned an error code (1).\nsome output\n";
        let mut records = Records::new(&text[..], 1 << 10, 1 << 20);
        assert!(!records.next_record().unwrap());
        assert_eq!(
            records.no_csv_message(),
            "ncu wrote no CSV; it said: ==ERROR== The application returned an error code (1). (nothing to import: fix the profiled run and profile again)"
        );
    }
}
