//! The vocabulary every stage shares, below all of them: metrics and units, verdicts, the results
//! and report files (the JSON contracts), the evidence behind a report, exit codes, and how
//! untrusted text is shown on a terminal. Plain types: nothing here reads or writes a file (that
//! is `store/`), decides or runs anything.

pub mod evidence;
pub mod exit;
pub mod function_diff;
pub mod metric;
pub mod protocol;
pub mod repetition_numbers;
pub mod report;
pub mod results;
pub mod series;
pub mod text;
pub mod units;
pub mod verdict;

use std::collections::HashMap;

/// The `schema_version` of a JSON document that did not read as the version expected, read
/// alone (the rest skipped without building a tree of it): a file of another version is
/// refused by its version. Only an object has one: serde reads a struct from an array too,
/// and `[1]` would pass for a version 1 document.
pub fn schema_version_of(text: &str) -> Option<u64> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.trim_start().starts_with('{') {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct VersionOnly {
        schema_version: Option<u64>,
    }
    serde_json::from_str::<VersionOnly>(text)
        .ok()
        .and_then(|v| v.schema_version)
}

/// Pushes `item`, making room for exactly one when `items` has none. Most benchmarks of a
/// large import hold one metric and one kernel window, and a vector's first growth makes
/// room for four: a trace of 20,000 kernels held 15 MB of room it never used.
pub fn push_snug<T>(items: &mut Vec<T>, item: T) {
    if items.capacity() == 0 {
        items.reserve_exact(1);
    }
    items.push(item);
}

/// Items by name, the first of each name kept (the one a linear search finds): for lookups in
/// a loop over a suite, which a linear search per item makes quadratic in the suite's size.
pub fn by_name<'a, T>(items: &'a [T], name: impl Fn(&'a T) -> &'a str) -> HashMap<&'a str, &'a T> {
    let mut index = HashMap::with_capacity(items.len());
    for item in items {
        index.entry(name(item)).or_insert(item);
    }
    index
}
