-- V2: task tokens (callbacks and activities) and stop requests.
--
-- A token row is the whole life of one attempt of a Task that waits for a worker. Deadlines are
-- absolute wall-clock milliseconds, already scaled by the runner's --time-scale, so any process can
-- compare them with its own clock. Every transition is a conditional UPDATE on `status`, so a
-- heartbeat, an answer and an expiry racing each other have exactly one winner.
CREATE TABLE task_tokens (
    token             TEXT    PRIMARY KEY,
    execution_id      INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    state_name        TEXT    NOT NULL,
    -- 0 for the first attempt, then the retry count.
    attempt           INTEGER NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('CALLBACK', 'ACTIVITY')),
    activity_arn      TEXT,
    -- SCHEDULED: an activity task no worker has taken yet. STARTED: a worker may answer.
    -- The rest are closed: any answer to them is TaskTimedOut.
    status            TEXT    NOT NULL
                      CHECK (status IN ('SCHEDULED', 'STARTED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CLOSED')),
    -- The effective input handed to the worker (JSON text).
    input             TEXT    NOT NULL,
    worker_name       TEXT,
    created_at        INTEGER NOT NULL,
    started_at        INTEGER,
    -- As declared (or resolved from a *SecondsPath), for people; NULL when not declared.
    timeout_seconds   INTEGER,
    heartbeat_seconds INTEGER,
    -- The heartbeat window in real (scaled) milliseconds: a heartbeat sets heartbeat_at = now + this.
    heartbeat_ms      INTEGER,
    timeout_at        INTEGER,
    heartbeat_at      INTEGER,
    output            TEXT,
    error             TEXT,
    cause             TEXT,
    answered_at       INTEGER,
    -- For TIMED_OUT: which clock ran out ('TIMEOUT' or 'HEARTBEAT').
    expired_by        TEXT
);

-- get-activity-task: the oldest waiting task of an activity.
CREATE INDEX task_tokens_scheduled ON task_tokens (activity_arn, created_at) WHERE status = 'SCHEDULED';
-- list-tasks, and closing an execution's open tokens.
CREATE INDEX task_tokens_by_execution ON task_tokens (execution_id, status);

-- stop-execution from another process: the request, picked up by the execution's runner.
ALTER TABLE executions ADD COLUMN stop_requested_at INTEGER;
ALTER TABLE executions ADD COLUMN stop_error TEXT;
ALTER TABLE executions ADD COLUMN stop_cause TEXT;
