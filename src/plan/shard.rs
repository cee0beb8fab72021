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

use std::collections::{BTreeMap, HashMap, HashSet};
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
        let number = |text: &str| text.trim().parse::<usize>().map_err(|_| bad());
        let (index, count) = (number(i)?, number(n)?);
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
    let duration = |n: &String| durations.get(n).copied().unwrap_or(fallback);
    let mut order: Vec<(f64, u64, &String)> = names
        .iter()
        .map(|n| (duration(n), name_hash(n), n))
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

/// Shard results joined into one run, a file at a time: benchmarks in the order of the files,
/// the earliest start time, the first file's environment (dirty if any file's tree was) with
/// the tool versions of every file (each shard records the tools its own benchmarks asked).
/// Each file's benchmarks are moved in as it is added, so a merge holds the merged run and the
/// file being read, not every file and a copy of each.
#[derive(Debug, Default)]
pub struct Merge {
    /// The first file's results with the benchmarks of every file added since.
    merged: Option<RunResults>,
    /// Each benchmark's name, and the index in `labels` of the file it came from.
    seen: HashMap<String, usize>,
    /// The files added, as named in errors: the first is the one every other must match.
    labels: Vec<String>,
}

impl Merge {
    pub fn new() -> Merge {
        Merge::default()
    }

    /// Adds the results of one shard, `label` naming it in errors.
    pub fn add(&mut self, label: String, mut r: RunResults) -> Result<(), MergeError> {
        if let Some(merged) = &self.merged {
            // The merged environment is the first file's: only whether a tree was dirty, and
            // the tools asked, change as files are added. A tool recorded by both must agree.
            let first = &self.labels[0];
            let differences = envkey::key_differences(&merged.environment, &r.environment);
            if !differences.is_empty() {
                return Err(MergeError::Environment {
                    file: label,
                    first: first.clone(),
                    differences,
                });
            }
            let commit = |r: &RunResults| r.environment.git.as_ref().map(|g| g.commit.clone());
            if let (Some(a), Some(b)) = (commit(merged), commit(&r))
                && a != b
            {
                return Err(MergeError::Revision {
                    file: label,
                    first: first.clone(),
                    ours: a,
                    theirs: b,
                });
            }
        }
        // Checked before anything is added, so that a refused file leaves the merge as it was.
        let mut names = HashSet::new();
        for b in &r.benchmarks {
            let earlier = match self.seen.get(&b.name) {
                Some(&prev) => Some(self.labels[prev].clone()),
                None => (!names.insert(b.name.as_str())).then(|| label.clone()),
            };
            if let Some(first) = earlier {
                return Err(MergeError::Duplicate {
                    name: b.name.clone(),
                    first,
                    second: label,
                });
            }
        }
        let file = self.labels.len();
        for b in &r.benchmarks {
            self.seen.insert(b.name.clone(), file);
        }
        self.labels.push(label);
        match &mut self.merged {
            None => self.merged = Some(r),
            Some(merged) => {
                merged.benchmarks.append(&mut r.benchmarks);
                if r.created < merged.created {
                    merged.created = r.created;
                }
                if let (Some(g), Some(o)) =
                    (merged.environment.git.as_mut(), r.environment.git.as_ref())
                {
                    g.dirty |= o.dirty;
                }
                // A shard of timer benchmarks asks no valgrind: without the versions of the
                // shards that did, the merged run would compare against a baseline of another
                // valgrind without a word.
                for (tool, version) in std::mem::take(&mut r.environment.tools) {
                    merged.environment.tools.entry(tool).or_insert(version);
                }
            }
        }
        Ok(())
    }

    /// The merged run; an error when no file was added.
    pub fn finish(self) -> Result<RunResults, MergeError> {
        self.merged.ok_or(MergeError::Empty)
    }
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
            let spread = sizes.iter().max().unwrap() - sizes.iter().min().unwrap();
            assert!(spread <= 1, "{sizes:?}");
            assert_eq!(shards, assign(&all, &BTreeMap::new(), count), "stable");
        }
    }

    #[test]
    fn durations_balance_the_load() {
        let all = names(5);
        let durations: BTreeMap<String, f64> = all
            .iter()
            .cloned()
            .zip([10.0, 6.0, 4.0, 3.0, 3.0])
            .collect();
        let shards = assign(&all, &durations, 2);
        let load = |s: &Vec<String>| s.iter().map(|n| durations[n]).sum::<f64>();
        // LPT: 10 | 6, then 4 → 6+4, 3 → 10+3 or 10, …: the loads are 13 and 13.
        let loads = (load(&shards[0]), load(&shards[1]));
        assert_eq!(loads, (13.0, 13.0), "{shards:?}");
        assert_eq!(shards[0][0], "bench_0");
    }

    #[test]
    fn a_merge_moves_each_file_in_and_keeps_the_earliest_start_and_any_dirty_tree() {
        use crate::machine::fingerprint::GitRevision;
        use crate::model::results::BenchmarkResult;
        // Shards started on 1 January 2025 (`d0`) and on the 1st to 3rd of January 2026.
        let (d0, d1, d2, d3) = (
            "2025-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
            "2026-01-02T00:00:00Z",
            "2026-01-03T00:00:00Z",
        );
        let shard = |created: &str, dirty: bool, names: &[&str]| {
            let benchmarks = names
                .iter()
                .map(|n| BenchmarkResult::new(n, Default::default()));
            let mut r = RunResults::of(benchmarks.collect());
            r.created = created.into();
            let commit = "c1".into();
            r.environment.git = Some(GitRevision { commit, dirty });
            r
        };
        let add = |merge: &mut Merge, label: &str, created: &str, dirty: bool, names: &[&str]| {
            merge.add(label.to_string(), shard(created, dirty, names))
        };
        assert!(matches!(Merge::new().finish(), Err(MergeError::Empty)));
        // A first file refused (a benchmark twice in it) leaves nothing behind.
        let mut merge = Merge::new();
        assert!(add(&mut merge, "twice.json", d0, true, &["x", "x"]).is_err());
        add(&mut merge, "a.json", d2, false, &["x"]).unwrap();
        let mut moved = shard(d3, false, &["y"]);
        moved.environment.git.as_mut().unwrap().commit = "c2".into();
        let err = merge.add("b.json".into(), moved).unwrap_err().to_string();
        let want =
            "`b.json` measured commit c2, `a.json` measured c1; merge shards of the same revision";
        assert_eq!(err, want);
        let merged = merge.finish().unwrap();
        assert_eq!(merged.benchmarks.len(), 1);
        assert_eq!(merged.created, d2);
        assert!(!merged.environment.git.unwrap().dirty);
        let mut merge = Merge::new();
        add(&mut merge, "a.json", d2, false, &["x", "y"]).unwrap();
        add(&mut merge, "b.json", d1, true, &["z"]).unwrap();
        let err = add(&mut merge, "c.json", d3, false, &["w", "y"]).unwrap_err();
        let want = "benchmark `y` appears in both `a.json` and `c.json`; each benchmark must come from one shard";
        assert_eq!(err.to_string(), want);
        // A refused file adds nothing: `w` may still come from another.
        add(&mut merge, "c2.json", d3, false, &["w"]).unwrap();
        let mut other = shard(d3, false, &["v"]);
        other.environment.git.as_mut().unwrap().commit = "c2".into();
        let refused = merge.add("d.json".into(), other);
        assert!(matches!(refused, Err(MergeError::Revision { .. })));
        let merged = merge.finish().unwrap();
        let names: Vec<&str> = merged.benchmarks.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z", "w"]);
        assert_eq!(merged.created, d1);
        assert!(merged.environment.git.unwrap().dirty);
    }

    #[test]
    fn a_merge_keeps_the_tools_of_every_shard_and_refuses_two_versions_of_one() {
        use crate::model::results::BenchmarkResult;
        let shard = |name: &str, tools: &[(&str, &str)]| {
            let mut r = RunResults::of(vec![BenchmarkResult::new(name, Default::default())]);
            let tools = tools.iter().map(|(t, v)| (t.to_string(), v.to_string()));
            r.environment.tools = tools.collect();
            r
        };
        let (git, valgrind) = (("git", "git 2.39"), ("valgrind", "valgrind-3.19.0"));
        let mut merge = Merge::new();
        merge.add("timer.json".into(), shard("t", &[git])).unwrap();
        let both = shard("c", &[git, valgrind]);
        merge.add("callgrind.json".into(), both).unwrap();
        // Another valgrind than the second shard's, though the first shard asked none.
        let later = shard("d", &[("valgrind", "valgrind-3.22.0")]);
        let err = merge.add("later.json".into(), later).unwrap_err();
        let said = "tools.valgrind: `valgrind-3.19.0` vs `valgrind-3.22.0`";
        assert_contains!(err.to_string(), said);
        let merged = merge.finish().unwrap();
        let tools = &merged.environment.tools;
        let valgrind = tools.get("valgrind").map(String::as_str);
        assert_eq!(valgrind, Some("valgrind-3.19.0"));
        assert_eq!(merged.environment.tools.len(), 2);
    }
}
