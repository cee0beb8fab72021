//! A harness's JSON document whose bulk is one array under a top-level key (`benchmarks` of
//! google/benchmark and pytest-benchmark, `results` of hyperfine), read element by element as
//! it is parsed. An import then holds the file's text and one element at a time; a
//! `serde_json::Value` of the whole document beside the text took several times the file.

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What the document held besides the array's elements.
#[derive(Debug)]
pub struct Document {
    /// Whether the key held an array (whose elements went to the callback).
    pub array: Found,
    /// Every other top-level key, as it was written (of a key written twice, the last).
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
    each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<Document, ArrayError<E>> {
    parse(serde_json::Deserializer::from_str(text), key, each)
}

/// [`for_each_element`] of a document read from `reader` as it is parsed, so that neither the
/// file's text nor the document is held: one element at a time. An error of the reader is a
/// [`ArrayError::Json`] whose `is_io()` holds; `std::io::Error::from` gives it back.
pub fn for_each_element_read<T: serde::de::DeserializeOwned, E>(
    reader: impl std::io::Read,
    key: &str,
    each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<Document, ArrayError<E>> {
    parse(serde_json::Deserializer::from_reader(reader), key, each)
}

fn parse<'de, R: serde_json::de::Read<'de>, T: Deserialize<'de>, E>(
    mut de: serde_json::Deserializer<R>,
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
    let parsed = de.deserialize_any(&mut reader).and_then(|()| de.end());
    if let Some(e) = reader.failure {
        return Err(ArrayError::Stopped(e));
    }
    parsed.map_err(ArrayError::Json)?;
    Ok(reader.document)
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

    type Read = Result<Document, ArrayError<String>>;

    /// Reads `text` as a string and as a stream, which must agree; the string's outcome.
    fn read(text: &str) -> (Read, Vec<(usize, Value)>) {
        let each = |seen: &mut Vec<(usize, Value)>, i: usize, v: Value| {
            if v == "stop" {
                return Err(format!("stopped at {i}"));
            }
            seen.push((i, v));
            Ok(())
        };
        let (mut seen, mut streamed) = (Vec::new(), Vec::new());
        let result = for_each_element(text, "runs", |i, v| each(&mut seen, i, v));
        let from_reader =
            for_each_element_read(text.as_bytes(), "runs", |i, v| each(&mut streamed, i, v));
        assert_eq!(seen, streamed, "{text}");
        // A stream places an error of the document's shape (a key written twice) one column
        // further on; its message and line are the same.
        let outcome = |r: &Read| match r {
            Err(ArrayError::Json(e)) => format!(
                "{:?} at line {}: {}",
                e.classify(),
                e.line(),
                e.to_string().split(" at line").next().unwrap_or_default()
            ),
            other => format!("{other:?}"),
        };
        assert_eq!(outcome(&result), outcome(&from_reader), "{text}");
        (result, seen)
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
