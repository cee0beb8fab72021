//! One trace event as scanned: where its fields stand in the buffer, and their values read
//! only when the event's phase calls for them.

use std::borrow::Cow;
use std::sync::LazyLock;

use crate::import::trace::json_scan::{Kind, RawStr, Scanner, Stop, Value};

/// A process or thread id: a number or a string (Kineto writes `"stream 7"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(super) enum Id {
    #[default]
    Absent,
    Num(i64),
    Text(String),
}

impl Id {
    pub(super) fn text(&self) -> String {
        match self {
            Id::Absent => String::new(),
            Id::Num(n) => n.to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

/// Finds `"hlo_op"` in an event's `args`.
static HLO_OP: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"hlo_op\""));

pub(super) fn invalid(expected: &'static str, at: usize) -> Stop {
    Stop::Invalid { expected, at }
}

/// One event's fields as they stand in the buffer. Nothing is decoded or parsed until the
/// event's phase shows it is needed, so the events that are not kept cost one scan.
#[derive(Default)]
pub(super) struct Event<'a> {
    /// The buffer the event was scanned from (for error offsets and `args`).
    pub(super) base: &'a [u8],
    pub(super) name: Value<'a>,
    pub(super) ph: u8,
    pub(super) cat: Value<'a>,
    pub(super) id: Value<'a>,
    pub(super) event_stats: Value<'a>,
    pub(super) ts: Value<'a>,
    pub(super) dur: Value<'a>,
    pub(super) pid: Value<'a>,
    pub(super) tid: Value<'a>,
    pub(super) args: Value<'a>,
    pub(super) entries: Value<'a>,
}

impl<'a> Event<'a> {
    /// Scans one event object, noting where the fields kgate reads stand, and hands it to
    /// `take` (by reference: the event stays in this frame, not copied out).
    pub(super) fn scan(
        s: &mut Scanner<'a>,
        take: impl FnOnce(&Event<'a>) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let mut ev = Event {
            base: s.buf,
            ..Event::default()
        };
        s.expect(b'{', "a trace event object `{`")?;
        if !s.first_member()? {
            return take(&ev);
        }
        loop {
            let key = s.key()?;
            let value = s.value()?;
            match key.bytes {
                b"name" => ev.name = value,
                b"ph" if value.is_str() => ev.ph = value.bytes.first().copied().unwrap_or(0),
                b"cat" => ev.cat = value,
                b"id" => ev.id = value,
                b"event_stats" => ev.event_stats = value,
                b"ts" => ev.ts = value,
                b"dur" => ev.dur = value,
                b"pid" => ev.pid = value,
                b"tid" => ev.tid = value,
                b"args" => ev.args = value,
                b"entries" => ev.entries = value,
                _ => {}
            }
            if !s.more(b'}', "`,` or `}` after a member of the event")? {
                return take(&ev);
            }
        }
    }

    /// A field's text: a string, or a number as written; absent and `null` read as empty.
    pub(super) fn text(value: &Value<'a>) -> Result<Cow<'a, str>, Stop> {
        value.text().ok_or_else(|| invalid("a string", value.at))
    }

    /// The id a `pid` or `tid` field names.
    fn id(value: &Value<'a>) -> Result<Id, Stop> {
        Ok(match value.kind {
            Kind::Absent | Kind::Null => Id::Absent,
            Kind::Num => {
                if let Some(n) = small_integer(value.bytes) {
                    return Ok(Id::Num(n));
                }
                let text = Self::text(value)?;
                text.parse()
                    .map_or_else(|_| Id::Text(text.into_owned()), Id::Num)
            }
            Kind::Str | Kind::EscapedStr => Id::Text(Self::text(value)?.into_owned()),
            _ => return Err(invalid("a process or thread id", value.at)),
        })
    }

    pub(super) fn pid(&self) -> Result<Id, Stop> {
        Self::id(&self.pid)
    }

    pub(super) fn thread(&self) -> Result<(Id, Id), Stop> {
        Ok((self.pid()?, Self::id(&self.tid)?))
    }

    /// Calls `visit` with each member of `args` (anything but an object has none).
    pub(super) fn walk_args(
        &self,
        mut visit: impl FnMut(RawStr<'a>, Value<'a>) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        if self.args.kind != Kind::Container {
            return Ok(());
        }
        let mut s = Scanner::new(self.base, self.args.at);
        if s.peek()? != b'{' {
            return Ok(());
        }
        s.pos += 1;
        if !s.first_member()? {
            return Ok(());
        }
        loop {
            let key = s.key()?;
            let value = s.value()?;
            visit(key, value)?;
            if !s.more(b'}', "`,` or `}` after a member of `args`")? {
                return Ok(());
            }
        }
    }

    /// Whether the event's category is `kernel` (one of its comma-separated categories).
    pub(super) fn is_kernel_category(&self) -> Result<bool, Stop> {
        let is_kernel = |c: &[u8]| c.trim_ascii().eq_ignore_ascii_case(b"kernel");
        let kernel_category = match self.cat.kind {
            // Compared as bytes: `kernel` is ASCII, so no UTF-8 check is needed.
            Kind::Str => self.cat.bytes.split(|&b| b == b',').any(is_kernel),
            Kind::Absent => false,
            _ => Self::text(&self.cat)?
                .split(',')
                .any(|c| is_kernel(c.as_bytes())),
        };
        Ok(kernel_category)
    }

    /// Whether the event has a string `hlo_op` argument (an XLA op, or a launch call naming
    /// one).
    pub(super) fn has_hlo_op(&self) -> Result<bool, Stop> {
        // Most events have no `hlo_op`: a substring search rules them out cheaply.
        if self.args.kind != Kind::Container || HLO_OP.find(self.args.bytes).is_none() {
            return Ok(false);
        }
        let mut found = false;
        self.walk_args(|key, value| {
            found |= key.bytes == b"hlo_op" && value.is_str();
            Ok(())
        })?;
        Ok(found)
    }

    /// `args.name` when it is a string (the name a metadata event gives).
    pub(super) fn arg_name(&self) -> Result<Option<String>, Stop> {
        let mut name = None;
        self.walk_args(|key, value| {
            if key.bytes == b"name" && value.is_str() {
                name = Some(Self::text(&value)?.into_owned());
            }
            Ok(())
        })?;
        Ok(name)
    }
}

/// A JSON number of at most 19 digits with no fraction or exponent (every pid and tid a
/// profiler writes), read from its bytes with the importers' decimal reader: the number
/// `str::parse` gives for it, without the text's UTF-8 check and the general parse, twice per
/// event. `None` leaves the number to the general parse.
fn small_integer(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    if digits.contains(&b'.') {
        return None;
    }
    let (n, _) = crate::capture::decimal::short_decimal_digits(digits)?;
    let n = i64::try_from(n).ok()?;
    Some(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random JSON value of the kinds traces hold, with strings that hold brackets, quotes,
    /// escapes and non-ASCII text.
    fn random_value(rng: &mut fastrand::Rng, depth: u32) -> serde_json::Value {
        use serde_json::{Value as J, json};
        #[rustfmt::skip]
        let strings = ["k", "}, {", "a\"b", "back\\slash", "tab\t", "\u{e9}t\u{e9}", "[x]", ""];
        match rng.u8(..if depth > 2 { 5 } else { 7 }) {
            0 => J::Null,
            1 => J::Bool(rng.bool()),
            2 => json!(rng.i64(-1_000_000..1_000_000)),
            3 => json!(rng.f64() * 10f64.powi(rng.i32(-8..14))),
            4 => J::String(strings[rng.usize(..strings.len())].to_string()),
            5 => J::Array(
                (0..rng.usize(..4))
                    .map(|_| random_value(rng, depth + 1))
                    .collect(),
            ),
            _ => J::Object(
                (0..rng.usize(..4))
                    .map(|i| {
                        let key = format!("{}{i}", strings[rng.usize(..strings.len())]);
                        (key, random_value(rng, depth + 1))
                    })
                    .collect(),
            ),
        }
    }

    /// Whitespace JSON allows, of random length, between every token.
    fn loosen(text: &str, rng: &mut fastrand::Rng) -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut escaped = false;
        for c in text.chars() {
            out.push(c);
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                in_string = true;
            } else if matches!(c, ',' | ':' | '{' | '[') {
                for _ in 0..rng.usize(..3) {
                    out.push([' ', '\n', '\t', '\r'][rng.usize(..4)]);
                }
            }
        }
        out
    }

    /// The scanner sees in each event what serde_json sees, and a cut-off event is always
    /// "incomplete", never "invalid".
    #[test]
    fn a_small_integer_is_the_number_str_parse_reads() {
        let mut rng = fastrand::Rng::with_seed(7);
        #[rustfmt::skip]
        let mut texts: Vec<String> = [
            "0", "-0", "7", "-12", "123456789012345678", "-999999999999999999",
            "1234567890123456789", "1.5", "1e3", "-", "", "--1", "12a",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        texts.extend((0..1000).map(|_| rng.i64(..).to_string()));
        for text in &texts {
            match super::small_integer(text.as_bytes()) {
                Some(n) => assert_eq!(text.parse::<i64>(), Ok(n), "{text}"),
                // Left to the general parse: longer, or not an integer.
                None => assert!(
                    text.trim_start_matches('-').len() > 18 || text.parse::<i64>().is_err(),
                    "{text}"
                ),
            }
        }
    }

    #[test]
    fn event_scanner_agrees_with_serde_json() {
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..3000 {
            let mut object = serde_json::Map::new();
            let keys = [
                "name", "ph", "cat", "ts", "dur", "pid", "tid", "args", "extra",
            ];
            for key in keys {
                if rng.u8(..4) > 0 {
                    object.insert(key.to_string(), random_value(&mut rng, 0));
                }
            }
            let expected = serde_json::Value::Object(object);
            let text = loosen(&expected.to_string(), &mut rng);
            let mut s = Scanner::new(text.as_bytes(), 0);
            let mut seen = Vec::new();
            Event::scan(&mut s, |ev| {
                #[rustfmt::skip]
                let fields = [("name", &ev.name), ("cat", &ev.cat), ("ts", &ev.ts),
                              ("dur", &ev.dur), ("pid", &ev.pid), ("tid", &ev.tid),
                              ("args", &ev.args)];
                seen.extend(fields.map(|(key, value)| (key, *value)));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e:?}: {text}"));
            assert_eq!(s.pos, text.len(), "{text}");
            for (key, value) in seen {
                let want = &expected[key];
                match want {
                    serde_json::Value::Null if !expected.as_object().unwrap().contains_key(key) => {
                        assert_eq!(value.kind, Kind::Absent, "{key} in {text}");
                    }
                    serde_json::Value::String(w) => {
                        assert_eq!(value.text().as_deref(), Some(w.as_str()), "{key} in {text}");
                    }
                    serde_json::Value::Number(n) => {
                        assert_eq!(value.number(), Ok(n.as_f64()), "{key} in {text}");
                    }
                    serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                        assert_eq!(value.kind, Kind::Container);
                        let inner: serde_json::Value = serde_json::from_slice(value.bytes).unwrap();
                        assert_eq!(&inner, want, "{key} in {text}");
                    }
                    serde_json::Value::Bool(b) => {
                        assert_eq!(value.kind, if *b { Kind::True } else { Kind::False });
                    }
                    serde_json::Value::Null => assert_eq!(value.kind, Kind::Null),
                }
            }
            let cut = rng.usize(..text.len());
            let mut s = Scanner::new(&text.as_bytes()[..cut], 0);
            let scanned = Event::scan(&mut s, |_| Ok(()));
            assert_eq!(scanned, Err(Stop::Incomplete), "cut at {cut}: {text}");
        }
    }
}
