//! Task tokens: issue one per attempt, hand it to a worker, and wait for the worker's answer
//! through the store.
//!
//! The answer comes from another process (`sfn-local send-task-success` and friends), which
//! commits to the same SQLite file, or through this one (serve's `SendTaskSuccess`). Nothing
//! polls per waiting execution: the store's one watcher ([`crate::store::Store::watch_token`])
//! wakes the waiter when its token's status changes, and the waiter then reads only its own
//! token. Deadlines are absolute times in the token row; the waiter's next one is an entry in
//! the clock's one timer ([`crate::clock`]), and when it comes the expiry is decided with a
//! conditional UPDATE, so a heartbeat that lands at the same moment either wins (and the
//! deadline moves) or loses (and gets `TaskTimedOut`), never both.

use crate::asl::error::{names, StatesError};
use crate::clock::{Clock, Millis, SystemClock};
use crate::store::{
    AnswerError, Expiry, NewTaskToken, Store, StoreError, TaskAnswer, TokenKind, TokenRecord,
    TokenStatus,
};
use crate::tasks::command::CommandLine;
use crate::tasks::managed::{
    self, Assignment, ManagedBindings, OnceNotice, StoreChannel, TaskChannel,
};
use crate::tasks::TaskRequest;
use base64::Engine as _;
use serde_json::Value;
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// The longest token AWS accepts.
pub const MAX_TOKEN_LEN: usize = 2048;

/// An opaque, unguessable task token: `T` and 256 random bits from the OS in URL-safe base64
/// (44 characters). The letter in front keeps a token from starting with `-`, which command
/// lines would take for an option.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskToken(String);

impl TaskToken {
    /// A fresh token from the OS's random source.
    pub fn generate() -> Result<TaskToken, StatesError> {
        let mut bytes = [0u8; 32];
        crate::random::fill(&mut bytes).map_err(|e| {
            StatesError::runtime(format!("cannot read random bytes for a task token: {e}"))
        })?;
        Ok(TaskToken(format!(
            "T{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        )))
    }

    /// A token issued earlier (read back from the store when an execution resumes).
    pub fn from_stored(text: String) -> TaskToken {
        TaskToken(text)
    }

    /// The token's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `text` has the shape of a token sfn-local issues: `T` and 43 characters of
    /// URL-safe base64 (or the 43 alone, as tokens were issued before the `T`). Anything else
    /// is AWS's `InvalidToken`, as AWS answers a token it cannot decode (`NoSuchTaskToken` in the
    /// corpus); a token of this shape that the database does not hold is `TaskDoesNotExist`.
    pub fn is_well_formed(text: &str) -> bool {
        let body = text.strip_prefix('T').unwrap_or(text);
        body.len() == 43
            && body
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }
}

/// Why a worker's answer to a task token (SendTaskSuccess, SendTaskFailure,
/// SendTaskHeartbeat) was refused, with AWS's error name and message. Both faces (the CLI's
/// `send-task-*` and serve's handlers) answer through [`answer_task`], so they refuse alike.
#[derive(Debug, thiserror::Error)]
pub enum AnswerRefusal {
    /// Not a token sfn-local could have issued (checked before the output, as AWS does).
    #[error("Invalid Token: 'Invalid token'")]
    InvalidToken,
    /// SendTaskSuccess's output is not JSON or is over 256 KiB.
    #[error("Invalid Output: '{0}'")]
    InvalidOutput(String),
    /// A well-formed token this database never issued.
    #[error("Task Does Not Exist: no task with this token exists")]
    TaskDoesNotExist,
    /// The token's task is closed (answered, timed out, stopped, its execution ended).
    #[error("Task Timed Out: 'Provided task does not exist anymore'")]
    TaskTimedOut,
    /// The database failed.
    #[error(transparent)]
    Store(StoreError),
}

impl AnswerRefusal {
    /// AWS's error name (the `__type` over HTTP, the CLI's `(...)`).
    pub fn code(&self) -> &'static str {
        match self {
            AnswerRefusal::InvalidToken => "InvalidToken",
            AnswerRefusal::InvalidOutput(_) => "InvalidOutput",
            AnswerRefusal::TaskDoesNotExist => "TaskDoesNotExist",
            AnswerRefusal::TaskTimedOut => "TaskTimedOut",
            AnswerRefusal::Store(_) => "ServiceFailure",
        }
    }
}

/// A worker's answer as sent: SendTaskSuccess's output still JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SentAnswer {
    /// SendTaskSuccess with its output as sent.
    Success(String),
    /// SendTaskFailure.
    Failure {
        /// Error name.
        error: Option<String>,
        /// Cause.
        cause: Option<String>,
    },
    /// SendTaskHeartbeat.
    Heartbeat,
}

/// Applies a worker's answer to `token` at `now` as AWS does: the token's shape first
/// (`InvalidToken`), then the output (`InvalidOutput`), then the task (`TaskDoesNotExist`,
/// `TaskTimedOut`).
pub fn answer_task(
    store: &Store,
    token: &str,
    answer: SentAnswer,
    now: Millis,
) -> Result<(), AnswerRefusal> {
    let answer = check_answer(token, answer)?;
    store
        .answer_token(token, &answer, now)
        .map_err(|e| match e {
            AnswerError::TaskDoesNotExist => AnswerRefusal::TaskDoesNotExist,
            AnswerError::TaskTimedOut => AnswerRefusal::TaskTimedOut,
            AnswerError::Store(e) => AnswerRefusal::Store(e),
        })
}

/// The checks of [`answer_task`] that need no database: the token's shape, then the output.
pub fn check_answer(token: &str, answer: SentAnswer) -> Result<TaskAnswer, AnswerRefusal> {
    if !TaskToken::is_well_formed(token) {
        return Err(AnswerRefusal::InvalidToken);
    }
    let answer = match answer {
        SentAnswer::Success(text) => {
            let limit = crate::limits::PAYLOAD_BYTES;
            if text.len() > limit {
                return Err(AnswerRefusal::InvalidOutput(format!(
                    "the output is {} bytes; at most {limit} (256 KiB) are allowed",
                    text.len()
                )));
            }
            let output: Value = serde_json::from_str(&text).map_err(|e| {
                AnswerRefusal::InvalidOutput(format!("the output is not valid JSON: {e}"))
            })?;
            // Stored compact, as the engine writes every payload.
            TaskAnswer::Success(output.to_string())
        }
        SentAnswer::Failure { error, cause } => TaskAnswer::Failure { error, cause },
        SentAnswer::Heartbeat => TaskAnswer::Heartbeat,
    };
    Ok(answer)
}

impl std::fmt::Display for TaskToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What changed about a token the engine waits on.
#[derive(Debug, Clone)]
pub enum TokenEvent {
    /// A worker took the activity task (`ActivityStarted`).
    Started {
        /// `--worker-name`, if it gave one.
        worker_name: Option<String>,
    },
    /// `send-task-success` with its output.
    Succeeded(Value),
    /// `send-task-failure` (error and cause as sent; both may be absent).
    Failed(StatesError),
    /// A clock ran out.
    TimedOut(Expiry),
    /// The token was closed under the attempt (the execution is being stopped).
    Closed,
}

/// Reports for the person running `run`: tokens issued, worker exits, worker stderr.
pub type NoticeFn = Rc<dyn Fn(&str)>;

pub use crate::tasks::command::WorkerWatch;

/// Issues task tokens for one execution and waits for their answers.
pub struct TokenBroker {
    store: Arc<Store>,
    execution_arn: String,
    /// `--task STATE=COMMAND` bindings: workers to start for `.waitForTaskToken` states.
    workers: HashMap<String, CommandLine>,
    /// `--worker STATE=COMMAND` bindings: managed handlers for `.waitForTaskToken` states.
    managed: ManagedBindings,
    handlers: HandlerSet,
    no_beats: Rc<OnceNotice>,
    notice: NoticeFn,
}

/// The supervisors of the managed handlers a runner started.
pub type HandlerSet = Rc<std::cell::RefCell<Vec<tokio::task::JoinHandle<()>>>>;

impl TokenBroker {
    /// A broker for `execution_arn`, which must already be stored.
    pub fn new(
        store: Arc<Store>,
        execution_arn: &str,
        workers: HashMap<String, CommandLine>,
        notice: NoticeFn,
    ) -> Self {
        TokenBroker {
            store,
            execution_arn: execution_arn.to_owned(),
            workers,
            managed: ManagedBindings::default(),
            handlers: HandlerSet::default(),
            no_beats: Rc::default(),
            notice,
        }
    }

    /// The execution's ARN.
    pub fn execution_arn(&self) -> &str {
        &self.execution_arn
    }

    /// Tells the person running `run`.
    pub fn notice(&self, message: &str) {
        (self.notice)(message)
    }

    /// The notice channel itself, for workers' stderr.
    pub fn notice_fn(&self) -> NoticeFn {
        self.notice.clone()
    }

    /// The command bound to a state, if any.
    pub fn worker_for(&self, state: &str) -> Option<&CommandLine> {
        self.workers.get(state)
    }

    /// Binds `--worker STATE=COMMAND` handlers; `handlers` collects their supervisors so the
    /// runner can wait for them before it exits.
    pub fn with_managed(mut self, bindings: ManagedBindings, handlers: HandlerSet) -> Self {
        self.managed = bindings;
        self.handlers = handlers;
        self
    }

    /// The managed handler bound to a state, if any.
    pub fn managed_for(&self, state: &str) -> Option<&CommandLine> {
        self.managed.commands.get(state)
    }

    /// Starts `command` as the managed handler of a callback attempt holding `token`, and its
    /// supervisor beside the execution (it outlives the attempt, to cancel the handler when the
    /// attempt is over). Returns the handler's pid. Must run inside the runner's `LocalSet`.
    pub fn start_managed(
        &self,
        command: &CommandLine,
        request: &TaskRequest,
        token: &str,
    ) -> Result<u32, StatesError> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new(1.0));
        let channel = StoreChannel::new(self.store.clone(), clock.clone());
        let assignment = Assignment::of_attempt(
            token,
            request.input.to_string(),
            &request.state_name,
            &request.execution_arn,
            request.retry_count,
        );
        let spawned = managed::spawn(command, assignment, &channel.handler_env()).map_err(|e| {
            StatesError::new(
                names::TASK_FAILED,
                format!("cannot start '{}': {e}", command.argv[0]),
            )
        })?;
        let pid = spawned.pid();
        let options = self.managed.options;
        let no_beats = self.no_beats.clone();
        let notice = self.notice.clone();
        let program = command.argv[0].clone();
        let label = format!("state '{}'", request.state_name);
        let handle = tokio::task::spawn_local(async move {
            let verdict = spawned
                .supervise(&channel, clock.as_ref(), options, &no_beats, notice.clone())
                .await;
            notice(&format!(
                "handler '{program}' (pid {pid}) for {label} {verdict}"
            ));
        });
        self.handlers.borrow_mut().push(handle);
        Ok(pid)
    }

    /// Stores a token; committed when this returns, so a worker may see it.
    pub fn issue(&self, token: NewTaskToken) -> Result<OpenToken<'_>, StatesError> {
        self.store.issue_token(&token).map_err(store_error)?;
        let text = TaskToken(token.token);
        Ok(OpenToken {
            broker: self,
            token: text,
            settled: Cell::new(false),
        })
    }

    /// The token an attempt issued before the execution's runner died, by the replay key of
    /// its scheduling event.
    pub fn find_issued(&self, replay_key: &str) -> Result<Option<TokenRecord>, StatesError> {
        self.store
            .token_by_key(&self.execution_arn, replay_key)
            .map_err(store_error)
    }

    /// Waits again on a token issued before a crash (its row, answer and deadlines are in the
    /// store already).
    pub fn reopen(&self, token: TaskToken) -> OpenToken<'_> {
        OpenToken {
            broker: self,
            token,
            settled: Cell::new(false),
        }
    }

    /// The store the broker's tokens are kept in.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Closes every open token of the execution (it ended); late answers get `TaskTimedOut`.
    pub fn close_all(&self, now: Millis) {
        let _ = self.store.close_tokens(&self.execution_arn, None, now);
    }
}

/// A token whose attempt is waiting. Dropping it before it settled (the attempt was aborted:
/// a sibling branch failed, the execution timed out or stopped) closes it in the store.
pub struct OpenToken<'a> {
    broker: &'a TokenBroker,
    token: TaskToken,
    settled: Cell<bool>,
}

impl OpenToken<'_> {
    /// The token.
    pub fn token(&self) -> &TaskToken {
        &self.token
    }

    /// Waits for the next thing that happens to the token: a worker taking it (activities,
    /// when `started_seen` is false), an answer, or an expiry. `worker`, if any, is polled
    /// meanwhile; when it ends, its report goes to the notice channel and it is dropped.
    ///
    /// Nothing here runs while nothing happens: the store's one watcher wakes this waiter when
    /// the token's status changes (see [`crate::store::Store::watch_token`]), and the token's
    /// next deadline is one entry in the clock's timer. When it comes, the expiry is decided
    /// by a conditional UPDATE: a heartbeat that moved the deadline meanwhile wins, and the
    /// waiter sleeps until the new one.
    pub async fn next_event(
        &self,
        clock: &dyn Clock,
        started_seen: bool,
        worker: &mut Option<WorkerWatch>,
    ) -> Result<TokenEvent, StatesError> {
        let store = &self.broker.store;
        let waiter = store
            .watch_token(self.token.as_str())
            .map_err(store_error)?;
        loop {
            // Armed before the row is read: a change committed in between still wakes us.
            let changed = waiter.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let row = store
                .token(self.token.as_str())
                .map_err(store_error)?
                .ok_or_else(|| StatesError::runtime("the task token vanished from the database"))?;
            if let Some(event) = settled_event(&row, started_seen)? {
                if !matches!(event, TokenEvent::Started { .. }) {
                    self.settled.set(true);
                }
                return Ok(event);
            }
            let now = clock.now();
            if row.heartbeat_to_rearm() {
                // A beat landed: on a virtual clock it counts from this runner's instant.
                store
                    .rearm_heartbeat(self.token.as_str(), now)
                    .map_err(store_error)?;
                continue;
            }
            let deadline = row.next_deadline();
            if deadline.is_some_and(|d| d <= now) {
                match store
                    .expire_token(self.token.as_str(), now)
                    .map_err(store_error)?
                {
                    Some(expiry) => {
                        self.settled.set(true);
                        return Ok(TokenEvent::TimedOut(expiry));
                    }
                    // A heartbeat or an answer won: read the row again.
                    None => continue,
                }
            }
            let timer = async {
                match deadline {
                    Some(d) => clock.sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(timer);
            loop {
                let worker_done = async {
                    match worker.as_mut() {
                        Some(w) => w.await,
                        None => std::future::pending().await,
                    }
                };
                let report = tokio::select! {
                    biased;
                    _ = &mut timer => break,
                    _ = &mut changed => break,
                    report = worker_done => report,
                };
                *worker = None;
                if !report.is_empty() {
                    self.broker.notice(&report);
                }
            }
        }
    }
}

impl Drop for OpenToken<'_> {
    fn drop(&mut self) {
        if !self.settled.get() {
            let now = crate::clock::system_now();
            let _ = self.broker.store.close_tokens(
                &self.broker.execution_arn,
                Some(self.token.as_str()),
                now,
            );
        }
    }
}

/// What a token row says, if it says something the waiter must act on.
fn settled_event(row: &TokenRecord, started_seen: bool) -> Result<Option<TokenEvent>, StatesError> {
    Ok(Some(match row.status {
        TokenStatus::Succeeded => {
            let text = row.output.as_deref().unwrap_or("null");
            let value = serde_json::from_str(text).map_err(|e| {
                StatesError::runtime(format!("the stored task output is not JSON: {e}"))
            })?;
            if !started_seen && row.kind == TokenKind::Activity {
                return Ok(Some(TokenEvent::Started {
                    worker_name: row.worker_name.clone(),
                }));
            }
            TokenEvent::Succeeded(value)
        }
        TokenStatus::Failed => {
            if !started_seen && row.kind == TokenKind::Activity {
                return Ok(Some(TokenEvent::Started {
                    worker_name: row.worker_name.clone(),
                }));
            }
            TokenEvent::Failed(StatesError {
                error: row.error.clone(),
                cause: row.cause.clone(),
                heartbeat: false,
            })
        }
        TokenStatus::TimedOut => TokenEvent::TimedOut(row.expired_by.unwrap_or(Expiry::Timeout)),
        TokenStatus::Closed => TokenEvent::Closed,
        TokenStatus::Started if !started_seen && row.kind == TokenKind::Activity => {
            TokenEvent::Started {
                worker_name: row.worker_name.clone(),
            }
        }
        TokenStatus::Started | TokenStatus::Scheduled => return Ok(None),
    }))
}

/// The States error a timed-out token raises: `States.Timeout`, marked when the heartbeat ran
/// out so that `States.HeartbeatTimeout` matches it in Retry and Catch.
pub fn expiry_error(expiry: Expiry) -> StatesError {
    match expiry {
        Expiry::Timeout => StatesError::timeout(),
        Expiry::Heartbeat => StatesError::heartbeat_timeout(),
    }
}

/// A store failure while waiting is the execution's runtime error: the database is the truth,
/// and without it the attempt cannot know its answer.
fn store_error(e: StoreError) -> StatesError {
    StatesError::new(names::RUNTIME, format!("task token store: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_url_safe() {
        let a = TaskToken::generate().expect("random");
        let b = TaskToken::generate().expect("random");
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 44);
        assert!(a.as_str().starts_with('T'));
        assert!(TaskToken::is_well_formed(a.as_str()));
        assert!(!TaskToken::is_well_formed(""));
        assert!(!TaskToken::is_well_formed("has space"));
        assert!(!TaskToken::is_well_formed(&"a".repeat(2049)));
        // The corpus's unknown token is not one sfn-local could issue: AWS's InvalidToken.
        assert!(!TaskToken::is_well_formed("NoSuchTaskToken"));
        assert!(TaskToken::is_well_formed(&"A".repeat(43)));
        assert!(!TaskToken::is_well_formed(&"A".repeat(64)));
    }
}
