//! JSON Schemas of kgate's files, generated from the Rust types that read and write them.
//!
//! The types are the single source of truth; `schemas/*.json` are committed for people and
//! other tools, and a test fails when they drift from the types (regenerate with
//! `KGATE_UPDATE_SCHEMAS=1 cargo test schemas`).

use schemars::{JsonSchema, schema_for};

use crate::bisect::BisectReport;
use crate::config::Config;
use crate::model::protocol::ProtocolLine;
use crate::model::report::Report;
use crate::model::results::RunResults;

/// Every schema as (file name, pretty JSON with a trailing newline).
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("config.schema.json", render::<Config>()),
        ("results.schema.json", render::<RunResults>()),
        ("report.schema.json", render::<Report>()),
        ("protocol-line.schema.json", render::<ProtocolLine>()),
        ("bisect.schema.json", render::<BisectReport>()),
    ]
}

fn render<T: JsonSchema>() -> String {
    let mut s = serde_json::to_string_pretty(&schema_for!(T)).expect("schemas serialize");
    s.push('\n');
    s
}
