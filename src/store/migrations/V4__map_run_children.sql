-- V4: a distributed Map's finished child executions.
--
-- A distributed Map runs its iterations as child executions whose events stay out of the
-- parent's history, so replaying that history cannot tell which children had finished. Each
-- finished child is kept here, under the parent's MapRunStarted event, and a resumed Map run
-- takes these results instead of running the children again.
CREATE TABLE map_run_children (
    execution_id INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    -- The parent's MapRunStarted event id: one Map run (a retried Map state has several).
    run_event_id INTEGER NOT NULL,
    item_index   INTEGER NOT NULL,
    -- JSON: the child's name, input, start and stop, and its output or error and cause.
    child        TEXT    NOT NULL,
    PRIMARY KEY (execution_id, run_event_id, item_index)
) WITHOUT ROWID;
