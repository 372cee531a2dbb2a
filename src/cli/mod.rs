//! The command line: clap commands, miette reports. No logic the library does not own.
//!
//! One file per command family, as mini-redis has one file per command: [`Command`] parses the
//! arguments and delegates to the family's `run`, which returns the process exit status. Flags
//! that several commands share are declared once in [`flags`], and lowered there once into the
//! typed values a command's `run` reads (ripgrep's two stages).

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

/// A warning on stderr, unless `-q`/`--quiet` asked for errors only.
macro_rules! warnln {
    ($($arg:tt)*) => {{
        if !$crate::cli::ui::quiet() {
            errln!($($arg)*);
        }
    }};
}

/// `eprint!` that ignores a closed stderr.
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod clock;
pub mod completions;
pub mod console;
pub mod coverage;
pub mod db;
pub mod executions;
pub mod flags;
pub mod graph;
pub mod history_snapshot;
pub mod lsp;
pub mod output;
pub mod param;
pub mod progress;
pub mod redrive;
pub mod replay;
pub mod report;
pub mod resume;
pub mod run;
pub mod serve;
pub mod start;
pub mod stop;
pub mod summary;
pub mod tasks;
pub mod test;
pub mod test_state;
pub mod ui;
pub mod validate;
pub mod web;
pub mod worker;

/// `--machine`/`--machines` live with the other shared flag groups.
pub use flags::machines;

/// sfn-local: validate and run AWS Step Functions state machines locally.
#[derive(Debug, Parser)]
#[command(name = "sfn-local", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// -q, -v and --color, for every command.
    #[command(flatten)]
    pub ui: ui::UiArgs,
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
    /// Start an execution in the background and print its executionArn and startDate.
    StartExecution(start::StartArgs),
    /// Continue RUNNING executions whose runner is gone (killed, crashed, Ctrl-C).
    Resume(resume::ResumeArgs),
    /// Re-run a recorded execution (AWS's or sfn-local's history) against a definition; print `identical` or the first divergence.
    Replay(replay::ReplayArgs),
    /// Continue a FAILED, TIMED_OUT or ABORTED execution from what did not succeed (AWS's RedriveExecution).
    RedriveExecution(redrive::RedriveArgs),
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
    /// Print shell completions: `source <(sfn-local completions bash)`.
    Completions(completions::CompletionsArgs),
    /// Run a command for each task of an activity: heartbeats, cancellation and answers done
    /// for it.
    Worker(worker::WorkerArgs),
    /// Run test suites (`*.sfntest.json`) against mocked Tasks; report like a test runner.
    Test(test::TestArgs),
    /// Run one state as AWS's TestState does: inspection data, mocks, Retry/Catch decisions.
    TestState(test_state::TestStateArgs),
    /// Draw a state machine (or an execution's path on it) as SVG, Mermaid or DOT.
    Graph(graph::GraphArgs),
    /// Which states, branches and error paths the stored executions took (text, JSON, LCOV).
    Coverage(coverage::CoverageArgs),
    /// Open the console in the browser: executions on their graphs, events, waiting tasks.
    Console(console::ConsoleArgs),
    /// Serve the AWS Step Functions API on localhost (for the AWS CLI, SDKs, Step Functions Local suites).
    Serve(serve::ServeArgs),
    /// Serve the Language Server Protocol on stdio, for editors: validate's verdicts as you type, and more.
    Lsp(lsp::LspArgs),
    /// Move the virtual clock of a `serve --clock virtual`: now, advance DURATION, next, until-idle.
    Clock(clock::ClockArgs),
}

impl Command {
    /// Runs the command and returns the exit status.
    pub fn run(self) -> ExitCode {
        match self {
            Command::Validate(args) => validate::run(args),
            Command::Run(args) => run::run(args),
            Command::StartExecution(args) => start::run(args),
            Command::Resume(args) => resume::run(args),
            Command::RedriveExecution(args) => redrive::run(args),
            Command::Replay(args) => replay::run(args),
            Command::DescribeExecution(args) => executions::describe(args),
            Command::GetExecutionHistory(args) => executions::history(args),
            Command::ListExecutions(args) => executions::list(args),
            Command::StopExecution(args) => stop::run(args),
            Command::SendTaskSuccess(args) => tasks::success(args),
            Command::SendTaskFailure(args) => tasks::failure(args),
            Command::SendTaskHeartbeat(args) => tasks::heartbeat(args),
            Command::GetActivityTask(args) => tasks::get_activity_task(args),
            Command::Worker(args) => worker::run(args),
            Command::ListTasks(args) => tasks::list(args),
            Command::Test(args) => test::run(args),
            Command::TestState(args) => test_state::run(args),
            Command::Graph(args) => graph::run(args),
            Command::Console(args) => console::run(args),
            Command::Coverage(args) => coverage::run(args),
            Command::Completions(args) => completions::run(args),
            Command::Serve(args) => serve::run(args),
            Command::Clock(args) => clock::run(args),
            Command::Lsp(args) => lsp::run(args),
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
    ui::set(cli.ui);
    let code = cli.command.run();
    // No program a command started outlives it (`--task` commands left running by Ctrl-C).
    crate::tasks::process::end_all();
    code
}

/// The files the arguments name: files as given, folders walked recursively for the files
/// `wanted` accepts, each folder's entries in sorted order (a stable report).
pub(crate) fn files_under(
    paths: &[std::path::PathBuf],
    wanted: &dyn Fn(&std::path::Path) -> bool,
) -> Result<Vec<std::path::PathBuf>, String> {
    walk_files(paths, &|p| {
        if wanted(p) {
            Ok(())
        } else {
            Err(String::new())
        }
    })
    .map(|w| w.files)
}

/// What a folder walk found: the files to read, and what it passed over with the reason.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Files named by the arguments, and the files `pick` accepted inside folders.
    pub files: Vec<std::path::PathBuf>,
    /// Files and folders passed over, with why (for `--verbose`).
    pub skipped: Vec<(std::path::PathBuf, String)>,
}

/// Folders a walk never enters: dependencies, build output, version control, hidden folders.
fn skipped_folder(name: &str) -> Option<&'static str> {
    match name {
        "node_modules" => Some("dependencies (node_modules)"),
        "target" => Some("build output (target)"),
        ".git" => Some("version control (.git)"),
        _ if name.starts_with('.') => Some("hidden folder"),
        _ => None,
    }
}

/// Like [`files_under`], and says why each file inside a folder was passed over: `pick` returns
/// `Err(reason)` for a file it does not want. Files named directly are always taken.
pub(crate) fn walk_files(
    paths: &[std::path::PathBuf],
    pick: &dyn Fn(&std::path::Path) -> Result<(), String>,
) -> Result<Walk, String> {
    fn walk(
        dir: &std::path::Path,
        pick: &dyn Fn(&std::path::Path) -> Result<(), String>,
        out: &mut Walk,
    ) -> Result<(), String> {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let mut found: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        found.sort();
        for p in found {
            if p.is_dir() {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                match skipped_folder(&name) {
                    Some(why) => out.skipped.push((p.clone(), why.to_owned())),
                    None => walk(&p, pick, out)?,
                }
            } else {
                match pick(&p) {
                    Ok(()) => out.files.push(p),
                    Err(why) => out.skipped.push((p, why)),
                }
            }
        }
        Ok(())
    }
    let mut out = Walk::default();
    for p in paths {
        if p.is_dir() {
            walk(p, pick, &mut out)?;
        } else {
            out.files.push(p.clone());
        }
    }
    Ok(out)
}
