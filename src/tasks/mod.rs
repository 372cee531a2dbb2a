//! What a Task resource means on this machine: a local command bound with `--task`, and (with
//! later work) callbacks with task tokens, activities and mocks.
//!
//! The engine hands a [`TaskRequest`] to a [`TaskRunner`] and gets the task's result or error
//! back; timeouts and heartbeats are the engine's, not the runner's.

pub mod api_channel;
pub mod aws;
pub mod callback;
pub mod command;
pub mod http;
pub mod lambda;
pub mod local_lambda;
pub mod managed;
pub mod mock;
pub mod nested;
pub mod process;
pub mod s3;
pub mod stand_in;

use crate::asl::error::StatesError;
use crate::asl::resource::Resource;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

/// One attempt of a Task state.
#[derive(Debug, Clone)]
pub struct TaskRequest {
    /// The state's name.
    pub state_name: String,
    /// Its resource.
    pub resource: Resource,
    /// The effective input (after InputPath and Parameters).
    pub input: Value,
    /// The execution's ARN.
    pub execution_arn: String,
    /// 0 for the first attempt.
    pub retry_count: u64,
    /// The instant the attempt started on a virtual clock (`None` on the real one): a time
    /// its response carries (a `Date` header, a trace id) is this one, so that a history
    /// repeats (a virtual clock holds while the attempt's work runs).
    pub virtual_time: Option<crate::clock::Millis>,
}

impl TaskRequest {
    /// The instant the attempt's response is dated: the virtual clock's, else now.
    pub fn response_time(&self) -> crate::clock::Millis {
        self.virtual_time.unwrap_or_else(crate::clock::system_now)
    }
}

/// `at` as an HTTP `Date` header says it (`Sat, 05 Dec 2026 03:14:43 GMT`).
pub fn http_date(at: crate::clock::Millis) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(at)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// The future a runner returns.
pub type TaskFuture = Pin<Box<dyn Future<Output = Result<Value, StatesError>>>>;

/// What the engine tells a runner about an attempt beyond its request.
#[derive(Debug, Default)]
pub struct JobContext {
    /// The replay key of the attempt's `*Scheduled` event: the same in every run of the
    /// execution, so a runner can name what it starts after it (a child execution).
    pub task_key: String,
    /// Whether this attempt was started before a crash (the engine is resuming it).
    pub resumed: bool,
    /// For jobs that are submitted, then awaited (`.sync`): the submission's response, which
    /// the engine records as `TaskSubmitted`. `None` when it is recorded already.
    pub submitted: Option<tokio::sync::oneshot::Sender<Value>>,
    /// The submission recorded before a crash (`TaskSubmitted`'s output), if any: the runner
    /// finds the job it names again instead of submitting a second one.
    pub submission: Option<Value>,
}

/// Runs Task states.
pub trait TaskRunner {
    /// Runs one attempt; resolves to the task's result or its error.
    fn run(&self, request: TaskRequest) -> TaskFuture;

    /// Runs one attempt knowing its place in the execution (see [`JobContext`]); by default
    /// the same as [`TaskRunner::run`].
    fn run_job(&self, request: TaskRequest, job: JobContext) -> TaskFuture {
        let _ = job;
        self.run(request)
    }

    /// Where `states:startExecution*` tasks start their children, if anywhere.
    fn children(&self) -> Option<std::rc::Rc<dyn nested::ChildExecutions>> {
        None
    }

    /// Whether this runner calls the service behind `resource` itself (an endpoint): a
    /// `.waitForTaskToken` task then makes the call as its submission (the message carrying
    /// the token really goes out) and waits for the answer.
    fn calls_service(&self, resource: &Resource) -> bool {
        let _ = resource;
        false
    }

    /// The mocked answer to this invocation of `state`, when the state is mocked (each call
    /// counts one invocation); `None` runs the task for real. Running out of mocked answers is
    /// an error.
    fn mocked(&self, state: &str) -> Option<Result<mock::MockAnswer, StatesError>> {
        let _ = state;
        None
    }

    /// Where distributed Maps' `ItemReader`/`ResultWriter` find S3, if anywhere: the folder of
    /// `--s3-dir`, or S3's endpoint (signed for `region`).
    fn s3(&self, region: &str) -> Option<s3::S3Store> {
        let _ = region;
        None
    }

    /// Whether this runner answers `.waitForTaskToken` attempts itself, as their worker would
    /// (a replay answers them from the recording): the engine then hands out a token without
    /// a token broker.
    fn answers_callbacks(&self) -> bool {
        false
    }

    /// Whether a local command is bound to `state` (it then runs the state whatever its
    /// resource: TestState asks before it calls an HTTP Task's API itself).
    fn binds(&self, state: &str) -> bool {
        let _ = state;
        false
    }

    /// Which hosts HTTP Tasks may call (TestState calls them itself, to trace the exchange).
    fn http_access(&self) -> http::HttpAccess {
        http::HttpAccess::Any
    }
}

/// The child executions of `states:startExecution*` tasks (see [`nested::ChildExecutions`]).
#[derive(Clone)]
pub struct Children(pub std::rc::Rc<dyn nested::ChildExecutions>);

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Children")
    }
}

/// Dispatches Task states to the local commands bound with `--task STATE=COMMAND`, else to
/// their mocks, else to known state machines (`states:startExecution*`); a state with none of
/// them fails with an error that says how to bind it.
#[derive(Debug, Clone, Default)]
pub struct LocalTasks {
    /// State name → command line.
    pub commands: HashMap<String, command::CommandLine>,
    /// Mocked states (a binding wins over a mock for its state).
    pub mocks: mock::Mocks,
    /// The local S3 folder (`--s3-dir`): `s3://BUCKET/KEY` is `DIR/BUCKET/KEY`.
    pub s3_dir: Option<std::path::PathBuf>,
    /// Where `states:startExecution*` tasks run their children (`--machine`, `--machines`).
    pub children: Option<Children>,
    /// Local AWS endpoints the service integrations call (`--endpoint SERVICE=URL`).
    pub endpoints: aws::Endpoints,
    /// Only mocks run tasks here (`sfn-local test`, which has no `--task`): the error of an
    /// unmocked Task advises a mock instead of a binding.
    pub mocks_only: bool,
    /// Whose syntax the error of an unbound Task advises.
    pub advice: Advice,
    /// Where the commands' stderr lines go (prefixed with the state's name); nowhere if unset.
    pub notice: Notice,
    /// Which hosts HTTP Tasks may call (any, but for `serve`).
    pub http_access: http::HttpAccess,
    /// The template's own Lambda functions, run here when nothing else runs their Task.
    pub functions: Option<std::sync::Arc<local_lambda::LocalFunctions>>,
}

/// Whose flags and settings the error of a Task nothing runs advises: the command that was
/// used (`run --task STATE=COMMAND`) or the server's (`serve --task`, `LAMBDA_ENDPOINT`, a
/// test case), so the advice can be followed as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Advice {
    /// `run`, `resume` and the other commands that take `--task STATE=COMMAND`.
    #[default]
    Run,
    /// `serve` and its image, set up by flags or Step Functions Local's variables.
    Serve,
}

/// A function that shows a message to the user (`run` prints it on stderr).
pub type NoticeSink = std::rc::Rc<dyn Fn(&str)>;

/// Where a task's messages for the user go, if anywhere.
#[derive(Clone, Default)]
pub struct Notice(pub Option<NoticeSink>);

impl std::fmt::Debug for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notice(set)"
        } else {
            "Notice(none)"
        })
    }
}

/// `States.DataLimitExceeded` for a result over AWS's payload quota, worded as AWS words it
/// (the service for an integration, the ARN for an activity or a Lambda function).
pub fn result_too_large(resource: &Resource) -> StatesError {
    let what = match &resource.kind {
        crate::asl::resource::ResourceKind::Integration { service, .. } => service.as_str(),
        _ => resource.arn.as_str(),
    };
    StatesError::new(
        crate::asl::error::names::DATA_LIMIT_EXCEEDED,
        format!("The state/task '{what}' returned a result with a size exceeding the maximum number of bytes service limit."),
    )
}

/// The error of a Task that nothing on this machine can run.
pub fn unbound_task_error(state: &str, resource: &Resource) -> StatesError {
    let nested = if nested::is_start_execution(&resource.kind) {
        ", or make the state machine it starts known with --machine NAME=FILE or --machines DIR"
    } else {
        ", or point its service at a local endpoint with --endpoint SERVICE=URL"
    };
    StatesError::runtime(format!(
        "Task state '{state}' has no local binding for its resource {resource}: bind it to a command with --task '{state}=COMMAND' (the command reads the task input as JSON on stdin and prints its result as JSON on stdout){nested}"
    ))
}

/// The error of a Task that nothing in `serve` can run, advising the server's flags and Step
/// Functions Local's settings (the server's own syntax, not `run`'s).
pub fn unbound_served_task_error(state: &str, resource: &Resource) -> StatesError {
    let variable = match &resource.kind {
        crate::asl::resource::ResourceKind::LambdaFunction => Some("LAMBDA_ENDPOINT"),
        crate::asl::resource::ResourceKind::Integration { service, .. } => {
            aws::endpoint_variable(service.strip_prefix("aws-sdk:").unwrap_or(service))
        }
        crate::asl::resource::ResourceKind::Activity { .. } => None,
    };
    let endpoint = match variable {
        Some(var) => format!(", set {var}=URL (or start the server with --endpoint SERVICE=URL) to call a local endpoint"),
        None => String::new(),
    };
    StatesError::runtime(format!(
        "Task state '{state}' has no local binding for its resource {resource}: start the server with --task '{state}=COMMAND' (every state machine's '{state}'; MACHINE:{state}=COMMAND for one){endpoint}, or mock it: start the execution on STATE_MACHINE_ARN#TEST_CASE with SFN_MOCK_CONFIG (or --mock-config) naming a MockConfigFile"
    ))
}

impl LocalTasks {
    /// The template function a Lambda Task calls, when it is one of the template's.
    fn local_function(
        &self,
        request: &TaskRequest,
    ) -> Option<std::sync::Arc<local_lambda::Function>> {
        self.functions
            .as_ref()?
            .function_for(&request.resource, &request.input)
    }
}

impl TaskRunner for LocalTasks {
    fn run(&self, request: TaskRequest) -> TaskFuture {
        self.run_job(request, JobContext::default())
    }

    fn children(&self) -> Option<std::rc::Rc<dyn nested::ChildExecutions>> {
        self.children.as_ref().map(|c| c.0.clone())
    }

    fn calls_service(&self, resource: &Resource) -> bool {
        self.endpoints.serves(&resource.kind)
            || self
                .functions
                .as_ref()
                .is_some_and(|f| f.may_serve(resource))
    }

    fn binds(&self, state: &str) -> bool {
        self.commands.contains_key(state)
    }

    fn http_access(&self) -> http::HttpAccess {
        self.http_access.clone()
    }

    fn run_job(&self, request: TaskRequest, job: JobContext) -> TaskFuture {
        match self.commands.get(&request.state_name) {
            Some(cmd) => {
                let cmd = cmd.clone();
                let notice = self.notice.0.clone();
                Box::pin(async move { cmd.run(&request, notice).await })
            }
            None if nested::is_start_execution(&request.resource.kind)
                && self.children.is_some() =>
            {
                let children = self.children.as_ref().map(|c| c.0.clone());
                Box::pin(async move {
                    match children {
                        Some(c) => {
                            nested::run(c, request, job.task_key, job.resumed, job.submitted).await
                        }
                        None => Err(StatesError::runtime("no child executions")),
                    }
                })
            }
            None if self.endpoints.serves(&request.resource.kind) => {
                let endpoints = self.endpoints.clone();
                Box::pin(async move {
                    endpoints
                        .call(&request, job.submitted, job.submission)
                        .await
                })
            }
            None if self.local_function(&request).is_some() => {
                let function = self.local_function(&request).expect("checked");
                let notice = self.notice.0.clone();
                Box::pin(local_lambda::run(function, request, notice))
            }
            None if self.mocks_only => {
                let e = StatesError::runtime(format!(
                    "Task state '{}' is not mocked (resource {}): mock it in the case's \"mocks\" or in the test case of the spec's \"mockConfig\"",
                    request.state_name, request.resource
                ));
                Box::pin(async move { Err(e) })
            }
            // The HTTP Task calls its ApiEndpoint, as on AWS.
            None if http::is_http_invoke(&request.resource) => {
                let region = request
                    .execution_arn
                    .split(':')
                    .nth(3)
                    .filter(|r| !r.is_empty())
                    .unwrap_or("us-east-1")
                    .to_owned();
                let access = self.http_access.clone();
                Box::pin(async move { http::invoke(&request.input, &region, &access).await.0 })
            }
            None => {
                let e = match self.advice {
                    Advice::Run => unbound_task_error(&request.state_name, &request.resource),
                    Advice::Serve => {
                        unbound_served_task_error(&request.state_name, &request.resource)
                    }
                };
                Box::pin(async move { Err(e) })
            }
        }
    }

    fn mocked(&self, state: &str) -> Option<Result<mock::MockAnswer, StatesError>> {
        if self.commands.contains_key(state) {
            return None;
        }
        self.mocks.next(state)
    }

    /// `--s3-dir` wins over an S3 endpoint: it names S3's place alone, while an endpoint may
    /// be `all=URL`.
    fn s3(&self, region: &str) -> Option<s3::S3Store> {
        match &self.s3_dir {
            Some(dir) => Some(s3::S3Store::Folder(s3::LocalS3::new(dir))),
            None => self.endpoints.s3(region).map(s3::S3Store::Endpoint),
        }
    }
}
