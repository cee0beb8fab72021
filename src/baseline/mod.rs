//! Stored baselines under `.kgate/baselines/`.
//!
//! A baseline is a results file kept in the repository. It is never overwritten by accident:
//! replacing one takes `--force`, and the write is atomic.

pub mod gitref;
pub mod history;
use std::path::{Path, PathBuf};

use crate::model::results::RunResults;
use crate::store::ResultsError;
use crate::store::fsutil::Overwrite;

/// Folder of baselines, relative to the configuration's folder.
pub const BASELINE_DIR: &str = ".kgate/baselines";
/// Name of the baseline used when none is given.
pub const DEFAULT_NAME: &str = "default";

/// Baseline errors.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline name `{0}` is not valid; use letters, digits, `.`, `_` and `-`")]
    BadName(String),
    #[error(transparent)]
    Results(#[from] ResultsError),
}

/// Where a baseline argument points: a file path as given, or a name in the store.
pub fn resolve(root: &Path, name_or_path: &str) -> Result<PathBuf, BaselineError> {
    if name_or_path.contains('/') || name_or_path.ends_with(".json") {
        return Ok(PathBuf::from(name_or_path));
    }
    if name_or_path.is_empty()
        || name_or_path.starts_with('.')
        || !name_or_path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(BaselineError::BadName(name_or_path.to_string()));
    }
    // `.kgate/baselines/x.json`, not `./.kgate/…`, when the configuration is in this folder.
    let store = if root == Path::new(".") || root.as_os_str().is_empty() {
        PathBuf::from(BASELINE_DIR)
    } else {
        root.join(BASELINE_DIR)
    };
    Ok(store.join(format!("{name_or_path}.json")))
}

/// The names of the baselines in the store, sorted.
pub fn list(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(BASELINE_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".json")
                .filter(|n| !n.starts_with('.'))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// "the stored baselines are `a`, `b`", or that there are none, for messages.
pub fn listing(root: &Path) -> String {
    let names = list(root);
    if names.is_empty() {
        format!("there are no stored baselines in {BASELINE_DIR}/")
    } else {
        let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        format!("the stored baselines are {}", quoted.join(", "))
    }
}

/// Stores results as a baseline; refuses to replace an existing one unless `force`.
pub fn save(path: &Path, results: &RunResults, force: bool) -> Result<(), BaselineError> {
    let overwrite = if force {
        Overwrite::Allow
    } else {
        Overwrite::Refuse
    };
    results.save(path, overwrite)?;
    Ok(())
}

/// One line per benchmark and metric: `name / metric: median unit (n = N)`, the view of a
/// baseline that `kgate baseline update` diffs.
pub fn median_lines(results: &RunResults) -> String {
    let mut out = String::new();
    for b in &results.benchmarks {
        if b.status == crate::model::results::Status::Failed {
            out.push_str(&format!("{}: failed\n", b.name));
            continue;
        }
        for m in &b.metrics {
            match crate::stats::summarize(&m.values) {
                Some(s) => out.push_str(&format!(
                    "{} / {}: {} (n = {})\n",
                    b.name,
                    m.name,
                    crate::model::units::format_value(s.median, &m.unit),
                    s.n
                )),
                None => out.push_str(&format!("{} / {}: no valid samples\n", b.name, m.name)),
            }
        }
    }
    out
}

/// A unified diff of the medians of two baselines (`similar`), empty when nothing changes.
pub fn median_diff(old: Option<&RunResults>, new: &RunResults, name: &str) -> String {
    let before = old.map(median_lines).unwrap_or_default();
    let after = median_lines(new);
    if before == after {
        return String::new();
    }
    similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{name} (stored)"), &format!("{name} (new)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_into_the_store_and_paths_pass_through() {
        let resolved = |name: &str| resolve(Path::new("repo"), name);
        let default = resolved("default").unwrap();
        assert_eq!(default, Path::new("repo/.kgate/baselines/default.json"));
        assert_eq!(resolved("out/b.json").unwrap(), Path::new("out/b.json"));
        assert!(resolved("../x").is_ok(), "a path is taken as given");
        for bad in [".hidden", "a b"] {
            let refused = matches!(resolved(bad), Err(BaselineError::BadName(_)));
            assert!(refused, "{bad}");
        }
    }
}
