//! kgate's integration tests, in one test binary (`cargo test --test it`): one module per
//! area, sharing the helpers in `common`. Filter by module, e.g.
//! `cargo test --test it reports::`. Fixtures (files the tests read) are in `tests/fixtures/`.
//! Tests whose verdicts rest on wall times measured at two moments are in `tests/quiet/`.

mod common;

mod accelerator_imports;
mod action_install;
mod architecture;
mod baselines;
mod bisect;
mod calibrate;
mod cli;
mod correctness;
mod cpu_capture;
mod cpu_corpus;
mod explanations;
mod first_hour;
mod fuzz_regressions;
mod github;
mod gitlab;
mod hardening;
mod hardening_inputs;
mod history_dashboard;
mod identity;
mod import_formats;
mod injection;
mod jax_example;
mod ncu_capture;
mod profile_regressions;
mod reports;
mod results_format;
mod schemas;
mod sequential;
mod simulation;
mod stats_vectors;
mod trace_import;
mod trace_windows;
mod trust;
mod utilization;
mod xprof_counters;
