//! `sfn-local run DEFINITION`: run an execution to its end and print its output.

use crate::api;
use crate::asl;
use crate::cli::report;
use crate::cli::{db, EXIT_USAGE};
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::MAX_PAYLOAD_BYTES;
use crate::engine::runner::{check_name, run_execution, RunError, RunRequest};
use crate::engine::{EngineOptions, Status};
use crate::limits;
use crate::tasks::{command::parse_binding, LocalTasks};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The state machine definition (JSON or YAML).
    #[arg(required_unless_present_any = ["template", "state_machine_arn"])]
    pub definition: Option<PathBuf>,
    /// Run a state machine the database knows instead: one created through `serve`'s API (a
    /// version or alias ARN too), or one that earlier executions ran.
    #[arg(long, value_name = "ARN", conflicts_with_all = ["definition", "template"])]
    pub state_machine_arn: Option<String>,
    /// Run a state machine of this SAM or CloudFormation template instead.
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "definition")]
    pub template: Option<PathBuf>,
    /// The logical ID of the template's state machine to run.
    #[arg(long, value_name = "LOGICAL_ID", requires = "template")]
    pub state_machine: Option<String>,
    /// Values for `${NAME}` placeholders.
    #[command(flatten)]
    pub substitutions: crate::cli::definition::SubstitutionArgs,
    /// The execution input, as JSON text (default `{}`), or `file://PATH`.
    #[arg(long, conflicts_with = "input_file", value_parser = crate::cli::param::text_or_file)]
    pub input: Option<String>,
    /// Read the input from a file (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// The execution's name (default: a UUID).
    #[arg(long)]
    pub name: Option<String>,
    /// The state machine's name (default: the file name without `.asl.json`/`.json`). A state
    /// machine ARN gives its name; `NAME#TestCase` also chooses the mock test case.
    #[arg(long)]
    pub state_machine_name: Option<String>,
    /// A MockConfigFile (AWS Step Functions Local's format) holding mocked Task results.
    #[arg(long, value_name = "FILE", env = "SFN_MOCK_CONFIG")]
    pub mock_config: Option<PathBuf>,
    /// The test case of the mock config to run (or `DEFINITION#CASE`, `--state-machine-name NAME#CASE`).
    #[arg(long, value_name = "NAME")]
    pub test_case: Option<String>,
    /// The role ARN in the context object and history.
    #[arg(long)]
    pub role_arn: Option<String>,
    /// The region in ARNs (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1).
    #[arg(long)]
    pub region: Option<String>,
    /// The account id in ARNs.
    #[arg(long, default_value = "123456789012")]
    pub account_id: String,
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How hard each commit tries to survive a crash (see the README).
    #[arg(long, value_enum, default_value_t = db::DurabilityArg::Normal)]
    pub durability: db::DurabilityArg,
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// Multiply every duration the engine waits for (Wait, retry intervals, timeouts) by F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub time_scale: f64,
    /// Run a local program for a Task state: STATE=COMMAND (repeatable).
    #[arg(long = "task", value_name = "STATE=COMMAND")]
    pub tasks: Vec<String>,
    /// Run a managed handler for a `.waitForTaskToken` state: STATE=COMMAND (repeatable). Its
    /// stdout answers the task; heartbeats and cancellation are done for it (see "Workers").
    #[arg(long = "worker", value_name = "STATE=COMMAND")]
    pub workers: Vec<String>,
    /// Who beats for `--worker` handlers: `auto` (sfn-local) or `manual` (the handler).
    #[arg(long, value_enum, default_value_t = crate::tasks::managed::HeartbeatMode::Auto)]
    pub heartbeat: crate::tasks::managed::HeartbeatMode,
    /// Seconds between SIGTERM and SIGKILL for a `--worker` handler whose task is over.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = crate::tasks::managed::parse_seconds)]
    pub kill_after: std::time::Duration,
    /// The history cap (AWS: 25000). 0 removes it, for workloads AWS could not run.
    #[arg(long, default_value_t = crate::engine::history::MAX_HISTORY_EVENTS)]
    pub max_history_events: i64,
    /// The local S3 of distributed Maps' ItemReader/ResultWriter: `s3://BUCKET/KEY` is the
    /// file `DIR/BUCKET/KEY`.
    #[arg(long, value_name = "DIR", env = "SFN_LOCAL_S3_DIR")]
    pub s3_dir: Option<PathBuf>,
    /// State machines that `states:startExecution*` tasks start as child executions.
    #[command(flatten)]
    pub machines: crate::cli::machines::MachineArgs,
    /// Call a service's integrations at a local endpoint: SERVICE=URL (repeatable; `all=URL`
    /// for one endpoint serving every service). Also LAMBDA_ENDPOINT, SQS_ENDPOINT, ...
    #[arg(long = "endpoint", value_name = "SERVICE=URL")]
    pub endpoints: Vec<String>,
}

/// Output formats of `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunFormat {
    /// The output JSON on success; error and cause on stderr otherwise.
    Text,
    /// DescribeExecution's response, whatever the outcome.
    Json,
}

/// Exit status for an execution that failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status for an execution that timed out.
pub const EXIT_TIMED_OUT: u8 = 3;
/// Exit status for an execution that was aborted.
pub const EXIT_ABORTED: u8 = 4;

fn usage(message: impl std::fmt::Display) -> ExitCode {
    errln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}

/// The region: the flag, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
fn region(flag: Option<String>) -> String {
    flag.or_else(|| std::env::var("AWS_REGION").ok().filter(|r| !r.is_empty()))
        .or_else(|| {
            std::env::var("AWS_DEFAULT_REGION")
                .ok()
                .filter(|r| !r.is_empty())
        })
        .unwrap_or_else(|| "us-east-1".into())
}

/// A refused input file, with AWS's wording when it is too large.
fn input_too_large(e: limits::ReadError) -> String {
    match e {
        limits::ReadError::TooLarge { what, size, limit } => format!(
            "the input {what} is {}; AWS accepts at most {limit} (256 KiB): {}",
            size.map(|s| format!("{s} bytes"))
                .unwrap_or_else(|| format!("more than {limit} bytes")),
            limits::too_long_message("input", limit)
        ),
        other => other.to_string(),
    }
}

/// The state machine name a file gives: `orders.asl.json` → `orders`.
fn read_input(args: &RunArgs) -> Result<String, String> {
    match (&args.input, &args.input_file) {
        (Some(text), _) => Ok(text.clone()),
        // Read no further than AWS's quota: a larger input is refused, however large.
        (None, Some(p)) if p.as_os_str() == "-" => {
            let bytes = limits::read_stream_capped(
                std::io::stdin().lock(),
                limits::PAYLOAD_BYTES,
                "the input on stdin",
            )
            .map_err(input_too_large)?;
            String::from_utf8(bytes).map_err(|_| "the input on stdin is not UTF-8 text".into())
        }
        (None, Some(p)) => {
            limits::read_text_capped(p, limits::PAYLOAD_BYTES).map_err(input_too_large)
        }
        (None, None) => Ok("{}".into()),
    }
}

/// Loads the mocks of a test case for `machine_name`.
fn load_mocks(
    file: Option<&std::path::Path>,
    machine_name: &str,
    case: &str,
    machine: &asl::StateMachine,
) -> Result<crate::tasks::mock::Mocks, String> {
    let file = file.ok_or_else(|| {
        format!("test case '{case}' needs a mock config: --mock-config FILE or SFN_MOCK_CONFIG")
    })?;
    let text = crate::limits::read_text_capped(file, crate::limits::MOCK_FILE_BYTES)
        .map_err(|e| format!("the mock config: {e}"))?;
    let config = crate::tasks::mock::MockConfig::parse(&text)
        .map_err(|e| format!("the mock config {}: {e}", file.display()))?;
    let mocks = config.test_case(machine_name, case)?;
    mocks.check_against(machine).map_err(|e| {
        format!(
            "test case '{machine_name}#{case}' in {}: {e}",
            file.display()
        )
    })?;
    Ok(mocks)
}

/// Parses and checks `--task STATE=COMMAND` bindings before anything runs: the state must be a
/// Task state of the machine (a typo gets "did you mean"), the program must exist and be
/// executable. Each command is told the database (`SFN_LOCAL_DB`) its workers must answer.
pub(crate) fn bind_tasks(
    machine: &asl::StateMachine,
    children: &crate::engine::children::KnownMachines,
    bindings: &[String],
    db_path: &std::path::Path,
) -> Result<std::collections::HashMap<String, crate::tasks::command::CommandLine>, String> {
    let mut commands = std::collections::HashMap::new();
    // A binding serves the state of that name in the machine or any machine it may start.
    let states: Vec<&asl::model::State> = std::iter::once(machine)
        .chain(children.values().map(|k| k.machine.as_ref()))
        .flat_map(|m| m.all_states())
        .collect();
    for binding in bindings {
        let (state, command) = parse_binding(binding).map_err(|e| e.to_string())?;
        let is_task = states
            .iter()
            .any(|s| s.name == state && s.type_name() == "Task");
        if !is_task {
            let hint = crate::suggest::did_you_mean(
                &state,
                states
                    .iter()
                    .filter(|s| s.type_name() == "Task")
                    .map(|s| s.name.as_str()),
            );
            return Err(format!(
                "--task {binding}: the machine has no Task state named '{state}'{hint}"
            ));
        }
        command
            .check_program()
            .map_err(|e| format!("--task {binding}: {e}"))?;
        commands.insert(state, command.with_database(db_path));
    }
    Ok(commands)
}

/// The definition of a state machine the database knows (`--state-machine-arn`), its name and
/// role; AWS's `StateMachineDoesNotExist` for one it does not.
fn known_machine(
    arn: &str,
    db_flag: Option<PathBuf>,
    subs: &crate::asl::Substitutions,
) -> Result<(crate::cli::definition::LoadedFile, KnownMachineNames), ExitCode> {
    use crate::cli::tasks::{exit, refuse};
    let missing = |why: String| {
        refuse(
            "StartExecution",
            "StateMachineDoesNotExist",
            &format!("State Machine Does Not Exist: '{arn}' ({why})"),
            exit::STATE_MACHINE_DOES_NOT_EXIST,
        )
    };
    let store = match db::open_for_reading(db_flag) {
        Ok(s) => s,
        Err(db::OpenExistingError::Missing(path)) => {
            return Err(missing(format!("{} does not exist", path.display())))
        }
        Err(e) => return Err(usage(e)),
    };
    let known = match store.known_machine(arn) {
        Ok(Some(k)) => k,
        Ok(None) => {
            return Err(missing(format!(
                "{} knows no such machine; list-executions shows what ran",
                store.path().display()
            )))
        }
        Err(e) => return Err(usage(e)),
    };
    let definition = asl::load_text(
        &known.definition,
        asl::SourceFormat::detect(None, &known.definition),
        asl::LoadOptions {
            machine_type: asl::MachineType::Standard,
            substitutions: subs,
            unresolved: asl::Unresolved::Refuse,
        },
    );
    let loaded =
        crate::cli::definition::LoadedFile::new(arn.to_owned(), known.definition, definition);
    let names = KnownMachineNames {
        name: known.name,
        role_arn: known.role_arn,
        started_through: known.started_through,
    };
    Ok((loaded, names))
}

/// What `--state-machine-arn` names besides the definition.
struct KnownMachineNames {
    name: String,
    role_arn: Option<String>,
    /// The version (and alias) the ARN named, recorded on the execution.
    started_through: Option<(String, Option<String>)>,
}

/// Runs `run`.
pub fn run(mut args: RunArgs) -> ExitCode {
    // The AWS CLI's habit: `file://machine.asl.json`.
    if let Some(path) = args
        .definition
        .as_deref()
        .and_then(|d| d.to_str())
        .and_then(|d| d.strip_prefix("file://"))
    {
        args.definition = Some(PathBuf::from(path));
    }
    // `DEFINITION#CASE` chooses a mock test case, when the file itself has no `#` in its name.
    let mut test_case = args.test_case.clone();
    if let Some(definition) = args.definition.clone().filter(|d| !d.exists()) {
        let text = definition.to_string_lossy().into_owned();
        if let (path, Some(case)) = crate::tasks::mock::split_test_case(&text) {
            if !text.starts_with("arn:") {
                test_case = test_case.or(Some(case.to_owned()));
                args.definition = Some(PathBuf::from(path));
            }
        }
    }
    if let Some(arn) = args.state_machine_arn.clone() {
        // `ARN#CASE`, as serve's StartExecution (and Step Functions Local) take it.
        if let Some((arn, case)) = arn.rsplit_once('#').filter(|(_, c)| !c.is_empty()) {
            test_case = test_case.or(Some(case.to_owned()));
            args.state_machine_arn = Some(arn.to_owned());
        }
    }
    if let Some(name) = args.state_machine_name.clone() {
        let (name, case) = crate::tasks::mock::split_test_case(&name);
        test_case = test_case.or(case.map(str::to_owned));
        args.state_machine_name = Some(name.to_owned());
    }
    let subs = match args.substitutions.substitutions() {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let mut started_through = None;
    let loaded = match &args.state_machine_arn {
        Some(arn) => match known_machine(arn, args.db.clone(), &subs) {
            Ok((loaded, names)) => {
                let KnownMachineNames {
                    name,
                    role_arn: role,
                    started_through: through,
                } = names;
                started_through = through;
                // The ARN decides where the execution lives, as on AWS.
                if let [_, _, _, region, account, ..] =
                    arn.splitn(7, ':').collect::<Vec<_>>().as_slice()
                {
                    args.region = Some((*region).to_owned());
                    args.account_id = (*account).to_owned();
                }
                args.role_arn = args.role_arn.clone().or(role);
                Ok((loaded, name))
            }
            Err(refused) => return refused,
        },
        None => crate::cli::definition::load_for_run(
            args.definition.as_deref(),
            args.template.as_deref(),
            args.state_machine.as_deref(),
            &subs,
        ),
    };
    let (mut loaded, default_name) = match loaded {
        Ok(l) => l,
        Err(e) => return usage(e),
    };
    let machine = loaded.definition.machine.take();
    let path = loaded.label();
    let diags = loaded.definition.diagnostics.clone();
    let show_diagnostics = || {
        let report = report::render_human(
            &[loaded.report()],
            report::color_wanted(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        );
        err!("{report}");
    };
    let (Some(text), Some(machine)) = (loaded.stored_definition(), machine) else {
        show_diagnostics();
        errln!("error: {path} is not a valid state machine; nothing was run");
        return ExitCode::from(EXIT_USAGE);
    };
    let input_text = match read_input(&args) {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    if input_text.len() > MAX_PAYLOAD_BYTES {
        return usage(format!(
            "the input is {} bytes; AWS accepts at most {MAX_PAYLOAD_BYTES} (256 KiB): {}",
            input_text.len(),
            limits::too_long_message("input", MAX_PAYLOAD_BYTES)
        ));
    }
    let input: serde_json::Value = match serde_json::from_str(&input_text) {
        Ok(v) => v,
        Err(e) => return usage(format!("the input is not JSON: {e}")),
    };
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let machine_name = args.state_machine_name.clone().unwrap_or(default_name);
    for (what, value) in [
        ("execution name", &name),
        ("state machine name", &machine_name),
    ] {
        if let Err(e) = check_name(what, value) {
            return usage(e);
        }
    }
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        return usage("--time-scale must be a non-negative number");
    }
    let mut tasks = LocalTasks {
        s3_dir: args.s3_dir.clone(),
        ..LocalTasks::default()
    };
    let machines = match args.machines.load(None) {
        Ok(m) => m,
        Err(e) => return usage(e),
    };
    match crate::tasks::aws::Endpoints::parse(&args.endpoints, |k| std::env::var(k).ok()) {
        Ok(e) => tasks.endpoints = e,
        Err(e) => return usage(e),
    }
    let db_path = db::resolve(args.db.clone());
    match bind_tasks(&machine, &machines, &args.tasks, &db_path) {
        Ok(commands) => tasks.commands = commands,
        Err(e) => return usage(e),
    }
    let workers = match crate::cli::worker::bindings(
        &machine,
        &args.workers,
        &args.tasks,
        crate::tasks::managed::ManagedOptions {
            heartbeat: args.heartbeat,
            kill_after: args.kill_after,
        },
    ) {
        Ok(w) => w,
        Err(e) => return usage(e),
    };
    if let Some(case) = &test_case {
        match load_mocks(args.mock_config.as_deref(), &machine_name, case, &machine) {
            Ok(mocks) => tasks.mocks = mocks,
            Err(e) => return usage(e),
        }
    }
    if let (None, Some(file)) = (&test_case, &args.mock_config) {
        // Step Functions Local mocks nothing without a test case; a silent no-op misleads.
        errln!(
            "sfn-local: the mock config {} mocks nothing: no test case is chosen (--test-case NAME, or {}#NAME)",
            file.display(),
            args.definition
                .as_deref()
                .or(args.template.as_deref())
                .unwrap_or(std::path::Path::new("DEFINITION"))
                .display()
        );
    }
    let store = match db::open_with(args.db.clone(), args.durability) {
        Ok(s) => s,
        Err(e) => {
            errln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // Warnings once per definition: on the first run of it under this name (or with -v).
    if !diags.is_empty() && !crate::cli::ui::quiet() {
        let shown_before = store
            .has_run_definition(&machine_name, &text)
            .unwrap_or(false);
        if !shown_before || crate::cli::ui::verbose() {
            show_diagnostics();
        } else {
            errln!(
                "sfn-local: {} warning(s) about {path}, shown on its first run (-v shows them again; validate lists them)",
                diags.len()
            );
        }
    }
    let mut info = ExecutionInfo::new(
        &region(args.region.clone()),
        &args.account_id,
        &machine_name,
        &name,
        args.role_arn.as_deref(),
        crate::clock::system_now(),
    );
    if let Some((version, alias)) = started_through {
        info = info.started_through(version, alias);
    }
    let execution_arn = info.execution_arn.clone();
    crate::cli::start::announce(&execution_arn);
    let request = RunRequest {
        definition: text,
        machine: Arc::new(machine),
        input,
        info,
        time_scale: args.time_scale,
        tasks,
        task_bindings: args.tasks.clone(),
        workers,
        worker_bindings: args.workers.clone(),
        options: EngineOptions {
            max_history_events: args.max_history_events,
        },
        notice: std::rc::Rc::new(|message: &str| errln!("sfn-local: {message}")),
        machines,
    };
    let progress =
        crate::cli::progress::wanted(crate::cli::ui::quiet(), args.format == RunFormat::Json).then(
            || {
                crate::cli::progress::Progress::start(
                    store.clone(),
                    vec![execution_arn.clone()],
                    crate::cli::ui::verbose(),
                )
            },
        );
    let outcome = run_execution(store.clone(), request);
    drop(progress);
    let outcome = match outcome {
        Ok(o) => o,
        Err(RunError::Interrupted(arns)) => return interrupted(&arns),
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    report_outcome(&store, &execution_arn, &outcome, args.format)
}

/// Exit status after Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Says what Ctrl-C left behind and how to go on.
pub(crate) fn interrupted(arns: &[String]) -> ExitCode {
    for arn in arns {
        errln!(
            "sfn-local: interrupted; execution {arn} stays RUNNING with everything committed so far.\n  resume it:  sfn-local resume --execution-arn {arn}\n  or stop it: sfn-local stop-execution --execution-arn {arn}"
        );
    }
    ExitCode::from(EXIT_INTERRUPTED)
}

/// Prints an execution's end as `run` does and returns `run`'s exit status for it.
pub(crate) fn report_outcome(
    store: &crate::store::Store,
    execution_arn: &str,
    outcome: &crate::engine::Outcome,
    format: RunFormat,
) -> ExitCode {
    match format {
        RunFormat::Json => match store.execution(execution_arn) {
            Ok(Some(record)) => outln!("{}", api::describe_execution(&record)),
            Ok(None) => errln!("error: the execution {execution_arn} vanished from the database"),
            Err(e) => errln!("error: {e}"),
        },
        RunFormat::Text => {
            if let Some(output) = &outcome.output {
                outln!("{output}");
            }
        }
    }
    if let Some(e) = &outcome.error {
        errln!(
            "execution {}: {}\n  error: {}\n  cause: {}",
            outcome.status.as_str(),
            execution_arn,
            e.error.as_deref().unwrap_or("(none)"),
            e.cause.as_deref().unwrap_or("(none)")
        );
        if let Ok(events) = store.history(execution_arn, false) {
            if let Some(line) = crate::cli::summary::failure_line(&events) {
                errln!("  {line}");
            }
        }
    }
    let name = execution_arn.rsplit(':').next().unwrap_or(execution_arn);
    if !crate::cli::ui::quiet() {
        errln!(
            "sfn-local: execution {name} {}; why and how: sfn-local describe-execution --execution-arn {name} --format text",
            outcome.status.as_str()
        );
    }
    match outcome.status {
        Status::Succeeded => ExitCode::SUCCESS,
        Status::Failed => ExitCode::from(EXIT_FAILED),
        Status::TimedOut => ExitCode::from(EXIT_TIMED_OUT),
        Status::Aborted => ExitCode::from(EXIT_ABORTED),
    }
}
