//! `--task STATE=COMMAND`: a local program does the work of a Task state.
//!
//! The effective input goes to the program's stdin as JSON; its stdout, parsed as JSON, is the
//! task's result. A non-zero exit fails the task: if the last line of stderr is a JSON object
//! `{"Error": ..., "Cause": ...}` those name the error, else the error is `States.TaskFailed`
//! with stderr as the cause. The command is split like a shell would split it into an argument
//! vector and never passed through `sh -c`, so no input can be interpreted by a shell.

use crate::asl::error::{names, StatesError};
use crate::tasks::TaskRequest;
use serde_json::Value;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// A started worker: a future that feeds it, forwards its stderr and reports its exit.
pub type WorkerWatch = std::pin::Pin<Box<dyn std::future::Future<Output = String>>>;

/// A command line, already split into program and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    /// Program and arguments.
    pub argv: Vec<String>,
}

/// Why a `--task` binding is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// No `=` between the state name and the command.
    #[error("--task expects STATE=COMMAND, got '{0}'")]
    NoEquals(String),
    /// The command is empty or its quoting is unbalanced.
    #[error("--task '{binding}': {why}")]
    BadCommand {
        /// The binding as given.
        binding: String,
        /// What is wrong.
        why: String,
    },
}

/// Parses `STATE=COMMAND`.
pub fn parse_binding(binding: &str) -> Result<(String, CommandLine), BindingError> {
    let (state, command) = binding
        .split_once('=')
        .ok_or_else(|| BindingError::NoEquals(binding.to_owned()))?;
    let argv = shell_words::split(command).map_err(|e| BindingError::BadCommand {
        binding: binding.to_owned(),
        why: e.to_string(),
    })?;
    if argv.is_empty() || state.is_empty() {
        return Err(BindingError::BadCommand {
            binding: binding.to_owned(),
            why: "the state name and the command must not be empty".into(),
        });
    }
    Ok((state.to_owned(), CommandLine { argv }))
}

impl CommandLine {
    /// Runs the command for one attempt.
    pub async fn run(&self, request: &TaskRequest) -> Result<Value, StatesError> {
        let failed = |cause: String| StatesError::new(names::TASK_FAILED, cause);
        let mut child = tokio::process::Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("SFN_STATE_NAME", &request.state_name)
            .env("SFN_EXECUTION_ARN", &request.execution_arn)
            .env("SFN_RETRY_COUNT", request.retry_count.to_string())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed(format!("cannot start '{}': {e}", self.argv[0])))?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = request.input.to_string();
            // A program that does not read its input is fine: ignore a broken pipe.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
        let out = child
            .wait_with_output()
            .await
            .map_err(|e| failed(format!("'{}' failed: {e}", self.argv[0])))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(error_from_stderr(&stderr).unwrap_or_else(|| {
                let status = out
                    .status
                    .code()
                    .map(|c| format!("exit status {c}"))
                    .unwrap_or_else(|| "killed by a signal".into());
                failed(if stderr.trim().is_empty() {
                    format!("'{}' ended with {status}", self.argv[0])
                } else {
                    stderr.trim_end().to_owned()
                })
            }));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&stdout).map_err(|e| {
            failed(format!(
                "the output of '{}' is not JSON ({e}): {}",
                self.argv[0],
                stdout.chars().take(200).collect::<String>()
            ))
        })
    }
}

impl CommandLine {
    /// Starts the command as the worker of a `.waitForTaskToken` attempt: the effective input on
    /// stdin, the token in `SFN_TASK_TOKEN`. The attempt waits for the worker's *answer*
    /// (`send-task-*`), not its exit, as AWS cannot see a worker die either; the returned future
    /// feeds stdin, forwards stderr lines to `notice` prefixed with the state, and resolves with a
    /// report of an unsuccessful exit (empty for status 0). Also returns the
    /// worker's process id. Dropping it neither kills nor waits for the worker: the work does not
    /// stop when the clock does.
    pub fn spawn_worker(
        &self,
        request: &TaskRequest,
        token: &str,
        notice: std::rc::Rc<dyn Fn(&str)>,
    ) -> Result<(Option<u32>, WorkerWatch), StatesError> {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            // Not inherited: a worker (or a grandchild) that outlives `run` must not hold the
            // caller's pipes open.
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("SFN_STATE_NAME", &request.state_name)
            .env("SFN_EXECUTION_ARN", &request.execution_arn)
            .env("SFN_RETRY_COUNT", request.retry_count.to_string())
            .env("SFN_TASK_TOKEN", token)
            .kill_on_drop(false)
            .spawn()
            .map_err(|e| {
                StatesError::new(
                    names::TASK_FAILED,
                    format!("cannot start '{}': {e}", self.argv[0]),
                )
            })?;
        let input = request.input.to_string();
        let program = self.argv[0].clone();
        let state = request.state_name.clone();
        let pid = child.id();
        Ok((
            pid,
            Box::pin(async move {
                if let Some(mut stdin) = child.stdin.take() {
                    // A worker that does not read its input is fine: ignore a broken pipe.
                    let _ = stdin.write_all(input.as_bytes()).await;
                }
                if let Some(stderr) = child.stderr.take() {
                    let mut lines = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        notice(&format!("[{state}] {line}"));
                    }
                }
                let status = match child.wait().await {
                    Ok(s) => match s.code() {
                        // Answered (most likely) and done: nothing worth a line.
                        Some(0) => return String::new(),
                        Some(c) => format!("exited with status {c}"),
                        None => "was killed by a signal".to_owned(),
                    },
                    Err(e) => format!("could not be waited for: {e}"),
                };
                format!(
                "worker '{program}' (pid {}) for state '{state}' {status}; the state waits for an answer with its task token (send-task-success/-failure) or for its TimeoutSeconds/HeartbeatSeconds",
                pid.map(|p| p.to_string()).unwrap_or_else(|| "?".into())
            )
            }),
        ))
    }
}

/// `{"Error": ..., "Cause": ...}` on the last non-empty line of stderr.
pub(crate) fn error_from_stderr(stderr: &str) -> Option<StatesError> {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: Value = serde_json::from_str(last.trim()).ok()?;
    let obj = v.as_object()?;
    let error = obj.get("Error")?.as_str()?.to_owned();
    let cause = obj.get("Cause").map(|c| match c {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Some(StatesError {
        error: Some(error),
        cause,
        heartbeat: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_split_like_a_shell() {
        let (state, cmd) = parse_binding("Resize=./resize.sh --width '100 px'").unwrap();
        assert_eq!(state, "Resize");
        assert_eq!(cmd.argv, ["./resize.sh", "--width", "100 px"]);
        assert!(parse_binding("NoEquals").is_err());
        assert!(parse_binding("A=").is_err());
        assert!(parse_binding("A='unbalanced").is_err());
    }

    #[test]
    fn stderr_json_names_the_error() {
        let e = error_from_stderr("log line\n{\"Error\":\"Oops\",\"Cause\":\"bad\"}\n").unwrap();
        assert_eq!(e.error.as_deref(), Some("Oops"));
        assert_eq!(e.cause.as_deref(), Some("bad"));
        assert!(error_from_stderr("plain failure").is_none());
    }

    #[tokio::test]
    async fn runs_a_command_with_input_on_stdin() {
        let (_, cmd) = parse_binding("T=sh -c 'cat'").unwrap();
        let req = TaskRequest {
            state_name: "T".into(),
            resource: crate::asl::resource::Resource::parse("arn:aws:states:::lambda:invoke")
                .unwrap(),
            input: serde_json::json!({"a": 1}),
            execution_arn: "arn".into(),
            retry_count: 0,
        };
        assert_eq!(cmd.run(&req).await.unwrap(), serde_json::json!({"a": 1}));
        let (_, cmd) = parse_binding("T=sh -c 'echo boom >&2; exit 3'").unwrap();
        let e = cmd.run(&req).await.unwrap_err();
        assert_eq!(e.name(), "States.TaskFailed");
        assert_eq!(e.cause.as_deref(), Some("boom"));
    }
}
