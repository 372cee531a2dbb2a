-- V1: executions and their append-only history.
--
-- Times are integer milliseconds since the Unix epoch (UTC). JSON payloads are stored as the text the
-- engine serialized, so what `history` prints is byte-for-byte what the engine wrote.

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
);

-- list-executions: filter by status, newest first; and newest first overall.
CREATE INDEX executions_by_status_start ON executions (status, start_date DESC, id DESC);
CREATE INDEX executions_by_start ON executions (start_date DESC, id DESC);
-- describe/history accept a bare execution name.
CREATE INDEX executions_by_name ON executions (name);

-- Append-only, in chunks: one row holds a run of one execution's consecutive events, as many as
-- the writer committed together. A row per event cost more than all the rest of a run (SQLite's
-- per-row insert work, about 5 µs each); a chunk costs about a memcpy per event. Ids stay
-- contiguous across chunks (the writer checks), and `history` reads the chunks back in order.
--
-- `events` is one record per event:
--   id <TAB> previousEventId <TAB> timestamp (ms) <TAB> type <TAB> n <TAB> details <NEWLINE>
-- where n is the byte length of the details JSON that follows (-1 for none), so the details are
-- stored as written, without escaping.
CREATE TABLE event_chunks (
    execution_id   INTEGER NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    first_event_id INTEGER NOT NULL CHECK (first_event_id >= 1),
    last_event_id  INTEGER NOT NULL CHECK (last_event_id >= first_event_id),
    events         TEXT    NOT NULL,
    PRIMARY KEY (execution_id, first_event_id)
) WITHOUT ROWID;
