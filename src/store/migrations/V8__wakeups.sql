-- V8: one change log for waiting runners.
--
-- A runner holding thousands of waiting executions must not look at each of their rows to learn
-- that one was answered. Whatever closes or starts a task token (an answer, an expiry, a close,
-- an activity taken) and whatever asks an execution to stop writes one row here, from a trigger,
-- in the same transaction, whichever process commits it. A runner's one watcher reads the rows
-- after the last one it saw (only when `PRAGMA data_version` says someone committed) and wakes
-- exactly the executions they name. A heartbeat only moves `heartbeat_at`: the waiter reads the
-- new deadline when its old one comes, and the expiry's conditional UPDATE picks one winner.
--
-- The log keeps its last 4,096 rows; a watcher that finds a gap after its last row wakes every
-- waiter it holds, which then reads its own row again.
CREATE TABLE wakeups (
    seq           INTEGER PRIMARY KEY,
    token         TEXT,
    execution_arn TEXT
);

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
