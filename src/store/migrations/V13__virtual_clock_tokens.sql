-- Tokens of executions on a virtual clock (`--clock virtual`). Their deadlines are instants of
-- that clock, which only its runner knows: an answer from another process (or the API) cannot
-- compare them with its own time. So for these rows the token's status alone referees an
-- answer (the runner closes the token, by a conditional UPDATE, when its clock reaches a
-- deadline), and a heartbeat clears heartbeat_at for the runner to re-arm at its own instant.
ALTER TABLE task_tokens ADD COLUMN virtual_clock INTEGER NOT NULL DEFAULT 0;

-- A beat on a virtual clock's token wakes its runner, whichever process sent it, so the runner
-- re-arms the deadline at the instant the beat landed (a real clock's beat moves the deadline
-- itself and needs no wake: the waiter reads it when the old one comes).
CREATE TRIGGER wake_virtual_beat AFTER UPDATE OF heartbeat_at ON task_tokens
WHEN NEW.virtual_clock = 1 AND NEW.heartbeat_at IS NULL AND OLD.heartbeat_at IS NOT NULL
BEGIN
    INSERT INTO wakeups (token) VALUES (NEW.token);
    DELETE FROM wakeups WHERE seq <= (SELECT max(seq) FROM wakeups) - 4096;
END;
