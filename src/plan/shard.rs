//! Scale-out: splitting a suite across CI jobs (`kgate run --shard i/n`) and joining the parts
//! (`kgate merge`).
//!
//! Assignment must be stable (the same benchmark lands in the same shard on every run, so its
//! numbers stay comparable) and balanced. Benchmarks are placed longest first, each on the
//! least-loaded shard (LPT scheduling), using their recorded durations from the history or the
//! baseline; a benchmark without a recorded duration counts as the mean of the known ones, and
//! ties are broken by a hash of the name, so with no durations at all the split is a stable
//! hash-ordered round robin. Merging refuses duplicates and results from different
//! environments or revisions.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::machine::envkey;
use crate::model::results::RunResults;

/// `i/n`: shard i (1-based) of n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not a shard; write i/n with 1 ≤ i ≤ n, such as 2/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

fn name_hash(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Assigns every benchmark to one of `count` shards; returns the names per shard (0-based), each
/// in the input order.
pub fn assign(
    names: &[String],
    durations: &BTreeMap<String, f64>,
    count: usize,
) -> Vec<Vec<String>> {
    let known: Vec<f64> = names
        .iter()
        .filter_map(|n| durations.get(n).copied())
        .collect();
    let fallback = if known.is_empty() {
        1.0
    } else {
        known.iter().sum::<f64>() / known.len() as f64
    };
    let mut order: Vec<(f64, u64, &String)> = names
        .iter()
        .map(|n| {
            (
                durations.get(n).copied().unwrap_or(fallback),
                name_hash(n),
                n,
            )
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));
    let mut load = vec![0.0_f64; count.max(1)];
    let mut home: BTreeMap<&String, usize> = BTreeMap::new();
    for (d, _, n) in order {
        let target = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .unwrap_or(0);
        load[target] += d;
        home.insert(n, target);
    }
    let mut out = vec![Vec::new(); count.max(1)];
    for n in names {
        out[home[n]].push(n.clone());
    }
    out
}

/// Merge errors.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge; give the shard result files")]
    Empty,
    #[error(
        "benchmark `{name}` appears in both `{first}` and `{second}`; each benchmark must come from one shard"
    )]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error("`{file}` was measured in a different environment from `{first}` ({}); shards of one run must share a runner class", differences.join("; "))]
    Environment {
        file: String,
        first: String,
        differences: Vec<String>,
    },
    #[error(
        "`{file}` measured commit {theirs}, `{first}` measured {ours}; merge shards of the same revision"
    )]
    Revision {
        file: String,
        first: String,
        ours: String,
        theirs: String,
    },
}

/// Joins shard results (label, results) into one run: benchmarks in input order, the earliest
/// start time, the first file's environment.
pub fn merge(parts: &[(String, RunResults)]) -> Result<RunResults, MergeError> {
    let (first_label, first) = parts.first().ok_or(MergeError::Empty)?;
    let commit = |r: &RunResults| r.environment.git.as_ref().map(|g| g.commit.clone());
    let mut merged = first.clone();
    merged.benchmarks.clear();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (label, r) in parts {
        let differences = envkey::key_differences(&first.environment, &r.environment);
        if !differences.is_empty() {
            return Err(MergeError::Environment {
                file: label.clone(),
                first: first_label.clone(),
                differences,
            });
        }
        if let (Some(a), Some(b)) = (commit(first), commit(r))
            && a != b
        {
            return Err(MergeError::Revision {
                file: label.clone(),
                first: first_label.clone(),
                ours: a,
                theirs: b,
            });
        }
        for b in &r.benchmarks {
            if let Some(prev) = seen.insert(b.name.clone(), label.clone()) {
                return Err(MergeError::Duplicate {
                    name: b.name.clone(),
                    first: prev,
                    second: label.clone(),
                });
            }
            merged.benchmarks.push(b.clone());
        }
        if r.created < merged.created {
            merged.created = r.created.clone();
        }
        if let (Some(g), Some(o)) = (merged.environment.git.as_mut(), r.environment.git.as_ref()) {
            g.dirty |= o.dirty;
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("bench_{i}")).collect()
    }

    #[test]
    fn parses_i_of_n() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "x", "1/0", "1-2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_benchmark_lands_in_exactly_one_shard_and_stays_there() {
        let all = names(11);
        for count in 1..=5 {
            let shards = assign(&all, &BTreeMap::new(), count);
            let mut seen: Vec<String> = shards.concat();
            seen.sort();
            let mut want = all.clone();
            want.sort();
            assert_eq!(seen, want, "{count} shards");
            let sizes: Vec<usize> = shards.iter().map(Vec::len).collect();
            assert!(
                sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
                "{sizes:?}"
            );
            assert_eq!(shards, assign(&all, &BTreeMap::new(), count), "stable");
        }
    }

    #[test]
    fn durations_balance_the_load() {
        let all = names(5);
        let durations: BTreeMap<String, f64> = [
            ("bench_0", 10.0),
            ("bench_1", 6.0),
            ("bench_2", 4.0),
            ("bench_3", 3.0),
            ("bench_4", 3.0),
        ]
        .into_iter()
        .map(|(n, d)| (n.to_string(), d))
        .collect();
        let shards = assign(&all, &durations, 2);
        let load = |s: &Vec<String>| s.iter().map(|n| durations[n]).sum::<f64>();
        // LPT: 10 | 6, then 4 → 6+4, 3 → 10+3 or 10, …: the loads are 13 and 13.
        assert_eq!(
            (load(&shards[0]), load(&shards[1])),
            (13.0, 13.0),
            "{shards:?}"
        );
        assert_eq!(shards[0][0], "bench_0");
    }
}
