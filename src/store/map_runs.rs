//! A distributed Map's finished child executions (table `map_run_children`, migration V4).
//!
//! The child's record is opaque JSON to the store: the engine writes it and reads it back.
//! Written through the writer thread with the execution's other commits, never waited for: a
//! record lost in a crash only means that child runs again on resume, which a Map run allows
//! (at least once, as on AWS).

use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// One finished child of a Map run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRunChild {
    /// The parent execution.
    pub execution_arn: String,
    /// The Map run's key (the engine's name for it, unique in the execution).
    pub run_key: String,
    /// The child's item (or batch) index.
    pub item_index: i64,
    /// The child as the engine describes it (JSON).
    pub child: String,
}

/// Inserts (or replaces: a child run again after a lost record finishes again) one child.
/// `false` when the parent execution does not exist.
pub(crate) fn insert(tx: &Transaction<'_>, child: &MapRunChild) -> rusqlite::Result<bool> {
    let id: Option<i64> = tx
        .prepare_cached("SELECT id FROM executions WHERE execution_arn = ?1")?
        .query_row([&child.execution_arn], |r| r.get(0))
        .optional()?;
    let Some(id) = id else {
        return Ok(false);
    };
    tx.prepare_cached(
        "INSERT OR REPLACE INTO map_run_children (execution_id, run_key, item_index, child)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, child.run_key, child.item_index, child.child])?;
    Ok(true)
}

/// The finished children of one Map run, by index.
pub(crate) fn children(
    conn: &Connection,
    execution_id: i64,
    run_key: &str,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT item_index, child FROM map_run_children
         WHERE execution_id = ?1 AND run_key = ?2 ORDER BY item_index",
    )?;
    let rows = stmt.query_map(params![execution_id, run_key], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    rows.collect()
}
