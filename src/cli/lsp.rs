//! `sfn-local lsp`: the language server on stdio (see [`crate::lsp`]), for an editor to start.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `lsp`.
#[derive(Debug, Args)]
pub struct LspArgs {
    /// Speak on stdin and stdout (what every editor does; the only transport, accepted for
    /// the editors that always pass it).
    #[arg(long)]
    pub stdio: bool,
}

/// Runs `lsp` until the editor says `exit`.
pub fn run(_args: LspArgs) -> ExitCode {
    match crate::lsp::serve_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("sfn-local lsp: {e}");
            ExitCode::FAILURE
        }
    }
}
