//! `sfn-local test-state`: AWS's TestState, spelled as `aws stepfunctions test-state` is.
//!
//! Decodes the options into AWS's request shape, calls
//! [`crate::engine::test_state::test_state`], and prints its response as the API returns it
//! (exit 0 whatever the state's own outcome), or AWS's error as the AWS CLI shows it (exit
//! [`EXIT_API_ERROR`]).

use crate::cli::flags::{EndpointArgs, SubstitutionArgs, TemplateArgs};
use crate::cli::EXIT_USAGE;
use crate::clock::SystemClock;
use crate::engine::test_state::{
    test_state_blocking, InspectionLevel, MockInput, TestStateConfiguration, TestStateRequest,
};
use crate::tasks::command::CommandLine;
use crate::tasks::LocalTasks;
use clap::{Args, ValueEnum};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;

/// The exit status of a request AWS rejects (the AWS CLI's for service errors).
pub const EXIT_API_ERROR: u8 = 254;

/// Arguments of `test-state`. Every JSON option takes the JSON text or `file://PATH`.
#[derive(Debug, Args)]
#[command(mut_args(crate::cli::flags::reword(
    "template",
    "Test a state of this SAM or CloudFormation template's state machine instead (with \
     --state-name; placeholders filled as by `run`)"
)))]
#[command(mut_args(crate::cli::flags::reword(
    "state_machine",
    "The logical ID of the template's state machine (needed when it has several)"
)))]
#[command(mut_args(crate::cli::flags::reword(
    "endpoints",
    "Call a service's integrations at a local endpoint when there is no mock (as `run \
     --endpoint`): SERVICE=URL (repeatable; `all=URL`). Also LAMBDA_ENDPOINT, SQS_ENDPOINT, ..."
)))]
pub struct TestStateArgs {
    /// The state (or, with --state-name, the whole machine): JSON or file://PATH.
    #[arg(long, required_unless_present = "template")]
    pub definition: Option<String>,
    /// `--template`, `--state-machine`.
    #[command(flatten)]
    pub template: TemplateArgs,
    /// Values for `${NAME}` placeholders of the definition or template.
    #[command(flatten)]
    pub substitutions: SubstitutionArgs,
    /// The state to test in a whole machine.
    #[arg(long)]
    pub state_name: Option<String>,
    /// The state's input (default `{}`): JSON or file://PATH.
    #[arg(long)]
    pub input: Option<String>,
    /// How much to show: INFO (default), DEBUG (each data-flow step) or TRACE.
    #[arg(long, value_enum)]
    pub inspection_level: Option<LevelArg>,
    /// The Task's answer: {"result": "JSON TEXT"} or {"errorOutput": {...}}, with
    /// "fieldValidationMode" STRICT (default), PRESENT or NONE.
    #[arg(long)]
    pub mock: Option<String>,
    /// The context object ($$): JSON or file://PATH.
    #[arg(long)]
    pub context: Option<String>,
    /// The variables in scope: a JSON object or file://PATH.
    #[arg(long)]
    pub variables: Option<String>,
    /// retrierRetryCount, errorCausedByState, mapIterationFailureCount, mapItemReaderData.
    #[arg(long)]
    pub state_configuration: Option<String>,
    /// Show HTTP request and response data unredacted (TRACE).
    #[arg(long)]
    pub reveal_secrets: bool,
    /// The role AWS would run the state as (required for a Task without a mock, as on AWS).
    #[arg(long)]
    pub role_arn: Option<String>,
    /// Run a local program for the Task when there is no mock (as `run --task`): COMMAND,
    /// reading the task input on stdin and printing its result on stdout.
    #[arg(long = "task", value_name = "COMMAND")]
    pub task: Option<String>,
    /// `--endpoint`, used when there is no mock.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// `--inspection-level` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum LevelArg {
    /// Only the outcome.
    Info,
    /// The data-flow steps too.
    Debug,
    /// DEBUG plus HTTP data and variables.
    Trace,
}

/// Reads a JSON option: the text itself, or the file `file://PATH` names (as the AWS CLI).
fn option_text(name: &str, value: &str) -> Result<String, String> {
    match value.strip_prefix("file://") {
        Some(path) => crate::limits::read_text_capped(
            std::path::Path::new(path),
            crate::limits::PARAMETER_FILE_BYTES,
        )
        .map_err(|e| format!("--{name}: {e}")),
        None => Ok(value.to_owned()),
    }
}

fn json_option<T: serde::de::DeserializeOwned>(name: &str, value: &str) -> Result<T, String> {
    let text = option_text(name, value)?;
    serde_json::from_str(&text).map_err(|e| format!("--{name}: not a valid value: {e}"))
}

/// Runs the command.
pub fn run(args: TestStateArgs) -> ExitCode {
    let request = match request(&args) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut tasks = LocalTasks {
        // A template's own functions run here, as the real function would for TestState.
        functions: (args.template.template.as_deref()).and_then(crate::loader::template_functions),
        ..LocalTasks::default()
    };
    match args.endpoints.lower() {
        Ok(e) => tasks.endpoints = e,
        Err(e) => return e.exit(),
    }
    if let Some(command) = &args.task {
        let state = args
            .state_name
            .clone()
            .unwrap_or_else(|| "StateName".into());
        match crate::tasks::command::parse_binding(&format!("{state}={command}")) {
            Ok((state, command)) => {
                let command: CommandLine = command;
                tasks.commands.insert(state, command);
            }
            Err(e) => {
                errln!("error: --task: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    match test_state_blocking(&request, Rc::new(tasks), Arc::new(SystemClock::new(1.0))) {
        Ok(response) => {
            let text = serde_json::to_string_pretty(&response).unwrap_or_default();
            outln!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!(
                "\nAn error occurred ({}) when calling the TestState operation: {}",
                e.code,
                e.message
            );
            ExitCode::from(EXIT_API_ERROR)
        }
    }
}

/// The definition TestState gets: `--definition`'s text, its `${NAME}` placeholders filled
/// when `--sub` or `--definition-substitutions` gives values, or the `--template` machine's
/// definition as AWS would hold it (which needs `--state-name`).
fn definition(args: &TestStateArgs) -> Result<String, String> {
    let subs = args.substitutions.substitutions()?;
    if let Some((file, _)) = args.template.load(&subs).map_err(|e| e.to_string())? {
        let label = file.label();
        let loaded = file.definition;
        let unresolved = loaded
            .diagnostics
            .iter()
            .find(|d| d.code == crate::asl::Code::UnresolvedSubstitution);
        if let Some(d) = unresolved {
            return Err(format!("{label}: {}", d.message));
        }
        // A definition with another ERROR is still sent, as JSON: TestState answers AWS's
        // InvalidDefinition for it.
        let Some(json) = loaded.json else {
            let first = loaded.diagnostics.iter().next();
            return Err(format!(
                "{label} cannot be read: {}",
                first.map(|d| d.message.as_str()).unwrap_or("no definition")
            ));
        };
        if args.state_name.is_none() {
            let states: Vec<String> = serde_json::from_str::<serde_json::Value>(&json)
                .ok()
                .and_then(|v| v["States"].as_object().map(|s| s.keys().cloned().collect()))
                .unwrap_or_default();
            return Err(format!(
                "--template tests one state of {label}: name it with --state-name ({})",
                states.join(", ")
            ));
        }
        return Ok(json);
    }
    let text = option_text("definition", args.definition.as_deref().unwrap_or_default())?;
    if subs.is_empty() {
        return Ok(text);
    }
    let mut value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("--definition: not JSON, so --sub has nothing to fill: {e}"))?;
    let mut diags = crate::asl::Diagnostics::default();
    crate::asl::substitution::apply(
        &mut value,
        &subs,
        crate::asl::Unresolved::Refuse,
        &mut diags,
    );
    if let Some(d) = diags.iter().next() {
        return Err(format!("--definition: {}", d.message));
    }
    Ok(value.to_string())
}

fn request(args: &TestStateArgs) -> Result<TestStateRequest, String> {
    let text = |name: &str, v: &Option<String>| -> Result<Option<String>, String> {
        v.as_deref().map(|v| option_text(name, v)).transpose()
    };
    Ok(TestStateRequest {
        definition: definition(args)?,
        role_arn: args.role_arn.clone(),
        input: text("input", &args.input)?,
        inspection_level: args.inspection_level.map(|l| match l {
            LevelArg::Info => InspectionLevel::Info,
            LevelArg::Debug => InspectionLevel::Debug,
            LevelArg::Trace => InspectionLevel::Trace,
        }),
        reveal_secrets: args.reveal_secrets.then_some(true),
        variables: text("variables", &args.variables)?,
        state_name: args.state_name.clone(),
        mock: args
            .mock
            .as_deref()
            .map(|m| json_option::<MockInput>("mock", m))
            .transpose()?,
        context: text("context", &args.context)?,
        state_configuration: args
            .state_configuration
            .as_deref()
            .map(|c| json_option::<TestStateConfiguration>("state-configuration", c))
            .transpose()?,
    })
}
