use std::process::ExitCode;

use clap::Parser;
use kgate::model::exit::ExitStatus;
use kgate::model::text::escape_log;

fn main() -> ExitCode {
    let cli = kgate::cli::Cli::parse();
    // The runner's credentials leave the environment before anything runs: what kgate starts,
    // benchmarks above all, can find them neither in its own environment nor in kgate's.
    // SAFETY: no other thread exists yet (the Ctrl-C handler's starts below).
    unsafe { kgate::run::secrets::seal() };
    if let Err(e) = kgate::run::process::install_interrupt_handler() {
        eprintln!("warning: cannot install the handler of Ctrl-C and SIGTERM: {e}");
    }
    match kgate::cli::commands::execute(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) if kgate::cli::commands::is_interruption(&err) => {
            eprintln!(
                "kgate: {}",
                escape_log(&kgate::cli::commands::error_text(&err))
            );
            ExitCode::from(kgate::run::process::interrupted_status())
        }
        Err(err) => {
            eprintln!(
                "error: {}",
                escape_log(&kgate::cli::commands::error_text(&err))
            );
            ExitCode::from(ExitStatus::ERROR)
        }
    }
}
