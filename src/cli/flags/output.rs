//! `--format text|json` of the commands that drive an execution to its end (`run`, `resume`,
//! `redrive-execution`).

use clap::{Args, ValueEnum};

/// What a command that drives an execution prints at its end.
#[derive(Debug, Clone, Copy, Args)]
pub struct RunOutputArgs {
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
}

/// Output formats of `run`, `resume` and `redrive-execution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    /// The output JSON on success; error and cause on stderr otherwise.
    Text,
    /// DescribeExecution's response, whatever the outcome.
    Json,
}

impl RunOutputArgs {
    /// The format.
    pub fn lower(&self) -> RunFormat {
        self.format
    }
}
