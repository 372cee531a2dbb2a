//! The template's own Lambda functions, run on this machine with no Docker and no binding.
//!
//! When a Task calls a function its template declares (a plain function ARN, `lambda:invoke`
//! in any pattern; the ARN or name resolved from `!GetAtt Fn.Arn`/`!Ref Fn` by
//! [`crate::asl::cfn::names`]), the handler runs in the interpreter its `Runtime` names when
//! it is on PATH (`python3.12`, `node20`), else the plain one (`python3`, `node`;
//! `SFN_LOCAL_PYTHON` and `SFN_LOCAL_NODE` name others) through a small shim shipped
//! in the binary ([`worker`]). As Lambda keeps a container warm, a function's process stays up
//! between invocations (one per concurrent invocation, kept for the next); the handler gets
//! the event, a context object (function name, request id, `get_remaining_time_in_millis`
//! from `Timeout`) and the template's environment variables. An exception becomes Lambda's
//! error payload, named by its `errorType` in the history as AWS names it; running past
//! `Timeout` is Lambda's `Sandbox.Timedout`. A `--task` binding, mock or endpoint for the
//! state wins over all this (the runner asks them first).

pub mod worker;

use crate::asl::cfn::functions::TemplateFunction;
use crate::asl::error::StatesError;
use crate::asl::resource::{Resource, ResourceKind};
use crate::tasks::{lambda, NoticeSink, TaskRequest};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use worker::{Worker, WorkerError};

/// Lambda's limit on a function's initialisation (loading the handler), added to a cold
/// invocation's timeout.
const INIT_LIMIT: Duration = Duration::from_secs(10);

/// The shims, shipped in the binary: a user's project needs no file of this repository.
const PYTHON_SHIM: &str = include_str!("shim.py");
const NODE_SHIM: &str = include_str!("shim.js");

/// The functions of one template, by the name they answer to.
#[derive(Debug, Default)]
pub struct LocalFunctions {
    by_name: HashMap<String, Arc<Function>>,
}

/// One function and its warm processes.
#[derive(Debug)]
pub struct Function {
    spec: TemplateFunction,
    /// Its code folder, as the template's folder locates it.
    code_dir: Option<PathBuf>,
    /// Processes that finished an invocation and wait for the next.
    idle: Mutex<Vec<Worker>>,
    /// The interpreter's version, from its first process (compared with `Runtime` once).
    version: std::sync::OnceLock<String>,
    /// The interpreter chosen for it when no variable names one.
    interpreter: std::sync::OnceLock<String>,
}

/// The runtimes the shims speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    Node,
}

/// Why a function cannot run here: the state fails with `States.Runtime` saying so and how
/// to bind the state instead.
#[derive(Debug, thiserror::Error)]
enum CannotRun {
    #[error("its code is not in a local folder (CodeUri in S3, an image or inline code)")]
    NoLocalCode,
    #[error("it has no Handler")]
    NoHandler,
    #[error("its code folder {0} is not there")]
    MissingCode(PathBuf),
    #[error("its Runtime {0} is neither Python nor Node.js, the runtimes sfn-local runs")]
    Runtime(String),
    #[error(
        "its runtime '{program}' cannot start ({why}); install it, or name one with {variable}"
    )]
    NoInterpreter {
        program: String,
        why: std::io::Error,
        variable: &'static str,
    },
}

impl LocalFunctions {
    /// The Lambda functions of the template at `template_path` (already parsed as
    /// `template`); `None` when it declares none.
    pub fn from_template(template_path: &Path, template: &Value) -> Option<Arc<LocalFunctions>> {
        // Absolute: the runtime runs in the code folder, and the shim is told where it is.
        let folder = match template_path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let by_name: HashMap<String, Arc<Function>> =
            crate::asl::cfn::functions::functions(template)
                .into_iter()
                .map(|spec| {
                    let code_dir = spec.code_dir.as_ref().map(|d| folder.join(d));
                    let function = Function {
                        code_dir,
                        idle: Mutex::new(Vec::new()),
                        version: Default::default(),
                        interpreter: Default::default(),
                        spec,
                    };
                    (function.spec.name.clone(), Arc::new(function))
                })
                .collect();
        (!by_name.is_empty()).then(|| Arc::new(LocalFunctions { by_name }))
    }

    /// The functions of several templates in one (the first of a name wins); `None` when
    /// they have none.
    pub fn merged(all: impl Iterator<Item = Arc<LocalFunctions>>) -> Option<Arc<LocalFunctions>> {
        let mut by_name = HashMap::new();
        for functions in all {
            for (name, f) in &functions.by_name {
                by_name.entry(name.clone()).or_insert_with(|| f.clone());
            }
        }
        (!by_name.is_empty()).then(|| Arc::new(LocalFunctions { by_name }))
    }

    /// The function a Lambda Task invokes, when it is one of these.
    pub fn function_for(&self, resource: &Resource, input: &Value) -> Option<Arc<Function>> {
        let name = lambda::invoked_function(resource, input)?;
        self.by_name.get(&name).cloned()
    }

    /// Whether a Task with `resource` may call one of these before its input is known (a
    /// `.waitForTaskToken` state's invocation is its submission).
    pub fn may_serve(&self, resource: &Resource) -> bool {
        match &resource.kind {
            ResourceKind::LambdaFunction => self
                .by_name
                .contains_key(lambda::name_and_qualifier(&resource.arn).0),
            _ => lambda::is_lambda(resource),
        }
    }

    /// Whether any of these has code this machine would run (a local code folder and a
    /// handler): serving them is then running commands for whoever reaches the server.
    pub fn runs_local_code(&self) -> bool {
        self.by_name
            .values()
            .any(|f| f.code_dir.is_some() && f.spec.handler.is_some())
    }

    /// The functions' logical IDs, for messages.
    pub fn logical_ids(&self) -> Vec<&str> {
        self.by_name
            .values()
            .map(|f| f.spec.logical_id.as_str())
            .collect()
    }
}

/// Runs one attempt of a Lambda Task on `function`: the legacy ARN gets the input and gives
/// the result as it is; `lambda:invoke` gets the `Payload` and gives Lambda's `Invoke`
/// response around the result.
pub async fn run(
    function: Arc<Function>,
    request: TaskRequest,
    notice: Option<NoticeSink>,
) -> Result<Value, StatesError> {
    let legacy = matches!(request.resource.kind, ResourceKind::LambdaFunction);
    let event = if legacy {
        request.input.clone()
    } else {
        lambda::event(&request.input)
    };
    let payload = function
        .invoke(&request.state_name, event, notice.as_ref())
        .await?;
    Ok(if legacy {
        payload
    } else {
        lambda::invoke_response(payload, request.response_time())
    })
}

impl Function {
    /// One invocation: a warm process if one is idle, else a new one; the handler's logs go
    /// to `notice` (prefixed with the state's name) when it is over.
    ///
    /// The handler is outside work: a virtual clock holds while it runs (its function's
    /// `Timeout` ends it). The request id is drawn, and a warm process taken or given back,
    /// in the execution's turn, never when the handler happens to end: the same run draws the
    /// same ids and starts the same processes.
    async fn invoke(
        self: &Arc<Self>,
        state: &str,
        event: Value,
        notice: Option<&NoticeSink>,
    ) -> Result<Value, StatesError> {
        let forward = |logs: &[String]| {
            if let Some(notice) = notice {
                logs.iter().for_each(|l| notice(&format!("[{state}] {l}")));
            }
        };
        let request_id = crate::random::uuid().to_string();
        let idle = self.take_idle();
        let timeout = Duration::from_secs(self.spec.timeout_seconds);
        let invocation = async {
            let worker = match idle {
                Some(w) => w,
                None => {
                    self.cold_start(state, &request_id, notice, &forward)
                        .await?
                }
            };
            let line = json!({
                "event": event,
                "requestId": request_id,
                // The shim's remaining time counts in wall time, as the timeout does.
                "deadlineMs": crate::clock::system_now() + timeout.as_millis() as i64,
                "invokedFunctionArn": self.arn(),
            });
            on_blocking_pool(worker, timeout, move |w| w.invoke(&line))
                .await
                .map_err(|failure| match failure {
                    Failure::TimedOut => self.timed_out(&request_id),
                    Failure::Worker(e) => self.exited(&request_id, e),
                })
        };
        let (worker, answer) = crate::clock::outside_bounded(invocation).await?;
        forward(&answer.logs);
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(worker);
        reply_result(self.with_version_note(answer.reply))
    }

    /// A new process, its handler loaded within Lambda's initialisation limit.
    async fn cold_start(
        &self,
        state: &str,
        request_id: &str,
        notice: Option<&NoticeSink>,
        forward: &impl Fn(&[String]),
    ) -> Result<Worker, StatesError> {
        let worker = self.start().map_err(|e| self.cannot_run(state, e))?;
        let (worker, hello) = on_blocking_pool(worker, INIT_LIMIT, Worker::handshake)
            .await
            .map_err(|failure| {
                let e = match failure {
                    Failure::TimedOut => WorkerError::Exited(format!(
                        " (its handler did not load within {} s)",
                        INIT_LIMIT.as_secs()
                    )),
                    Failure::Worker(e) => e,
                };
                self.exited(request_id, e)
            })?;
        forward(&hello.logs);
        self.check_version(&hello.reply, notice);
        Ok(worker)
    }

    fn take_idle(&self) -> Option<Worker> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // A process ended while idle (killed from outside) is passed over.
        std::iter::from_fn(|| idle.pop()).find_map(|mut w| w.is_alive().then_some(w))
    }

    fn arn(&self) -> String {
        format!(
            "{}{}",
            crate::asl::cfn::names::LOCAL_FUNCTION_ARN_PREFIX,
            self.spec.name
        )
    }

    fn language(&self) -> Result<Language, CannotRun> {
        let runtime = self.spec.runtime.as_deref().unwrap_or_default();
        if runtime.starts_with("python") {
            Ok(Language::Python)
        } else if runtime.starts_with("nodejs") {
            Ok(Language::Node)
        } else {
            Err(CannotRun::Runtime(if runtime.is_empty() {
                "(none given)".to_owned()
            } else {
                runtime.to_owned()
            }))
        }
    }

    /// Starts a process for this function.
    fn start(&self) -> Result<Worker, CannotRun> {
        let language = self.language()?;
        let code_dir = self.code_dir.as_ref().ok_or(CannotRun::NoLocalCode)?;
        if !code_dir.is_dir() {
            return Err(CannotRun::MissingCode(code_dir.clone()));
        }
        let handler = self.spec.handler.as_ref().ok_or(CannotRun::NoHandler)?;
        let (flag, shim) = match language {
            Language::Python => ("-c", PYTHON_SHIM),
            Language::Node => ("-e", NODE_SHIM),
        };
        let variable = language.variable();
        let program = self.interpreter(language);
        let mut command = std::process::Command::new(&program);
        command
            .args([flag, shim])
            .arg(code_dir)
            .arg(handler)
            .current_dir(code_dir)
            .envs(self.environment());
        Worker::spawn(command).map_err(|why| CannotRun::NoInterpreter {
            program,
            why,
            variable,
        })
    }

    /// Lambda's own variables, then the template's (which win, as in Lambda for the ones it
    /// lets a function set).
    fn environment(&self) -> Vec<(String, String)> {
        let s = &self.spec;
        let mut env = vec![
            ("AWS_LAMBDA_FUNCTION_NAME".to_owned(), s.name.clone()),
            (
                "AWS_LAMBDA_FUNCTION_VERSION".to_owned(),
                "$LATEST".to_owned(),
            ),
            (
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".to_owned(),
                s.memory_mb.to_string(),
            ),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME".to_owned(),
                format!("/aws/lambda/{}", s.name),
            ),
            (
                "AWS_LAMBDA_LOG_STREAM_NAME".to_owned(),
                "sfn-local".to_owned(),
            ),
            ("_HANDLER".to_owned(), s.handler.clone().unwrap_or_default()),
            ("PYTHONUNBUFFERED".to_owned(), "1".to_owned()),
        ];
        if let Some(runtime) = &s.runtime {
            env.push((
                "AWS_EXECUTION_ENV".to_owned(),
                format!("AWS_Lambda_{runtime}"),
            ));
        }
        if let Some(dir) = &self.code_dir {
            env.push(("LAMBDA_TASK_ROOT".to_owned(), dir.display().to_string()));
        }
        env.extend(s.environment.iter().cloned());
        env
    }

    /// The interpreter this function runs on: the one `SFN_LOCAL_PYTHON`/`SFN_LOCAL_NODE`
    /// names, else the one its `Runtime` names (`python3.12`, `node20`) if it is on PATH and
    /// runs, else the plain one (`python3`, `node`). Chosen once per function.
    fn interpreter(&self, language: Language) -> String {
        if let Ok(program) = std::env::var(language.variable()) {
            return program;
        }
        self.interpreter
            .get_or_init(|| {
                self.runtime_version()
                    .map(|version| format!("{}{version}", language.versioned_prefix()))
                    .filter(|program| on_path(program) && answers(program))
                    .unwrap_or_else(|| language.plain().to_owned())
            })
            .clone()
    }

    /// The version the template's `Runtime` names: `3.12` for python3.12, `20` for
    /// nodejs20.x.
    fn runtime_version(&self) -> Option<&str> {
        let runtime = self.spec.runtime.as_deref()?;
        let version = runtime
            .trim_start_matches("python")
            .trim_start_matches("nodejs")
            .trim_end_matches(".x");
        (!version.is_empty() && version != runtime).then_some(version)
    }

    /// One line when the interpreter's version is not the template's `Runtime` (python3.12
    /// run by 3.11): the run goes on, as on a laptop it must. The version is kept for
    /// [`Function::with_version_note`].
    fn check_version(&self, hello: &Value, notice: Option<&NoticeSink>) {
        let Some(actual) = hello["version"].as_str() else {
            return;
        };
        if self.version.set(actual.to_owned()).is_err() {
            return;
        }
        let (Some(runtime), Some(wanted)) = (&self.spec.runtime, self.runtime_version()) else {
            return;
        };
        let same = actual == wanted || actual.starts_with(&format!("{wanted}."));
        if let (false, Some(notice)) = (same, notice) {
            notice(&format!(
                "warning: {} says Runtime {runtime}; it runs on the {actual} on this machine",
                self.spec.logical_id
            ));
        }
    }

    /// An import or syntax error on an interpreter older than the function's `Runtime` says
    /// so, naming both versions: the code may be right and the interpreter too old for it
    /// (an f-string of 3.12 read by 3.11).
    fn with_version_note(&self, mut reply: Value) -> Value {
        let Some(error) = reply.get_mut("error").and_then(Value::as_object_mut) else {
            return reply;
        };
        let loading = matches!(
            error.get("errorType").and_then(Value::as_str),
            Some("Runtime.ImportModuleError" | "Runtime.UserCodeSyntaxError")
        );
        let (Some(runtime), Some(wanted), Some(actual)) = (
            &self.spec.runtime,
            self.runtime_version(),
            self.version.get(),
        ) else {
            return reply;
        };
        if !loading || !older(actual, wanted) {
            return reply;
        }
        let said = error
            .get("errorMessage")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let language = self.language().ok();
        let (plain, variable) = language.map_or(("python3", "SFN_LOCAL_PYTHON"), |l| {
            (l.plain(), l.variable())
        });
        let versioned = language.map_or("python", Language::versioned_prefix);
        let note = format!(
            "{said} (the function's Runtime is {runtime}, but it ran on {actual}, found as {plain}: the code may need the newer version; put {versioned}{wanted} on PATH or name an interpreter with {variable})"
        );
        error.insert("errorMessage".into(), Value::String(note));
        reply
    }

    fn cannot_run(&self, state: &str, why: CannotRun) -> StatesError {
        StatesError::runtime(format!(
            "Task state '{state}' calls the template's function {}, which cannot run here: {why}. Bind the state instead: --task '{state}=COMMAND', a mock, or --endpoint lambda=URL",
            self.spec.logical_id
        ))
    }

    /// Lambda's answer to a function running past its `Timeout`.
    fn timed_out(&self, request_id: &str) -> StatesError {
        let payload = json!({
            "errorType": "Sandbox.Timedout",
            "errorMessage": format!("RequestId: {request_id} Error: Task timed out after {}.00 seconds", self.spec.timeout_seconds),
        });
        lambda::error_from_payload(payload.as_object().expect("an object"))
    }

    /// Lambda's answer to a runtime that exited mid-invocation.
    fn exited(&self, request_id: &str, e: WorkerError) -> StatesError {
        let payload = json!({
            "errorType": "Runtime.ExitError",
            "errorMessage": format!("RequestId: {request_id} Error: {e}"),
        });
        lambda::error_from_payload(payload.as_object().expect("an object"))
    }
}

impl Language {
    /// The variable naming an interpreter for it.
    fn variable(self) -> &'static str {
        match self {
            Language::Python => "SFN_LOCAL_PYTHON",
            Language::Node => "SFN_LOCAL_NODE",
        }
    }

    /// The interpreter's unversioned name.
    fn plain(self) -> &'static str {
        match self {
            Language::Python => "python3",
            Language::Node => "node",
        }
    }

    /// What a versioned interpreter's name starts with (`python3.12`, `node20`).
    fn versioned_prefix(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Node => "node",
        }
    }
}

/// Whether `program` is a file on PATH its owner, group or others may run.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Whether `program --version` succeeds: a pyenv shim for a version that is installed but
/// not selected is on PATH and fails (exit 127), and the plain interpreter is then better.
fn answers(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether version `actual` (`3.11.7`) is older than `wanted` (`3.12`), compared on
/// `wanted`'s parts.
fn older(actual: &str, wanted: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map_while(|p| p.parse().ok()).collect() };
    let (actual, wanted) = (parts(actual), parts(wanted));
    let actual: Vec<u64> = actual.into_iter().take(wanted.len()).collect();
    !wanted.is_empty() && actual < wanted
}

/// Why an exchange with a worker gave nothing.
enum Failure {
    /// It took longer than its limit; the process was killed.
    TimedOut,
    /// The process failed.
    Worker(WorkerError),
}

/// Runs a blocking exchange with `worker` on tokio's blocking pool, for at most `limit`. A
/// worker that fails or runs out of time is ended (killed, and reaped when dropped).
async fn on_blocking_pool<T: Send + 'static>(
    mut worker: Worker,
    limit: Duration,
    exchange: impl FnOnce(&mut Worker) -> Result<T, WorkerError> + Send + 'static,
) -> Result<(Worker, T), Failure> {
    let pid = worker.pid();
    let job = tokio::task::spawn_blocking(move || exchange(&mut worker).map(|t| (worker, t)));
    match tokio::time::timeout(limit, job).await {
        Ok(Ok(done)) => done.map_err(Failure::Worker),
        Ok(Err(e)) => Err(Failure::Worker(WorkerError::Exited(format!(": {e}")))),
        Err(_) => {
            // Ended as Lambda ends a function past its Timeout; the blocking read then sees
            // the pipe close, and the process is reaped with its worker.
            crate::tasks::process::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            Err(Failure::TimedOut)
        }
    }
}

/// The task's result from the shim's answer: the handler's result, or Lambda's error payload
/// as the error AWS names by its `errorType`.
fn reply_result(reply: Value) -> Result<Value, StatesError> {
    let garbled = || StatesError::runtime("the local Lambda runtime answered without a result");
    match reply {
        Value::Object(mut m) if m.contains_key("ok") => Ok(m.remove("ok").unwrap_or_default()),
        Value::Object(mut m) => match m.remove("error") {
            Some(Value::Object(payload)) => Err(lambda::error_from_payload(&payload)),
            _ => Err(garbled()),
        },
        _ => Err(garbled()),
    }
}
