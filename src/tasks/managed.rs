//! Managed handlers: any command run as the worker of one task, with the worker's chores done
//! for it.
//!
//! A *handler* is a plain program: the task input on stdin, the token in `SFN_TASK_TOKEN`, its
//! result on stdout. The supervisor ([`Spawned::supervise`]) answers for it and keeps the task's
//! semantics AWS's:
//!
//! - the handler runs in its own process group, so cancelling it reaches its children too;
//! - under [`HeartbeatMode::Auto`] it sends a heartbeat every third of the task's heartbeat
//!   window (at least once a second) while the handler lives, so two beats can be lost before
//!   the deadline, and a crash is noticed within `HeartbeatSeconds` without touching the handler;
//! - it looks at the task every [`LOOK_EVERY`]; when the task stops being this handler's (a
//!   clock ran out, its execution stopped or ended, a beat was refused) it sends `SIGTERM` to the
//!   group, `SIGKILL` after `kill_after`, and discards whatever the handler produces;
//! - when the handler exits it answers once: status 0 is `SendTaskSuccess` with stdout, another
//!   status `SendTaskFailure`; a handler killed by a signal gets **no answer** (a dead worker is
//!   silent on AWS too), and a token already answered (by the handler itself, with
//!   `send-task-success`) is not answered twice.
//!
//! Where the task lives is behind [`TaskChannel`] (and [`ActivityChannel`] for taking activity
//! tasks): [`StoreChannel`] talks to the SQLite database directly;
//! [`crate::tasks::api_channel::ApiChannel`] speaks the Step Functions API to `sfn-local serve` or
//! AWS, with the same supervisor.

use crate::asl::error::names;
use crate::clock::{Clock, Millis};
use crate::store::{AnswerError, Store, TaskAnswer, TokenRecord, TokenStatus};
use crate::tasks::command::CommandLine;
use crate::tasks::process::{signal_group, GroupGuard};
use nix::sys::signal::Signal;
use serde_json::Value;
use std::cell::Cell;
use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::Stdio;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How often the supervisor looks whether the task is still the handler's: the bound on how
/// late a cancellation reaches the handler (the promise is within a second).
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// The longest time between two automatic heartbeats, whatever the heartbeat window.
pub const MAX_BEAT_EVERY: Duration = Duration::from_secs(1);

/// The time between automatic heartbeats on a channel that cannot look at a task (the AWS
/// API): a refused beat is then the only news that the task is over, and this brings it within
/// the promised second of the end.
pub const BLIND_BEAT_EVERY: Duration = Duration::from_millis(500);

/// AWS's payload limit, which a handler's stdout must respect to be a task output.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;

/// How much of the handler's stderr a failure's cause keeps (its tail).
const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// The error name of a handler that exited with a non-zero status and did not name its error on
/// its last stderr line (the same as a `--task` command's).
pub const HANDLER_FAILED: &str = names::TASK_FAILED;

/// Who sends heartbeats while a handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HeartbeatMode {
    /// The supervisor beats while the handler process lives.
    Auto,
    /// The handler beats itself (`sfn-local send-task-heartbeat`); silence also catches a hung
    /// handler.
    Manual,
}

/// How handlers are supervised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManagedOptions {
    /// Who beats.
    pub heartbeat: HeartbeatMode,
    /// How long after `SIGTERM` a handler whose task is over gets `SIGKILL`.
    pub kill_after: Duration,
}

impl Default for ManagedOptions {
    fn default() -> Self {
        ManagedOptions {
            heartbeat: HeartbeatMode::Auto,
            kill_after: Duration::from_secs(10),
        }
    }
}

/// `--worker STATE=COMMAND` bindings of `run`/`resume` and how their handlers are supervised.
#[derive(Debug, Clone, Default)]
pub struct ManagedBindings {
    /// State name → handler.
    pub commands: std::collections::HashMap<String, CommandLine>,
    /// Supervision.
    pub options: ManagedOptions,
}

/// One task handed to a handler.
#[derive(Debug, Clone)]
pub struct Assignment {
    /// The task token.
    pub token: String,
    /// The task input (JSON text), for the handler's stdin.
    pub input: String,
    /// Variables for the handler (besides `SFN_TASK_TOKEN`): `SFN_STATE_NAME`,
    /// `SFN_EXECUTION_ARN`, `SFN_RETRY_COUNT` when known.
    pub env: Vec<(String, String)>,
    /// What the notices call the task (`state 'Convert' (attempt 1)`).
    pub label: String,
}

impl Assignment {
    /// An assignment of one attempt's task: the variables `--task` commands get (the state,
    /// the execution, the attempt, and the execution's region and account).
    pub fn of_attempt(
        token: &str,
        input: String,
        state_name: &str,
        execution_arn: &str,
        retry_count: u64,
    ) -> Assignment {
        let mut env = vec![
            ("SFN_STATE_NAME".to_owned(), state_name.to_owned()),
            ("SFN_EXECUTION_ARN".to_owned(), execution_arn.to_owned()),
            ("SFN_RETRY_COUNT".to_owned(), retry_count.to_string()),
        ];
        env.extend(
            crate::tasks::command::region_environment(execution_arn)
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v)),
        );
        Assignment {
            token: token.to_owned(),
            input,
            env,
            label: format!("state '{state_name}' (attempt {})", retry_count + 1),
        }
    }

    /// An assignment for a stored token: its input, and the variables `--task` commands get.
    pub fn of_token(row: &TokenRecord) -> Assignment {
        Assignment::of_attempt(
            &row.token,
            row.input.clone(),
            &row.state_name,
            &row.execution_arn,
            row.attempt,
        )
    }
}

/// What the channel knows about a task, looked at without changing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskLook {
    /// Still the handler's. `heartbeat_window` is `HeartbeatSeconds` in real (scaled) time, or
    /// `None` when the task has none.
    Open {
        /// The heartbeat window.
        heartbeat_window: Option<Duration>,
    },
    /// Answered already (by the handler itself, most likely).
    Answered,
    /// Over, for the reason given (timed out, stopped, ended).
    Over(String),
    /// The channel cannot tell (the AWS API has no such call): heartbeats will.
    Unknown,
}

/// Why a channel call did not go through.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChannelError {
    /// `TaskTimedOut` or `TaskDoesNotExist`: the task is not this handler's any more.
    #[error("{0}")]
    TaskOver(String),
    /// The channel failed (database busy or gone, endpoint unreachable); the call may succeed
    /// later.
    #[error("{0}")]
    Unavailable(String),
    /// The request was refused for good (the activity does not exist, the credentials are
    /// refused): trying again will not help.
    #[error("{code}: {message}")]
    Refused {
        /// AWS's error name (`ActivityDoesNotExist`).
        code: String,
        /// Its message.
        message: String,
    },
}

/// The future of a channel call.
pub type ChannelFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ChannelError>> + 'a>>;

/// Where tasks live and answers go: the database ([`StoreChannel`]) or the AWS API
/// ([`crate::tasks::api_channel::ApiChannel`]).
pub trait TaskChannel {
    /// `SendTaskHeartbeat`.
    fn heartbeat<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, ()>;
    /// `SendTaskSuccess` (output is JSON text) or `SendTaskFailure`.
    fn answer<'a>(&'a self, token: &'a str, answer: TaskAnswer) -> ChannelFuture<'a, ()>;
    /// Whether the task is still open, without touching it.
    fn look<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, TaskLook>;
    /// Variables a handler needs to answer through the same channel by itself
    /// (`SFN_LOCAL_DB` for the database).
    fn handler_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A channel that also hands out activity tasks.
pub trait ActivityChannel: TaskChannel {
    /// `GetActivityTask`: the oldest waiting task of the activity, waiting up to a short poll
    /// period for one; `None` when none came.
    fn next_task<'a>(
        &'a self,
        activity_arn: &'a str,
        worker_name: Option<&'a str>,
    ) -> ChannelFuture<'a, Option<Assignment>>;
}

/// The channel of a process that opens the database itself.
pub struct StoreChannel {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
}

/// How often a waiting [`StoreChannel::next_task`] looks for commits, and how long it waits.
const ACTIVITY_POLL: Duration = Duration::from_millis(10);
const ACTIVITY_WAIT: Duration = Duration::from_secs(1);

impl StoreChannel {
    /// A channel on `store`, reading time from `clock` (deadlines are wall-clock times).
    pub fn new(store: Arc<Store>, clock: Arc<dyn Clock>) -> StoreChannel {
        StoreChannel { store, clock }
    }
}

fn answer_error(e: AnswerError) -> ChannelError {
    match e {
        AnswerError::TaskTimedOut | AnswerError::TaskDoesNotExist => {
            ChannelError::TaskOver(e.to_string())
        }
        AnswerError::Store(e) => ChannelError::Unavailable(e.to_string()),
    }
}

/// What a token row says at `now`.
pub fn look_at(row: &TokenRecord, now: Millis) -> TaskLook {
    match row.status {
        TokenStatus::Succeeded | TokenStatus::Failed => TaskLook::Answered,
        TokenStatus::TimedOut => TaskLook::Over("its attempt timed out".into()),
        TokenStatus::Closed => {
            TaskLook::Over("its execution was stopped or ended, or its attempt was aborted".into())
        }
        TokenStatus::Scheduled | TokenStatus::Started => {
            // A virtual clock's deadlines are its runner's instants, not `now`'s: the status
            // alone says whether they passed.
            let past =
                |deadline: Option<Millis>| !row.virtual_clock && deadline.is_some_and(|d| d <= now);
            if past(row.timeout_at) {
                TaskLook::Over("its TimeoutSeconds ran out".into())
            } else if past(row.heartbeat_at) {
                TaskLook::Over("its HeartbeatSeconds ran out".into())
            } else {
                TaskLook::Open {
                    heartbeat_window: row
                        .heartbeat_ms
                        .map(|ms| Duration::from_millis(ms.max(1) as u64)),
                }
            }
        }
    }
}

impl TaskChannel for StoreChannel {
    fn heartbeat<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, ()> {
        Box::pin(async move {
            self.store
                .answer_token(token, &TaskAnswer::Heartbeat, self.clock.now())
                .map_err(answer_error)
        })
    }

    fn answer<'a>(&'a self, token: &'a str, answer: TaskAnswer) -> ChannelFuture<'a, ()> {
        Box::pin(async move {
            self.store
                .answer_token(token, &answer, self.clock.now())
                .map_err(answer_error)
        })
    }

    fn look<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, TaskLook> {
        Box::pin(async move {
            match self.store.token(token) {
                Ok(Some(row)) => Ok(look_at(&row, self.clock.now())),
                Ok(None) => Ok(TaskLook::Over("the task token does not exist".into())),
                Err(e) => Err(ChannelError::Unavailable(e.to_string())),
            }
        })
    }

    fn handler_env(&self) -> Vec<(String, String)> {
        vec![(
            "SFN_LOCAL_DB".into(),
            self.store.path().display().to_string(),
        )]
    }
}

impl ActivityChannel for StoreChannel {
    fn next_task<'a>(
        &'a self,
        activity_arn: &'a str,
        worker_name: Option<&'a str>,
    ) -> ChannelFuture<'a, Option<Assignment>> {
        Box::pin(async move {
            let until = self.clock.now() + ACTIVITY_WAIT.as_millis() as Millis;
            let mut seen = None;
            loop {
                // Try to take a task only when someone committed since the last try.
                let version = self.store.data_version().ok();
                if version.is_none() || version != seen {
                    seen = version;
                    let claimed = self
                        .store
                        .claim_activity_task(activity_arn, worker_name, self.clock.now())
                        .map_err(|e| ChannelError::Unavailable(e.to_string()))?;
                    if let Some(task) = claimed {
                        let row = self
                            .store
                            .token(&task.token)
                            .map_err(|e| ChannelError::Unavailable(e.to_string()))?;
                        return Ok(Some(match row {
                            Some(row) => Assignment::of_token(&row),
                            None => Assignment {
                                token: task.token,
                                input: task.input,
                                env: Vec::new(),
                                label: "activity task".into(),
                            },
                        }));
                    }
                }
                if self.clock.now() >= until {
                    return Ok(None);
                }
                tokio::time::sleep(ACTIVITY_POLL).await;
            }
        })
    }
}

/// How a handler's task ended, as far as the supervisor is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Exit 0; answered with `SendTaskSuccess`.
    Succeeded,
    /// Answered with `SendTaskFailure` (a non-zero exit, or stdout that is no task output).
    Failed {
        /// The error sent.
        error: String,
        /// The cause sent.
        cause: String,
    },
    /// The token was answered already, by the handler itself most likely: not answered twice.
    AnsweredByHandler,
    /// Killed by a signal (crashed, OOM-killed): no answer, as a dead worker gives none.
    Silent {
        /// The signal's number.
        signal: i32,
    },
    /// The task was over before the handler was: it was cancelled, its outcome discarded.
    Discarded {
        /// Why the task was over.
        why: String,
        /// Whether it took `SIGKILL`.
        killed: bool,
    },
    /// The answer could not be delivered.
    Undelivered(String),
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Succeeded => f.write_str("exited 0; answered with SendTaskSuccess"),
            Verdict::Failed { error, cause } => {
                let short: String = cause.chars().take(200).collect();
                write!(f, "answered with SendTaskFailure: {error}: {short}")
            }
            Verdict::AnsweredByHandler => {
                f.write_str("the task was answered already (by the handler itself); not answering twice")
            }
            Verdict::Silent { signal } => write!(
                f,
                "was killed by signal {signal}; no answer: the task times out by its HeartbeatSeconds (or TimeoutSeconds), as with a dead worker"
            ),
            Verdict::Discarded { why, killed } => write!(
                f,
                "was cancelled ({why}): SIGTERM{}; its outcome is discarded",
                if *killed { ", then SIGKILL" } else { "" }
            ),
            Verdict::Undelivered(why) => write!(f, "exited, but its answer was not delivered: {why}"),
        }
    }
}

/// A started handler, not yet supervised.
pub struct Spawned {
    child: tokio::process::Child,
    pid: u32,
    program: String,
    assignment: Assignment,
    /// A handler at work is the outside world at work: a virtual clock flows meanwhile.
    busy: crate::clock::Busy,
}

/// Starts `command` for `assignment`: its own process group, the input on stdin (written by
/// the supervisor), `SFN_TASK_TOKEN` and the assignment's and channel's variables.
pub fn spawn(
    command: &CommandLine,
    assignment: Assignment,
    channel_env: &[(String, String)],
) -> std::io::Result<Spawned> {
    let mut spawn = tokio::process::Command::new(&command.argv[0]);
    spawn
        .args(&command.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(channel_env.iter().map(|(k, v)| (k, v)))
        .envs(assignment.env.iter().map(|(k, v)| (k, v)))
        .env("SFN_TASK_TOKEN", &assignment.token)
        // Its own group: SIGTERM and SIGKILL reach whatever it started, and a Ctrl-C meant for
        // the runner does not reach it.
        .process_group(0);
    // Killed with its runner (`run`, `worker`), even by SIGKILL.
    crate::tasks::process::die_with_parent(&mut spawn);
    let child = spawn.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the handler exited before it could be watched"))?;
    Ok(Spawned {
        child,
        pid,
        program: command.argv[0].clone(),
        assignment,
        busy: crate::clock::Busy::external(),
    })
}

/// Where the supervisor is with the handler.
enum Phase {
    /// The task is the handler's.
    Working,
    /// The token was answered while the handler ran: no more beats; it has `kill_after` to
    /// exit before it is cancelled.
    Answered {
        /// When the grace ends.
        until: Millis,
    },
    /// The task is over: SIGTERM was sent at `since`.
    Cancelled {
        /// Why.
        why: String,
        /// SIGKILL is due then.
        kill_at: Millis,
        /// SIGKILL was sent.
        killed: bool,
    },
}

/// Says "no beats" once per runner for tasks without `HeartbeatSeconds`.
#[derive(Debug, Default)]
pub struct OnceNotice(Cell<bool>);

impl OnceNotice {
    /// Whether this is the first time.
    pub fn first(&self) -> bool {
        !self.0.replace(true)
    }
}

/// Reports from the supervisor (stderr lines of the handler, cancellations, verdicts).
pub type Notice = Rc<dyn Fn(&str)>;

impl Spawned {
    /// The handler's process id (also its process group's).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Supervises the handler to its end: beats, watches the task, cancels the handler when
    /// the task is over, and answers for it once. Returns what happened.
    pub async fn supervise(
        self,
        channel: &dyn TaskChannel,
        clock: &dyn Clock,
        options: ManagedOptions,
        no_beats: &OnceNotice,
        notice: Notice,
    ) -> Verdict {
        let Spawned {
            mut child,
            pid,
            program,
            assignment,
            busy: _busy,
        } = self;
        // Dropped before the handler was reaped (the runner is shutting down), the group gets
        // SIGTERM, SIGKILL after --kill-after: no handler outlives the supervision it relies on.
        let guard = GroupGuard::new(pid, options.kill_after);
        let token = assignment.token.as_str();
        let label = format!("handler '{program}' (pid {pid}) for {}", assignment.label);
        let kill_after_ms = options.kill_after.as_millis() as Millis;

        // Feed stdin, collect stdout (capped) and stderr (forwarded, tail kept) beside the loop.
        let stdin = child.stdin.take();
        let input = assignment.input.clone();
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A handler that does not read its input is fine: ignore a broken pipe.
                let _ = stdin.write_all(input.as_bytes()).await;
            }
        };
        let stdout = child.stdout.take();
        let collect_stdout = async move {
            let mut kept = Vec::new();
            let mut total = 0usize;
            if let Some(mut out) = stdout {
                let mut buf = [0u8; 8192];
                while let Ok(n) = out.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    total += n;
                    // Past the limit only the count matters: memory stays bounded.
                    if kept.len() <= MAX_OUTPUT_BYTES {
                        kept.extend_from_slice(&buf[..n]);
                    }
                }
            }
            (kept, total)
        };
        let stderr = child.stderr.take();
        let state_label = assignment.label.clone();
        let stderr_notice = notice.clone();
        let collect_stderr = async move {
            // Lines forwarded as they come (a very long one in pieces), the end kept.
            let mut tail = crate::tasks::command::Tail::new(STDERR_TAIL_BYTES);
            crate::tasks::command::read_stderr(stderr, &mut tail, |line| {
                stderr_notice(&format!("[{state_label}] {line}"))
            })
            .await;
            tail.text()
        };
        let io = futures_util::future::join3(feed, collect_stdout, collect_stderr);
        tokio::pin!(io);
        let mut io_done: Option<((), (Vec<u8>, usize), String)> = None;

        let mut phase = Phase::Working;
        let mut next_beat: Option<Millis> = None;
        let mut window_known = false;
        let started = clock.now();
        let status = loop {
            let now = clock.now();
            let tick = match (&phase, next_beat) {
                (Phase::Working, Some(b)) => (b - now).clamp(0, LOOK_EVERY.as_millis() as Millis),
                // The first look comes at once: it tells the heartbeat window.
                (Phase::Working, None) if !window_known => 0,
                _ => LOOK_EVERY.as_millis() as Millis,
            };
            tokio::select! {
                status = child.wait() => break status,
                done = &mut io, if io_done.is_none() => { io_done = Some(done); continue; }
                _ = clock.sleep_until(now + tick) => {}
            }
            let now = clock.now();
            let cancel = |why: String| {
                signal_group(pid, Signal::SIGTERM);
                notice(&format!("{label}: the task is over ({why}); sent SIGTERM"));
                Phase::Cancelled {
                    why,
                    kill_at: now + kill_after_ms,
                    killed: false,
                }
            };
            phase = match phase {
                Phase::Working => match channel.look(token).await {
                    Ok(TaskLook::Answered) => Phase::Answered {
                        until: now + kill_after_ms,
                    },
                    Ok(TaskLook::Over(why)) => cancel(why),
                    Ok(look) => {
                        let window = match look {
                            TaskLook::Open { heartbeat_window } => heartbeat_window,
                            // The channel cannot say: beats are also how the news comes.
                            _ => Some(BLIND_BEAT_EVERY * 3),
                        };
                        let mut phase = Phase::Working;
                        if options.heartbeat == HeartbeatMode::Auto {
                            match window {
                                None => {
                                    if !window_known && no_beats.first() {
                                        notice("a task with no HeartbeatSeconds gets no heartbeats: a crashed handler is noticed only by TimeoutSeconds");
                                    }
                                }
                                Some(w) => {
                                    let every =
                                        (w / 3).min(MAX_BEAT_EVERY).max(Duration::from_millis(1));
                                    let every = every.as_millis() as Millis;
                                    let due = *next_beat.get_or_insert(started + every);
                                    if now >= due {
                                        next_beat = Some(now + every);
                                        match channel.heartbeat(token).await {
                                            Ok(()) => {}
                                            Err(ChannelError::TaskOver(why)) => {
                                                // Refused because the handler just answered by
                                                // itself is not a cancellation.
                                                phase = match channel.look(token).await {
                                                    Ok(TaskLook::Answered) => Phase::Answered {
                                                        until: now + kill_after_ms,
                                                    },
                                                    _ => cancel(format!(
                                                        "a heartbeat was refused: {why}"
                                                    )),
                                                };
                                            }
                                            Err(
                                                e @ (ChannelError::Unavailable(_)
                                                | ChannelError::Refused { .. }),
                                            ) => {
                                                notice(&format!(
                                                    "{label}: a heartbeat failed: {e}"
                                                ));
                                            }
                                        }
                                    }
                                }
                            }
                        }
                        window_known = true;
                        phase
                    }
                    Err(ChannelError::TaskOver(why)) => cancel(why),
                    // Try again at the next tick (not at once: the channel may be down a while).
                    Err(ChannelError::Unavailable(_) | ChannelError::Refused { .. }) => {
                        window_known = true;
                        Phase::Working
                    }
                },
                Phase::Answered { until } if now >= until => cancel(
                    "its token was answered and the handler did not exit within --kill-after"
                        .into(),
                ),
                Phase::Cancelled {
                    why,
                    kill_at,
                    killed: false,
                } if now >= kill_at => {
                    signal_group(pid, Signal::SIGKILL);
                    notice(&format!(
                        "{label}: still running {} ms after SIGTERM; sent SIGKILL",
                        kill_after_ms
                    ));
                    Phase::Cancelled {
                        why,
                        kill_at,
                        killed: true,
                    }
                }
                other => other,
            };
        };
        // What the handler left running in its group ends with it (SIGTERM, SIGKILL after
        // --kill-after), as a `--task` command's does.
        guard.end();
        let status = match status {
            Ok(s) => s,
            Err(e) => {
                return Verdict::Undelivered(format!("the handler could not be waited for: {e}"))
            }
        };
        if status.signal().is_some() {
            // What a crashed handler started works for a task nobody will answer (and may hold
            // its pipes): end it with its leader.
            signal_group(pid, Signal::SIGKILL);
        }
        // The pipes close when the handler exits, unless something it started holds them: give
        // them a moment, then go on with what came.
        let (_, (stdout, stdout_len), stderr_tail) = match io_done {
            Some(done) => done,
            None => tokio::time::timeout(Duration::from_secs(1), &mut io)
                .await
                .unwrap_or_default(),
        };
        match phase {
            Phase::Cancelled { why, killed, .. } => return Verdict::Discarded { why, killed },
            Phase::Answered { .. } => return Verdict::AnsweredByHandler,
            Phase::Working => {}
        }
        if let Some(signal) = status.signal() {
            return Verdict::Silent { signal };
        }
        // Look once more before answering: the handler may have answered by itself, or the task
        // ended while it was exiting.
        match channel.look(token).await {
            Ok(TaskLook::Answered) => return Verdict::AnsweredByHandler,
            Ok(TaskLook::Over(why)) => return Verdict::Discarded { why, killed: false },
            _ => {}
        }
        let code = status.code().unwrap_or(-1);
        let (answer, verdict) = if code == 0 {
            match output_of(&program, &stdout, stdout_len) {
                Ok(text) => (TaskAnswer::Success(text), Verdict::Succeeded),
                Err(cause) => failure(HANDLER_FAILED.into(), cause),
            }
        } else {
            // Lambda's error shape too: the worker of a `lambda:invoke.waitForTaskToken`
            // state stands in for the function, whose failure AWS names by its errorType.
            let named = crate::tasks::lambda::function_error(&stderr_tail)
                .or_else(|| crate::tasks::command::error_from_stderr(&stderr_tail));
            match named {
                Some(e) => failure(
                    e.error.unwrap_or_else(|| HANDLER_FAILED.into()),
                    e.cause.unwrap_or_default(),
                ),
                None => {
                    let tail = stderr_tail.trim_end();
                    let cause = if tail.is_empty() {
                        format!("'{program}' exited with status {code}")
                    } else {
                        format!(
                            "'{program}' exited with status {code}; the end of its stderr:\n{tail}"
                        )
                    };
                    failure(HANDLER_FAILED.into(), cause)
                }
            }
        };
        match channel.answer(token, answer).await {
            Ok(()) => verdict,
            Err(ChannelError::TaskOver(why)) => Verdict::Discarded {
                why: format!("its answer was refused: {why}"),
                killed: false,
            },
            Err(e @ (ChannelError::Unavailable(_) | ChannelError::Refused { .. })) => {
                Verdict::Undelivered(e.to_string())
            }
        }
    }
}

/// `sfn-local worker`: takes an activity's tasks and runs a handler for each, up to
/// `concurrency` at once.
#[derive(Debug, Clone)]
pub struct ActivityWorker {
    /// The activity.
    pub activity_arn: String,
    /// Recorded in `ActivityStarted`.
    pub worker_name: Option<String>,
    /// The handler.
    pub command: CommandLine,
    /// How handlers are supervised.
    pub options: ManagedOptions,
    /// How many handlers run at once (at least 1).
    pub concurrency: usize,
    /// Stop after taking this many tasks (and finishing them).
    pub max_tasks: Option<u64>,
}

impl ActivityWorker {
    /// Takes tasks until `shutdown` resolves (or `max_tasks` were taken), then waits for the
    /// running handlers to finish. Returns how many tasks it took, or why the channel refused
    /// to hand out tasks at all (the activity does not exist, the credentials are refused).
    pub async fn run(
        &self,
        channel: &dyn ActivityChannel,
        clock: &dyn Clock,
        notice: Notice,
        shutdown: impl Future<Output = ()>,
    ) -> Result<u64, ChannelError> {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        let no_beats = OnceNotice::default();
        let mut running = FuturesUnordered::new();
        let mut taken = 0u64;
        let mut stopping = false;
        let mut refused = None;
        // After a failed poll, a pause (the handlers keep being supervised meanwhile).
        let mut pause_until: Option<tokio::time::Instant> = None;
        // The poll in flight. It is kept across a handler's end: over the API an abandoned
        // `GetActivityTask` may still be handed a task that nobody then runs.
        let mut poll: Option<ChannelFuture<'_, Option<Assignment>>> = None;
        let channel_env = channel.handler_env();
        tokio::pin!(shutdown);
        loop {
            let paused = pause_until.is_some_and(|t| tokio::time::Instant::now() < t);
            let can_take = !stopping
                && !paused
                && running.len() < self.concurrency.max(1)
                && self.max_tasks.is_none_or(|m| taken < m);
            if can_take && poll.is_none() {
                poll = Some(channel.next_task(&self.activity_arn, self.worker_name.as_deref()));
            }
            if poll.is_none() && !paused && running.is_empty() {
                break;
            }
            tokio::select! {
                _ = &mut shutdown, if !stopping => {
                    stopping = true;
                    // A poll in flight is dropped: stopping should not wait out a long poll.
                    // (A database claim is one transaction made inside a single poll.)
                    poll = None;
                    if !running.is_empty() {
                        notice(&format!(
                            "stopping: taking no new tasks; waiting for {} running handler(s)",
                            running.len()
                        ));
                    }
                }
                Some(()) = running.next(), if !running.is_empty() => {}
                _ = tokio::time::sleep_until(pause_until.unwrap_or_else(tokio::time::Instant::now)), if paused => {
                    pause_until = None;
                }
                got = async {
                    match poll.as_mut() {
                        Some(p) => p.await,
                        None => std::future::pending().await,
                    }
                }, if poll.is_some() => {
                    poll = None;
                    match got {
                        Ok(Some(task)) => {
                            taken += 1;
                            let token = task.token.clone();
                            let label = task.label.clone();
                            match spawn(&self.command, task, &channel_env) {
                                Ok(spawned) => {
                                    notice(&format!(
                                        "took a task for {label}; handler pid {}",
                                        spawned.pid()
                                    ));
                                    let notice = notice.clone();
                                    let no_beats = &no_beats;
                                    let program = &self.command.argv[0];
                                    let options = self.options;
                                    running.push(async move {
                                        let pid = spawned.pid();
                                        let verdict = spawned
                                            .supervise(channel, clock, options, no_beats, notice.clone())
                                            .await;
                                        notice(&format!(
                                            "handler '{program}' (pid {pid}) for {label} {verdict}"
                                        ));
                                    });
                                }
                                Err(e) => {
                                    let cause = format!("cannot start '{}': {e}", self.command.argv[0]);
                                    notice(&format!("{label}: {cause}"));
                                    let (answer, _) = failure(HANDLER_FAILED.into(), cause);
                                    let _ = channel.answer(&token, answer).await;
                                }
                            }
                        }
                        Ok(None) => {}
                        Err(e @ ChannelError::Refused { .. }) => {
                            notice(&format!("cannot take tasks: {e}; stopping"));
                            stopping = true;
                            refused = Some(e);
                        }
                        Err(e) => {
                            notice(&format!("cannot take a task: {e}; trying again in a second"));
                            pause_until = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                        }
                    }
                }
            }
        }
        match refused {
            Some(e) => Err(e),
            None => Ok(taken),
        }
    }
}

/// A `SendTaskFailure` within AWS's limits (error 256, cause 32,768 characters).
fn failure(error: String, cause: String) -> (TaskAnswer, Verdict) {
    let error: String = error.chars().take(256).collect();
    let n = cause.chars().count();
    let cause: String = if n > 32_768 {
        cause.chars().skip(n - 32_768).collect()
    } else {
        cause
    };
    (
        TaskAnswer::Failure {
            error: Some(error.clone()),
            cause: Some(cause.clone()),
        },
        Verdict::Failed { error, cause },
    )
}

/// The task output a handler's stdout gives: JSON (compact), `null` when empty; an error
/// naming what is wrong when it is not JSON or over 256 KiB.
pub fn output_of(program: &str, stdout: &[u8], total_len: usize) -> Result<String, String> {
    if total_len > MAX_OUTPUT_BYTES {
        return Err(format!(
            "the output of '{program}' is {total_len} bytes; a task output is at most {MAX_OUTPUT_BYTES} (256 KiB)"
        ));
    }
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Ok("null".into());
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the output of '{program}' is not JSON ({e}): {}",
            text.chars().take(200).collect::<String>()
        )
    })?;
    Ok(value.to_string())
}

/// Parses `--kill-after SECONDS` (fractions allowed).
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) {
        return Err(format!("'{text}' must be between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn stdout_is_the_output_or_a_failure_naming_why() {
        assert_eq!(output_of("h", b"", 0).unwrap(), "null");
        assert_eq!(output_of("h", b" {\"a\": 1}\n", 10).unwrap(), "{\"a\":1}");
        assert!(output_of("h", b"not json", 8)
            .unwrap_err()
            .contains("not JSON"));
        let big = vec![b' '; MAX_OUTPUT_BYTES + 1];
        assert!(output_of("h", &big, big.len())
            .unwrap_err()
            .contains("256 KiB"));
    }

    #[test]
    fn a_token_row_says_whether_the_task_is_still_open() {
        let row = TokenRecord {
            token: "t".into(),
            execution_arn: "e".into(),
            state_name: "S".into(),
            attempt: 0,
            kind: crate::store::TokenKind::Callback,
            activity_arn: None,
            status: TokenStatus::Started,
            input: "{}".into(),
            worker_name: None,
            created_at: 0,
            started_at: Some(0),
            timeout_seconds: Some(10),
            heartbeat_seconds: Some(3),
            timeout_at: Some(10_000),
            heartbeat_at: Some(3_000),
            heartbeat_ms: Some(3_000),
            output: None,
            error: None,
            cause: None,
            expired_by: None,
            virtual_clock: false,
        };
        assert_eq!(
            look_at(&row, 1_000),
            TaskLook::Open {
                heartbeat_window: Some(Duration::from_secs(3))
            }
        );
        assert!(matches!(look_at(&row, 3_000), TaskLook::Over(w) if w.contains("Heartbeat")));
        let answered = TokenRecord {
            status: TokenStatus::Succeeded,
            ..row.clone()
        };
        assert_eq!(look_at(&answered, 1_000), TaskLook::Answered);
        let closed = TokenRecord {
            status: TokenStatus::Closed,
            ..row
        };
        assert!(matches!(look_at(&closed, 1_000), TaskLook::Over(_)));
    }

    /// An in-memory task: what the supervisor sent, and a switch to end the task.
    #[derive(Default)]
    struct Recorder {
        beats: Cell<u32>,
        answers: RefCell<Vec<TaskAnswer>>,
        over: Cell<bool>,
    }

    impl TaskChannel for Recorder {
        fn heartbeat<'a>(&'a self, _: &'a str) -> ChannelFuture<'a, ()> {
            self.beats.set(self.beats.get() + 1);
            let over = self.over.get();
            Box::pin(async move {
                if over {
                    Err(ChannelError::TaskOver("TaskTimedOut".into()))
                } else {
                    Ok(())
                }
            })
        }
        fn answer<'a>(&'a self, _: &'a str, answer: TaskAnswer) -> ChannelFuture<'a, ()> {
            self.answers.borrow_mut().push(answer);
            Box::pin(async { Ok(()) })
        }
        fn look<'a>(&'a self, _: &'a str) -> ChannelFuture<'a, TaskLook> {
            let look = if self.over.get() {
                TaskLook::Over("stopped".into())
            } else {
                TaskLook::Open {
                    heartbeat_window: Some(Duration::from_millis(150)),
                }
            };
            Box::pin(async move { Ok(look) })
        }
    }

    /// A channel that cannot look at a task (the AWS API): only a refused beat says it is over.
    #[derive(Default)]
    struct Blind(Recorder);

    impl TaskChannel for Blind {
        fn heartbeat<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, ()> {
            self.0.heartbeat(token)
        }
        fn answer<'a>(&'a self, token: &'a str, answer: TaskAnswer) -> ChannelFuture<'a, ()> {
            self.0.answer(token, answer)
        }
        fn look<'a>(&'a self, _: &'a str) -> ChannelFuture<'a, TaskLook> {
            Box::pin(async { Ok(TaskLook::Unknown) })
        }
    }

    #[tokio::test]
    async fn on_a_blind_channel_a_refused_beat_cancels_the_handler() {
        let channel = Rc::new(Blind::default());
        let ender = {
            let channel = channel.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1200)).await;
                channel.0.over.set(true);
            }
        };
        let clock = crate::clock::SystemClock::new(1.0);
        let spawned = spawn(&sh("sleep 30"), assignment(), &[]).expect("spawn sh");
        let once = OnceNotice::default();
        let supervised = spawned.supervise(
            channel.as_ref(),
            &clock,
            ManagedOptions::default(),
            &once,
            Rc::new(|_| {}),
        );
        let (verdict, ()) = tokio::join!(supervised, ender);
        match verdict {
            Verdict::Discarded { why, killed } => {
                assert!(why.contains("heartbeat was refused"), "{why}");
                assert!(!killed, "sh exits on SIGTERM");
            }
            other => panic!("{other:?}"),
        }
        // Beats every 500 ms whatever the window (the 3 s a task without one would get means
        // one beat a second): some before the end, then the refused one.
        assert!(
            channel.0.beats.get() >= 2,
            "beats: {}",
            channel.0.beats.get()
        );
        assert!(channel.0.answers.borrow().is_empty());
    }

    fn assignment() -> Assignment {
        Assignment {
            token: "T1".into(),
            input: "{\"n\":1}".into(),
            env: vec![],
            label: "test".into(),
        }
    }

    fn sh(script: &str) -> CommandLine {
        CommandLine {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            database: None,
        }
    }

    async fn supervise(script: &str, channel: &Recorder, options: ManagedOptions) -> Verdict {
        let clock = crate::clock::SystemClock::new(1.0);
        let spawned = spawn(&sh(script), assignment(), &[]).expect("spawn sh");
        spawned
            .supervise(
                channel,
                &clock,
                options,
                &OnceNotice::default(),
                Rc::new(|_| {}),
            )
            .await
    }

    #[tokio::test]
    async fn a_handler_that_works_quietly_is_kept_alive_and_answered_for() {
        let channel = Recorder::default();
        let verdict = supervise("sleep 0.5; cat", &channel, ManagedOptions::default()).await;
        assert_eq!(verdict, Verdict::Succeeded);
        // 500 ms with a 150 ms window: a beat every 50 ms.
        assert!(channel.beats.get() >= 3, "beats: {}", channel.beats.get());
        assert_eq!(
            *channel.answers.borrow(),
            [TaskAnswer::Success("{\"n\":1}".into())]
        );
    }

    #[tokio::test]
    async fn manual_mode_sends_no_beats_and_failures_carry_stderr() {
        let channel = Recorder::default();
        let options = ManagedOptions {
            heartbeat: HeartbeatMode::Manual,
            ..ManagedOptions::default()
        };
        let verdict = supervise("sleep 0.3; echo boom >&2; exit 3", &channel, options).await;
        assert_eq!(channel.beats.get(), 0);
        match verdict {
            Verdict::Failed { error, cause } => {
                assert_eq!(error, "States.TaskFailed");
                assert!(
                    cause.contains("status 3") && cause.contains("boom"),
                    "{cause}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_handler_killed_by_a_signal_gets_no_answer() {
        let channel = Recorder::default();
        let verdict = supervise("kill -9 $$", &channel, ManagedOptions::default()).await;
        assert_eq!(verdict, Verdict::Silent { signal: 9 });
        assert!(channel.answers.borrow().is_empty());
    }

    #[tokio::test]
    async fn a_task_that_ends_cancels_a_handler_that_ignores_sigterm() {
        let channel = Rc::new(Recorder::default());
        let options = ManagedOptions {
            kill_after: Duration::from_millis(300),
            ..ManagedOptions::default()
        };
        let ender = {
            let channel = channel.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                channel.over.set(true);
            }
        };
        let (verdict, ()) = tokio::join!(
            supervise("trap '' TERM; sleep 30; echo '{}'", &channel, options),
            ender
        );
        match verdict {
            Verdict::Discarded { killed, .. } => assert!(killed),
            other => panic!("{other:?}"),
        }
        assert!(channel.answers.borrow().is_empty());
    }
}
