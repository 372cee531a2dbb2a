//! The command line: clap commands, miette reports. No logic the library does not own.

pub mod report;

use std::process::ExitCode;

/// Runs the `sfn-local` command line and returns its exit status.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
