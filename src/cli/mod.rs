//! The command line: clap commands, miette reports. No logic the library does not own.
//!
//! One file per command family, as mini-redis has one file per command: [`Command`] parses the
//! arguments and delegates to the family's `run`, which returns the process exit status.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `println!` that ignores a closed stdout: a reader that went away (`| head`) is not an error
/// of ours, and must not be a panic.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that ignores a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `eprint!` that ignores a closed stderr.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod db;
pub mod executions;
pub mod machines;
pub mod report;
pub mod resume;
pub mod run;
pub mod stop;
pub mod tasks;
pub mod test;
pub mod validate;

/// sfn-local: validate and run AWS Step Functions state machines locally.
#[derive(Debug, Parser)]
#[command(name = "sfn-local", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Every `sfn-local` command.
// Parsed once per process; the size of its largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check definitions the way AWS's ValidateStateMachineDefinition does.
    Validate(validate::ValidateArgs),
    /// Run an execution to its end and print its output.
    Run(run::RunArgs),
    /// Continue RUNNING executions whose runner is gone (killed, crashed, Ctrl-C).
    Resume(resume::ResumeArgs),
    /// Print an execution as AWS's DescribeExecution does.
    DescribeExecution(executions::DescribeArgs),
    /// Print an execution's history as AWS's GetExecutionHistory does.
    GetExecutionHistory(executions::HistoryArgs),
    /// List executions as AWS's ListExecutions does.
    ListExecutions(executions::ListArgs),
    /// Stop a running execution (ABORTED), as AWS's StopExecution does.
    StopExecution(stop::StopArgs),
    /// Answer a task token with the task's result.
    SendTaskSuccess(tasks::SuccessArgs),
    /// Answer a task token with an error.
    SendTaskFailure(tasks::FailureArgs),
    /// Tell a waiting task its worker is alive (restarts the HeartbeatSeconds clock).
    SendTaskHeartbeat(tasks::HeartbeatArgs),
    /// Take the next task of an activity (long poll), as a worker.
    GetActivityTask(tasks::GetActivityArgs),
    /// List the tasks waiting for an answer, with their tokens and deadlines.
    ListTasks(tasks::ListTasksArgs),
    /// Run test suites (`*.sfntest.json`) against mocked Tasks; report like a test runner.
    Test(test::TestArgs),
}

impl Command {
    /// Runs the command and returns the exit status.
    pub fn run(self) -> ExitCode {
        match self {
            Command::Validate(args) => validate::run(args),
            Command::Run(args) => run::run(args),
            Command::Resume(args) => resume::run(args),
            Command::DescribeExecution(args) => executions::describe(args),
            Command::GetExecutionHistory(args) => executions::history(args),
            Command::ListExecutions(args) => executions::list(args),
            Command::StopExecution(args) => stop::run(args),
            Command::SendTaskSuccess(args) => tasks::success(args),
            Command::SendTaskFailure(args) => tasks::failure(args),
            Command::SendTaskHeartbeat(args) => tasks::heartbeat(args),
            Command::GetActivityTask(args) => tasks::get_activity_task(args),
            Command::ListTasks(args) => tasks::list(args),
            Command::Test(args) => test::run(args),
        }
    }
}

/// Exit status for usage errors and unreadable files.
pub const EXIT_USAGE: u8 = 2;

/// Runs the `sfn-local` command line and returns its exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    cli.command.run()
}

/// The files the arguments name: files as given, folders walked recursively for the files
/// `wanted` accepts, each folder's entries in sorted order (a stable report).
pub(crate) fn files_under(
    paths: &[std::path::PathBuf],
    wanted: &dyn Fn(&std::path::Path) -> bool,
) -> Result<Vec<std::path::PathBuf>, String> {
    fn walk(
        dir: &std::path::Path,
        wanted: &dyn Fn(&std::path::Path) -> bool,
        out: &mut Vec<std::path::PathBuf>,
    ) -> Result<(), String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let mut found: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        found.sort();
        for p in found {
            if p.is_dir() {
                walk(&p, wanted, out)?;
            } else if wanted(&p) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, wanted, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}
