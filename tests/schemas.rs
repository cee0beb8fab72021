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
        "schemas/{drifted:?} differ from the types; regenerate with `KGATE_UPDATE_SCHEMAS=1 cargo test --test schemas` and commit them"
    );
}

#[test]
fn the_example_config_and_baseline_parse_with_the_current_types() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let loaded = kgate::config::load(&root.join("kgate.yaml")).unwrap();
    assert_eq!(loaded.config.benchmarks.len(), 4);
    let baseline =
        kgate::results::RunResults::load(&root.join(".kgate/baselines/default.json")).unwrap();
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
