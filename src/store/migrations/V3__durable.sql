-- V3: durable executions (resume after a crash).
--
-- A token remembers the replay key of the TaskScheduled event that introduced it, so a resumed
-- execution finds the token of an attempt that was waiting when its runner died (and any answer
-- a worker gave meanwhile) instead of issuing a new one.
ALTER TABLE task_tokens ADD COLUMN replay_key TEXT;
CREATE INDEX task_tokens_by_replay_key ON task_tokens (execution_id, replay_key);

-- How the execution was run (time scale, --task bindings, history cap, working directory), as
-- JSON, so `resume` drives it the same way.
ALTER TABLE executions ADD COLUMN run_config TEXT;

-- resume --all: the running executions whose lease has lapsed.
CREATE INDEX executions_running_by_lease ON executions (lease_expires_at) WHERE status = 'RUNNING';
