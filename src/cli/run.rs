//! `sfn-local run DEFINITION`: run an execution to its end and print its output.
//!
//! [`run`] lowers the flags once ([`crate::cli::flags`]: the definition, input, names, bindings,
//! endpoints and mocks, all checked before the database is touched), then opens the database,
//! runs the execution in the foreground and reports its end.

use crate::api;
use crate::asl;
use crate::cli::flags::{
    self, AccountArgs, BindingArgs, ClockArgs, DatabaseArgs, DefinitionArgs, EndpointArgs,
    FlagError, InputArgs, MachineArgs, MockArgs, RunOutputArgs, S3Args,
};
use crate::cli::report;
use crate::cli::EXIT_USAGE;
use crate::engine::context::ExecutionInfo;
use crate::engine::runner::{check_name, run_execution, RunError, RunRequest};
use crate::engine::{EngineOptions, Status};
use crate::loader::LoadedFile;
use crate::store::Store;
use crate::tasks::LocalTasks;
use clap::Args;
use std::process::ExitCode;
use std::sync::Arc;

pub use crate::cli::flags::RunFormat;

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The definition: a file, a template's state machine, or a known machine's ARN.
    #[command(flatten)]
    pub definition: DefinitionArgs,
    /// `--input`, `--input-file`.
    #[command(flatten)]
    pub input: InputArgs,
    /// The execution's name (default: a UUID).
    #[arg(long)]
    pub name: Option<String>,
    /// The state machine's name (default: the file name without `.asl.json`/`.json`). A state
    /// machine ARN gives its name; `NAME#TestCase` also chooses the mock test case.
    #[arg(long)]
    pub state_machine_name: Option<String>,
    /// `--mock-config`, `--test-case`.
    #[command(flatten)]
    pub mocks: MockArgs,
    /// The role ARN in the context object and history.
    #[arg(long)]
    pub role_arn: Option<String>,
    /// `--region`, `--account-id`.
    #[command(flatten)]
    pub account: AccountArgs,
    /// `--db`, `--durability`.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// `--format`.
    #[command(flatten)]
    pub output: RunOutputArgs,
    /// `--clock`, `--clock-start`, `--time-scale`, `--seed`.
    #[command(flatten)]
    pub clock: ClockArgs,
    /// `--task`, `--worker`, `--heartbeat`, `--kill-after`.
    #[command(flatten)]
    pub bindings: BindingArgs,
    /// The history cap (AWS: 25000). 0 removes it, for workloads AWS could not run.
    #[arg(long, default_value_t = crate::engine::history::MAX_HISTORY_EVENTS)]
    pub max_history_events: i64,
    /// `--s3-dir`.
    #[command(flatten)]
    pub s3: S3Args,
    /// State machines that `states:startExecution*` tasks start as child executions.
    #[command(flatten)]
    pub machines: MachineArgs,
    /// `--endpoint`.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// Exit status for an execution that failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit status for an execution that timed out.
pub const EXIT_TIMED_OUT: u8 = 3;
/// Exit status for an execution that was aborted.
pub const EXIT_ABORTED: u8 = 4;

/// A definition's diagnostics, for showing on stderr (all of them when it cannot run; its
/// warnings on its first run).
struct Shown {
    file: LoadedFile,
}

impl Shown {
    fn show(&self) {
        let report = report::render_human(
            &[self.file.report()],
            report::color_wanted(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        );
        err!("{report}");
    }
}

/// What `run` runs: its flags lowered and checked, before the database is opened.
struct Plan {
    /// The definition text stored with the execution.
    definition: String,
    machine: asl::StateMachine,
    /// The definition as read, for its warnings.
    shown: Shown,
    input: serde_json::Value,
    /// The execution's name.
    name: String,
    machine_name: String,
    role_arn: Option<String>,
    account: flags::Account,
    /// Whether the machine is one the database knows (`--state-machine-arn`), not a file.
    known: bool,
    /// The version (and alias) `--state-machine-arn` named, recorded on the execution.
    started_through: Option<(String, Option<String>)>,
    database: flags::Database,
    format: RunFormat,
    bound: Bound,
}

/// What binds to the machine: local tasks, workers, the machines it may start.
struct Bound {
    time: crate::clock::Timekeeping,
    tasks: LocalTasks,
    bindings: flags::Bindings,
    machines: crate::engine::children::KnownMachines,
}

/// Runs `run`.
pub fn run(args: RunArgs) -> ExitCode {
    match lower(&args) {
        Ok(plan) => execute(plan, args.max_history_events),
        Err(code) => code,
    }
}

/// Lowers `run`'s flags, in the order a user fixes them: the definition (its diagnostics shown
/// when it cannot run), the input, the names, then everything bound to the machine.
fn lower(args: &RunArgs) -> Result<Plan, ExitCode> {
    let definition = args.definition.lower().map_err(FlagError::exit)?;
    let database = args.database.lower();
    let covered = covered_states(args, &definition);
    let mut loaded = definition
        .load_covering(&database, &|state| covered.iter().any(|c| c == state))
        .map_err(FlagError::exit)?;
    let text = loaded.file.stored_definition();
    let machine = loaded.file.definition.machine.take();
    let shown = Shown { file: loaded.file };
    let (Some(text), Some(machine)) = (text, machine) else {
        shown.show();
        errln!(
            "error: {} is not a valid state machine; nothing was run",
            shown.file.label()
        );
        return Err(ExitCode::from(EXIT_USAGE));
    };
    let input = args.input.lower().map_err(FlagError::exit)?;
    let (name_given, name_case) = split_machine_name(args.state_machine_name.as_deref());
    // Before anything is generated: --seed decides the generated name too.
    let time = args
        .clock
        .lower(flags::ClockKind::Real, true)
        .map_err(FlagError::exit)?;
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| crate::random::uuid().to_string());
    let machine_name = name_given.unwrap_or(loaded.default_name);
    let mocks = args.mocks.lower(definition.test_case.clone().or(name_case));
    let checked = check_name("execution name", &name)
        .and_then(|()| check_name("state machine name", &machine_name))
        .map_err(FlagError::Usage)
        .and_then(|()| {
            bind(
                args,
                (&machine, &machine_name, &shown.file),
                &database,
                &mocks,
                time,
            )
        });
    let bound = checked.map_err(FlagError::exit)?;
    warn_unused_mock_config(&mocks);
    Ok(Plan {
        definition: text,
        machine,
        shown,
        input,
        name,
        machine_name,
        role_arn: args.role_arn.clone().or(loaded.role_arn),
        account: loaded.account.unwrap_or_else(|| args.account.lower()),
        known: matches!(definition.source, flags::DefinitionSource::Known(_)),
        started_through: loaded.started_through,
        database,
        format: args.output.lower(),
        bound,
    })
}

/// `--state-machine-name NAME#CASE` split into the name and the mock test case.
fn split_machine_name(given: Option<&str>) -> (Option<String>, Option<String>) {
    match given {
        Some(given) => {
            let (name, case) = crate::tasks::mock::split_test_case(given);
            (Some(name.to_owned()), case.map(str::to_owned))
        }
        None => (None, None),
    }
}

/// Step Functions Local mocks nothing without a test case; a silent no-op misleads.
fn warn_unused_mock_config(mocks: &flags::MockCase) {
    if let Some(file) = mocks.unused_config() {
        errln!(
            "sfn-local: the mock config {} mocks nothing: no test case is chosen (--test-case NAME)",
            file.display(),
        );
    }
}

/// The states a `--task` or `--worker` binding or the chosen mock test case runs: their
/// placeholders need no `--sub`. A binding's `MACHINE:` prefix is not known to be one yet, so
/// both readings count.
fn covered_states(args: &RunArgs, definition: &flags::Definition) -> Vec<String> {
    let case_in_name = args
        .state_machine_name
        .as_deref()
        .and_then(|n| crate::tasks::mock::split_test_case(n).1);
    let case = definition
        .test_case
        .clone()
        .or(case_in_name.map(str::to_owned));
    let bound = (args.bindings.tasks.iter())
        .chain(&args.bindings.workers)
        .filter_map(|b| b.split_once('=').map(|(target, _)| target))
        .flat_map(|target| [target, target.rsplit_once(':').map_or(target, |(_, s)| s)])
        .map(str::to_owned);
    bound
        .chain(args.mocks.lower(case).mocked_states())
        .collect()
}

/// Lowers what binds to the machine: the time scale, the machines it may start, endpoints,
/// `--task`/`--worker` bindings and mocks.
fn bind(
    args: &RunArgs,
    (machine, machine_name, file): (&asl::StateMachine, &str, &LoadedFile),
    database: &flags::Database,
    mocks: &flags::MockCase,
    time: crate::clock::Timekeeping,
) -> Result<Bound, FlagError> {
    // Bindings may name the machine by its template's logical ID; its functions run here.
    let (logical_id, functions) = (file.logical_id.as_deref(), file.functions.clone());
    let machines = args.machines.load(None)?;
    let endpoints = args.endpoints.lower()?;
    let names: Vec<&str> = std::iter::once(machine_name).chain(logical_id).collect();
    let bindings = args
        .bindings
        .lower((machine, &names), &machines, &database.path)?;
    let tasks = LocalTasks {
        s3_dir: args.s3.lower(),
        endpoints,
        commands: bindings.commands.clone(),
        mocks: mocks.load(machine_name, machine)?,
        functions,
        ..LocalTasks::default()
    };
    Ok(Bound {
        time,
        tasks,
        bindings,
        machines,
    })
}

/// Opens the database, shows the definition's warnings once, runs the execution and reports
/// its end.
fn execute(plan: Plan, max_history_events: i64) -> ExitCode {
    let store = match plan.database.open() {
        Ok(s) => s,
        Err(e) => return e.exit(),
    };
    show_warnings(&store, &plan);
    let mut info = ExecutionInfo::new(
        &plan.account.region,
        &plan.account.account_id,
        &plan.machine_name,
        &plan.name,
        plan.role_arn.as_deref(),
        plan.bound.time.now(),
    );
    if let Some((version, alias)) = plan.started_through {
        info = info.started_through(version, alias);
    }
    let execution_arn = info.execution_arn.clone();
    let format = plan.format;
    if !plan.known {
        if let Err(refused) =
            register_machine(&store, &info, &plan.definition, &plan.shown.file.label())
        {
            return refused;
        }
    }
    crate::cli::start::announce(&execution_arn);
    let request = RunRequest {
        definition: plan.definition,
        machine: Arc::new(plan.machine),
        input: plan.input,
        info,
        time: plan.bound.time,
        tasks: plan.bound.tasks,
        task_bindings: plan.bound.bindings.task_bindings,
        workers: plan.bound.bindings.workers,
        worker_bindings: plan.bound.bindings.worker_bindings,
        options: EngineOptions {
            max_history_events,
            ..EngineOptions::default()
        },
        notice: std::rc::Rc::new(|message: &str| errln!("sfn-local: {message}")),
        machines: plan.bound.machines,
    };
    let progress = crate::cli::progress::wanted(crate::cli::ui::quiet(), format == RunFormat::Json)
        .then(|| {
            crate::cli::progress::Progress::start(
                store.clone(),
                vec![execution_arn.clone()],
                crate::cli::ui::verbose(),
            )
        });
    let outcome = run_execution(store.clone(), request);
    drop(progress);
    match outcome {
        Ok(outcome) => report_outcome(&store, &execution_arn, &outcome, format),
        Err(RunError::Interrupted(arns)) => interrupted(&arns),
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Warnings once per definition: on the first run of it under this name (or with -v).
fn show_warnings(store: &Store, plan: &Plan) {
    let count = plan.shown.file.definition.diagnostics.len();
    if count == 0 || crate::cli::ui::quiet() {
        return;
    }
    let shown_before = store
        .has_run_definition(&plan.machine_name, &plan.definition)
        .unwrap_or(false);
    if !shown_before || crate::cli::ui::verbose() {
        plan.shown.show();
    } else {
        errln!(
            "sfn-local: {count} warning(s) about {}, shown on its first run (-v shows them again; validate lists them)",
            plan.shown.file.label()
        );
    }
}

/// Exit status when the state machine's name is taken by another definition created through
/// the API (`StateMachineAlreadyExists`).
pub const EXIT_STATE_MACHINE_EXISTS: u8 = 18;

/// Makes the machine this run executes one of the database's state machines (one world with
/// `serve`'s API: ListStateMachines and DescribeStateMachine show it). A machine created through
/// the API under this name with another definition refuses the run, as AWS refuses
/// CreateStateMachine; one this command registered before takes the new definition.
fn register_machine(
    store: &crate::store::Store,
    info: &ExecutionInfo,
    definition: &str,
    path: &str,
) -> Result<(), ExitCode> {
    use crate::store::Registered;
    let now = crate::clock::system_now();
    let record = crate::store::StateMachineRecord {
        arn: info.state_machine_arn.clone(),
        name: info.state_machine_name.clone(),
        machine_type: "STANDARD".into(),
        definition: definition.to_owned(),
        role_arn: info.role_arn.clone(),
        settings: "{}".into(),
        revision_id: crate::random::uuid().to_string(),
        creation_date_ms: now,
        update_date_ms: None,
    };
    match store.register_cli_machine(&record) {
        Ok(Registered::Created | Registered::Unchanged) => Ok(()),
        Ok(Registered::Updated) => {
            if !crate::cli::ui::quiet() {
                errln!(
                    "sfn-local: state machine '{}' now has the definition of {path} (a new revision)",
                    record.name
                );
            }
            Ok(())
        }
        Ok(Registered::Taken(existing)) => Err(crate::cli::tasks::refuse(
            "CreateStateMachine",
            "StateMachineAlreadyExists",
            &format!(
                "State Machine Already Exists: '{}' (created through the API with another definition; run it with --state-machine-arn {}, or name this one with --state-machine-name NAME)",
                existing.arn, existing.arn
            ),
            EXIT_STATE_MACHINE_EXISTS,
        )),
        Err(e) => {
            errln!("error: {e}");
            Err(ExitCode::from(EXIT_USAGE))
        }
    }
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
            if let Some(output) = outcome.output_text() {
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
        if let Some(line) = crate::cli::summary::stored_failure_line(store, execution_arn) {
            errln!("  {line}");
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
