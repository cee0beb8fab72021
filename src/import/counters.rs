//! `kgate import perf-stat|callgrind|cachegrind`: counter files written where kgate did not run.
//!
//! Each file is one repetition of a benchmark named after the file (`out/matmul.cgout` →
//! `matmul`); a perf stat file holding several blocks for different commands yields one
//! benchmark per command (`FILE: COMMAND`), and repeated blocks of one command are repetitions.

use std::path::PathBuf;

use super::builder::Benchmarks;
use super::{ImportError, Importer, Policies, content};
use crate::capture::cpu::{self, Reading};
use crate::capture::valgrind;
use crate::config::CaptureKind;
use crate::config::derived;
use crate::model::results::RunResults;

pub static PERF_STAT: Importer = Importer {
    name: "perf-stat",
    help: "Linux `perf stat` output (`-x,` CSV, `-j` JSON, or the human-readable default)",
    selection: None,
    import: |files, ctx| import(CaptureKind::Perf, files, &ctx.policies),
};

pub static CALLGRIND: Importer = Importer {
    name: "callgrind",
    help: "Valgrind callgrind output files",
    selection: None,
    import: |files, ctx| import(CaptureKind::Callgrind, files, &ctx.policies),
};

pub static CACHEGRIND: Importer = Importer {
    name: "cachegrind",
    help: "Valgrind cachegrind output files",
    selection: None,
    import: |files, ctx| import(CaptureKind::Cachegrind, files, &ctx.policies),
};

fn import(
    kind: CaptureKind,
    files: &[PathBuf],
    policies: &Policies,
) -> Result<RunResults, ImportError> {
    let mut benchmarks = Benchmarks::new(policies, kind.as_str());
    let definitions = derived::builtins();
    for path in files {
        // The readers name the file themselves; the error adds it once.
        let prefix = format!("`{}`: ", path.display());
        let content = |message: String| {
            let message = message
                .strip_prefix(&prefix)
                .map_or(message.clone(), str::to_string);
            content(path, message)
        };
        let stem = super::protocol::file_benchmark_name(path);
        let readings: Vec<(String, Reading)> = match cpu::valgrind_tool(kind) {
            Some(tool) => {
                let p = valgrind::read(path, tool).map_err(content)?;
                vec![(stem, cpu::valgrind_reading(&p))]
            }
            None => {
                let blocks = crate::capture::perf::read(path).map_err(content)?;
                let commands: Vec<Option<&String>> =
                    blocks.iter().map(|b| b.command.as_ref()).collect();
                let one_command = commands.iter().all(|c| *c == commands[0]);
                blocks
                    .iter()
                    .map(|b| {
                        let name = match (&b.command, one_command) {
                            (Some(c), false) => format!("{stem}: {c}"),
                            _ => stem.clone(),
                        };
                        (name, cpu::perf_reading(b))
                    })
                    .collect()
            }
        };
        for (name, reading) in readings {
            let c = benchmarks.get(&name);
            let rep = c.result_mut().repetitions;
            cpu::record(c, rep, reading, &definitions).map_err(content)?;
            benchmarks.imported(&name, path, rep + 1);
        }
    }
    Ok(benchmarks.into_results())
}
