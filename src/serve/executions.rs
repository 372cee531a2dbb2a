//! Executions hosted by the server: started (or resumed) on the execution threads with the
//! engine's runner, watched to their end, and failed (not the server) if their engine panics.

use crate::asl::MachineType;
use crate::clock::system_now;
use crate::engine::children::{KnownMachine, KnownMachines, MachineBindings};
use crate::engine::context::ExecutionInfo;
use crate::engine::runner::{start_engine, RunError, RunRequest};
use crate::engine::{Engine, EngineOptions};
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::tasks::callback::NoticeFn;
use crate::tasks::LocalTasks;
use futures_util::FutureExt;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::oneshot;

/// What StartExecution and StartSyncExecution ask for.
#[derive(Debug, Clone)]
pub struct StartSpec {
    /// The definition to run.
    pub definition: String,
    /// STANDARD or EXPRESS.
    pub machine_type: MachineType,
    /// Names and ARNs.
    pub info: ExecutionInfo,
    /// The input.
    pub input: Value,
    /// A test case of the mock config (`stateMachineArn#TestCase`).
    pub test_case: Option<String>,
}

/// Prints a line on the server's stderr (a closed stderr is not an error).
pub fn say(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "sfn-local serve: {message}");
}

/// Where an execution's notices (tokens issued, workers' stderr) go: the server's stderr.
pub fn notice(execution_arn: &str) -> NoticeFn {
    let arn = execution_arn.to_owned();
    std::rc::Rc::new(move |message: &str| say(&format!("{arn}: {message}")))
}

/// Starts an execution on an execution thread. Resolves once its row is committed (so it is
/// visible to every reader) with a receiver that resolves when it has ended.
pub async fn start(
    server: &Arc<Server>,
    spec: StartSpec,
) -> Result<oneshot::Receiver<()>, ApiError> {
    let (started, is_started) = oneshot::channel::<Result<(), ApiError>>();
    let (done, is_done) = oneshot::channel::<()>();
    let host = server.clone();
    let time = server.config.time.clone();
    let sent = server.pool.spawn(Box::new(move || {
        // Tracked: a virtual clock moves only while every execution waits.
        Box::pin(time.track(async move {
            let arn = spec.info.execution_arn.clone();
            let request = match run_request(&host, spec) {
                Ok(r) => r,
                Err(e) => {
                    let _ = started.send(Err(e));
                    return;
                }
            };
            let engine = match start_engine(&host.store, request, &host.owner).await {
                Ok(engine) => engine,
                Err(RunError::AlreadyExists(_)) => {
                    let _ = started.send(Err(ApiError::new(
                        "ExecutionAlreadyExists",
                        format!("Execution Already Exists: '{arn}'"),
                    )));
                    return;
                }
                Err(e) => {
                    let _ = started.send(Err(ApiError::internal(e)));
                    return;
                }
            };
            let _ = started.send(Ok(()));
            drive(&host, &arn, engine).await;
            let _ = done.send(());
        }))
    }));
    if !sent {
        return Err(ApiError::internal("the execution threads are gone"));
    }
    is_started
        .await
        .map_err(|_| ApiError::internal("the execution thread dropped the start"))??;
    Ok(is_done)
}

/// Runs an engine to its end. A panic fails this execution (recorded as aborted with
/// `States.Runtime`), not the server.
pub async fn drive(server: &Arc<Server>, execution_arn: &str, engine: Engine) {
    let run = async {
        let _ = engine.run().await;
        if let Err(e) = engine.committed().await {
            say(&format!(
                "{execution_arn}: its history could not be written: {e}"
            ));
        }
    };
    let panicked = std::panic::AssertUnwindSafe(run)
        .catch_unwind()
        .await
        .is_err();
    if panicked {
        drop(engine);
        let _ = server.store.abort_unattended(
            execution_arn,
            None,
            Some("States.Runtime".into()),
            Some("sfn-local's engine panicked while running this execution; the server's stderr says where".into()),
            system_now(),
        );
    }
}

/// The state machines created through the API, as `states:startExecution*` tasks start them
/// (by name, each with its own `--task MACHINE:STATE=COMMAND` bindings).
fn known_machines(server: &Server) -> Result<KnownMachines, ApiError> {
    let mut known = KnownMachines::new();
    for record in server.store.state_machines()? {
        let kind = crate::serve::ops::machine_type(&record.machine_type);
        let Some(machine) = server
            .compiled
            .get(&record.definition, kind, server.config.compat)
        else {
            continue;
        };
        let (commands, written) = crate::serve::bindings_for(&server.config.tasks, &record.name);
        let bindings = MachineBindings { commands, written };
        known.insert(
            record.name.clone(),
            KnownMachine {
                definition: record.definition,
                machine,
                bindings: Some(bindings),
            },
        );
    }
    Ok(known)
}

/// Compiles the machine and binds its tasks and mocks, on the execution thread.
fn run_request(server: &Server, spec: StartSpec) -> Result<RunRequest, ApiError> {
    let machine = server
        .compiled
        .get(&spec.definition, spec.machine_type, server.config.compat);
    let machine = machine.ok_or_else(|| {
        ApiError::new(
            "InvalidDefinition",
            "Invalid State Machine Definition: the stored definition no longer compiles",
        )
    })?;
    let name = &spec.info.state_machine_name;
    let (commands, bindings) = crate::serve::bindings_for(&server.config.tasks, name);
    let mut tasks = LocalTasks {
        commands,
        endpoints: server.config.endpoints.clone(),
        advice: crate::tasks::Advice::Serve,
        http_access: server.config.http_invoke.clone(),
        functions: server.config.functions.clone(),
        ..LocalTasks::default()
    };
    if let Some(case) = &spec.test_case {
        let Some(file) = &server.config.mock_config else {
            return Err(ApiError::new(
                "ValidationException",
                format!("Test case '{case}' needs a mock config: start the server with --mock-config FILE or SFN_MOCK_CONFIG"),
            ));
        };
        let text =
            crate::limits::read_text_capped(file, crate::limits::MOCK_FILE_BYTES).map_err(|e| {
                ApiError::internal(format!(
                    "cannot read the mock config {}: {e}",
                    file.display()
                ))
            })?;
        let mocks = crate::tasks::mock::MockConfig::parse(&text)
            .and_then(|config| config.test_case(name, case))
            .and_then(|mocks| mocks.check_against(&machine).map(|()| mocks))
            .map_err(|e| {
                ApiError::new(
                    "ValidationException",
                    format!("Test case '{name}#{case}' in {}: {e}", file.display()),
                )
            })?;
        tasks.mocks = mocks;
    }
    let (worker_commands, worker_bindings) =
        crate::serve::bindings_for(&server.config.workers, name);
    let workers = crate::tasks::managed::ManagedBindings {
        commands: worker_commands,
        options: server.config.worker_options,
    };
    let arn = spec.info.execution_arn.clone();
    // Only a machine that can start others needs them (compiling every machine per start
    // would slow StartExecution down for nothing).
    let machines = if spec.definition.contains("states:startExecution") {
        known_machines(server)?
    } else {
        Default::default()
    };
    Ok(RunRequest {
        definition: spec.definition,
        machine,
        input: spec.input,
        info: spec.info,
        time: server.config.time.clone(),
        tasks,
        task_bindings: bindings,
        workers,
        worker_bindings,
        machines,
        options: EngineOptions {
            max_history_events: server.config.max_history_events,
            compat: server.config.compat,
            wait_scale: server.config.wait_scale,
        },
        notice: notice(&arn),
    })
}
