//! Value parsers of `kgate.yaml`: durations (`30s`), percentages (`5%`), tolerances,
//! repetitions (`10` or `{min, max}`) and commands (a shell string or an argument list). Each
//! refuses a bare number where a unit is needed rather than guess, and carries its JSON Schema,
//! written to accept exactly what the parser reads.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::model::metric::Tolerance;

/// YAML scalars where the loader wants text: `n: 384` is read as the text `384`, so the
/// schema takes numbers and booleans there too (YAML-to-JSON tools type them).
pub(super) fn scalar_text(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "number", "boolean"] })
}

pub(super) fn scalar_text_map(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": scalar_text(generator),
        "default": {}
    })
}

/// A command: a shell string or an argument list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CommandSpec {
    /// Run with `sh -c`.
    Shell(String),
    /// Run directly, without a shell.
    Argv(Vec<String>),
}

impl CommandSpec {
    /// The argument vector actually executed.
    pub fn argv(&self) -> Vec<String> {
        match self {
            CommandSpec::Shell(s) => vec!["sh".into(), "-c".into(), s.clone()],
            CommandSpec::Argv(v) => v.clone(),
        }
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        match self {
            CommandSpec::Shell(s) => s.clone(),
            CommandSpec::Argv(v) => v.join(" "),
        }
    }
}

/// As the loader reads it: a non-blank string, or a list whose first item names the program
/// (items may be YAML numbers, read as text: `[./bench, --n, 384]`).
impl JsonSchema for CommandSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CommandSpec".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A command: a shell string (run with `sh -c`) or an argument list (run directly, without a shell).",
            "anyOf": [
                { "description": "Run with `sh -c`.", "type": "string", "pattern": "\\S" },
                {
                    "description": "Run directly, without a shell; the first item is the program.",
                    "type": "array",
                    "prefixItems": [{ "type": ["string", "number", "boolean"], "pattern": "\\S" }],
                    "items": scalar_text(generator),
                    "minItems": 1
                }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for CommandSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shell command string or a list of arguments, e.g. `./bench --n 256` or `[./bench, --n, \"256\"]`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CommandSpec, E> {
                if s.trim().is_empty() {
                    return Err(E::custom("the command is empty; give the program to run"));
                }
                Ok(CommandSpec::Shell(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandSpec, A::Error> {
                let mut argv = Vec::new();
                while let Some(arg) = seq.next_element::<String>()? {
                    argv.push(arg);
                }
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(de::Error::custom(
                        "the argument list is empty; its first item is the program to run",
                    ));
                }
                Ok(CommandSpec::Argv(argv))
            }
        }
        d.deserialize_any(V)
    }
}

/// Measured repetitions: `min` are always run; up to `max` may be run while the evidence is
/// inconclusive (only in interleaved `kgate check --against`, under the alpha-spending plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Repetitions {
    pub min: u32,
    pub max: u32,
    /// Repetitions per side between two looks of an adaptive run (`{min, max, step}`; default
    /// `inference::DEFAULT_LOOK_STEP`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// How the count was given, so that advice names the setting as the user wrote it.
    #[serde(skip)]
    pub written: RepetitionsForm,
}

/// The form a repetition count was given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepetitionsForm {
    /// A number (`repetitions: 10`), or nothing (kgate's default).
    #[default]
    Number,
    /// `{min: 10, max: 30}` or `{min: 10}`.
    Range,
    /// The `--repetitions` flag.
    Flag,
}

impl Repetitions {
    /// `min` and `max` alike, as a number gives them.
    pub fn number(n: u32) -> Repetitions {
        Repetitions {
            min: n,
            max: n,
            step: None,
            written: RepetitionsForm::Number,
        }
    }

    /// The setting to raise for more repetitions, in the form it was given: `` `repetitions` ``
    /// for a number, `` `repetitions.max` `` for `{min, max}`, `` `--repetitions` `` for the flag.
    pub fn setting_to_raise(&self) -> &'static str {
        match self.written {
            RepetitionsForm::Number => "`repetitions`",
            RepetitionsForm::Range => "`repetitions.max`",
            RepetitionsForm::Flag => "`--repetitions`",
        }
    }
}

/// As the loader reads it: a number, or `{min}` / `{min, max}` (the derived schema would
/// demand the object with both keys).
impl JsonSchema for Repetitions {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Repetitions".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Measured repetitions: a number such as `10`, or `{min: 10, max: 30}`: `min` are always run; up to `max` (default `min`) may be run while the evidence is inconclusive (only in interleaved `kgate check --against`, looking every `step` (default 2) repetitions per side against a group-sequential boundary).",
            "oneOf": [
                { "type": "integer", "minimum": 1, "maximum": u32::MAX },
                {
                    "type": "object",
                    "properties": {
                        "min": { "type": "integer", "minimum": 1, "maximum": u32::MAX },
                        "max": { "type": "integer", "minimum": 1, "maximum": u32::MAX },
                        "step": { "type": "integer", "minimum": 1, "maximum": u32::MAX }
                    },
                    "required": ["min"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

impl<'de> Deserialize<'de> for Repetitions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Range {
            min: u32,
            max: Option<u32>,
            step: Option<u32>,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Repetitions;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of repetitions such as `10`, or `{min: 10, max: 30}`")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Repetitions, E> {
                let n = u32::try_from(n)
                    .map_err(|_| E::custom(format!("{n} repetitions is too many")))?;
                Ok(Repetitions::number(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Repetitions, E> {
                if n < 0 {
                    return Err(E::custom(format!(
                        "repetitions must be at least 1, not {n}"
                    )));
                }
                self.visit_u64(n as u64)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Repetitions, A::Error> {
                let r = Range::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Repetitions {
                    min: r.min,
                    max: r.max.unwrap_or(r.min),
                    step: r.step,
                    written: RepetitionsForm::Range,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration written with a unit (`30s`, `500ms`, `2m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationSpec(pub Duration);

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurationSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration with a unit, such as `30s`, `500ms` or `2m`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DurationSpec, E> {
                let d = humantime::parse_duration(s.trim()).map_err(|e| {
                    E::custom(format!(
                        "`{s}` is not a duration ({e}); write one with a unit, such as `30s`, `500ms` or `2m`"
                    ))
                })?;
                if d.is_zero() {
                    return Err(E::custom(
                        "a timeout of zero would kill every run; give a positive duration such as `30s`",
                    ));
                }
                Ok(DurationSpec(d))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<DurationSpec, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit; write `{n}s` for seconds or `{n}ms` for milliseconds"
                )))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<DurationSpec, E> {
                self.visit_u64(n.unsigned_abs())
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<DurationSpec, E> {
                Err(E::custom(format!(
                    "`{n}` has no unit; write `{n}s` for seconds"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// What humantime (the duration loader) reads: numbers, fractions included, each with one of
/// its units (`1h 30m`, `1.5s`, `500ms`).
const DURATION_PATTERN: &str = "^\\s*([0-9]+(\\.[0-9]*)?\\s*(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s|minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|years|year|yrs|yr|y)\\s*)+$";

/// What `parse_percent` reads: a decimal number (as Rust's float parser takes it) and `%`.
const PERCENT_PATTERN: &str = "^\\s*\\+?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?\\s*%\\s*$";

impl JsonSchema for DurationSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit, such as `30s`, `500ms` or `2m`.",
            "pattern": DURATION_PATTERN
        })
    }
}

/// A percentage written with `%` (`5%`, `0.5 %`), stored as a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent(pub f64);

fn parse_percent(s: &str) -> Result<f64, String> {
    let body = s.trim().strip_suffix('%').ok_or_else(|| {
        format!("`{s}` is not a percentage; write it with a percent sign, such as `5%`")
    })?;
    let v: f64 = body.trim().parse().map_err(|_| {
        format!("`{s}` is not a percentage; write a number followed by `%`, such as `5%`")
    })?;
    if !v.is_finite() || !(0.0..=10_000.0).contains(&v) {
        return Err(format!(
            "`{s}` is out of range; a percentage here lies between 0% and 10000%"
        ));
    }
    Ok(v / 100.0)
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Percent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a percentage such as `5%`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Percent, E> {
                parse_percent(s).map(Percent).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Percent, E> {
                // 0.05 was most likely meant as a fraction (5 %): that reading comes first.
                Err(E::custom(if n > 0.0 && n < 1.0 {
                    format!(
                        "`{n}` is ambiguous; write a percentage with a percent sign: `{}%` if you meant the fraction {n}, or `{n}%`",
                        (n * 100.0 * 1e9).round() / 1e9
                    )
                } else {
                    format!(
                        "`{n}` is ambiguous; write a percentage with a percent sign, such as `{n}%`"
                    )
                }))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Percent, E> {
                self.visit_f64(n as f64)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Percent, E> {
                self.visit_f64(n as f64)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Percent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Percent".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A percentage with a percent sign, such as `5%`.",
            "pattern": PERCENT_PATTERN
        })
    }
}

/// A tolerance as written: `1%` (relative) or a plain number (absolute).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToleranceSpec(pub Tolerance);

impl<'de> Deserialize<'de> for ToleranceSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ToleranceSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a relative tolerance such as `1%`, or an absolute one as a number in the metric's unit")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ToleranceSpec, E> {
                parse_percent(s)
                    .map(|v| ToleranceSpec(Tolerance::Relative(v)))
                    .map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<ToleranceSpec, E> {
                if !n.is_finite() || n < 0.0 {
                    return Err(E::custom(format!(
                        "an absolute tolerance must be a number ≥ 0, not `{n}`"
                    )));
                }
                Ok(ToleranceSpec(Tolerance::Absolute(n)))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<ToleranceSpec, E> {
                self.visit_f64(n as f64)
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ToleranceSpec, E> {
                self.visit_f64(n as f64)
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for ToleranceSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tolerance".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`1%` (relative) or a number ≥ 0 (absolute, in the metric's unit).",
            "oneOf": [
                { "type": "string", "pattern": PERCENT_PATTERN },
                { "type": "number", "minimum": 0 }
            ]
        })
    }
}
