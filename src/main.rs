use std::process::ExitCode;

use clap::Parser;
use kgate::model::exit::ExitStatus;
use kgate::model::text::escape_log;

fn main() -> ExitCode {
    let cli = kgate::cli::Cli::parse();
    if let Err(e) = kgate::run::runner::install_interrupt_handler() {
        eprintln!("warning: cannot install the handler of Ctrl-C and SIGTERM: {e}");
    }
    match kgate::cli::commands::execute(cli) {
        Ok(status) => ExitCode::from(status),
        Err(err) if kgate::cli::commands::is_interruption(&err) => {
            eprintln!(
                "kgate: {}",
                escape_log(&kgate::cli::commands::error_text(&err))
            );
            ExitCode::from(kgate::run::runner::interrupted_status())
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
