//! Leases: which runner drives which execution, and until when.
//!
//! A runner writes its owner id and an expiry into the execution row when it starts or resumes
//! it, and renews the expiry a few times per lease period. A lease whose expiry has passed means
//! its runner is dead (or stuck): `resume` may take the execution over, with one conditional
//! UPDATE, so two runners racing for it have exactly one winner. The writer also refuses appends
//! from a runner that is no longer the owner (see `writer`), so a runner that was only paused
//! cannot write after another took over.

use rusqlite::{params, Connection, OptionalExtension, Transaction};

pub(crate) fn acquire(
    tx: &Transaction<'_>,
    execution_arn: &str,
    owner: &str,
    now: i64,
    expires_at: i64,
) -> rusqlite::Result<bool> {
    let n = tx.execute(
        "UPDATE executions SET owner = ?2, lease_expires_at = ?4 \
         WHERE execution_arn = ?1 AND status = 'RUNNING' \
         AND (owner IS NULL OR owner = ?2 OR lease_expires_at IS NULL OR lease_expires_at <= ?3)",
        params![execution_arn, owner, now, expires_at],
    )?;
    Ok(n == 1)
}

pub(crate) fn renew(tx: &Transaction<'_>, owner: &str, expires_at: i64) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE executions SET lease_expires_at = ?2 WHERE owner = ?1 AND status = 'RUNNING'",
        params![owner, expires_at],
    )
}

pub(crate) fn release(
    tx: &Transaction<'_>,
    execution_arn: &str,
    owner: &str,
) -> rusqlite::Result<()> {
    tx.execute(
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
    tx.execute(
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
