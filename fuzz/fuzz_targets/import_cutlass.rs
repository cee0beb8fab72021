#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (kgate_fuzz::by_target("import_cutlass").expect("a known target"))(data);
});
