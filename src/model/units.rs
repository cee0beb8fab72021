//! Units: one canonical unit per dimension, and readable formatting.
//!
//! Benchmarks report times in whatever unit their clock uses (`us` from CUDA events, `ms` from
//! `do_bench`, `ns` from `Instant`). Comparing a baseline in `ms` with a candidate in `us` must
//! never happen, so every time is stored in nanoseconds and formatted back for people.

/// A unit after normalization: the canonical name and the factor that converts into it.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    pub unit: String,
    pub factor: f64,
}

impl Normalized {
    /// Whether the unit is a time (stored in `ns`).
    pub fn is_time(&self) -> bool {
        self.unit == "ns"
    }

    /// `value`, written in `written` (the unit this was normalized from), in the canonical
    /// unit. Refuses what a results file could not hold or should not: a value that is not
    /// finite, one that overflows on conversion (`1e300 s` is more nanoseconds than an f64
    /// holds) and a negative duration.
    pub fn convert(&self, value: f64, written: &str) -> Result<f64, ValueError> {
        let written = written.trim();
        if !value.is_finite() {
            return Err(ValueError::NotFinite { value });
        }
        if self.is_time() && value < 0.0 {
            return Err(ValueError::NegativeDuration {
                value,
                unit: written.to_string(),
            });
        }
        let converted = value * self.factor;
        if !converted.is_finite() {
            return Err(ValueError::Overflow {
                value,
                unit: written.to_string(),
                canonical: self.unit.clone(),
            });
        }
        Ok(converted)
    }
}

/// A value refused on its way into kgate's canonical units.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("the value {value} is not a finite number")]
    NotFinite { value: f64 },
    #[error(
        "{value:e} {unit} is beyond the largest number a results file holds (about 1.8e308) once converted to {canonical}"
    )]
    Overflow {
        value: f64,
        unit: String,
        canonical: String,
    },
    #[error("the duration {value} {unit} is negative; a time is never below zero")]
    NegativeDuration { value: f64, unit: String },
}

/// `value` written in `unit`, converted into kgate's canonical unit (see
/// [`Normalized::convert`]).
pub fn to_canonical(value: f64, unit: &str) -> Result<(Normalized, f64), ValueError> {
    let normalized = normalize(unit);
    let converted = normalized.convert(value, unit)?;
    Ok((normalized, converted))
}

/// Maps a reported unit onto kgate's canonical unit. Time units become `ns`; a bare `%` and
/// every other unit (counts, cycles, bytes, GB/s) are kept as written.
pub fn normalize(unit: &str) -> Normalized {
    let factor = match unit.trim() {
        "ns" | "nanoseconds" => Some(1.0),
        "us" | "µs" | "μs" | "microseconds" => Some(1e3),
        "ms" | "milliseconds" => Some(1e6),
        "s" | "sec" | "seconds" => Some(1e9),
        _ => None,
    };
    match factor {
        Some(factor) => Normalized {
            unit: "ns".to_string(),
            factor,
        },
        None => Normalized {
            unit: unit.trim().to_string(),
            factor: 1.0,
        },
    }
}

/// Formats a value of a canonical unit for people: `ns` picks ns, µs, ms or s; other units
/// get a compact number followed by the unit.
pub fn format_value(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    if unit == "ns" {
        let abs = value.abs();
        let (scaled, suffix) = if abs >= 1e9 {
            (value / 1e9, "s")
        } else if abs >= 1e6 {
            (value / 1e6, "ms")
        } else if abs >= 1e3 {
            (value / 1e3, "µs")
        } else {
            (value, "ns")
        };
        return format!("{} {suffix}", significant(scaled));
    }
    if unit == "%" {
        return format!("{} %", significant(value));
    }
    if unit == "bytes" || unit == "B" {
        let abs = value.abs();
        let (scaled, suffix) = if abs >= 1e12 {
            (value / 1e12, "TB")
        } else if abs >= 1e9 {
            (value / 1e9, "GB")
        } else if abs >= 1e6 {
            (value / 1e6, "MB")
        } else if abs >= 1e3 {
            (value / 1e3, "kB")
        } else {
            (value, "B")
        };
        return format!("{} {suffix}", significant(scaled));
    }
    if unit.is_empty() {
        return significant(value);
    }
    format!("{} {unit}", significant(value))
}

/// Formats a relative change (0.05 is +5 %) with a sign.
pub fn format_change(change: f64) -> String {
    let pct = change * 100.0;
    let digits = if pct.abs() >= 100.0 {
        0
    } else if pct.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{pct:+.digits$} %")
}

/// Four significant digits without exponent noise for ordinary magnitudes.
fn significant(value: f64) -> String {
    let abs = value.abs();
    if abs == 0.0 {
        return "0".to_string();
    }
    if !(1e-3..1e9).contains(&abs) {
        return format!("{value:.3e}");
    }
    let digits = (3 - abs.log10().floor() as i32).clamp(0, 6) as usize;
    format!("{value:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_collapse_to_nanoseconds() {
        assert_eq!(normalize("us").factor, 1e3);
        assert_eq!(normalize("µs").unit, "ns");
        assert_eq!(normalize("ms").factor, 1e6);
        assert_eq!(normalize("s").factor, 1e9);
        assert_eq!(
            normalize("cycles"),
            Normalized {
                unit: "cycles".into(),
                factor: 1.0
            }
        );
    }

    #[test]
    fn conversions_refuse_overflow_non_finite_and_negative_durations() {
        assert_eq!(to_canonical(88.0, "us").unwrap().1, 88_000.0);
        assert_eq!(to_canonical(-3.0, "cycles").unwrap().1, -3.0);
        assert_eq!(to_canonical(0.0, "s").unwrap().1, 0.0);
        let e = to_canonical(1e300, "s").unwrap_err();
        assert!(matches!(e, ValueError::Overflow { .. }), "{e}");
        let want = "1e300 s is beyond the largest number a results file holds (about 1.8e308) once converted to ns";
        assert_eq!(e.to_string(), want);
        let e = to_canonical(-1.5, "ms").unwrap_err();
        let want = "the duration -1.5 ms is negative; a time is never below zero";
        assert_eq!(e.to_string(), want);
        let e = to_canonical(f64::INFINITY, "bytes");
        assert!(matches!(e, Err(ValueError::NotFinite { .. })));
        assert!(to_canonical(f64::MAX, "bytes").is_ok());
    }

    #[test]
    fn values_are_readable() {
        assert_eq!(format_value(88_000.0, "ns"), "88.00 µs");
        assert_eq!(format_value(12_345_678.0, "ns"), "12.35 ms");
        assert_eq!(format_value(512.0, "ns"), "512.0 ns");
        assert_eq!(format_value(2.5e9, "ns"), "2.500 s");
        assert_eq!(format_value(1234.0, "cycles"), "1234 cycles");
        assert_eq!(format_value(10.0, "%"), "10.00 %");
        assert_eq!(format_value(1.5e9, "bytes"), "1.500 GB");
        assert_eq!(format_value(512.0, "B"), "512.0 B");
        assert_eq!(format_change(0.0512), "+5.12 %");
        assert_eq!(format_change(-0.42), "-42.0 %");
        assert_eq!(format_change(3.12), "+312 %");
    }
}
