//! The committed JSON Schemas must match the types that read and write the files.

#[test]
fn schemas_match_the_types() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("KGATE_UPDATE_SCHEMAS").is_some();
    let mut drifted = Vec::new();
    for (name, text) in kgate::schema::all() {
        let path = dir.join(name);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(committed) if committed == text => {}
            _ => drifted.push(name),
        }
    }
    assert!(
        drifted.is_empty(),
        "schemas/{drifted:?} differ from the types; regenerate with `KGATE_UPDATE_SCHEMAS=1 cargo test --test it schemas::` and commit them"
    );
}

#[test]
fn the_example_config_and_baseline_parse_with_the_current_types() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let loaded = kgate::config::load(&root.join("kgate.yaml")).unwrap();
    assert_eq!(loaded.config.benchmarks.len(), 4);
    let baseline =
        kgate::model::results::RunResults::load(&root.join(".kgate/baselines/default.json"))
            .unwrap();
    let names: Vec<&str> = baseline
        .benchmarks
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(
        names,
        vec!["matmul", "reduce", "matmul_cachegrind", "matmul_callgrind"]
    );
}

// ---- the config schema against the loader ----

use crate::common;

use std::path::Path;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A validator for the committed `schemas/config.schema.json`.
fn config_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("schemas/config.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the config schema is a valid JSON Schema")
}

/// YAML typed as YAML-to-JSON tools (and editors' schema checks) type it.
fn yaml_to_json(text: &str, name: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{name}: not YAML: {e}"))
}

/// The schema's complaints about `text`, one line each; empty when it conforms.
fn schema_errors(validator: &jsonschema::Validator, text: &str, name: &str) -> Vec<String> {
    let instance = yaml_to_json(text, name);
    validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The fenced yaml block under the "Configuration reference" heading of
/// docs/configuration.md.
fn readme_reference_block() -> String {
    let readme = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let section = readme
        .split("\n## Configuration reference")
        .nth(1)
        .expect("docs/configuration.md has a Configuration reference section");
    let block = section
        .split("```yaml\n")
        .nth(1)
        .expect("the section opens with a yaml block");
    block.split("\n```").next().unwrap().to_string()
}

/// Every `*.yaml` config under `examples/` (build folders left out).
fn example_configs(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                example_configs(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "yaml") {
            found.push(path);
        }
    }
}

/// Every configuration kgate ships or shows (the root suite, the examples, the README's
/// reference, `kgate init`'s starter) loads with the real loader and conforms to the schema.
#[test]
fn every_shipped_config_loads_and_conforms_to_the_schema() {
    let mut configs: Vec<(String, String)> = Vec::new();
    let mut files = vec![repo().join("kgate.yaml")];
    example_configs(&repo().join("examples"), &mut files);
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        let name = path.strip_prefix(repo()).unwrap().display().to_string();
        configs.push((name, std::fs::read_to_string(&path).unwrap()));
    }
    configs.push((
        "docs/configuration.md (Configuration reference)".into(),
        readme_reference_block(),
    ));
    let dir = tempfile::tempdir().unwrap();
    common::kgate(dir.path()).arg("init").assert().success();
    configs.push((
        "`kgate init` output".into(),
        std::fs::read_to_string(dir.path().join("kgate.yaml")).unwrap(),
    ));

    let validator = config_validator();
    let mut problems = Vec::new();
    for (name, text) in &configs {
        if let Err(e) = kgate::config::parse(text, name) {
            problems.push(format!("{name}: the loader refuses it: {e}"));
        }
        for error in schema_errors(&validator, text, name) {
            problems.push(format!("{name}: the schema refuses it: {error}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The short forms the loader reads (a bare repetition count, durations, percentages,
/// command strings and lists, scalars as text) are the ones the schema takes, and what the
/// loader refuses the schema refuses too.
#[test]
fn schema_and_loader_agree_on_every_short_form() {
    // (benchmark keys, or top-level keys when starting with `top:`, accepted?)
    let cases: &[(&str, bool)] = &[
        ("repetitions: 10", true),
        ("repetitions: {min: 3}", true),
        ("repetitions: {min: 10, max: 30}", true),
        ("repetitions: 0", false),
        ("repetitions: '10'", false),
        ("repetitions: {min: 3, most: 5}", false),
        ("repetitions: -2", false),
        ("timeout: 30s", true),
        ("timeout: 500ms", true),
        ("timeout: 1.5s", true),
        ("timeout: 1h 30m", true),
        ("timeout: 1h30m", true),
        ("timeout: 2 minutes", true),
        ("timeout: 30", false),
        ("timeout: 3 parsecs", false),
        ("timeout: 1h30", false),
        ("command: [./bench, --n, 384]", true),
        ("command: \"./bench --n 384\"", true),
        ("command: []", false),
        ("command: \"\"", false),
        ("command: 12", false),
        ("captures: [timer, protocol]", true),
        ("captures: timer", false),
        ("captures: [stopwatch]", false),
        ("env: {OMP_NUM_THREADS: 1, NAME: x}", true),
        ("parameters: {n: 384, dtype: f32}", true),
        ("env: [OMP_NUM_THREADS]", false),
        ("warmup: 2", true),
        ("warmup: lots", false),
        ("metrics: {t: {threshold: 5%}}", true),
        ("metrics: {t: {threshold: 2.5 %}}", true),
        ("metrics: {t: {threshold: .5%}}", true),
        ("metrics: {t: {threshold: 5}}", false),
        ("metrics: {t: {threshold: five%}}", false),
        ("metrics: {t: {tolerance: 1%}}", true),
        ("metrics: {t: {tolerance: 0}}", true),
        ("metrics: {t: {tolerance: 2.5}}", true),
        ("metrics: {t: {tolerance: -1}}", false),
        ("metrics: {t: {direction: up}}", false),
        (
            "top:gate: {threshold: 5%, equivalence_margin: 1%, time_budget: 10m}",
            true,
        ),
        ("top:gate: {threshold: 5}", false),
        ("top:gate: {time_budget: 10}", false),
        (
            "top:defaults: {repetitions: 10, timeout: 60s, captures: [timer]}",
            true,
        ),
        ("top:defaults: {repetitions: {max: 10}}", false),
        ("top:build: cargo build --release", true),
        ("top:build: [cargo, build, --release]", true),
    ];
    let validator = config_validator();
    let mut disagreements = Vec::new();
    for (keys, accepted) in cases {
        let text =
            match keys.strip_prefix("top:") {
                Some(top) => format!("{top}\nbenchmarks:\n  - name: a\n    command: ./a\n"),
                None => format!("benchmarks:\n  - name: a\n    command: ./a\n    {keys}\n")
                    .replacen("    command: ./a\n    command:", "    command:", 1),
            };
        let loader = kgate::config::parse(&text, "kgate.yaml");
        let schema = schema_errors(&validator, &text, "kgate.yaml");
        if loader.is_ok() != *accepted {
            disagreements.push(format!(
                "`{keys}`: the loader {} it{}",
                if loader.is_ok() { "accepts" } else { "refuses" },
                loader.err().map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
        if schema.is_empty() != *accepted {
            disagreements.push(format!(
                "`{keys}`: the schema {} it {schema:?}",
                if schema.is_empty() {
                    "accepts"
                } else {
                    "refuses"
                }
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
