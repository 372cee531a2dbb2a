-- Quarantine: an execution during which the process died twice without progress is failed
-- instead of resumed into a crash loop. A takeover (resume, serve's orphan pickup) records the
-- newest event id it found; the next takeover from a runner that died compares: no event
-- committed since means that runner died without progress. stalled_takeovers counts such
-- takeovers in a row (0 after progress, or after a runner that stopped cleanly).
ALTER TABLE executions ADD COLUMN takeover_event_id INTEGER;
ALTER TABLE executions ADD COLUMN stalled_takeovers INTEGER NOT NULL DEFAULT 0;
