-- V4: a distributed Map's finished child executions.
--
-- A distributed Map runs its iterations as child executions whose events stay out of the
-- parent's history, so replaying that history cannot tell which children had finished. Each
-- finished child is kept here, under its Map run's key, and a resumed Map run takes these
-- results instead of running the children again.
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
