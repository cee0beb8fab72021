//! Waivers: accepted regressions, written down in `.kgate/waivers.yaml` and reviewed as a diff.
//!
//! Sometimes a regression is the price of a fix. Rather than raising thresholds until the gate
//! is useless, a waiver names the benchmarks and metrics it covers (glob patterns), says why,
//! and expires: on a date, or once a given commit is part of HEAD's history. A waived
//! regression is still reported, marked `waived`, and does not fail the run; an expired waiver
//! stops applying and the report says it expired, so waivers cannot linger unnoticed.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use crate::baseline::gitref;
use crate::model::report::{BenchmarkComparison, Report};
use crate::model::verdict::Verdict;

/// Where waivers live, relative to the configuration's folder.
pub const WAIVERS_FILE: &str = ".kgate/waivers.yaml";

/// The file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverFile {
    #[serde(default)]
    waivers: Vec<WaiverSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverSpec {
    /// Glob over benchmark names.
    benchmark: String,
    /// Glob over metric names (default `*`).
    #[serde(default = "any")]
    metric: String,
    /// Why the regression is accepted.
    reason: String,
    /// Last day the waiver applies (`YYYY-MM-DD`, UTC).
    #[serde(default)]
    expires: Option<String>,
    /// The waiver stops applying once this commit is HEAD or one of its ancestors.
    #[serde(default)]
    until_commit: Option<String>,
}

fn any() -> String {
    "*".into()
}

/// When a waiver stops applying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// Applies through this day (`YYYY-MM-DD`).
    Date(String),
    /// Applies until this commit is in HEAD's history.
    Commit(String),
}

/// One checked waiver.
#[derive(Debug, Clone)]
pub struct Waiver {
    pub benchmark: String,
    pub metric: String,
    pub reason: String,
    pub expiry: Expiry,
    benchmark_glob: GlobMatcher,
    metric_glob: GlobMatcher,
}

impl Waiver {
    /// Whether it covers a benchmark's metric.
    pub fn covers(&self, benchmark: &str, metric: &str) -> bool {
        self.benchmark_glob.is_match(benchmark) && self.metric_glob.is_match(metric)
    }
}

/// A waiver file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WaiverError {
    #[error("cannot read waivers `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `message` names file, line, column and key.
    #[error("{message}")]
    Invalid { message: String },
}

/// Where the state of a waiver is judged: today's date and the repository for commit expiries.
#[derive(Debug, Clone)]
pub struct Clock<'a> {
    /// `YYYY-MM-DD` (UTC).
    pub today: String,
    pub repo: Option<&'a Path>,
}

impl Clock<'_> {
    /// Today (UTC) and the given repository.
    pub fn now(repo: Option<&Path>) -> Clock<'_> {
        Clock {
            today: crate::model::results::now_rfc3339()[..10].to_string(),
            repo,
        }
    }

    /// `None` while the waiver applies; why it expired otherwise.
    pub fn expired(&self, w: &Waiver) -> Option<String> {
        match &w.expiry {
            Expiry::Date(d) => {
                (self.today.as_str() > d.as_str()).then(|| format!("expired on {d}"))
            }
            Expiry::Commit(c) => {
                let reached = self
                    .repo
                    .and_then(|r| gitref::is_ancestor_of_head(r, c).ok())
                    .unwrap_or(false);
                reached.then(|| format!("expired: commit {c} is in HEAD's history"))
            }
        }
    }
}

/// Reads `.kgate/waivers.yaml` under `root`; no file means no waivers.
pub fn load(root: &Path) -> Result<Vec<Waiver>, WaiverError> {
    let path = root.join(WAIVERS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(WaiverError::Read { path, source }),
    }
}

/// Line (1-based) of the `index`-th list item under `waivers:`, for located messages.
fn item_line(text: &str, index: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("- "))
        .nth(index)
        .map(|(i, _)| i + 1)
        .unwrap_or(0)
}

/// Parses waiver text; `file` names it in messages.
pub fn parse(text: &str, file: &str) -> Result<Vec<Waiver>, WaiverError> {
    let mut key_path = String::new();
    let parsed = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize::<_, WaiverFile>(de).map_err(|e| {
            key_path = e.path().to_string();
            e.into_inner()
        })
    });
    let spec = parsed.map_err(|err| {
        let location = err.location().map(|l| (l.line(), l.column()));
        let (line, column) = location.unwrap_or((0, 0));
        let raw = err.without_snippet().to_string();
        let key = if key_path.is_empty() || key_path == "." {
            String::new()
        } else {
            format!(" key `{key_path}`:")
        };
        WaiverError::Invalid {
            message: format!(
                "{file}:{line}:{column}:{key} {}\nhint: each waiver needs `benchmark`, `reason` and `expires: YYYY-MM-DD` or `until_commit: SHA` (optional `metric`, default `*`)",
                crate::model::text::plain_serde(None, raw.trim())
            ),
        }
    })?;
    let mut out = Vec::new();
    for (i, w) in spec.waivers.into_iter().enumerate() {
        let at = |key: &str, msg: String| WaiverError::Invalid {
            message: format!(
                "{file}:{}: key `waivers[{i}].{key}`: {msg}",
                item_line(text, i)
            ),
        };
        let glob = |key: &str, pattern: &str| {
            Glob::new(pattern)
                .map(|g| g.compile_matcher())
                .map_err(|e| at(key, format!("`{pattern}` is not a glob pattern ({e})")))
        };
        if w.reason.trim().is_empty() {
            let empty = "the reason is empty; say why the regression is accepted";
            return Err(at("reason", empty.into()));
        }
        let is_date = |d: &str| {
            d.len() == 10
                && d.char_indices().all(|(k, c)| {
                    if k == 4 || k == 7 {
                        c == '-'
                    } else {
                        c.is_ascii_digit()
                    }
                })
        };
        let is_hash = |c: &str| c.len() >= 7 && c.chars().all(|ch| ch.is_ascii_hexdigit());
        let expiry = match (w.expires, w.until_commit) {
            (Some(d), None) if is_date(&d) => Ok(Expiry::Date(d)),
            (Some(d), None) => Err((
                "expires",
                format!("`{d}` is not a date; write it as YYYY-MM-DD, such as 2026-12-31"),
            )),
            (None, Some(c)) if is_hash(&c) => Ok(Expiry::Commit(c)),
            (None, Some(c)) => Err((
                "until_commit",
                format!("`{c}` is not a commit hash; give at least 7 hex digits"),
            )),
            (Some(_), Some(_)) => Err((
                "expires",
                "give either `expires` or `until_commit`, not both".into(),
            )),
            (None, None) => Err((
                "expires",
                "a waiver must expire: add `expires: YYYY-MM-DD` or `until_commit: SHA`".into(),
            )),
        };
        let expiry = expiry.map_err(|(key, message)| at(key, message))?;
        out.push(Waiver {
            benchmark_glob: glob("benchmark", &w.benchmark)?,
            metric_glob: glob("metric", &w.metric)?,
            benchmark: w.benchmark,
            metric: w.metric,
            reason: w.reason,
            expiry,
        });
    }
    Ok(out)
}

/// Marks regressions covered by a waiver: an active waiver sets `waived` and leaves the metric
/// out of its benchmark's verdict; an expired one is named in `waiver` and in the warnings and
/// changes nothing else. Counts and the run verdict are recomputed.
pub fn apply(report: &mut Report, waivers: &[Waiver], clock: &Clock<'_>) {
    if waivers.is_empty() {
        return;
    }
    let active = Active::new(waivers, clock);
    report.warnings.extend(active.warnings());
    let mut waived_benchmarks = 0;
    for b in &mut report.benchmarks {
        waived_benchmarks += usize::from(active.apply_to(b));
    }
    crate::compare::adjust::recount(report);
    report.summary.waived = waived_benchmarks;
}

/// Waivers with their states at one moment (`None`: in force; else why not), applied one
/// benchmark at a time.
pub struct Active<'w> {
    waivers: &'w [Waiver],
    states: Vec<Option<String>>,
}

impl<'w> Active<'w> {
    pub fn new(waivers: &'w [Waiver], clock: &Clock<'_>) -> Active<'w> {
        Active {
            waivers,
            states: waivers.iter().map(|w| clock.expired(w)).collect(),
        }
    }

    /// A warning for each waiver that no longer applies.
    pub fn warnings(&self) -> Vec<String> {
        self.waivers
            .iter()
            .zip(&self.states)
            .filter_map(|(w, state)| {
                state.as_ref().map(|why| {
                    format!(
                        "waiver for `{}` / `{}` {why} and no longer applies (reason was: {}); remove it from {WAIVERS_FILE}",
                        w.benchmark, w.metric, w.reason
                    )
                })
            })
            .collect()
    }

    /// Marks a benchmark's waived regressions and gives it the verdict of the rest; true when
    /// that took it out of `regressed`.
    pub fn apply_to(&self, b: &mut BenchmarkComparison) -> bool {
        let (waivers, states) = (self.waivers, &self.states);
        let mut any_waived = false;
        for m in &mut b.metrics {
            if m.verdict != Verdict::Regressed {
                continue;
            }
            let covering = waivers
                .iter()
                .zip(states)
                .find(|(w, _)| w.covers(&b.name, &m.name));
            if let Some((w, state)) = covering {
                match state {
                    None => {
                        m.waived = true;
                        m.waiver = Some(w.reason.clone());
                        any_waived |= m.gates;
                    }
                    Some(why) => m.waiver = Some(format!("{why}: {}", w.reason)),
                }
            }
        }
        if !any_waived || b.verdict != Verdict::Regressed {
            return false;
        }
        // The benchmark's verdict is the worst of its gating metrics that are not waived.
        let rest: Vec<_> = b
            .metrics
            .iter()
            .filter(|m| {
                m.gates && !m.waived && !matches!(m.verdict, Verdict::New | Verdict::Missing)
            })
            .collect();
        let verdict = crate::compare::worst_verdict(rest.iter().map(|m| m.verdict))
            .unwrap_or(Verdict::Unchanged);
        let notes: Vec<String> = b
            .metrics
            .iter()
            .filter(|m| m.waived)
            .map(|m| {
                format!(
                    "{}: {} (waived: {})",
                    m.name,
                    m.reason,
                    m.waiver.as_deref().unwrap_or("")
                )
            })
            .collect();
        let explanation =
            if rest.iter().any(|m| m.verdict == verdict) && verdict != Verdict::Unchanged {
                let kept: Vec<String> = rest
                    .iter()
                    .filter(|m| m.verdict == verdict)
                    .map(|m| format!("{}: {}", m.name, m.reason))
                    .collect();
                format!("{}; {}", kept.join("; "), notes.join("; "))
            } else {
                notes.join("; ")
            };
        // The note on parameters that differ stays with the benchmark, waived or not.
        let explanation = match b.changed_parameters() {
            Some(note) => format!("{}. {note}", explanation.trim_end_matches('.')),
            None => explanation,
        };
        b.verdict = verdict;
        b.explanation = explanation;
        verdict != Verdict::Regressed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "waivers:\n  - benchmark: \"matmul*\"\n    metric: kernel_time\n    reason: \"tiling fix costs 10 %; tracked in #42\"\n    expires: 2026-12-31\n  - benchmark: reduce\n    reason: moved to a new allocator\n    until_commit: abcdef1\n";

    #[test]
    fn parses_globs_dates_and_commits() {
        let w = parse(FILE, "waivers.yaml").unwrap();
        assert_eq!(w.len(), 2);
        assert!(w[0].covers("matmul_large", "kernel_time"));
        assert!(!w[0].covers("matmul", "wall_time"));
        assert!(w[1].covers("reduce", "anything"));
        assert_eq!(w[0].expiry, Expiry::Date("2026-12-31".into()));
        assert_eq!(w[1].expiry, Expiry::Commit("abcdef1".into()));
        let on = |today: &str| Clock {
            today: today.into(),
            repo: None,
        };
        assert_eq!(on("2026-12-31").expired(&w[0]), None);
        let later = on("2027-01-01").expired(&w[0]);
        assert_eq!(later.as_deref(), Some("expired on 2026-12-31"));
    }

    #[test]
    fn malformed_files_get_located_messages() {
        let error = |yaml: &str| parse(yaml, "w.yaml").unwrap_err().to_string();
        let e = error("waivers:\n  - benchmark: a\n    reason: r\n");
        let want = "w.yaml:2: key `waivers[0].expires`: a waiver must expire: add `expires: YYYY-MM-DD` or `until_commit: SHA`";
        assert_eq!(e, want);
        let e = error("waivers:\n  - benchmark: a\n    reason: r\n    expires: 31/12/2026\n");
        assert_contains!(e, "`31/12/2026` is not a date");
        let e = error("waivers:\n  - benchmark: a\n    reson: r\n    expires: 2026-01-01\n");
        assert!(e.starts_with("w.yaml:3:"), "{e}");
        assert_contains!(e, "reson");
        let e = error("waivers:\n  - benchmark: \"a[\"\n    reason: r\n    expires: 2026-01-01\n");
        assert_contains!(e, "key `waivers[0].benchmark`");
        assert_contains!(e, "not a glob");
    }
}
