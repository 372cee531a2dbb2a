//! `--task STATE=COMMAND`: a local program does the work of a Task state.
//!
//! The effective input goes to the program's stdin as JSON; its stdout, parsed as JSON, is the
//! task's result. A non-zero exit fails the task: if the last line of stderr is a JSON object
//! `{"Error": ..., "Cause": ...}` those name the error, else the error is `States.TaskFailed`
//! with stderr as the cause. The command is split like a shell would split it into an argument
//! vector and never passed through `sh -c`, so no input can be interpreted by a shell.
//!
//! Whatever the program does, sfn-local's memory and time stay bounded:
//!
//! - stdout is read as it comes, up to [`MAX_STDOUT_BYTES`]; past it the task fails with
//!   `States.DataLimitExceeded` (AWS's cause) and the program is stopped, so a program that
//!   prints a gigabyte costs a megabyte; a result over 256 KiB as compact JSON fails the same;
//! - stderr is forwarded line by line as it comes and only its last [`STDERR_TAIL_BYTES`] are
//!   kept for the cause of a failure, itself cut to AWS's 32,768 characters;
//! - the program runs in its own process group ([`crate::tasks::process`]): when it exits,
//!   what it left running in the group gets `SIGTERM`, then `SIGKILL` after [`KILL_AFTER`];
//!   the same happens to the whole group when the attempt is abandoned (`TimeoutSeconds`, a
//!   stopped execution, Ctrl-C on `run`);
//! - stdout that is not UTF-8 fails the task (`States.TaskFailed`, naming the offset); stderr
//!   that is not UTF-8 is shown with replacement characters; a program killed by a signal
//!   fails the task with a cause naming the signal.

use crate::asl::error::{names, StatesError};
use crate::limits::PAYLOAD_BYTES;
use crate::tasks::process::{signal_group, GroupGuard};
use crate::tasks::TaskRequest;
use nix::sys::signal::Signal;
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a command has to exit after `SIGTERM` (its task timed out or its execution
/// stopped; it printed too much; it exited and left children behind) before its process group
/// gets `SIGKILL`.
pub const KILL_AFTER: Duration = Duration::from_secs(2);

/// The most of a command's stdout that is read: AWS's result quota (256 KiB, measured on the
/// result as compact JSON) with room for whitespace. A command that prints more fails with
/// `States.DataLimitExceeded` at once.
pub const MAX_STDOUT_BYTES: usize = 4 * PAYLOAD_BYTES;

/// How much of a command's stderr is kept for the cause of its failure (its end, where a
/// `{"Error": ..., "Cause": ...}` line goes).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// A stderr line longer than this is forwarded in pieces.
const MAX_LINE_BYTES: usize = 8 * 1024;

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
    /// Runs the command for one attempt. For an optimized integration the command stands in
    /// for the service ([`crate::tasks::stand_in`]): for `lambda:invoke` it is the function,
    /// which gets the `Payload` and whose result is wrapped in Lambda's `Invoke` response. Its
    /// stderr lines are forwarded to `notice` as they come, prefixed with the state's name,
    /// whether it succeeds or fails.
    ///
    /// Bounded whatever the program does (see the module's overview): stdout is read up to
    /// [`MAX_STDOUT_BYTES`], stderr keeps its last [`STDERR_TAIL_BYTES`], the program runs in
    /// its own process group, and the group is ended when the program exits or when this
    /// future is dropped (the state's `TimeoutSeconds`, a stopped execution).
    pub async fn run(
        &self,
        request: &TaskRequest,
        notice: Option<crate::tasks::NoticeSink>,
    ) -> Result<Value, StatesError> {
        // The program is outside work: a virtual clock holds while it runs. What the response
        // draws from the clock and randomness is drawn after, in the execution's turn.
        let printed = crate::clock::outside(self.run_program(request, notice)).await?;
        let stand_in = crate::tasks::stand_in::StandIn::of(&request.resource);
        Ok(stand_in.response(request, printed))
    }

    /// Runs the program and reads what it printed (see [`CommandLine::run`]).
    async fn run_program(
        &self,
        request: &TaskRequest,
        notice: Option<crate::tasks::NoticeSink>,
    ) -> Result<Value, StatesError> {
        use crate::tasks::{lambda, stand_in::StandIn};
        let program = self.argv[0].as_str();
        let failed = |cause: String| StatesError::new(names::TASK_FAILED, cause);
        let stand_in = StandIn::of(&request.resource);
        let function = stand_in == StandIn::Function;
        let stdin_value = stand_in.request(&request.input);
        let function_name = function
            .then(|| lambda::function_name(&request.input))
            .flatten();
        let mut command = tokio::process::Command::new(program);
        command
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(self.environment(request))
            // Its own group: what it starts is ended with it (and a Ctrl-C meant for sfn-local
            // reaches it through sfn-local, which ends it).
            .process_group(0)
            // The guard below ends the whole group, SIGTERM first.
            .kill_on_drop(false);
        if let Some(name) = &function_name {
            command.env("AWS_LAMBDA_FUNCTION_NAME", name);
        }
        // Killed with its runner, even by SIGKILL (it lists its own group with the reaper).
        crate::tasks::process::die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("cannot start '{program}': {e}")))?;
        let Some(pid) = child.id() else {
            return Err(failed(format!("'{program}' could not be watched")));
        };
        let guard = GroupGuard::new(pid, KILL_AFTER);
        let input = stdin_value.to_string();
        let mut stdout = Vec::new();
        let mut stderr = Tail::new(STDERR_TAIL_BYTES);
        let mut overflow = false;
        let (status, output_complete) = {
            let stdin = child.stdin.take();
            // Written beside the reads: a program that prints before it reads its input must not
            // wait on a full pipe while we wait on its stdin. Not reading its input is fine.
            let feed = async move {
                if let Some(mut stdin) = stdin {
                    let _ = stdin.write_all(input.as_bytes()).await;
                }
            };
            let out = read_stdout(child.stdout.take(), &mut stdout, MAX_STDOUT_BYTES);
            let label = request.state_name.as_str();
            let err = read_stderr(child.stderr.take(), &mut stderr, |line| {
                if let Some(notice) = &notice {
                    notice(&format!("[{label}] {line}"));
                }
            });
            tokio::pin!(feed, out, err);
            let (mut fed, mut out_done, mut err_done) = (false, false, false);
            let mut kill_at: Option<tokio::time::Instant> = None;
            let status = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    () = &mut feed, if !fed => fed = true,
                    over = &mut out, if !out_done => {
                        out_done = true;
                        if over {
                            // The result is lost already: stop the program (its stdout is closed,
                            // a write gets SIGPIPE), SIGKILL if it lingers.
                            overflow = true;
                            signal_group(pid, Signal::SIGTERM);
                            kill_at = Some(tokio::time::Instant::now() + KILL_AFTER);
                        }
                    }
                    () = &mut err, if !err_done => err_done = true,
                    () = sleep_until_some(kill_at) => {
                        signal_group(pid, Signal::SIGKILL);
                        kill_at = None;
                    }
                }
            };
            // The leader is done: what it left running in its group is over too. The pipes
            // close when the last holder is gone; a holder outside the group (`setsid`) is not
            // waited for past the grace period.
            guard.end();
            let rest = async {
                if !out_done {
                    overflow |= (&mut out).await;
                }
                if !err_done {
                    (&mut err).await;
                }
            };
            let complete = tokio::time::timeout(KILL_AFTER + Duration::from_secs(1), rest)
                .await
                .is_ok();
            (status, complete)
        };
        let status =
            status.map_err(|e| failed(format!("'{program}' could not be waited for: {e}")))?;
        if overflow {
            return Err(crate::tasks::result_too_large(&request.resource));
        }
        let stderr = stderr.text();
        if !status.success() {
            let named = if lambda::is_lambda(&request.resource) {
                lambda::function_error(&stderr).or_else(|| error_from_stderr(&stderr))
            } else {
                error_from_stderr(&stderr)
            };
            return Err(named.unwrap_or_else(|| failed(failure_cause(program, status, &stderr))));
        }
        if !output_complete {
            return Err(failed(format!(
                "'{program}' exited, but a process it started outside its process group kept its output open for {} s; its output is incomplete",
                (KILL_AFTER + Duration::from_secs(1)).as_secs()
            )));
        }
        let stdout = std::str::from_utf8(&stdout).map_err(|e| {
            failed(format!(
                "the output of '{program}' is not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            ))
        })?;
        let result = if stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(stdout).map_err(|e| {
                failed(format!(
                    "the output of '{program}' is not JSON ({e}): {}",
                    crate::limits::head_chars(stdout, 200)
                ))
            })?
        };
        Ok(result)
    }
}

/// The cause of a failed command that named no error: its stderr (the end of it), or how it
/// ended when it said nothing; a signal is always named.
fn failure_cause(program: &str, status: std::process::ExitStatus, stderr: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let said = stderr.trim_end();
    let said = crate::limits::tail_chars(said, crate::limits::CAUSE_CHARS - 200);
    match (status.code(), status.signal()) {
        (Some(code), _) if said.trim().is_empty() => {
            format!("'{program}' ended with exit status {code}")
        }
        (Some(_), _) => said.to_owned(),
        (None, signal) => {
            let signal = signal
                .and_then(|s| Signal::try_from(s).ok())
                .map(|s| format!("{s}"))
                .or_else(|| signal.map(|s| s.to_string()))
                .unwrap_or_else(|| "a signal".into());
            if said.trim().is_empty() {
                format!("'{program}' was killed by {signal}")
            } else {
                format!("'{program}' was killed by {signal}; the end of its stderr:\n{said}")
            }
        }
    }
}

/// Waits until `at`, or forever when there is no deadline.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Reads a program's stdout into `kept`, up to `limit` bytes. Returns whether it wrote more
/// (then it stops reading at once: memory stays flat whatever the program prints).
async fn read_stdout(
    stdout: Option<tokio::process::ChildStdout>,
    kept: &mut Vec<u8>,
    limit: usize,
) -> bool {
    let Some(mut stdout) = stdout else {
        return false;
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                if kept.len() + n > limit {
                    return true;
                }
                kept.extend_from_slice(&buf[..n]);
            }
        }
    }
}

/// Reads a program's stderr, handing each line to `line` (a very long line in pieces of
/// [`MAX_LINE_BYTES`]) and keeping the end of it in `tail`.
pub(crate) async fn read_stderr(
    stderr: Option<tokio::process::ChildStderr>,
    tail: &mut Tail,
    mut line: impl FnMut(&str),
) {
    let Some(mut stderr) = stderr else {
        return;
    };
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        tail.push(&buf[..n]);
        for &b in &buf[..n] {
            if b == b'\n' {
                line(&String::from_utf8_lossy(&pending));
                pending.clear();
            } else {
                pending.push(b);
                if pending.len() >= MAX_LINE_BYTES {
                    line(&String::from_utf8_lossy(&pending));
                    pending.clear();
                }
            }
        }
    }
    if !pending.is_empty() {
        line(&String::from_utf8_lossy(&pending));
    }
}

/// The last `keep` bytes of a stream (stderr kept for a failure's cause).
#[derive(Debug)]
pub(crate) struct Tail {
    bytes: Vec<u8>,
    keep: usize,
}

impl Tail {
    /// Keeps the last `keep` bytes.
    pub(crate) fn new(keep: usize) -> Tail {
        Tail {
            bytes: Vec::new(),
            keep,
        }
    }

    /// Adds what was read, forgetting the oldest bytes past the limit (in batches, so the
    /// copying stays linear).
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > 2 * self.keep {
            let cut = self.bytes.len() - self.keep;
            self.bytes.drain(..cut);
        }
    }

    /// The kept text (the last `keep` bytes at most; invalid UTF-8 replaced).
    pub(crate) fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.keep);
        let mut kept = &self.bytes[start..];
        // Not starting inside a character that was cut.
        while let [first, rest @ ..] = kept {
            if first & 0xC0 == 0x80 {
                kept = rest;
            } else {
                break;
            }
        }
        String::from_utf8_lossy(kept).into_owned()
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
        // A worker at work is the outside world at work: a virtual clock flows until it exits.
        let busy = crate::clock::Busy::external();
        Ok((
            pid,
            Box::pin(async move {
                let _busy = busy;
                if let Some(mut stdin) = child.stdin.take() {
                    // A worker that does not read its input is fine: ignore a broken pipe.
                    let _ = stdin.write_all(input.as_bytes()).await;
                }
                // Forwarded as it comes, a very long line in pieces; nothing is kept.
                let mut nothing = Tail::new(0);
                read_stderr(child.stderr.take(), &mut nothing, |line| {
                    notice(&format!("[{state}] {line}"))
                })
                .await;
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

    #[test]
    fn a_tail_keeps_the_last_bytes_on_a_character_boundary() {
        let mut tail = Tail::new(4);
        for chunk in [&b"abc"[..], "d\u{e9}fg".as_bytes(), b"h"] {
            tail.push(chunk);
        }
        // "abcdéfgh": the last 4 bytes are "fgh" and the second byte of 'é'.
        assert_eq!(tail.text(), "fgh");
        let mut tail = Tail::new(64);
        tail.push(b"bad \xff byte");
        assert_eq!(tail.text(), "bad \u{fffd} byte");
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
            virtual_time: None,
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
