//! `sfn-local start-execution DEFINITION [run's options]`: start an execution in the background,
//! as the AWS CLI's `start-execution` does, and print its `executionArn` and `startDate`.
//! `--state-machine-arn ARN`, as the AWS CLI spells it, starts a machine the database knows
//! (created through serve's API, or run before) instead of a file.
//!
//! The execution is driven by a `sfn-local run` of its own, started in a new process group (a
//! Ctrl-C in this terminal does not reach it) with the same options, whose lease and durability
//! are `run`'s: `describe-execution`, `list-tasks`, `send-task-*` and `stop-execution` work on it
//! from any shell, and `resume` takes it over if that runner dies.

use crate::api;
use crate::cli::{run::RunArgs, EXIT_USAGE};
use clap::Args;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `start-execution`: those of `run`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// As for `run`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// How long the background runner gets to store the execution (it validates first).
const START_PATIENCE: Duration = Duration::from_secs(30);

/// Where a runner started here writes its execution's ARN (a file `start-execution` names): a
/// name alone is ambiguous (two machines may run executions of the same name), the ARN is not.
pub const ANNOUNCE_ENV: &str = "SFN_LOCAL_ANNOUNCE_ARN";

/// Called by `run` once it knows its execution's ARN: tells the `start-execution` that started
/// it (if one did). Written whole in one `create_new` write, so a reader sees all or nothing
/// and a nested runner cannot overwrite it.
pub fn announce(execution_arn: &str) {
    if let Some(path) = std::env::var_os(ANNOUNCE_ENV) {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path);
        if let Ok(mut file) = file {
            let _ = file.write_all(format!("{execution_arn}\n").as_bytes());
        }
    }
}

/// The ARN the runner announced in `path`, once it has written it whole.
fn announced(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.strip_suffix('\n').map(str::to_owned)
}

/// Runs `start-execution`.
pub fn run(args: StartArgs) -> ExitCode {
    let name = args
        .run
        .name
        .clone()
        .unwrap_or_else(|| crate::random::uuid().to_string());
    // The runner gets exactly the options given here (and the name chosen).
    let given: Vec<std::ffi::OsString> = std::env::args_os()
        .skip_while(|a| a != "start-execution")
        .skip(1)
        .collect();
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            errln!("error: cannot find the sfn-local binary to start the runner: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let announce_path =
        std::env::temp_dir().join(format!("sfn-local-start-{}.arn", uuid::Uuid::new_v4()));
    let mut command = std::process::Command::new(exe);
    command
        .arg("run")
        .args(&given)
        .env(ANNOUNCE_ENV, &announce_path);
    if args.run.name.is_none() {
        command.args(["--name", &name]);
    }
    use std::os::unix::process::CommandExt;
    let mut child = match command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            errln!("error: cannot start the runner: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let until = Instant::now() + START_PATIENCE;
    // The execution is found by the ARN its runner announces, never by name alone; an older
    // execution under that ARN is not ours (the runner refuses the name).
    let since = crate::clock::system_now() - 1000;
    let ours = |args: &StartArgs| {
        let arn = announced(&announce_path)?;
        find(args, &arn).filter(|r| r.start_date_ms >= since)
    };
    let result = wait_for_runner(&args, &mut child, until, ours);
    let _ = std::fs::remove_file(&announce_path);
    result
}

/// Waits until the runner's execution is stored (prints it) or the runner ends (says why).
fn wait_for_runner(
    args: &StartArgs,
    child: &mut std::process::Child,
    until: Instant,
    ours: impl Fn(&StartArgs) -> Option<crate::store::ExecutionRecord>,
) -> ExitCode {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // The runner ended before we saw the execution: a refusal (bad definition, input,
            // binding) or an execution that ended at once. Either way, say what it said.
            let mut said = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                use std::io::Read;
                let _ = stderr.read_to_string(&mut said);
            }
            if let Some(record) = ours(args) {
                outln!("{}", started(&record));
                return ExitCode::SUCCESS;
            }
            err!("{said}");
            return ExitCode::from(status.code().unwrap_or(1).clamp(1, 255) as u8);
        }
        if let Some(record) = ours(args) {
            outln!("{}", started(&record));
            return ExitCode::SUCCESS;
        }
        if Instant::now() > until {
            errln!("error: the runner did not store the execution within {} s; it keeps trying (pid {})", START_PATIENCE.as_secs(), child.id());
            return ExitCode::from(1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn find(args: &StartArgs, arn: &str) -> Option<crate::store::ExecutionRecord> {
    let store = args.run.database.lower().open_for_reading().ok()?;
    store.execution(arn).ok().flatten()
}

fn started(record: &crate::store::ExecutionRecord) -> String {
    let described = api::describe_execution(record);
    serde_json::to_string_pretty(&serde_json::json!({
        "executionArn": described["executionArn"],
        "startDate": described["startDate"],
    }))
    .unwrap_or_default()
}
