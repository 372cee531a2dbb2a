-- Tokens of executions on a virtual clock (`--clock virtual`). Their deadlines are instants of
-- that clock, which only its runner knows: an answer from another process (or the API) cannot
-- compare them with its own time. So for these rows the token's status alone referees an
-- answer (the runner closes the token, by a conditional UPDATE, when its clock reaches a
-- deadline), and a heartbeat clears heartbeat_at for the runner to re-arm at its own instant.
ALTER TABLE task_tokens ADD COLUMN virtual_clock INTEGER NOT NULL DEFAULT 0;
