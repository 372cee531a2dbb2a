-- V12: history chunks in rowid tables.
--
-- V1 and V10 kept chunks in WITHOUT ROWID tables, whose b-tree holds the whole row. A chunk is
-- up to 1 MiB, far past what fits in a page, and SQLite compares an overflowing key by reading
-- the whole row: every insert read back several earlier chunks in full (a sixth of the writer's
-- time in a 10,000-item Map, growing with the history). In a rowid table the key lives in a
-- small index and the text is written once, at the end of the table.
CREATE TABLE event_chunks_v12 (
    execution_id   INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_id, first_event_id)
);
INSERT INTO event_chunks_v12 (execution_id, first_event_id, last_event_id, events)
    SELECT execution_id, first_event_id, last_event_id, events FROM event_chunks
    ORDER BY execution_id, first_event_id;
DROP TABLE event_chunks;
ALTER TABLE event_chunks_v12 RENAME TO event_chunks;

CREATE TABLE map_run_event_chunks_v12 (
    execution_arn  TEXT    NOT NULL,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_arn, first_event_id)
);
INSERT INTO map_run_event_chunks_v12 (execution_arn, first_event_id, last_event_id, events)
    SELECT execution_arn, first_event_id, last_event_id, events FROM map_run_event_chunks
    ORDER BY execution_arn, first_event_id;
DROP TABLE map_run_event_chunks;
ALTER TABLE map_run_event_chunks_v12 RENAME TO map_run_event_chunks;
