//! One warm runtime process of a function: the interpreter running the embedded shim
//! (`shim.py`, `shim.js`), which loads the handler once and answers invocations, one JSON line
//! each way. Its stdout carries the answers (after [`MARK`]; any other line is a log), its
//! stderr the handler's logs, each invocation's ended by [`END`].
//!
//! The pipes are read with blocking calls, so the invocation runs on tokio's blocking pool
//! and a worker may move between the threads of `serve`'s pool. Its lifeline is its stdin:
//! when sfn-local ends, however it ends, the pipe closes and the shim's loop ends with it (no
//! parent-death signal, which follows the *thread* that forked a process, and `test` runs
//! cases on threads that end).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;

/// What precedes each of the shim's answers on stdout.
pub const MARK: &str = "\u{1e}sfn-local:";
/// The line on stderr that ends an invocation's logs.
pub const END: &str = "\u{1e}sfn-local:end";

/// A started runtime process.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Lines of stderr, read by a thread of their own so a chatty handler never blocks on a
    /// full pipe.
    logs: mpsc::Receiver<String>,
}

/// Why a worker gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The process ended (or closed its stdout) before answering.
    #[error("the runtime exited before answering{0}")]
    Exited(String),
    /// Its pipes failed.
    #[error("the runtime's pipes failed: {0}")]
    Io(#[from] std::io::Error),
    /// It answered with something that is not the shim's JSON.
    #[error("the runtime answered with something that is not JSON: {0}")]
    Garbled(String),
}

/// An answer, with the logs the handler wrote meanwhile.
#[derive(Debug)]
pub struct Answer {
    /// The shim's JSON answer.
    pub reply: serde_json::Value,
    /// Log lines, in order.
    pub logs: Vec<String>,
}

impl Worker {
    /// Starts `command` (the interpreter with the shim and its arguments), its three pipes
    /// captured; the process dies with sfn-local.
    pub fn spawn(mut command: Command) -> std::io::Result<Worker> {
        use std::os::unix::process::CommandExt;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a Ctrl-C meant for sfn-local reaches it through sfn-local.
            .process_group(0);
        let mut child = command.spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let (send, logs) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            stdout,
            logs,
        })
    }

    /// The process id (its group's too).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running (an idle one may have been ended meanwhile).
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Reads the shim's first answer, sent once the handler is loaded (blocking).
    pub fn handshake(&mut self) -> Result<Answer, WorkerError> {
        let reply = self.read_answer(&mut Vec::new())?;
        Ok(Answer {
            reply,
            logs: self.logs.try_iter().collect(),
        })
    }

    /// Sends one invocation and waits for its answer and logs (blocking).
    pub fn invoke(&mut self, request: &serde_json::Value) -> Result<Answer, WorkerError> {
        writeln!(self.stdin, "{request}")?;
        self.stdin.flush()?;
        let mut logs = Vec::new();
        let reply = self.read_answer(&mut logs)?;
        // The shim ends the logs before it answers; a handler's last line may still be in
        // flight on the other pipe.
        for line in self.logs.iter() {
            if line == END {
                break;
            }
            logs.push(line);
        }
        Ok(Answer { reply, logs })
    }

    /// The next answer on stdout; other lines there are logs.
    fn read_answer(&mut self, logs: &mut Vec<String>) -> Result<serde_json::Value, WorkerError> {
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                return Err(WorkerError::Exited(self.exit_status()));
            }
            match line.trim_end().split_once(MARK) {
                Some((before, json)) => {
                    if !before.is_empty() {
                        logs.push(before.to_owned());
                    }
                    return serde_json::from_str(json).map_err(|_| {
                        WorkerError::Garbled(crate::limits::head_chars(json, 200).to_owned())
                    });
                }
                None => logs.push(line.trim_end().to_owned()),
            }
        }
    }

    /// How the process ended, with the end of what it said, for an error's cause.
    fn exit_status(&mut self) -> String {
        let tail: Vec<String> = self.logs.try_iter().collect();
        let status = match self.child.wait() {
            Ok(s) => format!(" ({s})"),
            Err(_) => String::new(),
        };
        let said = tail
            .iter()
            .rev()
            .take(20)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if said.is_empty() {
            status
        } else {
            format!("{status}; it said:\n{said}")
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // A warm process is ours to end; reaped so no zombie is left.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
