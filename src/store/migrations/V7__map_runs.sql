-- V7: distributed Map runs and their child executions, as DescribeMapRun, ListMapRuns and
-- ListExecutions (mapRunArn) show them, and the settings UpdateMapRun changes while a run goes.
--
-- `map_run_children` (V4) stays the engine's journal of finished children (what a resumed run
-- takes instead of running them again); these tables are what the API reads. Runs are keyed
-- by ARN, not tied to an `executions` row: a Map nested in a distributed Map's child runs
-- inside an execution that has no row of its own.
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
CREATE INDEX map_runs_by_execution ON map_runs (execution_arn, start_date);

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
CREATE INDEX map_run_executions_by_run ON map_run_executions (map_run_arn, item_index);
