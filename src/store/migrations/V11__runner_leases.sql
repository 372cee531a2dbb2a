-- One lease row per runner: renewing it is one small write however many executions the runner
-- holds. Before, renewal rewrote every held execution row (definition included) every third of
-- a lease period: with 10,000 executions waiting in one serve, most of its idle CPU and
-- megabytes of WAL while nothing happened. An execution's own lease_expires_at still covers its
-- first period (set when it is started or taken over) and 0 still means "released".
CREATE TABLE runner_leases (
    owner      TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
