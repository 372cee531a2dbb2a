-- A running serve looks for orphaned executions every third of a lease period. Reading every
-- running row for that read each row's record up to its lease columns, past the definition
-- (overflow pages for any definition over a page): with 10,000 executions waiting, megabytes
-- per look. This index holds what the look reads, so it reads the index alone, and finds the
-- executions of one runner (ended when its process is found gone) without a scan.
CREATE INDEX executions_running_by_owner ON executions (owner, lease_expires_at)
WHERE status = 'RUNNING';
