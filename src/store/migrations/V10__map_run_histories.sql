-- V10: the histories of distributed Map runs' child executions, as GetExecutionHistory shows
-- them (on AWS each child is an execution with a history of its own).
--
-- Chunks as in `event_chunks` (same encoding), keyed by the child's ARN: a child has no
-- `executions` row (it is run by its parent's runner, never resumed alone). A child run again
-- (after a resume or a redrive) starts its history afresh.
CREATE TABLE map_run_event_chunks (
    execution_arn  TEXT    NOT NULL,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_arn, first_event_id)
) WITHOUT ROWID;
