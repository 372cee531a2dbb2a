//! What a Task resource means on this machine: a local command bound with `--task`, and (with
//! later work) callbacks with task tokens, activities and mocks.
//!
//! The engine hands a [`TaskRequest`] to a [`TaskRunner`] and gets the task's result or error
//! back; timeouts and heartbeats are the engine's, not the runner's.

pub mod callback;
pub mod command;
pub mod lambda;
pub mod managed;
pub mod mock;
pub mod s3;

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
}

/// The future a runner returns.
pub type TaskFuture = Pin<Box<dyn Future<Output = Result<Value, StatesError>>>>;

/// Runs Task states.
pub trait TaskRunner {
    /// Runs one attempt; resolves to the task's result or its error.
    fn run(&self, request: TaskRequest) -> TaskFuture;

    /// The mocked answer to this invocation of `state`, when the state is mocked (each call
    /// counts one invocation); `None` runs the task for real. Running out of mocked answers is
    /// an error.
    fn mocked(&self, state: &str) -> Option<Result<mock::MockAnswer, StatesError>> {
        let _ = state;
        None
    }

    /// The local S3 folder of distributed Maps' `ItemReader`/`ResultWriter` (`--s3-dir`), if any.
    fn s3_dir(&self) -> Option<&std::path::Path> {
        None
    }
}

/// Dispatches Task states to the local commands bound with `--task STATE=COMMAND`, else to
/// their mocks; a state with neither fails with an error that says how to bind it.
#[derive(Debug, Clone, Default)]
pub struct LocalTasks {
    /// State name → command line.
    pub commands: HashMap<String, command::CommandLine>,
    /// Mocked states (a binding wins over a mock for its state).
    pub mocks: mock::Mocks,
    /// The local S3 folder (`--s3-dir`): `s3://BUCKET/KEY` is `DIR/BUCKET/KEY`.
    pub s3_dir: Option<std::path::PathBuf>,
    /// Only mocks run tasks here (`sfn-local test`, which has no `--task`): the error of an
    /// unmocked Task advises a mock instead of a binding.
    pub mocks_only: bool,
    /// Where the commands' stderr lines go (prefixed with the state's name); nowhere if unset.
    pub notice: Notice,
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

/// The error of a Task that nothing on this machine can run.
pub fn unbound_task_error(state: &str, resource: &Resource) -> StatesError {
    StatesError::runtime(format!(
        "Task state '{state}' has no local binding for its resource {resource}: bind it to a command with --task '{state}=COMMAND' (the command reads the task input as JSON on stdin and prints its result as JSON on stdout)"
    ))
}

impl TaskRunner for LocalTasks {
    fn run(&self, request: TaskRequest) -> TaskFuture {
        match self.commands.get(&request.state_name) {
            Some(cmd) => {
                let cmd = cmd.clone();
                let notice = self.notice.0.clone();
                Box::pin(async move { cmd.run(&request, notice).await })
            }
            None if self.mocks_only => {
                let e = StatesError::runtime(format!(
                    "Task state '{}' is not mocked (resource {}): mock it in the case's \"mocks\" or in the test case of the spec's \"mockConfig\"",
                    request.state_name, request.resource
                ));
                Box::pin(async move { Err(e) })
            }
            None => {
                let e = unbound_task_error(&request.state_name, &request.resource);
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

    fn s3_dir(&self) -> Option<&std::path::Path> {
        self.s3_dir.as_deref()
    }
}
