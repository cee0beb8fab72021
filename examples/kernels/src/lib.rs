//! Tiny benchmark harness shared by kgate's bundled example kernels.
//!
//! kgate gates pull requests on kernel performance: it runs benchmark binaries
//! and reads the metrics they emit. This package is a self-contained,
//! dependency-free demonstration of that protocol. Every example binary
//! (`matmul`, `reduce`) uses the same three helpers from here, so the
//! reporting format, the timing method and the command-line handling are
//! written once:
//!
//! * [`report`] appends one JSON line per metric to the file named by
//!   `KGATE_PROTOCOL_FILE` (or prints a human-readable line when unset);
//! * [`time_kernel`] times a single call with [`std::time::Instant`];
//! * [`variant_from_args`] picks the kernel variant (`--variant NAME`,
//!   defaulting to the constants in [`variants`]).

pub mod matmul;
pub mod reduce;
pub mod variants;

use std::fs::OpenOptions;
use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

/// Environment variable naming the file kgate reads metrics from.
pub const PROTOCOL_ENV: &str = "KGATE_PROTOCOL_FILE";

/// Escapes `s` for use inside a JSON string literal (without the quotes).
pub fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// Formats one protocol line (including the trailing newline).
///
/// Non-finite values are not valid JSON numbers and are written as `null`.
pub fn protocol_line(metric: &str, value: f64, unit: &str) -> String {
    let value = if value.is_finite() {
        // `{:?}` on f64 always round-trips and never uses a locale.
        format!("{value:?}")
    } else {
        "null".to_string()
    };
    format!(
        "{{\"metric\": \"{}\", \"value\": {}, \"unit\": \"{}\"}}\n",
        json_escape(metric),
        value,
        json_escape(unit)
    )
}

/// Reports one metric.
///
/// If `KGATE_PROTOCOL_FILE` is set, appends one JSON line
/// `{"metric": "...", "value": ..., "unit": "..."}` to that file with a single
/// `write_all`, so concurrent writers never interleave within a line.
/// Otherwise prints a human-readable line to stdout.
pub fn report(metric: &str, value: f64, unit: &str) {
    match std::env::var_os(PROTOCOL_ENV) {
        Some(path) => {
            let line = protocol_line(metric, value, unit);
            let result = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = result {
                eprintln!(
                    "error: cannot append to {PROTOCOL_ENV}={}: {e}",
                    path.to_string_lossy()
                );
                std::process::exit(1);
            }
        }
        None => println!("{metric}: {value} {unit}"),
    }
}

/// Runs `f` once and returns its wall-clock duration and its result.
///
/// The result goes through [`black_box`] so the optimizer cannot discard the
/// computation.
pub fn time_kernel<R>(mut f: impl FnMut() -> R) -> (Duration, R) {
    let start = Instant::now();
    let r = black_box(f());
    let elapsed = start.elapsed();
    (elapsed, r)
}

/// Returns the value of `--variant NAME` (or `--variant=NAME`) from argv, or
/// `default` when absent.
///
/// Exits with status 2 and a message listing `allowed` when the variant is
/// unknown or the flag has no value.
pub fn variant_from_args(default: &str, allowed: &[&str]) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let chosen = match flag_value(&args, "--variant") {
        Ok(Some(v)) => v,
        Ok(None) => default.to_string(),
        Err(msg) => usage_error(&format!("{msg}; allowed variants: {}", allowed.join(", "))),
    };
    if !allowed.contains(&chosen.as_str()) {
        usage_error(&format!(
            "unknown variant {chosen:?}; allowed variants: {}",
            allowed.join(", ")
        ));
    }
    chosen
}

/// Returns the value of `--n N` (or `--n=N`) from argv, or `default`.
///
/// Exits with status 2 on a missing, unparsable or zero value.
pub fn n_from_args(default: usize) -> usize {
    positive_from_args("--n", default)
}

/// Returns the value of `--reps R` (or `--reps=R`) from argv, or `default`.
///
/// Exits with status 2 on a missing, unparsable or zero value.
pub fn reps_from_args(default: usize) -> usize {
    positive_from_args("--reps", default)
}

fn positive_from_args(flag: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match flag_value(&args, flag) {
        Ok(None) => default,
        Ok(Some(v)) => match v.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => usage_error(&format!("{flag} expects a positive integer, got {v:?}")),
        },
        Err(msg) => usage_error(&msg),
    }
}

/// Finds `flag VALUE` or `flag=VALUE` in `args` (the last occurrence wins).
pub fn flag_value(args: &[String], flag: &str) -> Result<Option<String>, String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == flag {
            match args.get(i + 1) {
                Some(v) => found = Some(v.clone()),
                None => return Err(format!("{flag} needs a value")),
            }
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            found = Some(v.to_string());
        }
        i += 1;
    }
    Ok(found)
}

fn usage_error(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn escapes_json() {
        assert_eq!(json_escape("plain"), "plain");
        assert_eq!(json_escape("a\"b\\c"), "a\\\"b\\\\c");
        assert_eq!(json_escape("x\ny\t\u{1}"), "x\\ny\\t\\u0001");
    }

    #[test]
    fn formats_protocol_line() {
        assert_eq!(
            protocol_line("kernel_time", 1234.0, "ns"),
            "{\"metric\": \"kernel_time\", \"value\": 1234.0, \"unit\": \"ns\"}\n"
        );
        assert!(protocol_line("m", f64::NAN, "u").contains("\"value\": null"));
    }

    #[test]
    fn parses_flags() {
        let a = s(&["--variant", "naive", "--n=64"]);
        assert_eq!(flag_value(&a, "--variant"), Ok(Some("naive".into())));
        assert_eq!(flag_value(&a, "--n"), Ok(Some("64".into())));
        assert_eq!(flag_value(&a, "--x"), Ok(None));
        assert!(flag_value(&s(&["--n"]), "--n").is_err());
        // `--nx=3` must not be mistaken for `--n`.
        assert_eq!(flag_value(&s(&["--nx=3"]), "--n"), Ok(None));
    }

    #[test]
    fn default_variants_are_known() {
        assert!(matmul::VARIANTS.contains(&variants::MATMUL));
        assert!(reduce::VARIANTS.contains(&variants::REDUCE));
    }
}
