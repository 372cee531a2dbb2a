//! Task tokens and stop requests: the rows other processes write to talk to a running execution.
//!
//! Everything here is a short `BEGIN IMMEDIATE` transaction on a side connection (not the batching
//! writer thread), because each caller needs its answer at once and some need to know whether
//! their conditional UPDATE won: a heartbeat and an expiry, or two answers, racing for one token
//! are decided by SQLite's write lock, and exactly one of them changes the row.
//!
//! A token is *open* while its status is `SCHEDULED` (an activity task no worker took yet) or
//! `STARTED`, its execution is `RUNNING` with no stop requested, and neither deadline has passed.
//! Any answer to a token that is not open is [`AnswerError::TaskTimedOut`], as on AWS.

use super::cached::CachedSql;
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};

use super::error::StoreError;
use super::events::{self, NewEvent};
use super::executions::{self, ExecutionStatus, Finish};

/// Who hands the token to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A `.waitForTaskToken` integration: the token goes out in the parameters.
    Callback,
    /// An activity: a worker takes the task with `get-activity-task`.
    Activity,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::Callback => "CALLBACK",
            TokenKind::Activity => "ACTIVITY",
        }
    }
}

/// Where a token is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus {
    /// An activity task waiting for a worker to take it.
    Scheduled,
    /// Handed out; waiting for the answer.
    Started,
    /// Answered with `send-task-success`.
    Succeeded,
    /// Answered with `send-task-failure`.
    Failed,
    /// A clock ran out.
    TimedOut,
    /// Its attempt or execution ended some other way (stopped, timed out, a sibling failed).
    Closed,
}

impl TokenStatus {
    /// The spelling in the database and in `list-tasks`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Scheduled => "SCHEDULED",
            TokenStatus::Started => "STARTED",
            TokenStatus::Succeeded => "SUCCEEDED",
            TokenStatus::Failed => "FAILED",
            TokenStatus::TimedOut => "TIMED_OUT",
            TokenStatus::Closed => "CLOSED",
        }
    }

    fn parse(s: &str) -> Option<TokenStatus> {
        Some(match s {
            "SCHEDULED" => TokenStatus::Scheduled,
            "STARTED" => TokenStatus::Started,
            "SUCCEEDED" => TokenStatus::Succeeded,
            "FAILED" => TokenStatus::Failed,
            "TIMED_OUT" => TokenStatus::TimedOut,
            "CLOSED" => TokenStatus::Closed,
            _ => return None,
        })
    }

    /// Whether a worker may still answer (status-wise; deadlines aside).
    pub fn is_open(self) -> bool {
        matches!(self, TokenStatus::Scheduled | TokenStatus::Started)
    }
}

/// Which clock ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `TimeoutSeconds`: the attempt's whole budget.
    Timeout,
    /// `HeartbeatSeconds`: the worker went silent.
    Heartbeat,
}

/// A token to store, before any worker can see it.
#[derive(Debug, Clone)]
pub struct NewTaskToken {
    /// The token text.
    pub token: String,
    /// Its execution.
    pub execution_arn: String,
    /// The Task state.
    pub state_name: String,
    /// 0 for the first attempt.
    pub attempt: u64,
    /// Callback or activity.
    pub kind: TokenKind,
    /// The activity's ARN, for activities.
    pub activity_arn: Option<String>,
    /// The effective input (JSON text).
    pub input: String,
    /// When the attempt started (ms since the epoch).
    pub created_at: i64,
    /// `TimeoutSeconds` as resolved.
    pub timeout_seconds: Option<u64>,
    /// `HeartbeatSeconds` as resolved.
    pub heartbeat_seconds: Option<u64>,
    /// The heartbeat window in real (scaled) milliseconds.
    pub heartbeat_ms: Option<i64>,
    /// The absolute (scaled) `TimeoutSeconds` deadline.
    pub timeout_at: Option<i64>,
    /// The replay key of the attempt's scheduling event, so a resumed execution finds it.
    pub replay_key: Option<String>,
    /// Its execution runs on a virtual clock: the deadlines are that clock's instants (see
    /// migration V13).
    pub virtual_clock: bool,
}

/// A stored token.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRecord {
    /// The token text.
    pub token: String,
    /// Its execution.
    pub execution_arn: String,
    /// The Task state.
    pub state_name: String,
    /// 0 for the first attempt.
    pub attempt: u64,
    /// Callback or activity.
    pub kind: TokenKind,
    /// The activity's ARN, for activities.
    pub activity_arn: Option<String>,
    /// Where it is in its life.
    pub status: TokenStatus,
    /// The effective input (JSON text).
    pub input: String,
    /// The worker that took an activity task.
    pub worker_name: Option<String>,
    /// When the attempt started.
    pub created_at: i64,
    /// When a worker took it (callbacks: at once).
    pub started_at: Option<i64>,
    /// `TimeoutSeconds` as resolved.
    pub timeout_seconds: Option<u64>,
    /// `HeartbeatSeconds` as resolved.
    pub heartbeat_seconds: Option<u64>,
    /// Absolute `TimeoutSeconds` deadline.
    pub timeout_at: Option<i64>,
    /// Absolute heartbeat deadline (moves with each heartbeat).
    pub heartbeat_at: Option<i64>,
    /// The heartbeat window in real (scaled) milliseconds: how often a managed worker beats.
    pub heartbeat_ms: Option<i64>,
    /// `send-task-success`'s output (JSON text).
    pub output: Option<String>,
    /// `send-task-failure`'s error.
    pub error: Option<String>,
    /// `send-task-failure`'s cause.
    pub cause: Option<String>,
    /// Which clock ran out, for `TimedOut`.
    pub expired_by: Option<Expiry>,
    /// Its execution runs on a virtual clock (see migration V13).
    pub virtual_clock: bool,
}

impl TokenRecord {
    /// True when a heartbeat (or an activity worker's taking it) reached a virtual clock's
    /// token: its runner re-arms the heartbeat deadline at its own instant.
    pub fn heartbeat_to_rearm(&self) -> bool {
        self.virtual_clock
            && self.status == TokenStatus::Started
            && self.heartbeat_ms.is_some()
            && self.heartbeat_at.is_none()
    }

    /// The earliest deadline still ahead of the token, if any.
    pub fn next_deadline(&self) -> Option<i64> {
        match (self.timeout_at, self.heartbeat_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// What a worker says about its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskAnswer {
    /// `send-task-success` with its output (JSON text, already checked).
    Success(String),
    /// `send-task-failure`.
    Failure {
        /// Error name.
        error: Option<String>,
        /// Cause.
        cause: Option<String>,
    },
    /// `send-task-heartbeat`.
    Heartbeat,
}

/// Why an answer was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// No such token in this database.
    #[error("TaskDoesNotExist: no task with this token exists in this database")]
    TaskDoesNotExist,
    /// The token exists but its task is closed (answered, timed out, stopped, ended).
    #[error("TaskTimedOut: the task token has either expired or the task associated with the token has already been closed")]
    TaskTimedOut,
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A task a worker took with `get-activity-task`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityTask {
    /// The token to answer with.
    pub token: String,
    /// The task's input (JSON text).
    pub input: String,
}

/// A stop asked for by `stop-execution`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopRequest {
    /// When it was asked for.
    pub requested_at: i64,
    /// `--error`.
    pub error: Option<String>,
    /// `--cause`.
    pub cause: Option<String>,
}

/// What `stop-execution` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopOutcome {
    /// The stop is recorded and the execution's open tokens are closed; its runner acts on it.
    Requested {
        /// The execution's ARN.
        execution_arn: String,
    },
    /// The execution had already ended.
    AlreadyEnded(ExecutionStatus),
}

/// "The token's execution is running and nobody asked it to stop." Correlated, so it reads the
/// token's one execution row: `execution_id IN (SELECT id ... WHERE status = 'RUNNING')` built
/// the list of every running execution first, 40 ms per answer with 10,000 waiting.
const EXECUTION_LIVE: &str = "EXISTS (SELECT 1 FROM executions e \
     WHERE e.id = task_tokens.execution_id AND e.status = 'RUNNING' \
     AND e.stop_requested_at IS NULL)";

/// "No deadline of the token has passed at :now." A virtual clock's token is open until its
/// runner closes it: :now, another process's time, says nothing about that clock.
const BEFORE_DEADLINES: &str = "(virtual_clock = 1 OR ((timeout_at IS NULL OR timeout_at > :now) \
     AND (heartbeat_at IS NULL OR heartbeat_at > :now)))";

/// The heartbeat deadline after a beat at `now`: a virtual clock's runner re-arms it.
const HEARTBEAT_AFTER_BEAT: &str = "CASE WHEN heartbeat_ms IS NULL OR virtual_clock = 1 \
     THEN NULL ELSE :now + heartbeat_ms END";

const TOKEN_COLUMNS: &str = "t.token, e.execution_arn, t.state_name, t.attempt, t.kind, \
     t.activity_arn, t.status, t.input, t.worker_name, t.created_at, t.started_at, \
     t.timeout_seconds, t.heartbeat_seconds, t.timeout_at, t.heartbeat_at, t.output, t.error, \
     t.cause, t.expired_by, t.heartbeat_ms, t.virtual_clock";

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<TokenRecord> {
    let bad = |i: usize, s: String| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("unknown value {s:?}").into(),
        )
    };
    let kind: String = row.get(4)?;
    let kind = match kind.as_str() {
        "CALLBACK" => TokenKind::Callback,
        "ACTIVITY" => TokenKind::Activity,
        _ => return Err(bad(4, kind)),
    };
    let status: String = row.get(6)?;
    let status = TokenStatus::parse(&status).ok_or_else(|| bad(6, status.clone()))?;
    let expired_by: Option<String> = row.get(18)?;
    Ok(TokenRecord {
        token: row.get(0)?,
        execution_arn: row.get(1)?,
        state_name: row.get(2)?,
        attempt: row.get::<_, i64>(3)?.max(0) as u64,
        kind,
        activity_arn: row.get(5)?,
        status,
        input: row.get(7)?,
        worker_name: row.get(8)?,
        created_at: row.get(9)?,
        started_at: row.get(10)?,
        timeout_seconds: row.get::<_, Option<i64>>(11)?.map(|n| n.max(0) as u64),
        heartbeat_seconds: row.get::<_, Option<i64>>(12)?.map(|n| n.max(0) as u64),
        timeout_at: row.get(13)?,
        heartbeat_at: row.get(14)?,
        heartbeat_ms: row.get(19)?,
        virtual_clock: row.get::<_, i64>(20)? != 0,
        output: row.get(15)?,
        error: row.get(16)?,
        cause: row.get(17)?,
        expired_by: match expired_by.as_deref() {
            Some("HEARTBEAT") => Some(Expiry::Heartbeat),
            Some(_) => Some(Expiry::Timeout),
            None => None,
        },
    })
}

pub(crate) fn insert(tx: &Transaction<'_>, t: &NewTaskToken) -> rusqlite::Result<bool> {
    // A callback's worker has the token as soon as it is committed: its clocks start now. An
    // activity's heartbeat clock starts when a worker takes it.
    let (status, started_at, heartbeat_at) = match t.kind {
        TokenKind::Callback => (
            TokenStatus::Started,
            Some(t.created_at),
            t.heartbeat_ms.map(|ms| t.created_at + ms),
        ),
        TokenKind::Activity => (TokenStatus::Scheduled, None, None),
    };
    let n = tx.execute_cached(
        "INSERT INTO task_tokens (token, execution_id, state_name, attempt, kind, activity_arn, \
         status, input, created_at, started_at, timeout_seconds, heartbeat_seconds, heartbeat_ms, \
         timeout_at, heartbeat_at, replay_key, virtual_clock) \
         SELECT ?1, id, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17 \
         FROM executions WHERE execution_arn = ?2",
        params![
            t.token,
            t.execution_arn,
            t.state_name,
            t.attempt as i64,
            t.kind.as_str(),
            t.activity_arn,
            status.as_str(),
            t.input,
            t.created_at,
            started_at,
            t.timeout_seconds.map(|n| n as i64),
            t.heartbeat_seconds.map(|n| n as i64),
            t.heartbeat_ms,
            t.timeout_at,
            heartbeat_at,
            t.replay_key,
            t.virtual_clock,
        ],
    )?;
    Ok(n == 1)
}

/// The token an attempt of a resumed execution issued before the crash, by replay key.
pub(crate) fn get_by_key(
    conn: &Connection,
    execution_arn: &str,
    replay_key: &str,
) -> rusqlite::Result<Option<TokenRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM task_tokens t JOIN executions e ON e.id = t.execution_id \
         WHERE e.execution_arn = ?1 AND t.replay_key = ?2 ORDER BY t.rowid DESC LIMIT 1"
    ))?
    .query_row([execution_arn, replay_key], record_from_row)
    .optional()
}

pub(crate) fn get(conn: &Connection, token: &str) -> rusqlite::Result<Option<TokenRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM task_tokens t JOIN executions e ON e.id = t.execution_id \
         WHERE t.token = ?1"
    ))?
    .query_row([token], record_from_row)
    .optional()
}

/// Applies an answer if the token is open; `Ok(false)` if it is not (or does not exist).
pub(crate) fn answer(
    tx: &Transaction<'_>,
    token: &str,
    answer: &TaskAnswer,
    now: i64,
) -> rusqlite::Result<bool> {
    let open = format!(
        "token = :token AND status IN ('SCHEDULED', 'STARTED') AND {EXECUTION_LIVE} \
         AND {BEFORE_DEADLINES}"
    );
    let n = match answer {
        TaskAnswer::Success(output) => tx.execute_cached(
            &format!(
                "UPDATE task_tokens SET status = 'SUCCEEDED', output = :output, \
                 answered_at = :now, started_at = coalesce(started_at, :now) WHERE {open}"
            ),
            rusqlite::named_params! {":token": token, ":output": output, ":now": now},
        )?,
        TaskAnswer::Failure { error, cause } => tx.execute_cached(
            &format!(
                "UPDATE task_tokens SET status = 'FAILED', error = :error, cause = :cause, \
                 answered_at = :now, started_at = coalesce(started_at, :now) WHERE {open}"
            ),
            rusqlite::named_params! {":token": token, ":error": error, ":cause": cause, ":now": now},
        )?,
        // The conditional UPDATE is the race's referee: an expiry that committed first made the
        // row closed, and this matches nothing.
        TaskAnswer::Heartbeat => tx.execute_cached(
            &format!(
                "UPDATE task_tokens SET heartbeat_at = {HEARTBEAT_AFTER_BEAT} \
                 WHERE {open} AND status = 'STARTED'"
            ),
            rusqlite::named_params! {":token": token, ":now": now},
        )?,
    };
    Ok(n == 1)
}

pub(crate) fn exists(conn: &Connection, token: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM task_tokens WHERE token = ?1")?
        .query_row([token], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

/// Closes the token as timed out if one of its deadlines has passed at `now` and it is still
/// open. Returns which clock ran out, or `None` if it was not open or no deadline has passed.
pub(crate) fn expire(
    tx: &Transaction<'_>,
    token: &str,
    now: i64,
) -> rusqlite::Result<Option<Expiry>> {
    let by: Option<String> = tx
        .prepare_cached(
            "UPDATE task_tokens SET status = 'TIMED_OUT', answered_at = ?2, \
             expired_by = CASE WHEN timeout_at IS NOT NULL AND timeout_at <= ?2 THEN 'TIMEOUT' \
             ELSE 'HEARTBEAT' END \
             WHERE token = ?1 AND status IN ('SCHEDULED', 'STARTED') \
             AND ((timeout_at IS NOT NULL AND timeout_at <= ?2) \
                  OR (heartbeat_at IS NOT NULL AND heartbeat_at <= ?2)) \
             RETURNING expired_by",
        )?
        .query_row(params![token, now], |row| row.get(0))
        .optional()?;
    Ok(by.map(|b| {
        if b == "HEARTBEAT" {
            Expiry::Heartbeat
        } else {
            Expiry::Timeout
        }
    }))
}

/// Arms a virtual clock's token's heartbeat deadline at its runner's `now` after a beat.
/// False when there was nothing to re-arm (an answer or an expiry came first).
pub(crate) fn rearm_heartbeat(
    tx: &Transaction<'_>,
    token: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let n = tx
        .prepare_cached(
            "UPDATE task_tokens SET heartbeat_at = ?2 + heartbeat_ms WHERE token = ?1 \
             AND virtual_clock = 1 AND status = 'STARTED' AND heartbeat_ms IS NOT NULL \
             AND heartbeat_at IS NULL",
        )?
        .execute(params![token, now])?;
    Ok(n == 1)
}

/// Gives the oldest waiting task of an activity to a worker.
pub(crate) fn claim(
    tx: &Transaction<'_>,
    activity_arn: &str,
    worker_name: Option<&str>,
    now: i64,
) -> rusqlite::Result<Option<ActivityTask>> {
    tx.prepare_cached(&format!(
        "UPDATE task_tokens SET status = 'STARTED', worker_name = ?2, started_at = ?3, \
         heartbeat_at = CASE WHEN heartbeat_ms IS NULL OR virtual_clock = 1 THEN NULL \
             ELSE ?3 + heartbeat_ms END \
         WHERE token = (SELECT token FROM task_tokens WHERE activity_arn = ?1 \
             AND status = 'SCHEDULED' AND {} \
             AND (virtual_clock = 1 OR timeout_at IS NULL OR timeout_at > ?3) \
             ORDER BY created_at, rowid LIMIT 1) \
         RETURNING token, input",
        EXECUTION_LIVE
    ))?
    .query_row(params![activity_arn, worker_name, now], |row| {
        Ok(ActivityTask {
            token: row.get(0)?,
            input: row.get(1)?,
        })
    })
    .optional()
}

/// Closes an execution's open tokens (or just one of them).
pub(crate) fn close(
    tx: &Transaction<'_>,
    execution_arn: &str,
    only: Option<&str>,
    now: i64,
) -> rusqlite::Result<usize> {
    tx.execute_cached(
        "UPDATE task_tokens SET status = 'CLOSED', answered_at = ?3 \
         WHERE execution_id = (SELECT id FROM executions WHERE execution_arn = ?1) \
         AND status IN ('SCHEDULED', 'STARTED') AND (?2 IS NULL OR token = ?2)",
        params![execution_arn, only, now],
    )
}

/// Open tokens, oldest first, of one execution or all.
pub(crate) fn list_open(
    conn: &Connection,
    execution_arn: Option<&str>,
) -> rusqlite::Result<Vec<TokenRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM task_tokens t JOIN executions e ON e.id = t.execution_id \
         WHERE t.status IN ('SCHEDULED', 'STARTED') AND e.status = 'RUNNING' \
         AND (?1 IS NULL OR e.execution_arn = ?1) ORDER BY t.created_at, t.rowid"
    ))?;
    let rows = stmt.query_map([execution_arn], record_from_row)?;
    rows.collect()
}

/// Records a stop request and closes the execution's open tokens, in one transaction.
pub(crate) fn request_stop(
    tx: &Transaction<'_>,
    execution_arn: &str,
    error: Option<&str>,
    cause: Option<&str>,
    now: i64,
) -> rusqlite::Result<Option<StopOutcome>> {
    let row: Option<(String, String)> = tx
        .query_row_cached(
            "SELECT execution_arn, status FROM executions WHERE execution_arn = ?1",
            [execution_arn],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let Some((arn, status)) = row else {
        return Ok(None);
    };
    let status: ExecutionStatus = status.parse().unwrap_or(ExecutionStatus::Running);
    if status != ExecutionStatus::Running {
        return Ok(Some(StopOutcome::AlreadyEnded(status)));
    }
    // A second request keeps the first one's error and cause: the runner may be acting on it.
    tx.execute_cached(
        "UPDATE executions SET stop_requested_at = ?2, stop_error = ?3, stop_cause = ?4 \
         WHERE execution_arn = ?1 AND stop_requested_at IS NULL",
        params![arn, now, error, cause],
    )?;
    close(tx, &arn, None, now)?;
    Ok(Some(StopOutcome::Requested { execution_arn: arn }))
}

pub(crate) fn stop_request(
    conn: &Connection,
    execution_arn: &str,
) -> rusqlite::Result<Option<StopRequest>> {
    conn.prepare_cached(
        "SELECT stop_requested_at, stop_error, stop_cause FROM executions \
         WHERE execution_arn = ?1 AND stop_requested_at IS NOT NULL",
    )?
    .query_row([execution_arn], |row| {
        Ok(StopRequest {
            requested_at: row.get(0)?,
            error: row.get(1)?,
            cause: row.get(2)?,
        })
    })
    .optional()
}

/// How an execution whose runner is gone is ended here.
pub(crate) struct UnattendedEnd {
    /// Its last event.
    pub event_type: &'static str,
    /// Whether that event points at the event before it (else at nothing).
    pub after_last: bool,
    /// The event's details (JSON).
    pub details: Option<String>,
    /// How it stopped.
    pub finish: Finish,
}

/// Ends a running execution whose runner is gone: appends its last event and records how it
/// stopped, in one transaction. `false` if it was not running.
pub(crate) fn end_unattended(
    tx: &Transaction<'_>,
    execution_arn: &str,
    end: &UnattendedEnd,
) -> rusqlite::Result<bool> {
    let Some(head) = executions::write_head(tx, execution_arn)? else {
        return Ok(false);
    };
    if head.status != "RUNNING" {
        return Ok(false);
    }
    let now = end.finish.stop_date_ms;
    let event = NewEvent {
        id: head.last_event_id + 1,
        previous_event_id: if end.after_last {
            head.last_event_id
        } else {
            0
        },
        timestamp_ms: now,
        event_type: end.event_type.into(),
        replay_key: None,
        details: end.details.clone(),
    };
    events::insert_all(tx, &[(head.id, &event)])?;
    executions::update_head(tx, head.id, event.id, None)?;
    executions::finish(tx, head.id, &end.finish)?;
    close(tx, execution_arn, None, now)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use crate::store::{
        AnswerError, Expiry, NewExecution, NewTaskToken, Store, StoreOptions, TaskAnswer,
        TokenKind, TokenStatus,
    };
    use std::sync::Arc;

    const ARN: &str = "arn:aws:states:us-east-1:123456789012:execution:M:e";

    fn store(dir: &tempfile::TempDir) -> Store {
        Store::open(dir.path().join("t.db"), StoreOptions::default()).expect("open")
    }

    fn with_execution(dir: &tempfile::TempDir) -> Store {
        let s = store(dir);
        s.create_execution(NewExecution::bare(ARN))
            .wait_blocking()
            .expect("create");
        s
    }

    fn callback(token: &str, created_at: i64) -> NewTaskToken {
        NewTaskToken {
            token: token.into(),
            execution_arn: ARN.into(),
            state_name: "Work".into(),
            attempt: 0,
            kind: TokenKind::Callback,
            activity_arn: None,
            input: "{}".into(),
            created_at,
            timeout_seconds: Some(10),
            heartbeat_seconds: Some(1),
            heartbeat_ms: Some(100),
            timeout_at: Some(created_at + 1_000),
            replay_key: None,
            virtual_clock: false,
        }
    }

    #[test]
    fn a_heartbeat_moves_the_deadline_and_an_expiry_closes_the_token() {
        let dir = tempfile::tempdir().expect("dir");
        let s = with_execution(&dir);
        s.issue_token(&callback("t1", 1_000)).expect("issue");
        assert_eq!(
            s.expire_token("t1", 1_099).expect("expire"),
            None,
            "not due yet"
        );
        s.answer_token("t1", &TaskAnswer::Heartbeat, 1_099)
            .expect("heartbeat");
        assert_eq!(
            s.token("t1").expect("read").expect("row").heartbeat_at,
            Some(1_199)
        );
        assert_eq!(s.expire_token("t1", 1_150).expect("expire"), None);
        assert_eq!(
            s.expire_token("t1", 1_199).expect("expire"),
            Some(Expiry::Heartbeat)
        );
        assert!(matches!(
            s.answer_token("t1", &TaskAnswer::Heartbeat, 1_199),
            Err(AnswerError::TaskTimedOut)
        ));
        // TimeoutSeconds wins over heartbeats however often they come.
        s.issue_token(&callback("t2", 1_000)).expect("issue");
        for now in (1_050..2_000).step_by(50) {
            s.answer_token("t2", &TaskAnswer::Heartbeat, now)
                .expect("heartbeat");
        }
        assert_eq!(
            s.expire_token("t2", 2_000).expect("expire"),
            Some(Expiry::Timeout)
        );
        let row = s.token("t2").expect("read").expect("row");
        assert_eq!(row.status, TokenStatus::TimedOut);
        assert_eq!(row.expired_by, Some(Expiry::Timeout));
    }

    #[test]
    fn a_heartbeat_racing_an_expiry_has_exactly_one_winner() {
        let dir = tempfile::tempdir().expect("dir");
        let s = with_execution(&dir);
        let n = 40;
        for i in 0..n {
            s.issue_token(&callback(&format!("race-{i}"), 1_000))
                .expect("issue");
        }
        // Two stores: two connections, like a worker process and the runner.
        let worker = Arc::new(store(&dir));
        let runner = Arc::new(store(&dir));
        // Both are eligible: the heartbeat lands before its deadline, the expiry at it.
        let w = {
            let worker = worker.clone();
            std::thread::spawn(move || {
                (0..n)
                    .map(|i| {
                        worker
                            .answer_token(&format!("race-{i}"), &TaskAnswer::Heartbeat, 1_099)
                            .is_ok()
                    })
                    .collect::<Vec<bool>>()
            })
        };
        let r = {
            let runner = runner.clone();
            std::thread::spawn(move || {
                (0..n)
                    .map(|i| {
                        runner
                            .expire_token(&format!("race-{i}"), 1_100)
                            .expect("expire")
                            .is_some()
                    })
                    .collect::<Vec<bool>>()
            })
        };
        let (beats, expiries) = (w.join().expect("worker"), r.join().expect("runner"));
        for i in 0..n {
            assert!(
                beats[i] ^ expiries[i],
                "token {i}: heartbeat {} expiry {}",
                beats[i],
                expiries[i]
            );
            let row = s.token(&format!("race-{i}")).expect("read").expect("row");
            assert_eq!(row.status == TokenStatus::TimedOut, expiries[i]);
        }
    }

    #[test]
    fn late_and_second_answers_are_task_timed_out() {
        let dir = tempfile::tempdir().expect("dir");
        let s = with_execution(&dir);
        let ok = TaskAnswer::Success("{}".into());
        let fail = TaskAnswer::Failure {
            error: Some("E".into()),
            cause: None,
        };
        assert!(matches!(
            s.answer_token("nope", &ok, 0),
            Err(AnswerError::TaskDoesNotExist)
        ));
        s.issue_token(&callback("a", 1_000)).expect("issue");
        s.answer_token("a", &ok, 1_010).expect("first answer");
        for second in [&ok, &fail, &TaskAnswer::Heartbeat] {
            assert!(matches!(
                s.answer_token("a", second, 1_020),
                Err(AnswerError::TaskTimedOut)
            ));
        }
        assert_eq!(
            s.token("a").expect("read").expect("row").output.as_deref(),
            Some("{}")
        );
        // Past a deadline the answer is late even before the runner acted on the expiry.
        s.issue_token(&callback("b", 1_000)).expect("issue");
        assert!(matches!(
            s.answer_token("b", &ok, 1_100),
            Err(AnswerError::TaskTimedOut)
        ));
        // Closed with its attempt, or by a stop request.
        s.issue_token(&callback("c", 1_000)).expect("issue");
        s.close_tokens(ARN, Some("c"), 1_001).expect("close");
        assert!(matches!(
            s.answer_token("c", &ok, 1_002),
            Err(AnswerError::TaskTimedOut)
        ));
        s.issue_token(&callback("d", 1_000)).expect("issue");
        s.request_stop(ARN, None, None, 1_001).expect("stop");
        assert!(matches!(
            s.answer_token("d", &ok, 1_002),
            Err(AnswerError::TaskTimedOut)
        ));
        assert_eq!(
            s.token("d").expect("read").expect("row").status,
            TokenStatus::Closed
        );
    }

    #[test]
    fn activity_tasks_go_to_one_worker_oldest_first() {
        let dir = tempfile::tempdir().expect("dir");
        let s = with_execution(&dir);
        let act = "arn:aws:states:us-east-1:123456789012:activity:a";
        for (token, at) in [("second", 2_000), ("first", 1_000)] {
            s.issue_token(&NewTaskToken {
                kind: TokenKind::Activity,
                activity_arn: Some(act.into()),
                timeout_at: Some(at + 10_000),
                ..callback(token, at)
            })
            .expect("issue");
        }
        // Not taken yet: no heartbeat clock.
        assert_eq!(
            s.token("first").expect("read").expect("row").heartbeat_at,
            None
        );
        let got = s.claim_activity_task(act, Some("w"), 3_000).expect("claim");
        assert_eq!(got.map(|t| t.token).as_deref(), Some("first"));
        let row = s.token("first").expect("read").expect("row");
        assert_eq!(
            (row.status, row.heartbeat_at),
            (TokenStatus::Started, Some(3_100))
        );
        assert_eq!(row.worker_name.as_deref(), Some("w"));
        let got = s.claim_activity_task(act, None, 3_000).expect("claim");
        assert_eq!(got.map(|t| t.token).as_deref(), Some("second"));
        assert_eq!(
            s.claim_activity_task(act, None, 3_000).expect("claim"),
            None
        );
    }
}
