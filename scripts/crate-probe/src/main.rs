//! Lower bounds of crate-based readers beside kgate's hand-written ones (issue #56 item 5):
//! a Chrome trace read whole and `traceEvents` walked one borrowed event at a time (serde_json,
//! sonic-rs, simd-json), kernels and counters tallied without kgate's aggregation; an ncu raw
//! page split by the `csv` crate, streamed. Output: counts, for checking against kgate's.
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

#[derive(Default, Debug)]
struct Tally {
    events: u64,
    kernels: u64,
    dur_sum: f64,
    counters: u64,
    ctr_sum: f64,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Id<'a> {
    N(i64),
    #[serde(borrow)]
    S(Cow<'a, str>),
}

macro_rules! event_struct {
    ($name:ident, $args:ty $(, $b:meta)?) => {
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct $name<'a> {
            #[serde(borrow)] ph: Option<Cow<'a, str>>,
            #[serde(borrow)] cat: Option<Cow<'a, str>>,
            #[serde(borrow)] name: Option<Cow<'a, str>>,
            ts: Option<f64>,
            dur: Option<f64>,
            #[serde(borrow)] pid: Option<Id<'a>>,
            #[serde(borrow)] tid: Option<Id<'a>>,
            $(#[$b])? args: Option<$args>,
        }
    };
}
event_struct!(EvJson, &'a serde_json::value::RawValue, serde(borrow));
event_struct!(EvSonic, sonic_rs::LazyValue<'a>, serde(borrow));
event_struct!(EvSimd, IgnoredAny);

fn is_kernel(cat: &Option<Cow<str>>) -> bool {
    cat.as_deref().is_some_and(|c| {
        c.split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("kernel"))
    })
}

trait Take<'de>: Deserialize<'de> {
    fn take(self, t: &mut Tally);
}
impl<'de: 'a, 'a> Take<'de> for EvJson<'a>
where
    'de: 'a,
{
    fn take(self, t: &mut Tally) {
        t.events += 1;
        match self.ph.as_deref() {
            Some("X") if is_kernel(&self.cat) => {
                t.kernels += 1;
                t.dur_sum += self.dur.unwrap_or(0.0);
            }
            Some("C") => {
                if let Some(a) = self.args {
                    let m: Vec<(Cow<str>, f64)> =
                        serde_json::from_str::<std::collections::BTreeMap<Cow<str>, f64>>(a.get())
                            .map(|m| m.into_iter().collect())
                            .unwrap_or_default();
                    for (_, v) in m {
                        t.counters += 1;
                        t.ctr_sum += v;
                    }
                }
            }
            _ => {}
        }
    }
}
impl<'de> Take<'de> for EvSonic<'de> {
    fn take(self, t: &mut Tally) {
        t.events += 1;
        match self.ph.as_deref() {
            Some("X") if is_kernel(&self.cat) => {
                t.kernels += 1;
                t.dur_sum += self.dur.unwrap_or(0.0);
            }
            Some("C") => {
                if let Some(a) = self.args {
                    let m: std::collections::BTreeMap<Cow<str>, f64> =
                        sonic_rs::from_str(a.as_raw_str()).unwrap_or_default();
                    for (_, v) in m {
                        t.counters += 1;
                        t.ctr_sum += v;
                    }
                }
            }
            _ => {}
        }
    }
}
impl<'de> Take<'de> for EvSimd<'de> {
    fn take(self, t: &mut Tally) {
        t.events += 1;
        if self.ph.as_deref() == Some("X") && is_kernel(&self.cat) {
            t.kernels += 1;
            t.dur_sum += self.dur.unwrap_or(0.0);
        }
    }
}

struct Events<'t, E>(&'t mut Tally, std::marker::PhantomData<E>);
impl<'de, 't, E: Take<'de>> DeserializeSeed<'de> for Events<'t, E> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}
impl<'de, 't, E: Take<'de>> Visitor<'de> for Events<'t, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(e) = s.next_element::<E>()? {
            e.take(self.0);
        }
        Ok(())
    }
}
struct Doc<'t, E>(&'t mut Tally, std::marker::PhantomData<E>);
impl<'de, 't, E: Take<'de>> DeserializeSeed<'de> for Doc<'t, E> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de, 't, E: Take<'de>> Visitor<'de> for Doc<'t, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("trace")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, s: A) -> Result<(), A::Error> {
        Events::<E>(self.0, Default::default()).visit_seq(s)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(k) = m.next_key::<Cow<'de, str>>()? {
            if k == "traceEvents" {
                m.next_value_seed(Events::<E>(&mut *self.0, Default::default()))?;
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut buf = if a[1] == "csv-stream" {
        Vec::new()
    } else {
        std::fs::read(&a[2]).unwrap()
    };
    let mut t = Tally::default();
    match a[1].as_str() {
        "serde_json" => {
            let mut d = serde_json::Deserializer::from_slice(&buf);
            Doc::<EvJson>(&mut t, Default::default())
                .deserialize(&mut d)
                .unwrap();
            d.end().unwrap();
        }
        "sonic" => {
            let mut d = sonic_rs::Deserializer::from_slice(&buf);
            Doc::<EvSonic>(&mut t, Default::default())
                .deserialize(&mut d)
                .unwrap();
        }
        "simd" => {
            let mut d = simd_json::Deserializer::from_slice(&mut buf).unwrap();
            Doc::<EvSimd>(&mut t, Default::default())
                .deserialize(&mut d)
                .unwrap();
        }
        "sonic-lazy" => {
            // sonic-rs's own lazy API: skip to `traceEvents`, iterate its elements and each
            // element's members as raw slices, decoding only what the event needs.
            use sonic_rs::JsonValueTrait;
            let text = unsafe { std::str::from_utf8_unchecked(&buf) };
            let events = sonic_rs::get(text, &["traceEvents"]).unwrap();
            for ev in sonic_rs::to_array_iter(events.as_raw_str()) {
                let ev = ev.unwrap();
                t.events += 1;
                let (mut ph, mut cat, mut dur, mut args) = (None, None, None, None);
                for m in sonic_rs::to_object_iter(ev.as_raw_str()) {
                    let (k, v) = m.unwrap();
                    match &*k {
                        "ph" => ph = v.as_str().map(|s| s.to_string()),
                        "cat" => cat = v.as_str().map(|s| Cow::Owned(s.to_string())),
                        "dur" => dur = v.as_f64(),
                        "args" => args = Some(v),
                        _ => {}
                    }
                }
                match ph.as_deref() {
                    Some("X") if is_kernel(&cat) => {
                        t.kernels += 1;
                        t.dur_sum += dur.unwrap_or(0.0);
                    }
                    Some("C") => {
                        if let Some(a) = args {
                            for m in sonic_rs::to_object_iter(a.as_raw_str()) {
                                let (_, v) = m.unwrap();
                                if let Some(x) = v.as_f64() {
                                    t.counters += 1;
                                    t.ctr_sum += x;
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        "csv-stream" => {
            // Streamed from the file as kgate's own reader is (after the two log lines).
            use std::io::{BufRead, BufReader};
            let mut f = BufReader::with_capacity(1 << 20, std::fs::File::open(&a[2]).unwrap());
            let mut line = Vec::new();
            for _ in 0..2 {
                line.clear();
                f.read_until(b'\n', &mut line).unwrap();
            }
            let mut r = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .buffer_capacity(1 << 20)
                .from_reader(f);
            let mut rec = csv::ByteRecord::new();
            let (mut n, mut fl) = (0u64, 0u64);
            while r.read_byte_record(&mut rec).unwrap() {
                n += 1;
                fl += rec.len() as u64;
            }
            println!("records {n} fields {fl}");
        }
        "csv" => {
            // From the `"ID",` header on, as the reader before kgate's own did after its line filter.
            let start = memchr_find(&buf, b"\"ID\",");
            let mut r = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(&buf[start..]);
            let mut rec = csv::ByteRecord::new();
            let (mut n, mut f, mut bytes) = (0u64, 0u64, 0u64);
            while r.read_byte_record(&mut rec).unwrap() {
                n += 1;
                f += rec.len() as u64;
                bytes += rec.get(rec.len() - 1).map_or(0, |x| x.len() as u64);
            }
            println!("records {n} fields {f} {bytes}");
        }
        _ => panic!(),
    }
    println!("{t:?}");
}

fn memchr_find(h: &[u8], n: &[u8]) -> usize {
    h.windows(n.len()).position(|w| w == n).unwrap()
}
