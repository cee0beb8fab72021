//! The records of an ncu `--csv` log, split by the `csv` crate behind a filter of the log's
//! lines.
//!
//! An ncu log mixes CSV records with other lines (`==PROF==`, `==ERROR==`, the program's own
//! output), which a CSV reader would take for records. [`LogLines`] therefore reads the log a
//! line at a time (found with `memchr` in a large buffer of its own) and hands on only the CSV
//! records: from the `"ID",…` header on, lines that open with a quote, and the continuation
//! lines of a quoted field that spans lines. It follows the quotes of each line it hands on to
//! know where a record ends; it drops a byte-order mark at a line's start and the `\r` of a
//! CRLF that ends a record (one inside a quoted field stays), and keeps ncu's messages for
//! error reports. The `csv` crate splits what it hands on with the rules of ncu's output:
//! fields separated by commas, quoted with `"` (a quoted field may hold commas, newlines and
//! `""`), text after a closing quote kept as part of the field, rows as ragged as written.
//!
//! Input is bounded: a line (or a quoted field spanning lines) longer than the line bound and
//! an input longer than the input bound are refused, so that a device or an endless stream
//! ends in an error instead of exhausting memory. A quoted field still open at the end of the
//! input is an error naming the line it opened on. Each error is reported where the records
//! read before it end, as a reader without lookahead would.

use std::io::Read;

use super::bytes::{bytes_equal_to, find, word_at};

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
    reader: csv::Reader<LogLines<R>>,
    record: csv::ByteRecord,
    line: u64,
}

impl<R: Read> Records<R> {
    /// Records of `inner`, refusing a line (or a quoted field spanning lines) of more than
    /// `max_line` bytes and an input of more than `max_input`.
    pub fn new(inner: R, max_line: usize, max_input: u64) -> Records<R> {
        let lines = LogLines {
            inner,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            out: (0, 0),
            eof: false,
            lines: 0,
            started: false,
            quoted: None,
            record_len: 0,
            passed: 0,
            record_start: 0,
            line_offsets: Vec::new(),
            messages: Vec::new(),
            max_line,
            max_input,
            read: 0,
            error: None,
        };
        Records {
            reader: csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .terminator(csv::Terminator::Any(b'\n'))
                .buffer_capacity(1 << 20)
                .from_reader(lines),
            record: csv::ByteRecord::new(),
            line: 0,
        }
    }

    /// Moves to the next record; false at the end of the input. The first record is the
    /// `"ID",…` header.
    pub fn next_record(&mut self) -> Result<bool, RecordError> {
        let more = self
            .reader
            .read_byte_record(&mut self.record)
            .map_err(std::io::Error::from)?;
        let lines = self.reader.get_mut();
        let passed = self.record.position().map_or(0, |p| p.line());
        if let Some((_, cut)) = lines.error.as_ref()
            && (!more || passed >= *cut)
        {
            return Err(lines.error.take().expect("checked above").0);
        }
        if more {
            self.line = lines.line_of(passed);
        }
        Ok(more)
    }

    /// The current record's line (1-based) in the input: the first, for a record spanning
    /// lines.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Field `i` of the current record.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.record.get(i)
    }

    /// The fields of the current record, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.record.iter()
    }

    /// The fields of the current record, each with the eight bytes from its start as a word
    /// where the record holds eight there (its own and the fields' after it).
    pub fn iter_with_words(&self) -> impl Iterator<Item = (&[u8], Option<u64>)> + '_ {
        let all = self.record.as_slice();
        let mut start = 0;
        self.record.iter().map(move |field| {
            let word = word_at(all, start);
            start += field.len();
            (field, word)
        })
    }

    /// What to say when the input held no `"ID",…` header.
    pub fn no_csv_message(&self) -> String {
        let lines = self.reader.get_ref();
        if lines.read == 0 {
            return "is empty: ncu wrote nothing there; pass the file that `ncu --csv` or `--log-file` wrote (with `--log-file`, the CSV goes to that file, not to standard output)".into();
        }
        let errors: Vec<&str> = lines
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
        match self.reader.get_ref().messages.last() {
            Some(m) => format!(" (ncu's last message: `{m}`)"),
            None => String::new(),
        }
    }
}

/// The CSV lines of an ncu log, as a reader of their bytes; see the module documentation.
struct LogLines<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unread data in `buf`, and its end.
    pos: usize,
    end: usize,
    /// The part of `buf` not yet handed on.
    out: (usize, usize),
    eof: bool,
    /// Lines read so far.
    lines: u64,
    started: bool,
    /// The line on which the quoted field that the last line handed on left open opened.
    quoted: Option<u64>,
    /// Bytes of the current record before the current line, while a quoted field is open.
    record_len: usize,
    /// Lines handed on so far, and the first of the current record.
    passed: u64,
    record_start: u64,
    /// (line handed on, how many lines of the input precede it less those handed on): one
    /// entry where the difference changes.
    line_offsets: Vec<(u64, u64)>,
    messages: Vec<String>,
    max_line: usize,
    max_input: u64,
    read: u64,
    /// The error met, and the first line handed on from which records are not read.
    error: Option<(RecordError, u64)>,
}

impl<R: Read> Read for LogLines<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.out.0 == self.out.1 && self.error.is_none() {
            match self.next_line() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    let cut = if self.quoted.is_some() {
                        self.record_start
                    } else {
                        self.passed + 1
                    };
                    self.error = Some((e, cut));
                }
            }
        }
        let (start, end) = self.out;
        let n = out.len().min(end - start);
        out[..n].copy_from_slice(&self.buf[start..start + n]);
        self.out.0 += n;
        Ok(n)
    }
}

impl<R: Read> LogLines<R> {
    /// The line of the input of a line handed on.
    fn line_of(&self, passed: u64) -> u64 {
        let i = self.line_offsets.partition_point(|&(at, _)| at <= passed);
        passed + i.checked_sub(1).map_or(0, |i| self.line_offsets[i].1)
    }

    /// Reads the next line, and hands it on when it is part of a record; false at the end of
    /// the input.
    fn next_line(&mut self) -> Result<bool, RecordError> {
        let Some(line_end) = self.line_end()? else {
            if let Some(opened) = self.quoted {
                return Err(RecordError::Content(format!(
                    "line {opened}: a quoted CSV field opened there is not closed by the end of the file (line {}), so the file is cut short or is not ncu `--csv` output; pass the whole file that `ncu --csv` or `--log-file` wrote",
                    self.lines
                )));
            }
            return Ok(false);
        };
        self.lines += 1;
        let next = (line_end + 1).min(self.end);
        let mut start = self.pos;
        if let Some(opened) = self.quoted {
            // A line that a quoted field carries the record on to.
            let state = quote_state(&self.buf[start..line_end], true);
            self.quoted = state.map(|here| if here { self.lines } else { opened });
            self.record_len += line_end - start + 1;
            self.hand_on(start, line_end, next);
            return Ok(true);
        }
        if self.buf[start..line_end].starts_with("\u{feff}".as_bytes()) {
            start += 3;
        }
        let line = &self.buf[start..line_end];
        let is_record = if self.started {
            line.first() == Some(&b'"')
        } else if line.starts_with(b"\"ID\",") {
            self.started = true;
            true
        } else {
            false
        };
        if !is_record {
            if line.starts_with(b"==") {
                let text = String::from_utf8_lossy(line).trim_end().to_string();
                if self.messages.len() >= 64 {
                    self.messages.remove(0);
                }
                self.messages.push(text);
            }
            self.pos = next;
            return Ok(true);
        }
        self.quoted = quote_state(line, false).map(|_| self.lines);
        self.record_len = line_end - start + 1;
        self.record_start = self.passed + 1;
        self.hand_on(start, line_end, next);
        Ok(true)
    }

    /// Hands on the line from `start` to `line_end` (its `\n`, or the end of the input), without
    /// the `\r` of a CRLF that ends a record; the next line starts at `next`.
    fn hand_on(&mut self, start: usize, line_end: usize, next: usize) {
        let mut end = line_end;
        if self.quoted.is_none() && end > start && self.buf[end - 1] == b'\r' {
            end -= 1;
        }
        if line_end < self.end {
            self.buf[end] = b'\n';
            end += 1;
        }
        self.out = (start, end);
        self.pos = next;
        self.passed += 1;
        let offset = self.lines - self.passed;
        if self.line_offsets.last().map_or(0, |&(_, o)| o) != offset {
            self.line_offsets.push((self.passed, offset));
        }
    }

    /// The end (before its newline) of the line starting at `pos`, reading more input as
    /// needed; `None` when no byte is left there.
    fn line_end(&mut self) -> Result<Option<usize>, RecordError> {
        let mut searched = 0;
        loop {
            if let Some(n) = memchr::memchr(b'\n', &self.buf[self.pos + searched..self.end]) {
                self.check_length(searched + n)?;
                return Ok(Some(self.pos + searched + n));
            }
            searched = self.end - self.pos;
            self.check_length(searched)?;
            if self.eof {
                return Ok((searched > 0).then_some(self.end));
            }
            self.fill()?;
        }
    }

    /// Refuses a line of `len` bytes, or the quoted record it carries on, beyond the bound.
    fn check_length(&self, len: usize) -> Result<(), RecordError> {
        if len > self.max_line {
            return Err(RecordError::Content(format!(
                "has a line longer than {}, so it is not ncu `--csv` output (ncu writes one row per line; this looks like binary data or an endless stream); pass the file that `ncu --csv` or `--log-file` wrote",
                size_words(self.max_line as u64)
            )));
        }
        if self.quoted.is_some() && self.record_len + len > self.max_line {
            return Err(RecordError::Content(format!(
                "has a quoted CSV field that runs on for more than {} without closing, so it is not ncu `--csv` output; pass the file that `ncu --csv` or `--log-file` wrote",
                size_words(self.max_line as u64)
            )));
        }
        Ok(())
    }

    /// Reads more input after `end`, first moving the unread data to the buffer's start.
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

/// Whether `line` ends inside a quoted field (`quoted`: it starts inside one): `None` when it
/// does not, `Some(true)` when that field opened on this line, `Some(false)` when it was open
/// at the line's start. As the `csv` crate reads: a quote opens a field only at the field's
/// start; inside, `""` is one quote of the content and a lone `"` closes it; text after the
/// closing quote, quotes included, runs to the next comma.
fn quote_state(line: &[u8], mut quoted: bool) -> Option<bool> {
    let mut opened_here = false;
    let mut i = 0;
    if !quoted && line.first() == Some(&b'"') {
        (quoted, opened_here, i) = (true, true, 1);
    }
    loop {
        if quoted {
            let Some(q) = next_quote(line, i) else {
                return Some(opened_here);
            };
            match line.get(q + 1..q + 3) {
                Some(b"\",") => {
                    // Closed, and the next field opens (most of ncu's cells).
                    (opened_here, i) = (true, q + 3);
                    continue;
                }
                _ if line.get(q + 1) == Some(&b'"') => {
                    i = q + 2;
                    continue;
                }
                _ => (quoted, i) = (false, q + 1),
            }
        }
        // Outside quotes: on to the next comma (most often the byte after a closing quote).
        if line.get(i) != Some(&b',') {
            i += memchr::memchr(b',', &line[i..])?;
        }
        i += 1;
        if line.get(i) == Some(&b'"') {
            (quoted, opened_here, i) = (true, true, i + 1);
        }
    }
}

/// The first quote in `line` from `i`: the next sixteen bytes as two words, with one branch
/// for a cell's number, then [`find`].
#[inline(always)]
fn next_quote(line: &[u8], i: usize) -> Option<usize> {
    if let (Some(a), Some(b)) = (word_at(line, i), word_at(line, i + 8)) {
        let (qa, qb) = (bytes_equal_to(a, b'"'), bytes_equal_to(b, b'"'));
        if qa | qb != 0 {
            let at = if qa != 0 {
                qa.trailing_zeros()
            } else {
                64 + qb.trailing_zeros()
            };
            return Some(i + at as usize / 8);
        }
    }
    find(b'"', &line[i..]).map(|n| i + n)
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

    fn split_with(
        text: &[u8],
        max_line: usize,
        max_input: u64,
    ) -> Result<Vec<Vec<String>>, String> {
        let mut records = Records::new(text, max_line, max_input);
        let mut out = Vec::new();
        while records.next_record().map_err(|e| e.to_string())? {
            out.push(
                records
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect(),
            );
        }
        Ok(out)
    }

    fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|f| f.to_string()).collect())
            .collect()
    }

    #[test]
    fn quoted_commas_and_doubled_quotes_stay_in_their_field() {
        let text = b"\"ID\",\"Kernel Name\",\"x\"\n\"0\",\"void k<1, 2>(int, \"\"a\"\")\",\"1,234\"\n\"1\",\"\"\"\"\"\",\"\"\"\"\n";
        assert_eq!(
            split_all(text).unwrap(),
            rows(&[
                &["ID", "Kernel Name", "x"],
                &["0", "void k<1, 2>(int, \"a\")", "1,234"],
                &["1", "\"\"", "\""],
            ])
        );
    }

    #[test]
    fn crlf_ends_records_and_stays_inside_quoted_fields() {
        let text = b"\"ID\",\"a\"\r\n\"0\",\"line one\r\nline two\"\r\n\"1\",unquoted\r\n";
        let mut records = Records::new(&text[..], 1 << 20, 1 << 30);
        let mut lines = Vec::new();
        let mut out = Vec::new();
        while records.next_record().unwrap() {
            lines.push(records.line());
            out.push(
                records
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(
            out,
            rows(&[
                &["ID", "a"],
                &["0", "line one\r\nline two"],
                &["1", "unquoted"]
            ])
        );
        // A record spanning lines is named by its first; the next one counts both.
        assert_eq!(lines, vec![1, 2, 4]);
    }

    #[test]
    fn empty_cells_and_ragged_rows_are_kept_as_written() {
        let text = b"\"ID\",\"a\",\"b\"\n\"\",\"\",\"\"\n\"0\",,\n\"1\"\n\"2\",\"x\",\"y\",\"z\"\n";
        assert_eq!(
            split_all(text).unwrap(),
            rows(&[
                &["ID", "a", "b"],
                &["", "", ""],
                &["0", "", ""],
                &["1"],
                &["2", "x", "y", "z"],
            ])
        );
    }

    #[test]
    fn a_final_line_without_newline_is_a_record() {
        assert_eq!(
            split_all(b"\"ID\",\"a\"\n\"0\",\"5\"").unwrap(),
            rows(&[&["ID", "a"], &["0", "5"]])
        );
        assert_eq!(
            split_all(b"\"ID\",\"a\"\r\n\"0\",5\r").unwrap(),
            rows(&[&["ID", "a"], &["0", "5"]])
        );
    }

    #[test]
    fn text_after_a_closing_quote_belongs_to_the_field() {
        assert_eq!(
            split_all(b"\"ID\",\"a\"b,\"c\" \n").unwrap(),
            rows(&[&["ID", "ab", "c "]])
        );
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
        assert_eq!(
            records.last_messages(),
            " (ncu's last message: `==PROF== Disconnected`)"
        );
    }

    #[test]
    fn an_unterminated_quote_is_an_error_naming_its_line() {
        let text = b"\"ID\",\"a\"\n\"0\",\"1\"\n\"1\",\"open\nmore\nand more\n";
        let e = split_all(text).unwrap_err();
        assert!(
            e.starts_with("line 3: a quoted CSV field opened there is not closed by the end of the file (line 5)"),
            "{e}"
        );
        // Also without a final newline, and in the header.
        let e = split_all(b"\"ID\",\"a").unwrap_err();
        assert!(
            e.starts_with("line 1: a quoted CSV field opened there"),
            "{e}"
        );
    }

    #[test]
    fn records_across_buffer_refills_split_the_same() {
        // Lines longer than a read, and quoted fields with doubled quotes and newlines that
        // straddle where one read ends and the next begins.
        let mut text = String::from("\"ID\",\"v\"\n");
        let mut expected = vec![vec!["ID".to_string(), "v".to_string()]];
        for r in 0..40 {
            let cell = format!(
                "{}\"\"{}\n{}",
                "x".repeat(r * 9_000),
                r,
                "y".repeat(r * 7_000 % 5_000)
            );
            text.push_str(&format!("\"{r}\",\"{cell}\"\n"));
            expected.push(vec![r.to_string(), cell.replace("\"\"", "\"")]);
        }
        let mut records = Records::new(Trickle(text.as_bytes()), 1 << 20, 1 << 30);
        let mut out = Vec::new();
        while records.next_record().unwrap() {
            out.push(
                records
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect::<Vec<_>>(),
            );
        }
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
        let e = split_with(&[0u8; 1000], 64, 1 << 20).unwrap_err();
        assert!(e.starts_with("has a line longer than 64 bytes"), "{e}");
        let text = format!("\"ID\",\"Kernel Name\"\n\"0\",\"{}", "x\n".repeat(100));
        let e = split_with(text.as_bytes(), 64, 1 << 20).unwrap_err();
        assert!(
            e.starts_with("has a quoted CSV field that runs on for more than 64 bytes"),
            "{e}"
        );
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
