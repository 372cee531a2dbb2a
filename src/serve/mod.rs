//! `sfn-local serve`: the AWS Step Functions API on localhost, so the AWS CLI, the SDKs and
//! suites written for Step Functions Local reach sfn-local unchanged but for the endpoint URL.
//!
//! The protocol is AWS JSON 1.0 ([`protocol`]): `POST /` with `X-Amz-Target:
//! AWSStepFunctions.<Operation>`. A request is checked against botocore's model ([`model`]),
//! then handed to its operation ([`operation::Operation`], one handler per file under `ops/`,
//! like mini-redis's commands), which decodes it, calls the library and encodes the answer.
//! Executions run in this process, many at once, on a small pool of threads ([`pool`]), in the
//! same database as every CLI command, driven by the engine's own runner
//! ([`crate::engine::runner::start_engine`]). On start, and a few times per lease period after,
//! the server resumes executions whose runner is gone; on SIGINT/SIGTERM it stops taking
//! requests, commits, and gives up its leases, so everything stays resumable.
//!
//! Connections go through [`crate::web`]: requests addressed to a name other than localhost,
//! an IP address or one `--allow-host` names are refused (DNS rebinding), with timeouts and a
//! connection cap; HTTP Tasks call nothing unless `--allow-http-invoke` says which hosts.

pub mod clock;
pub mod compiled;
pub mod executions;
pub mod model;
pub mod operation;
mod ops;
pub mod pool;
pub mod protocol;
pub mod templates;

use crate::engine::runner::{lease_ms, new_owner, resume_engine, roots, LeaseKeeper};
use crate::store::{ExecutionRecord, Store};
use crate::tasks::command::CommandLine;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use operation::{Operation, Request};
use pool::ExecutionPool;
use protocol::ApiError;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
pub use templates::{Created, InitialMachine};

/// A `--task` (or `--worker`) binding: a local program for the Task states of one name, in
/// every state machine (`STATE=COMMAND`) or in one (`MACHINE:STATE=COMMAND`).
#[derive(Debug, Clone)]
pub struct MachineTask {
    /// The state machine's name; `None` binds the state in every machine (suites that create
    /// machines with random names).
    pub machine: Option<String>,
    /// The Task state's name.
    pub state: String,
    /// The program.
    pub command: CommandLine,
    /// `STATE=COMMAND`, as stored with each execution for `resume`.
    pub binding: String,
    /// The binding as given (`--task order:Charge=./charge.sh`), for messages.
    pub written: String,
}

impl MachineTask {
    /// Parses `[MACHINE:]STATE=COMMAND`.
    pub fn parse(text: &str) -> Result<MachineTask, String> {
        MachineTask::parse_flag("--task", text)
    }

    /// Parses `[MACHINE:]STATE=COMMAND` given to `flag` (`--task`, `--worker`). A machine's
    /// name cannot hold `:` (AWS's naming rules), so the first `:` before `=` ends it; a
    /// leading `:` binds a state whose own name holds one in every machine.
    pub fn parse_flag(flag: &str, text: &str) -> Result<MachineTask, String> {
        let (target, command) = text.split_once('=').ok_or_else(|| {
            format!("{flag} {text}: expected STATE=COMMAND or MACHINE:STATE=COMMAND")
        })?;
        let (machine, state) = match target.split_once(':') {
            Some(("", state)) => (None, state),
            Some((machine, state)) => (Some(machine.to_owned()), state),
            None => (None, target),
        };
        let binding = format!("{state}={command}");
        let (state, command) = crate::tasks::command::parse_binding(&binding)
            .map_err(|e| format!("{flag} {text}: {e}"))?;
        Ok(MachineTask {
            machine,
            state,
            command,
            binding,
            written: format!("{flag} '{text}'"),
        })
    }

    /// Whether the binding serves the machine named `machine`.
    pub fn serves(&self, machine: &str) -> bool {
        self.machine.as_deref().is_none_or(|m| m == machine)
    }
}

/// The bindings of `bindings` that serve `machine`: commands by state (a binding naming the
/// machine wins over one for every machine) and the `STATE=COMMAND` texts stored for `resume`.
pub fn bindings_for(
    bindings: &[MachineTask],
    machine: &str,
) -> (std::collections::HashMap<String, CommandLine>, Vec<String>) {
    let mut commands = std::collections::HashMap::new();
    let mut written = Vec::new();
    let general = bindings.iter().filter(|b| b.machine.is_none());
    let named = bindings
        .iter()
        .filter(|b| b.machine.as_deref() == Some(machine));
    for b in general.chain(named) {
        if commands
            .insert(b.state.clone(), b.command.clone())
            .is_some()
        {
            written.retain(|w: &String| !w.starts_with(&format!("{}=", b.state)));
        }
        written.push(b.binding.clone());
    }
    (commands, written)
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The region of ARNs when a request is not signed.
    pub region: String,
    /// The account of ARNs.
    pub account_id: String,
    /// How time passes for the executions (a virtual clock moves only when a client asks).
    pub time: crate::clock::Timekeeping,
    /// Multiplies the time Wait states wait (`WAIT_TIME_SCALE`).
    pub wait_scale: f64,
    /// Step Functions Local's MockConfigFile, for `stateMachineArn#TestCase`.
    pub mock_config: Option<PathBuf>,
    /// `--task` bindings.
    pub tasks: Vec<MachineTask>,
    /// Local endpoints Task states call (`--endpoint`, `LAMBDA_ENDPOINT`, ...).
    pub endpoints: crate::tasks::aws::Endpoints,
    /// AWS's behaviour, or Step Functions Local's where suites assert its differences.
    pub compat: crate::asl::Compat,
    /// `--worker` bindings: managed handlers of `.waitForTaskToken` states.
    pub workers: Vec<MachineTask>,
    /// How those handlers are supervised.
    pub worker_options: crate::tasks::managed::ManagedOptions,
    /// The history cap.
    pub max_history_events: i64,
    /// How many execution threads.
    pub threads: usize,
    /// Who may address the server, and how long clients may take ([`crate::web`]).
    pub web: crate::web::WebOptions,
    /// Which hosts HTTP Tasks may call (none unless `--allow-http-invoke`).
    pub http_invoke: crate::tasks::http::HttpAccess,
    /// The state machines to create at start (`--template`).
    pub machines: Vec<InitialMachine>,
    /// The templates' Lambda functions, run here for any machine's Task that calls one.
    pub functions: Option<std::sync::Arc<crate::tasks::local_lambda::LocalFunctions>>,
}

/// The shared state of every request: the store, the configuration and the execution threads.
pub struct Server {
    /// The database shared with the CLI.
    pub store: Arc<Store>,
    /// How the server runs.
    pub config: ServeConfig,
    pool: ExecutionPool,
    /// This process's lease owner id.
    owner: String,
    /// Flips to `true` when the server stops: long polls answer at once.
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The `--task`/`--worker` bindings for every machine that some machine has matched.
    matched: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Compiled machines, shared by the executions running them.
    compiled: compiled::CompiledMachines,
    /// The executions this server is resuming or drove to a failed resume, so a later look
    /// for orphans does not take them again (their lease is this server's, or given up).
    resuming: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address is taken or not ours.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime or a thread could not start, or the listener failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
    /// The caller's `ready` hook could not announce the server (a `--ready-file` not written).
    #[error("{0}")]
    Ready(String),
    /// A `--template` state machine could not be created.
    #[error("{0}")]
    Machines(String),
}

/// The largest request body read (a 1 MB definition, JSON-escaped, fits).
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Runs the server until SIGINT or SIGTERM; `ready` learns the address once it listens (the
/// kernel queues connections from then on), the `--template` machines created (their ARN and
/// what was done) and how many executions were resumed. An error from `ready` stops the server
/// before it serves.
pub fn run(
    store: Arc<Store>,
    config: ServeConfig,
    ready: impl FnOnce(SocketAddr, &[(String, Created)], usize) -> Result<(), String>,
) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sfn-local-http")
        // Requests parse definitions and payloads: see crate::depth.
        .thread_stack_size(crate::depth::THREAD_STACK_BYTES)
        .enable_all()
        .build()?;
    let pool = ExecutionPool::start(config.threads)?;
    let owner = new_owner();
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let bind = config.bind;
    let server = Arc::new(Server {
        store: store.clone(),
        config,
        pool,
        owner: owner.clone(),
        stopping,
        matched: Default::default(),
        compiled: Default::default(),
        resuming: Default::default(),
    });
    // Orphans are looked for a few times per lease period on the lease's own timer: a runner
    // that dies at any time is taken over within a lease period.
    let looking = Arc::downgrade(&server);
    let keeper = LeaseKeeper::start_with(store.clone(), owner.clone(), lease_ms(), move || {
        if let Some(server) = looking.upgrade() {
            server.resume_orphans();
        }
    });
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|source| ServeError::Bind { addr: bind, source })?;
        let addr = listener.local_addr()?;
        let created = server.create_initial_machines()?;
        if let Ok(machines) = server.store.state_machines() {
            for m in &machines {
                server.check_bindings(m, false);
            }
        }
        let resumed = server.resume_orphans();
        ready(addr, &created, resumed).map_err(ServeError::Ready)?;
        // The API on `POST /`; the console's pages on `GET /` and `/console/...` of the same port.
        let app = Router::new()
            .route("/", post(api))
            .route(clock::PATH, post(clock::handle))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(server.clone())
            .merge(crate::console::router(store.clone()));
        let stopped = async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        };
        crate::web::listen::serve(listener, app, &server.config.web, stopped).await?;
        Ok::<(), ServeError>(())
    });
    // Everything submitted is committed, then the executions are left RUNNING for the next
    // server (or `sfn-local resume`) to take at once.
    drop(keeper);
    let _ = store.flush().wait_blocking();
    if let Ok(running) = store.running_executions() {
        for r in running
            .iter()
            .filter(|r| r.owner.as_deref() == Some(&owner))
        {
            let _ = store.release_lease(&r.execution_arn, &owner);
        }
    }
    served
}

/// SIGINT (Ctrl-C) or SIGTERM (docker stop, systemd).
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}

/// `POST /`: one API call.
async fn api(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // A body over the limit is the client's mistake: AWS's error shape, not axum's plain 413.
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            return ApiError::new(
                "ValidationException",
                format!(
                    "The request body could not be read ({}): a request may be at most {} MiB (a definition at most 1 MB, an input at most 256 KiB)",
                    rejection.body_text(),
                    MAX_BODY_BYTES / (1024 * 1024)
                ),
            )
            .into_response()
        }
    };
    match call(&server, &headers, &body).await {
        Ok(mut answer) => {
            protocol::wire_timestamps(&mut answer);
            protocol::ok(answer)
        }
        Err(e) => e.into_response(),
    }
}

async fn call(server: &Arc<Server>, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let target = headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .unwrap_or("");
    let name = target.strip_prefix("AWSStepFunctions.").unwrap_or("");
    let operation = Operation::from_name(name).ok_or_else(|| {
        ApiError::new(
            "UnknownOperationException",
            if target.is_empty() {
                "Missing X-Amz-Target: expected AWSStepFunctions.<Operation>".to_owned()
            } else {
                format!("Unknown operation {target}")
            },
        )
    })?;
    let input: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::new(
                "SerializationException",
                format!("The request body is not valid JSON: {e}"),
            )
        })?
    };
    model::validate(operation.name(), &input)?;
    // A request in flight may still start or answer something: a virtual clock waits for it
    // (not for the long polls, which wait on executions themselves).
    let _busy = (!matches!(operation.name(), "GetActivityTask" | "StartSyncExecution"))
        .then(crate::clock::Busy::internal);
    let region = protocol::signed_region(headers).unwrap_or_else(|| server.config.region.clone());
    operation
        .handle(
            server,
            Request {
                operation: operation.name(),
                input,
                region,
            },
        )
        .await
}

impl Server {
    /// Logs the `--task`/`--worker` bindings that `machine` shows to match nothing: those
    /// naming it whose state it lacks (with "did you mean"), and, when `created`, those for
    /// every machine that no machine so far has a Task state for. A binding that matches
    /// nothing is a typo or a stale setup; the user hears of it when machines are created,
    /// not when an execution fails.
    pub fn check_bindings(&self, machine: &crate::store::StateMachineRecord, created: bool) {
        let config = &self.config;
        if config.tasks.is_empty() && config.workers.is_empty() {
            return;
        }
        let kind = ops::machine_type(&machine.machine_type);
        let (Some(compiled), _) =
            crate::asl::compile_text_as(&machine.definition, kind, config.compat)
        else {
            return;
        };
        let tasks: Vec<&str> = compiled
            .all_states()
            .into_iter()
            .filter(|s| s.type_name() == "Task")
            .map(|s| s.name.as_str())
            .collect();
        let mut matched = self.matched.lock().unwrap_or_else(|e| e.into_inner());
        for b in config.tasks.iter().chain(&config.workers) {
            let has = tasks.contains(&b.state.as_str());
            match &b.machine {
                Some(m) if m == &machine.name && !has => executions::say(&format!(
                    "{}: state machine '{m}' has no Task state named '{}'{}",
                    b.written,
                    b.state,
                    crate::suggest::did_you_mean(&b.state, tasks.iter().copied())
                )),
                Some(_) => {}
                None if has => {
                    matched.insert(b.written.clone());
                }
                None if created && !matched.contains(&b.written) => {
                    executions::say(&format!(
                    "{}: no state machine created so far has a Task state named '{}' ('{}' has {})",
                    b.written,
                    b.state,
                    machine.name,
                    if tasks.is_empty() { "none".to_owned() } else { tasks.join(", ") }
                ))
                }
                None => {}
            }
        }
    }

    /// Resumes the running executions whose runner is gone: leases lapsed or given up, runners
    /// whose process is gone, executions redriven a lease period ago that nobody took (see
    /// [`Store::orphans`]), but not the children of running parents (see [`roots`]). Returns
    /// how many it started resuming.
    fn resume_orphans(self: &Arc<Self>) -> usize {
        if let Err(e) = crate::engine::owners::expire_dead_runners(&self.store, &self.owner) {
            executions::say(&format!("cannot look for runners that died: {e}"));
        }
        let now = crate::clock::system_now();
        let orphans = self.store.orphans(&self.owner, now, now - lease_ms());
        let Ok(orphans) = orphans.and_then(|o| roots(&self.store, o)) else {
            return 0;
        };
        orphans
            .into_iter()
            .filter_map(|record| self.resume(record).then_some(()))
            .count()
    }

    /// Drives a RUNNING execution whose runner is gone (after a crash, or reopened by a redrive)
    /// on an execution thread, taking its lease first. `false` if this server is resuming it
    /// already, or could not before (the reason was said then).
    fn resume(self: &Arc<Self>, record: ExecutionRecord) -> bool {
        let arn = record.execution_arn.clone();
        if !self.resuming_lock().insert(arn.clone()) {
            return false;
        }
        let server = self.clone();
        let time = self.config.time.clone();
        self.pool.spawn(Box::new(move || {
            Box::pin(time.clone().track(async move {
                match resume_engine(
                    &server.store,
                    record,
                    executions::notice(&arn),
                    &server.owner,
                    &time,
                ) {
                    Ok(Some(engine)) => executions::drive(&server, &arn, engine).await,
                    Ok(None) => {}
                    Err(e) => {
                        // Kept in `resuming`: the next look would only fail again.
                        executions::say(&format!("cannot resume {arn}: {e}"));
                        return;
                    }
                }
                server.resuming_lock().remove(&arn);
            }))
        }))
    }

    fn resuming_lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.resuming.lock().unwrap_or_else(|e| e.into_inner())
    }
}
