//! Leases: which runner drives which execution, and until when.
//!
//! A runner writes its owner id and an expiry into the execution row when it starts or resumes
//! it, and renews its own row of `runner_leases` a few times per lease period: one small write
//! for all the executions it holds. An execution's lease lasts until the later of the two
//! ([`EFFECTIVE_EXPIRY`]); releasing one execution sets its own expiry to 0, which no runner
//! lease extends. A lease whose expiry has passed means
//! its runner is dead (or stuck): `resume` may take the execution over, with one conditional
//! UPDATE, so two runners racing for it have exactly one winner. The writer also refuses appends
//! from a runner that is no longer the owner (see `writer`), so a runner that was only paused
//! cannot write after another took over.

use super::cached::CachedSql;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// SQL for when an execution's lease lapses, read in a query over `executions`: its own expiry,
/// extended by its runner's while not released (0) or cleared (NULL).
pub(crate) const EFFECTIVE_EXPIRY: &str = "CASE WHEN executions.lease_expires_at > 0 \
     THEN max(executions.lease_expires_at, coalesce((SELECT r.expires_at FROM runner_leases r \
     WHERE r.owner = executions.owner), 0)) ELSE executions.lease_expires_at END";

/// What taking an execution's lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takeover {
    /// How many takeovers in a row, this one included, found no event committed since the one
    /// before, the runner in between having died (0 for a first takeover, after progress, or
    /// after a runner that gave its lease up cleanly).
    pub stalled: i64,
}

/// Takes the execution for `owner` if its lease is free, lapsed or already `owner`'s, counting
/// the takeovers that found no progress (see [`Takeover`]); `None`: another live runner holds
/// it, or it is not running. A runner that died leaves its owner and a non-zero expiry; one
/// that stopped cleanly released (expiry 0), and a redriven execution has no owner.
pub(crate) fn acquire(
    tx: &Transaction<'_>,
    execution_arn: &str,
    owner: &str,
    now: i64,
    expires_at: i64,
) -> rusqlite::Result<Option<Takeover>> {
    // SET expressions read the row as it was before this UPDATE.
    tx.query_row_cached(
        &format!(
            "UPDATE executions SET owner = ?2, lease_expires_at = ?4, \
         stalled_takeovers = CASE \
             WHEN owner IS ?2 THEN stalled_takeovers \
             WHEN owner IS NULL OR coalesce(lease_expires_at, 0) = 0 THEN 0 \
             WHEN takeover_event_id IS last_event_id THEN stalled_takeovers + 1 \
             ELSE 0 END, \
         takeover_event_id = CASE WHEN owner IS ?2 THEN takeover_event_id \
             ELSE last_event_id END \
         WHERE execution_arn = ?1 AND status = 'RUNNING' \
         AND (owner IS NULL OR owner = ?2 OR coalesce({EFFECTIVE_EXPIRY}, 0) <= ?3) \
         RETURNING stalled_takeovers"
        ),
        params![execution_arn, owner, now, expires_at],
        |row| {
            Ok(Takeover {
                stalled: row.get(0)?,
            })
        },
    )
    .optional()
}

/// Records that `owner`'s takeover of the execution replayed its history to where the
/// execution stood and waits there (durably): as good as progress, so the next takeover starts
/// the count of stalled ones again. No-op once another runner holds it.
pub(crate) fn settle(
    tx: &Transaction<'_>,
    execution_arn: &str,
    owner: &str,
) -> rusqlite::Result<()> {
    // NULL matches no event id, so `acquire` counts 0 as after progress.
    tx.execute_cached(
        "UPDATE executions SET stalled_takeovers = 0, takeover_event_id = NULL \
         WHERE execution_arn = ?1 AND owner = ?2 AND status = 'RUNNING'",
        params![execution_arn, owner],
    )?;
    Ok(())
}

/// How long a lapsed runner's row is kept (for `list-executions` to show when it lapsed).
const FORGET_RUNNERS_AFTER_MS: i64 = 24 * 3600 * 1000;

pub(crate) fn renew(tx: &Transaction<'_>, owner: &str, expires_at: i64) -> rusqlite::Result<()> {
    tx.execute_cached(
        "INSERT INTO runner_leases (owner, expires_at) VALUES (?1, ?2) \
         ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at",
        params![owner, expires_at],
    )?;
    tx.execute_cached(
        "DELETE FROM runner_leases WHERE expires_at < ?1",
        params![expires_at - FORGET_RUNNERS_AFTER_MS],
    )?;
    Ok(())
}

/// The runners whose lease row is live at `now`.
pub(crate) fn live_runners(conn: &Connection, now: i64) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT owner FROM runner_leases WHERE expires_at > ?1")?;
    let rows = stmt.query_map([now], |row| row.get(0))?;
    rows.collect()
}

/// Ends the leases of a runner known to be dead: its row and the executions it held lapse
/// now (at 1, not 0: 0 says it let them go, and a runner that died did not).
pub(crate) fn expire_runner(tx: &Transaction<'_>, owner: &str) -> rusqlite::Result<()> {
    tx.execute_cached(
        "UPDATE runner_leases SET expires_at = 1 WHERE owner = ?1",
        [owner],
    )?;
    tx.execute_cached(
        "UPDATE executions SET lease_expires_at = 1 \
         WHERE owner = ?1 AND status = 'RUNNING' AND lease_expires_at > 1",
        [owner],
    )?;
    Ok(())
}

pub(crate) fn release(
    tx: &Transaction<'_>,
    execution_arn: &str,
    owner: &str,
) -> rusqlite::Result<()> {
    tx.execute_cached(
        "UPDATE executions SET lease_expires_at = 0 WHERE execution_arn = ?1 AND owner = ?2",
        params![execution_arn, owner],
    )?;
    Ok(())
}

pub(crate) fn set_run_config(
    tx: &Transaction<'_>,
    execution_arn: &str,
    config: &str,
) -> rusqlite::Result<()> {
    tx.execute_cached(
        "UPDATE executions SET run_config = ?2 WHERE execution_arn = ?1",
        params![execution_arn, config],
    )?;
    Ok(())
}

pub(crate) fn run_config(
    conn: &Connection,
    execution_arn: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT run_config FROM executions WHERE execution_arn = ?1")?
        .query_row([execution_arn], |row| row.get(0))
        .optional()
        .map(Option::flatten)
}
