//! The commented `kgate.yaml` that `kgate init` writes.

/// The starter configuration written by `kgate init`.
pub const STARTER: &str = r#"# kgate.yaml: the kernel benchmarks this repository gates on.
# Reference: docs/configuration.md in kgate's repository, and `kgate validate`.
version: 1

# Run once per revision before any benchmark (optional).
# build: cargo build --release

defaults:
  warmup: 1            # discarded runs before measuring
  repetitions: 10      # or {min: 10, max: 40}: more only while undecided (check --against)
  timeout: 60s         # the whole process group is killed at the limit
  captures: [timer]    # timer: process wall time; protocol: numbers the benchmark reports

gate:
  alpha: 0.01                 # false-alarm level of the whole gate (all metrics, all looks)
  threshold: 5%               # smallest change that counts as a regression
  fail_on_inconclusive: false # exit 3 instead of 0 when the evidence is inconclusive
  # correction: bh            # across gated metrics: bh (default) or holm
  # equivalence_margin: 1%    # "unchanged" needs the interval inside ±this (default: 1 %, or the threshold if smaller)
  # time_budget: 10m          # no adaptive look starts after this
  # on_regression: profile    # re-run what regressed under callgrind, per-function changes
  # profile_budget: 5m        # wall time for those profiling runs (default 5m)

benchmarks:
  - name: example
    # A shell string (run with sh -c) or a list of arguments.
    command: ["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]
    # A benchmark that times its own kernel writes JSON lines to $KGATE_PROTOCOL_FILE:
    #   {"metric": "kernel_time", "value": 88.0, "unit": "us"}
    # and lists `protocol` in its captures.
    metrics:
      wall_time:
        direction: lower
        threshold: 10%
        gate: true
    # What its speed depends on: with `kgate check --against`, a benchmark whose files and
    # command output hash the same on both sides (after each side's build) is `identical` and
    # not run. CUDA: commands: ["cuobjdump -sass build/libk.so"]; HIP: files: ["build/**/*.hsaco"];
    # Triton: files: ["cache/**/*.cubin"] with TRITON_CACHE_DIR=cache; a CPU function:
    # commands: ["objdump -d --disassemble=matmul ./bench"].
    # identity: {files: [src/example.c]}
"#;

#[cfg(test)]
mod tests {
    /// The default of `gate.equivalence_margin` that the template states is the one
    /// `compare` applies (the smaller of [`DEFAULT_EQUIVALENCE_MARGIN`] and the threshold), in
    /// the words of docs/configuration.md.
    ///
    /// [`DEFAULT_EQUIVALENCE_MARGIN`]: crate::compare::DEFAULT_EQUIVALENCE_MARGIN
    #[test]
    fn the_equivalence_margin_default_is_the_one_compare_applies() {
        let truth = format!(
            "(default: {} %, or the threshold if smaller)",
            crate::compare::DEFAULT_EQUIVALENCE_MARGIN * 100.0
        );
        let line = |text: &str| {
            text.lines()
                .find(|l| l.contains("equivalence_margin: "))
                .expect("an equivalence_margin line")
                .to_string()
        };
        let starter = line(super::STARTER);
        assert!(starter.ends_with(&truth), "{starter}\nshould say {truth}");
        let readme = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/configuration.md"
        ))
        .unwrap();
        let readme = line(&readme);
        assert!(readme.ends_with(&truth), "{readme}\nshould say {truth}");
    }
}
