-- The schema migrations V1 to V16 build, for a fresh database in one step.
-- Generated: UPDATE_SCHEMA=1 cargo test --lib fresh_schema

CREATE TABLE executions (
    id                 INTEGER PRIMARY KEY,
    execution_arn      TEXT    NOT NULL UNIQUE,
    name               TEXT    NOT NULL,
    state_machine_arn  TEXT    NOT NULL,
    state_machine_name TEXT    NOT NULL,
    definition         TEXT    NOT NULL,
    -- AWS spellings. PENDING_REDRIVE is allowed now so redrive needs no table rebuild later.
    status             TEXT    NOT NULL DEFAULT 'RUNNING'
                       CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'PENDING_REDRIVE')),
    input              TEXT    NOT NULL,
    output             TEXT,
    error              TEXT,
    cause              TEXT,
    start_date         INTEGER NOT NULL,
    stop_date          INTEGER,
    role_arn           TEXT,
    -- Absolute deadline from the machine's TimeoutSeconds, if any.
    timeout_at         INTEGER,
    -- Opaque to the store: where the execution is. Written in the same transaction as the events
    -- that moved it, so resume never sees one without the other.
    position           TEXT,
    last_event_id      INTEGER NOT NULL DEFAULT 0 CHECK (last_event_id >= 0),
    -- Lease: which runner drives this execution, and until when. Resume takes only lapsed leases.
    owner              TEXT,
    lease_expires_at   INTEGER
, stop_requested_at INTEGER, stop_error TEXT, stop_cause TEXT, run_config TEXT, redrive_count INTEGER NOT NULL DEFAULT 0 CHECK (redrive_count >= 0), redrive_date INTEGER, redrive_client_token TEXT, state_machine_version_arn TEXT, state_machine_alias_arn TEXT, takeover_event_id INTEGER, stalled_takeovers INTEGER NOT NULL DEFAULT 0);

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
, replay_key TEXT, virtual_clock INTEGER NOT NULL DEFAULT 0);

CREATE TABLE map_run_children (
    execution_id INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    -- One Map run (a retried Map state has several; a Map nested in a child has one per child):
    -- the engine's name for it, unique in the execution and the same on every replay.
    run_key      TEXT    NOT NULL,
    item_index   INTEGER NOT NULL,
    -- JSON: the child's name, input, start and stop, and its output or error and cause.
    child        TEXT    NOT NULL,
    PRIMARY KEY (execution_id, run_key, item_index)
) WITHOUT ROWID;

CREATE TABLE state_machines (
    arn           TEXT    PRIMARY KEY,
    name          TEXT    NOT NULL,
    type          TEXT    NOT NULL CHECK (type IN ('STANDARD', 'EXPRESS')),
    definition    TEXT    NOT NULL,
    role_arn      TEXT    NOT NULL,
    settings      TEXT    NOT NULL DEFAULT '{}',
    -- Changes with every update (AWS's revisionId).
    revision_id   TEXT    NOT NULL,
    creation_date INTEGER NOT NULL,
    update_date   INTEGER
);

CREATE TABLE state_machine_versions (
    arn               TEXT    PRIMARY KEY,
    state_machine_arn TEXT    NOT NULL,
    version           INTEGER NOT NULL CHECK (version >= 1),
    type              TEXT    NOT NULL,
    definition        TEXT    NOT NULL,
    role_arn          TEXT    NOT NULL,
    settings          TEXT    NOT NULL DEFAULT '{}',
    revision_id       TEXT    NOT NULL,
    description       TEXT,
    creation_date     INTEGER NOT NULL,
    UNIQUE (state_machine_arn, version)
);

CREATE TABLE state_machine_aliases (
    arn               TEXT    PRIMARY KEY,
    state_machine_arn TEXT    NOT NULL,
    name              TEXT    NOT NULL,
    description       TEXT,
    routing           TEXT    NOT NULL,
    creation_date     INTEGER NOT NULL,
    update_date       INTEGER
);

CREATE TABLE activities (
    arn           TEXT    PRIMARY KEY,
    name          TEXT    NOT NULL,
    settings      TEXT    NOT NULL DEFAULT '{}',
    creation_date INTEGER NOT NULL
);

CREATE TABLE tags (
    resource_arn TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    PRIMARY KEY (resource_arn, key)
);

CREATE TABLE map_runs (
    map_run_arn                  TEXT    PRIMARY KEY,
    -- The execution whose Map state started the run (DescribeMapRun's executionArn).
    execution_arn                TEXT    NOT NULL,
    -- The run's child machine, `...:stateMachine:MACHINE/LABEL`.
    state_machine_arn            TEXT    NOT NULL,
    status                       TEXT    NOT NULL
        CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED', 'ABORTED')),
    start_date                   INTEGER NOT NULL,
    stop_date                    INTEGER,
    -- 0: no limit (AWS's reading of an unset MaxConcurrency).
    max_concurrency              INTEGER NOT NULL DEFAULT 0,
    -- NULL while neither the Map nor UpdateMapRun set them (DescribeMapRun shows 0).
    tolerated_failure_percentage REAL,
    tolerated_failure_count      INTEGER,
    -- Items read and child executions planned (a batch is one execution of several items).
    item_total                   INTEGER NOT NULL DEFAULT 0,
    execution_total              INTEGER NOT NULL DEFAULT 0,
    -- What the ResultWriter wrote, in items and in executions.
    items_written                INTEGER NOT NULL DEFAULT 0,
    executions_written           INTEGER NOT NULL DEFAULT 0,
    redrive_count                INTEGER NOT NULL DEFAULT 0,
    redrive_date                 INTEGER
);

CREATE TABLE map_run_executions (
    execution_arn TEXT    PRIMARY KEY,
    map_run_arn   TEXT    NOT NULL REFERENCES map_runs (map_run_arn) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    -- The item (or batch) this execution processes, and how many items it holds.
    item_index    INTEGER NOT NULL,
    item_count    INTEGER NOT NULL DEFAULT 1,
    status        TEXT    NOT NULL,
    start_date    INTEGER NOT NULL,
    stop_date     INTEGER,
    input         TEXT    NOT NULL,
    output        TEXT,
    error         TEXT,
    cause         TEXT
);

CREATE TABLE wakeups (
    seq           INTEGER PRIMARY KEY,
    token         TEXT,
    execution_arn TEXT
);

CREATE TABLE runner_leases (
    owner      TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE "event_chunks" (
    execution_id   INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_id, first_event_id)
);

CREATE TABLE "map_run_event_chunks" (
    execution_arn  TEXT    NOT NULL,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_arn, first_event_id)
);

CREATE INDEX executions_by_status_start ON executions (status, start_date DESC, id DESC);

CREATE INDEX executions_by_start ON executions (start_date DESC, id DESC);

CREATE INDEX executions_by_name ON executions (name);

CREATE INDEX task_tokens_scheduled ON task_tokens (activity_arn, created_at) WHERE status = 'SCHEDULED';

CREATE INDEX task_tokens_by_execution ON task_tokens (execution_id, status);

CREATE INDEX task_tokens_by_replay_key ON task_tokens (execution_id, replay_key);

CREATE INDEX executions_running_by_lease ON executions (lease_expires_at) WHERE status = 'RUNNING';

CREATE INDEX map_runs_by_execution ON map_runs (execution_arn, start_date);

CREATE INDEX map_run_executions_by_run ON map_run_executions (map_run_arn, item_index);

CREATE INDEX executions_running_by_owner ON executions (owner, lease_expires_at)
WHERE status = 'RUNNING';

CREATE TRIGGER wake_token AFTER UPDATE OF status ON task_tokens
WHEN NEW.status <> OLD.status
BEGIN
    INSERT INTO wakeups (token) VALUES (NEW.token);
    DELETE FROM wakeups WHERE seq <= (SELECT max(seq) FROM wakeups) - 4096;
END;

CREATE TRIGGER wake_stop AFTER UPDATE OF stop_requested_at ON executions
WHEN NEW.stop_requested_at IS NOT NULL AND OLD.stop_requested_at IS NULL
BEGIN
    INSERT INTO wakeups (execution_arn) VALUES (NEW.execution_arn);
    DELETE FROM wakeups WHERE seq <= (SELECT max(seq) FROM wakeups) - 4096;
END;

CREATE TRIGGER wake_virtual_beat AFTER UPDATE OF heartbeat_at ON task_tokens
WHEN NEW.virtual_clock = 1 AND NEW.heartbeat_at IS NULL AND OLD.heartbeat_at IS NOT NULL
BEGIN
    INSERT INTO wakeups (token) VALUES (NEW.token);
    DELETE FROM wakeups WHERE seq <= (SELECT max(seq) FROM wakeups) - 4096;
END;
