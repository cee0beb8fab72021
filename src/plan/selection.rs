//! Diff-aware selection: run only the benchmarks a change can affect.
//!
//! A benchmark may declare `paths:` globs (relative to the configuration's folder). With
//! `kgate check --changed-since REF` a benchmark runs when a changed file matches one of its
//! globs; a benchmark without `paths` always runs (nothing says what it depends on), and so
//! does every benchmark when the configuration file itself changed. The rest are reported as
//! skipped with their baseline values.

use std::path::Path;

use globset::{Glob, GlobSetBuilder};

use crate::config::BenchmarkConfig;

/// A `paths` glob that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("benchmark `{benchmark}`: `paths` entry `{pattern}` is not a glob pattern ({message})")]
pub struct BadGlob {
    pub benchmark: String,
    pub pattern: String,
    pub message: String,
}

/// Splits benchmarks into (run, skipped) given the changed files, relative to the
/// configuration's folder. `config_changed` forces everything to run.
pub fn affected(
    benchmarks: &[BenchmarkConfig],
    changed: &[String],
    config_changed: bool,
) -> Result<(Vec<String>, Vec<String>), BadGlob> {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for b in benchmarks {
        let Some(paths) = b.paths.as_ref().filter(|_| !config_changed) else {
            run.push(b.name.clone());
            continue;
        };
        let mut set = GlobSetBuilder::new();
        for p in paths {
            set.add(Glob::new(p).map_err(|e| BadGlob {
                benchmark: b.name.clone(),
                pattern: p.clone(),
                message: e.kind().to_string(),
            })?);
        }
        let set = set.build().map_err(|e| BadGlob {
            benchmark: b.name.clone(),
            pattern: paths.join(", "),
            message: e.to_string(),
        })?;
        if changed.iter().any(|f| set.is_match(Path::new(f))) {
            run.push(b.name.clone());
        } else {
            skipped.push(b.name.clone());
        }
    }
    Ok((run, skipped))
}

/// Turns repository-relative paths into paths relative to `prefix` (the configuration's folder
/// inside the repository, `""` at the top), dropping files outside it.
pub fn relative_to(files: &[String], prefix: &str) -> Vec<String> {
    let prefix = prefix.trim_end_matches('/');
    files
        .iter()
        .filter_map(|f| {
            if prefix.is_empty() {
                Some(f.clone())
            } else {
                f.strip_prefix(prefix)
                    .and_then(|r| r.strip_prefix('/'))
                    .map(str::to_string)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> Vec<BenchmarkConfig> {
        crate::config::parse(
            "benchmarks:\n  - name: matmul\n    command: ./m\n    paths: [\"src/matmul/**\", \"src/common.h\"]\n  - name: reduce\n    command: ./r\n    paths: [\"src/reduce/**\"]\n  - name: all\n    command: ./a\n",
            "kgate.yaml",
        )
        .unwrap()
        .benchmarks
    }

    #[test]
    fn only_matching_benchmarks_run() {
        let b = configs();
        let (run, skipped) = affected(&b, &["src/matmul/tile.cu".into()], false).unwrap();
        assert_eq!(run, vec!["matmul", "all"]);
        assert_eq!(skipped, vec!["reduce"]);
        let (run, skipped) = affected(&b, &["README.md".into()], false).unwrap();
        assert_eq!(run, ["all"]);
        assert_eq!(skipped, ["matmul", "reduce"]);
        let (run, _) = affected(&b, &[], true).unwrap();
        assert_eq!(run.len(), 3, "a changed configuration runs everything");
    }

    #[test]
    fn paths_are_made_relative_to_the_configuration() {
        let files = vec!["bench/src/a.cu".to_string(), "other/b".to_string()];
        assert_eq!(relative_to(&files, "bench"), vec!["src/a.cu"]);
        assert_eq!(relative_to(&files, ""), files);
    }
}
