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
    /// The database the execution uses (`SFN_LOCAL_DB` in the program's environment), so a
    /// worker's `send-task-*` answers the same database whatever `--db` said.
    pub database: Option<std::path::PathBuf>,
}

impl CommandLine {
    /// This command, told which database its execution uses.
    pub fn with_database(mut self, path: &std::path::Path) -> CommandLine {
        self.database = Some(std::path::absolute(path).unwrap_or_else(|_| path.to_owned()));
        self
    }

    /// This command with a relative program path (`./worker.sh`) made absolute against the
    /// current directory, for a runner that works from another one (`resume`).
    pub fn with_absolute_program(mut self) -> CommandLine {
        if self.argv[0].contains('/') {
            if let Ok(p) = std::path::absolute(&self.argv[0]) {
                self.argv[0] = p.display().to_string();
            }
        }
        self
    }

    /// Checks that the program can be started: a path names an executable file, a bare name is
    /// found on `PATH`. A binding that cannot work is the user's setup, not the execution's
    /// business failure, so it is refused before anything runs.
    pub fn check_program(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let program = &self.argv[0];
        let executable = |p: &std::path::Path| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        };
        if program.contains('/') {
            let p = std::path::Path::new(program);
            return match std::fs::metadata(p) {
                Err(_) => Err(format!("'{program}' does not exist")),
                Ok(m) if m.is_dir() => Err(format!("'{program}' is a folder, not a program")),
                Ok(_) if !executable(p) => Err(format!(
                    "'{program}' is not executable (chmod +x {program})"
                )),
                Ok(_) => Ok(()),
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
            Ok(())
        } else {
            Err(format!(
                "'{program}' is not a program on PATH (a script in this folder is ./{program})"
            ))
        }
    }

    /// The program's environment besides the caller's: the state, the execution, the attempt,
    /// the database, and the execution's region and account (from its ARN), so every `sfn-local`
    /// the program calls and every AWS SDK it uses sees the execution's own.
    fn environment(&self, request: &TaskRequest) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("SFN_STATE_NAME", request.state_name.clone()),
            ("SFN_EXECUTION_ARN", request.execution_arn.clone()),
            ("SFN_RETRY_COUNT", request.retry_count.to_string()),
        ];
        if let Some(db) = &self.database {
            env.push(("SFN_LOCAL_DB", db.display().to_string()));
        }
        env.extend(region_environment(&request.execution_arn));
        env
    }
}

/// `AWS_REGION`, `AWS_DEFAULT_REGION` and `SFN_LOCAL_ACCOUNT_ID` from an execution's ARN
/// (`arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME`), for every program sfn-local starts
/// for a task (`--task` commands and managed handlers alike).
pub fn region_environment(execution_arn: &str) -> Vec<(&'static str, String)> {
    let parts: Vec<&str> = execution_arn.splitn(6, ':').collect();
    match parts.as_slice() {
        [_, _, _, region, account, _] => vec![
            ("AWS_REGION", (*region).to_owned()),
            ("AWS_DEFAULT_REGION", (*region).to_owned()),
            ("SFN_LOCAL_ACCOUNT_ID", (*account).to_owned()),
        ],
        _ => Vec::new(),
    }
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
    Ok((
        state.to_owned(),
        CommandLine {
            argv,
            database: None,
        },
    ))
}

impl CommandLine {
    /// Runs the command for one attempt. For `lambda:invoke` the command is the function: it
    /// gets the `Payload` and its result is wrapped in Lambda's `Invoke` response
    /// ([`crate::tasks::lambda`]). Its stderr lines are forwarded to `notice`, prefixed with the
    /// state's name, whether it succeeds or fails.
    pub async fn run(
        &self,
        request: &TaskRequest,
        notice: Option<crate::tasks::NoticeSink>,
    ) -> Result<Value, StatesError> {
        use crate::tasks::lambda;
        let failed = |cause: String| StatesError::new(names::TASK_FAILED, cause);
        let function = lambda::is_invoke(&request.resource);
        let (stdin_value, function_name) = if function {
            (
                lambda::event(&request.input),
                lambda::function_name(&request.input),
            )
        } else {
            (request.input.clone(), None)
        };
        let mut command = tokio::process::Command::new(&self.argv[0]);
        command
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(self.environment(request))
            .kill_on_drop(true);
        if let Some(name) = &function_name {
            command.env("AWS_LAMBDA_FUNCTION_NAME", name);
        }
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("cannot start '{}': {e}", self.argv[0])))?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = stdin_value.to_string();
            // A program that does not read its input is fine: ignore a broken pipe.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
        let out = child
            .wait_with_output()
            .await
            .map_err(|e| failed(format!("'{}' failed: {e}", self.argv[0])))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Some(notice) = &notice {
            for line in stderr.lines() {
                notice(&format!("[{}] {line}", request.state_name));
            }
        }
        if !out.status.success() {
            let named = if function {
                lambda::function_error(&stderr).or_else(|| error_from_stderr(&stderr))
            } else {
                error_from_stderr(&stderr)
            };
            return Err(named.unwrap_or_else(|| {
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
        let result = if stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&stdout).map_err(|e| {
                failed(format!(
                    "the output of '{}' is not JSON ({e}): {}",
                    self.argv[0],
                    stdout.chars().take(200).collect::<String>()
                ))
            })?
        };
        Ok(if function {
            lambda::invoke_response(result)
        } else {
            result
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
            .envs(self.environment(request))
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
            input: serde_json::json!({"FunctionName": "f", "Payload": {"a": 1}}),
            execution_arn: "arn".into(),
            retry_count: 0,
        };
        assert_eq!(
            cmd.run(&req, None).await.unwrap()["Payload"],
            serde_json::json!({"a": 1})
        );
        let (_, cmd) = parse_binding("T=sh -c 'echo boom >&2; exit 3'").unwrap();
        let e = cmd.run(&req, None).await.unwrap_err();
        assert_eq!(e.name(), "States.TaskFailed");
        assert_eq!(e.cause.as_deref(), Some("boom"));
    }
}
