//! Loading `kgate.yaml`: read, parse with the key path of any error, locate it (file, line,
//! column, the offending line and a hint), then the checks no type can express (unique names,
//! at most one capture that wraps the command, settings that match their captures).

use std::path::{Path, PathBuf};

use super::*;

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cannot read config `{path}`: {source}\nhint: create one with `kgate init`, or name another with -c FILE"
    )]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The YAML did not match the expected shape; `message` already names file, line, column
    /// and key.
    #[error("{message}")]
    Invalid { message: String },
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    pub path: PathBuf,
    /// Folder that relative paths in the configuration are resolved against.
    pub root: PathBuf,
}

/// Reads and checks a configuration file.
pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let config = parse(&text, &path.display().to_string())?;
    Ok(LoadedConfig {
        config,
        path: path.to_path_buf(),
        root: root_of(path),
    })
}

/// The folder a configuration file's relative paths are resolved against.
pub fn root_of(config: &Path) -> PathBuf {
    match config.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Parses configuration text; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
    let mut key_path = String::new();
    let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize::<_, Config>(de).map_err(|e| {
            key_path = e.path().to_string();
            e.into_inner()
        })
    });
    let config = match parsed {
        Ok(c) => c,
        Err(err) => {
            let (line, column) = err
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((0, 0));
            let raw = err.without_snippet().to_string();
            let mut message =
                crate::model::text::plain_serde(None, &plain_message(&strip_location_prefix(&raw)));
            // `unknown field `wormup`, expected one of …`: name the likely one first.
            if let Some(rest) = message.strip_prefix("unknown field `")
                && let Some((field, expected)) = rest.split_once("`, expected one of ")
            {
                let options: Vec<&str> = expected.split(", ").collect();
                if let Some(meant) = crate::model::text::did_you_mean(field, &options) {
                    message = format!(
                        "unknown field `{field}` (did you mean `{meant}`?); the fields here are {expected}"
                    );
                }
            }
            // The path ends in `?` where the library could not name the key it was reading.
            let key_path = key_path.trim_end_matches(".?").trim_end_matches('?');
            let key = if key_path.is_empty() || key_path == "." {
                String::new()
            } else {
                format!(" key `{key_path}`:")
            };
            let hint = hint_for(key_path)
                .map(|h| format!("\nhint: {h}"))
                .unwrap_or_default();
            let snippet = snippet(text, line);
            return Err(ConfigError::Invalid {
                message: format!("{file}:{line}:{column}:{key} {message}{hint}{snippet}"),
            });
        }
    };
    validate(&config, text, file)?;
    Ok(config)
}

/// serde-saphyr prefixes messages with their position; ours carry it already.
fn strip_location_prefix(raw: &str) -> String {
    let mut s = raw.strip_prefix("error: ").unwrap_or(raw);
    if let Some(idx) = s.rfind(" at line ")
        && s[idx..].contains(", column ")
    {
        s = &s[..idx];
    }
    if let Some(rest) = s.strip_prefix("line ")
        && let Some(idx) = rest.find(": ")
    {
        let head = &rest[..idx];
        if head.contains("column") {
            return rest[idx + 2..].to_string();
        }
    }
    s.to_string()
}

/// What is expected at a key, for the errors serde cannot phrase well.
fn hint_for(key_path: &str) -> Option<&'static str> {
    let last = key_path
        .rsplit('.')
        .next()
        .unwrap_or(key_path)
        .trim_end_matches(|c: char| c == ']' || c.is_ascii_digit() || c == '[');
    Some(match last {
        "warmup" => "`warmup` is a whole number of discarded runs, such as `warmup: 2`",
        "repetitions" | "min" | "max" => {
            "`repetitions` is a whole number such as `10`, or `{min: 10, max: 30}`"
        }
        "timeout" => "`timeout` is a duration with a unit, such as `30s`",
        "threshold" => "`threshold` is a percentage, such as `5%`",
        "tolerance" => "`tolerance` is `1%` (relative) or a number (absolute)",
        "captures" => {
            "`captures` lists capture backends: `timer`, `protocol`, `perf`, `callgrind`, `cachegrind`, `ncu`"
        }
        "direction" => "`direction` is `lower` or `higher`",
        "source" | "sources" => {
            "sources are hardware, derived, timer, simulated, reported, estimate"
        }
        "alpha" => "`alpha` is a probability such as `0.01`",
        "correction" => "`correction` is `bh` (Benjamini–Hochberg) or `holm`",
        "equivalence_margin" => "`equivalence_margin` is a percentage, such as `1%`",
        "time_budget" => "`time_budget` is a duration with a unit, such as `10m`",
        "profile_budget" => "`profile_budget` is a duration with a unit, such as `5m`",
        "on_regression" => "`on_regression` is `report` (the verdict only) or `profile`",
        "clock_control" => "`clock_control` is `base`, `none`, `reset`, `boost` or `force-boost`",
        "cache_control" => "`cache_control` is `all` or `none`",
        "env" | "parameters" => "a map of names to string values",
        "interval_us" => {
            "`interval_us` is a whole number of microseconds, at least 1, such as `interval_us: 1`"
        }
        "counter_size_bits" => {
            "`counter_size_bits` is XProf's width code 0–3 (8, 16, 32, 64-bit counters)"
        }
        "external_trigger" => "`external_trigger` is `true` or `false`",
        "is_external_trigger" => {
            "XProf's `is_external_trigger` is written `external_trigger: true` here"
        }
        "benchmarks" => "`benchmarks` is a list of entries with at least `name` and `command`",
        _ => return None,
    })
}

/// The offending line with a caret, for context.
fn snippet(text: &str, line: u64) -> String {
    if line == 0 {
        return String::new();
    }
    match text.lines().nth((line - 1) as usize) {
        Some(l) => {
            let shown = crate::model::text::escape_terminal(l);
            match shown.char_indices().nth(SNIPPET_CHARS) {
                Some((cut, _)) => format!("\n  {line:>4} | {} …", &shown[..cut]),
                None => format!("\n  {line:>4} | {shown}"),
            }
        }
        None => String::new(),
    }
}

/// How much of the offending line a message shows.
const SNIPPET_CHARS: usize = 160;

/// The YAML library's message in the words of a kgate user: what is wrong with the file and
/// what to do, without the library's option and function names.
fn plain_message(raw: &str) -> String {
    if let Some(rest) = raw.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(", set ").next().unwrap_or(rest);
        return format!("the key `{key}` appears twice in the same mapping; keep one of them");
    }
    if raw.starts_with("multiple YAML documents detected") {
        return "the file holds more than one YAML document (a `---` line between them); kgate reads one: merge them or remove the second".into();
    }
    if let Some(breach) = raw.strip_prefix("budget breached: ") {
        let what = match breach.split([' ', '{']).next().unwrap_or("") {
            "Aliases" => "too many alias references (`*name`)",
            "Anchors" => "too many anchors (`&name`)",
            "Depth" => "nesting too deep",
            "Events" | "Nodes" => "too many values",
            _ => "too much data",
        };
        return format!(
            "the file expands to more than a configuration can hold ({what}); write the values out, or use fewer YAML aliases"
        );
    }
    raw.to_string()
}

/// Why a capture list may hold only one of the captures that wrap the command.
const ONE_WRAPPING_CAPTURE: &str = "`perf`, `callgrind`, `cachegrind` and `ncu` each run the benchmark under a tool; list at most one of them per benchmark (declare a second benchmark for another)";

/// Checks that the types cannot express.
fn validate(config: &Config, text: &str, file: &str) -> Result<(), ConfigError> {
    // At `line` of the file (from 1), or the file itself at 0.
    let fail_at = |line: u64, key: &str, message: &str| {
        let loc = if line > 0 {
            format!("{file}:{line}:")
        } else {
            format!("{file}:")
        };
        Err(ConfigError::Invalid {
            message: format!("{loc} key `{key}`: {message}{}", snippet(text, line)),
        })
    };
    let fail = |needle: &str, key: &str, message: &str| {
        fail_at(find_line(text, needle).unwrap_or(0), key, message)
    };
    if config.version != CONFIG_VERSION {
        let version = config.version;
        let why =
            format!("unsupported version {version}; this kgate reads version {CONFIG_VERSION}");
        return fail("version:", "version", &why);
    }
    if let Some(device) = &config.device
        && let Err(e) = crate::config::device::resolve(device, &config.profiles)
    {
        return fail("device:", "device", &e.to_string());
    }
    for b in &config.benchmarks {
        if let Some(c) = &b.counters {
            if c.mode
                .as_deref()
                .is_some_and(|m| m != "cumulative" && m != "interval")
            {
                let key = format!("benchmarks[{}].counters.mode", b.name);
                return fail("mode:", &key, "must be `cumulative` or `interval`");
            }
            if c.scaling > 63 {
                let key = format!("benchmarks[{}].counters.scaling", b.name);
                return fail("scaling:", &key, "right-shift scaling is 0–63 bits");
            }
        }
    }
    if !(config.gate.alpha > 0.0 && config.gate.alpha < 0.5) {
        let alpha = config.gate.alpha;
        let why = format!(
            "{alpha} is not a usable significance level; use a value between 0 and 0.5, such as 0.01"
        );
        return fail("alpha:", "gate.alpha", &why);
    }
    if config.benchmarks.is_empty() {
        let why = "no benchmarks are declared; add at least one entry with `name` and `command`";
        return fail("benchmarks:", "benchmarks", why);
    }
    if let Some(r) = config.defaults.repetitions {
        check_repetitions(r).or_else(|m| fail("repetitions:", "defaults.repetitions", &m))?;
    }
    // Each wrapping capture runs the benchmark under its tool: two would nest one tool in the
    // other. A benchmark that inherits its captures inherits the defaults' list.
    let wraps_twice = |c: &[CaptureKind]| c.iter().filter(|k| k.wraps()).count() > 1;
    if config.defaults.captures.as_deref().is_some_and(wraps_twice) {
        return fail("captures:", "defaults.captures", ONE_WRAPPING_CAPTURE);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, b) in config.benchmarks.iter().enumerate() {
        let needle = format!("name: {}", b.name);
        let key = |k: &str| format!("benchmarks[{i}].{k}");
        if b.name.trim().is_empty() || b.name.chars().any(char::is_control) {
            let why = "a benchmark name must be non-empty printable text";
            return fail(&needle, &key("name"), why);
        }
        if !seen.insert(b.name.as_str()) {
            // Located at the duplicate, not at the first entry of that name.
            let earlier = config.benchmarks[..i]
                .iter()
                .filter(|o| o.name == b.name)
                .count();
            let line = find_nth_line(text, &needle, earlier).unwrap_or(0);
            return Err(ConfigError::Invalid {
                message: format!(
                    "{file}:{line}: key `{}`: duplicate benchmark name `{}`; names identify benchmarks across runs and must be unique{}",
                    key("name"),
                    b.name,
                    snippet(text, line)
                ),
            });
        }
        if let Some(r) = b.repetitions {
            check_repetitions(r).or_else(|m| fail(&needle, &key("repetitions"), &m))?;
        }
        for (name, value) in &b.env {
            if let Some(why) = bad_variable_name(name) {
                return fail("env:", &key("env"), &why);
            }
            if value.contains('\0') {
                let why =
                    "the value holds a NUL character, which no environment variable can carry";
                return fail("env:", &key(&format!("env.{name}")), why);
            }
        }
        for name in &b.pass_env {
            if let Some(why) = bad_variable_name(name) {
                return fail("pass_env:", &key("pass_env"), &why);
            }
        }
        if b.captures.as_deref().is_some_and(wraps_twice) {
            return fail(&needle, &key("captures"), ONE_WRAPPING_CAPTURE);
        }
        let captures = b.captures.as_ref().or(config.defaults.captures.as_ref());
        if b.valgrind
            .as_ref()
            .is_some_and(|v| v.toggle_collect.is_some())
            && !captures.is_some_and(|c| c.contains(&CaptureKind::Callgrind))
        {
            let why = "`toggle_collect` restricts callgrind's counting to a function, and this benchmark has no `callgrind` capture (cachegrind counts the whole program); add `callgrind` to `captures` or remove the key";
            return fail(&needle, &key("valgrind.toggle_collect"), why);
        }
        for (name, d) in &b.derived {
            if let Err(e) = crate::config::derived::check(name, &d.expr) {
                let key = key(&format!("derived.{name}.expr"));
                return fail(&d.expr, &key, &e.to_string());
            }
        }
        if let Some(c) = &b.counters {
            let profile = config
                .device
                .as_ref()
                .and_then(|d| crate::config::device::resolve(d, &config.profiles).ok());
            if let Err(e) = crate::config::tpu_sampling::check(c, profile.as_ref()) {
                // Located at the key inside this benchmark's entry when it is written there.
                let from = find_nth_line(text, &needle, 0).unwrap_or(1);
                let line = text
                    .lines()
                    .enumerate()
                    .skip(from as usize - 1)
                    .find(|(_, l)| l.contains(&format!("{}:", e.key)))
                    .map(|(n, _)| n as u64 + 1)
                    .unwrap_or(from);
                return fail_at(line, &key(&format!("counters.{}", e.key)), &e.message);
            }
        }
        if let Some(c) = &b.captures
            && c.is_empty()
        {
            let why = "the capture list is empty; use `[timer]` or `[protocol]`";
            return fail(&needle, &key("captures"), why);
        }
    }
    Ok(())
}

/// Why `name` cannot be an environment variable's name, if it cannot.
fn bad_variable_name(name: &str) -> Option<String> {
    let shown = crate::model::text::escape_terminal(name);
    if name.is_empty() {
        Some("an environment variable needs a non-empty name".into())
    } else if name.contains('=') || name.contains('\0') {
        Some(format!(
            "`{shown}` cannot name an environment variable: names hold neither `=` nor a NUL character"
        ))
    } else {
        None
    }
}

fn check_repetitions(r: Repetitions) -> Result<(), String> {
    if r.min == 0 {
        return Err("at least 1 repetition is needed".into());
    }
    if r.max < r.min {
        return Err(format!(
            "max ({}) is smaller than min ({}); max is the most repetitions to run",
            r.max, r.min
        ));
    }
    if r.step == Some(0) {
        return Err("step must be at least 1 repetition".into());
    }
    Ok(())
}

/// The line of the `n`-th (from 0) entry written `needle` (`name: a`, alone on its line or
/// after a list dash), so that `name: ab` is not taken for `name: a`.
fn find_nth_line(text: &str, needle: &str, n: usize) -> Option<u64> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim().trim_start_matches("- ").trim_end() == needle)
        .nth(n)
        .map(|(i, _)| i as u64 + 1)
}

fn find_line(text: &str, needle: &str) -> Option<u64> {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i as u64 + 1)
}
