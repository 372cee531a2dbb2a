//! `sfn-local completions bash|zsh|fish`: shell completions generated from the command line's
//! own definition (clap_complete), so they never drift from it.

use clap::{Args, CommandFactory};
use std::process::ExitCode;

/// Arguments of `completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh or fish (also elvish, powershell).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for the shell.
pub fn run(args: CompletionsArgs) -> ExitCode {
    let mut command = crate::cli::Cli::command();
    clap_complete::generate(
        args.shell,
        &mut command,
        "sfn-local",
        &mut std::io::stdout(),
    );
    ExitCode::SUCCESS
}
