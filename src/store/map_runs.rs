//! A distributed Map's finished child executions (table `map_run_children`, migration V4).
//!
//! The child's record is opaque JSON to the store: the engine writes it and reads it back.
//! Written through the writer thread with the execution's other commits, never waited for: a
//! record lost in a crash only means that child runs again on resume, which a Map run allows
//! (at least once, as on AWS).

use super::cached::CachedSql;
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};

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

/// The finished children of one Map run from item `from` on, by index, at most `limit`.
pub(crate) fn children(
    conn: &Connection,
    execution_id: i64,
    run_key: &str,
    from: i64,
    limit: i64,
) -> rusqlite::Result<Vec<(i64, String)>> {
    indexed_rows(
        conn,
        "SELECT item_index, child FROM map_run_children
         WHERE execution_id = ?1 AND run_key = ?2 AND item_index >= ?3
         ORDER BY item_index LIMIT ?4",
        params![execution_id, run_key, from, limit],
    )
}

/// The `(item index, text)` rows that `sql` selects with `params`.
fn indexed_rows(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

// ---- Map runs and their child executions as the API shows them (migration V7) -------------

/// The names of a Map run's child executions from item `from` on, by index, at most `limit`.
pub(crate) fn child_names(
    conn: &Connection,
    map_run_arn: &str,
    from: i64,
    limit: i64,
) -> rusqlite::Result<Vec<(i64, String)>> {
    indexed_rows(
        conn,
        "SELECT item_index, name FROM map_run_executions
         WHERE map_run_arn = ?1 AND item_index >= ?2 ORDER BY item_index LIMIT ?3",
        params![map_run_arn, from, limit],
    )
}

/// A Map run starting (or resuming, or redriven: the same ARN again).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMapRun {
    /// `arn:aws:states:REGION:ACCOUNT:mapRun:MACHINE/LABEL:ID`.
    pub map_run_arn: String,
    /// The execution whose Map state starts it.
    pub execution_arn: String,
    /// Its child machine, `...:stateMachine:MACHINE/LABEL`.
    pub state_machine_arn: String,
    /// ms since the Unix epoch.
    pub start_date_ms: i64,
    /// The Map's `MaxConcurrency` (0: no limit).
    pub max_concurrency: i64,
    /// The Map's `ToleratedFailurePercentage`, if set.
    pub tolerated_failure_percentage: Option<f64>,
    /// The Map's `ToleratedFailureCount`, if set.
    pub tolerated_failure_count: Option<i64>,
    /// Set when a redrive reopens the run (`MapRunRedriven`): ms since the Unix epoch.
    pub redriven_at_ms: Option<i64>,
}

/// A change to a Map run or one of its child executions, submitted by the engine through the
/// writer thread (batched with the execution's other commits, never waited for).
#[derive(Debug, Clone, PartialEq)]
pub enum MapRunChange {
    /// A run starts; an existing row (a resumed or redriven run) is reopened, keeping the
    /// settings UpdateMapRun gave it.
    Started(NewMapRun),
    /// The run knows how many items and child executions it has.
    Sized {
        /// The run.
        map_run_arn: String,
        /// Items read.
        items: i64,
        /// Child executions planned.
        executions: i64,
    },
    /// A child execution starts (or starts again, after a resume or a redrive).
    ChildStarted(MapRunExecution),
    /// A child execution ends.
    ChildEnded {
        /// The child.
        execution_arn: String,
        /// `SUCCEEDED`, `FAILED`, `TIMED_OUT` or `ABORTED`.
        status: String,
        /// ms since the Unix epoch.
        stop_date_ms: i64,
        /// Its output (JSON text), when it succeeded.
        output: Option<String>,
        /// Its error, when it failed.
        error: Option<String>,
        /// Its cause, when it failed.
        cause: Option<String>,
    },
    /// A child execution's events, in order (a batch of its history).
    ChildEvents {
        /// The child.
        execution_arn: String,
        /// The events, consecutive.
        events: Vec<crate::store::NewEvent>,
    },
    /// The run ends; its children still running are aborted.
    Ended {
        /// The run.
        map_run_arn: String,
        /// `SUCCEEDED`, `FAILED` or `ABORTED`.
        status: String,
        /// ms since the Unix epoch.
        stop_date_ms: i64,
        /// Items the ResultWriter wrote.
        items_written: i64,
        /// Child executions the ResultWriter wrote.
        executions_written: i64,
    },
}

/// A child execution of a Map run.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunExecution {
    /// `arn:aws:states:REGION:ACCOUNT:execution:MACHINE/LABEL:NAME`.
    pub execution_arn: String,
    /// The run.
    pub map_run_arn: String,
    /// The run's child machine.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// The item (or batch) it processes.
    pub item_index: i64,
    /// How many items it holds (1 without an ItemBatcher).
    pub item_count: i64,
    /// `RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT` or `ABORTED`.
    pub status: String,
    /// ms since the Unix epoch.
    pub start_date_ms: i64,
    /// ms since the Unix epoch.
    pub stop_date_ms: Option<i64>,
    /// Its input (JSON text).
    pub input: String,
    /// Its output (JSON text), when it succeeded.
    pub output: Option<String>,
    /// Its error, when it failed.
    pub error: Option<String>,
    /// Its cause, when it failed.
    pub cause: Option<String>,
}

/// How many items (or child executions) of a run are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapRunCounts {
    /// Not started yet.
    pub pending: i64,
    /// Running.
    pub running: i64,
    /// Succeeded.
    pub succeeded: i64,
    /// Failed.
    pub failed: i64,
    /// Timed out.
    pub timed_out: i64,
    /// Aborted (stopped, or cut off when the run failed).
    pub aborted: i64,
    /// All of them.
    pub total: i64,
    /// Written by the ResultWriter.
    pub results_written: i64,
}

/// A Map run as DescribeMapRun and ListMapRuns show it.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRunRecord {
    /// The run.
    pub map_run_arn: String,
    /// The execution whose Map state started it.
    pub execution_arn: String,
    /// Its child machine.
    pub state_machine_arn: String,
    /// `RUNNING`, `SUCCEEDED`, `FAILED` or `ABORTED`.
    pub status: String,
    /// ms since the Unix epoch.
    pub start_date_ms: i64,
    /// ms since the Unix epoch.
    pub stop_date_ms: Option<i64>,
    /// The settings in force (UpdateMapRun changes them).
    pub settings: MapRunSettings,
    /// Counted by item.
    pub items: MapRunCounts,
    /// Counted by child execution.
    pub executions: MapRunCounts,
    /// How many times it was redriven.
    pub redrive_count: i64,
    /// The last redrive, ms since the Unix epoch.
    pub redrive_date_ms: Option<i64>,
}

/// The settings of a run that UpdateMapRun changes and the running Map follows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MapRunSettings {
    /// 0: no limit.
    pub max_concurrency: i64,
    /// `None`: not set.
    pub tolerated_failure_percentage: Option<f64>,
    /// `None`: not set.
    pub tolerated_failure_count: Option<i64>,
}

/// Applies one change inside the writer's transaction.
pub(crate) fn apply_change(tx: &Transaction<'_>, change: &MapRunChange) -> rusqlite::Result<()> {
    match change {
        MapRunChange::Started(run) => {
            tx.prepare_cached(
                "INSERT INTO map_runs (map_run_arn, execution_arn, state_machine_arn, status,
                     start_date, max_concurrency, tolerated_failure_percentage,
                     tolerated_failure_count)
                 VALUES (?1, ?2, ?3, 'RUNNING', ?4, ?5, ?6, ?7)
                 ON CONFLICT (map_run_arn) DO UPDATE SET status = 'RUNNING', stop_date = NULL,
                     redrive_count = redrive_count + (?8 IS NOT NULL),
                     redrive_date = COALESCE(?8, redrive_date)",
            )?
            .execute(params![
                run.map_run_arn,
                run.execution_arn,
                run.state_machine_arn,
                run.start_date_ms,
                run.max_concurrency,
                run.tolerated_failure_percentage,
                run.tolerated_failure_count,
                run.redriven_at_ms,
            ])?;
        }
        MapRunChange::Sized {
            map_run_arn,
            items,
            executions,
        } => {
            tx.prepare_cached(
                "UPDATE map_runs SET item_total = ?2, execution_total = ?3 WHERE map_run_arn = ?1",
            )?
            .execute(params![map_run_arn, items, executions])?;
        }
        MapRunChange::ChildStarted(c) => {
            tx.prepare_cached(
                "INSERT INTO map_run_executions (execution_arn, map_run_arn, name, item_index,
                     item_count, status, start_date, input)
                 SELECT ?1, ?2, ?3, ?4, ?5, 'RUNNING', ?6, ?7
                 WHERE EXISTS (SELECT 1 FROM map_runs WHERE map_run_arn = ?2)
                 ON CONFLICT (execution_arn) DO UPDATE SET status = 'RUNNING',
                     start_date = excluded.start_date, stop_date = NULL, output = NULL,
                     error = NULL, cause = NULL",
            )?
            .execute(params![
                c.execution_arn,
                c.map_run_arn,
                c.name,
                c.item_index,
                c.item_count,
                c.start_date_ms,
                c.input,
            ])?;
            // A child run again starts its history again.
            super::events::delete_child_history(tx, &c.execution_arn)?;
        }
        MapRunChange::ChildEvents {
            execution_arn,
            events,
        } => super::events::insert_child_chunk(tx, execution_arn, events)?,
        MapRunChange::ChildEnded {
            execution_arn,
            status,
            stop_date_ms,
            output,
            error,
            cause,
        } => {
            tx.prepare_cached(
                "UPDATE map_run_executions SET status = ?2, stop_date = ?3, output = ?4,
                     error = ?5, cause = ?6
                 WHERE execution_arn = ?1",
            )?
            .execute(params![
                execution_arn,
                status,
                stop_date_ms,
                output,
                error,
                cause
            ])?;
        }
        MapRunChange::Ended {
            map_run_arn,
            status,
            stop_date_ms,
            items_written,
            executions_written,
        } => {
            tx.prepare_cached(
                "UPDATE map_runs SET status = ?2, stop_date = ?3, items_written = ?4,
                     executions_written = ?5
                 WHERE map_run_arn = ?1",
            )?
            .execute(params![
                map_run_arn,
                status,
                stop_date_ms,
                items_written,
                executions_written
            ])?;
            tx.prepare_cached(
                "UPDATE map_run_executions SET status = 'ABORTED', stop_date = ?2
                 WHERE map_run_arn = ?1 AND status = 'RUNNING'",
            )?
            .execute(params![map_run_arn, stop_date_ms])?;
        }
    }
    Ok(())
}

const RUN_COLUMNS: &str = "map_run_arn, execution_arn, state_machine_arn, status, start_date,
    stop_date, max_concurrency, tolerated_failure_percentage, tolerated_failure_count,
    item_total, execution_total, items_written, executions_written, redrive_count, redrive_date";

/// One run with its counts.
pub(crate) fn run(conn: &Connection, map_run_arn: &str) -> rusqlite::Result<Option<MapRunRecord>> {
    let Some((mut record, totals)) = conn
        .prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM map_runs WHERE map_run_arn = ?1"
        ))?
        .query_row([map_run_arn], run_from_row)
        .optional()?
    else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT status, COUNT(*), SUM(item_count) FROM map_run_executions
         WHERE map_run_arn = ?1 GROUP BY status",
    )?;
    let rows = stmt.query_map([map_run_arn], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, Option<i64>>(2)?.unwrap_or(0),
        ))
    })?;
    let (mut executions, mut items) = (MapRunCounts::default(), MapRunCounts::default());
    for row in rows {
        let (status, n, i) = row?;
        for (counts, k) in [(&mut executions, n), (&mut items, i)] {
            match status.as_str() {
                "RUNNING" => counts.running += k,
                "SUCCEEDED" => counts.succeeded += k,
                "FAILED" => counts.failed += k,
                "TIMED_OUT" => counts.timed_out += k,
                _ => counts.aborted += k,
            }
        }
    }
    for (counts, total, written) in [
        (
            &mut executions,
            totals.execution_total,
            totals.executions_written,
        ),
        (&mut items, totals.item_total, totals.items_written),
    ] {
        let started =
            counts.running + counts.succeeded + counts.failed + counts.timed_out + counts.aborted;
        counts.total = total.max(started);
        counts.pending = counts.total - started;
        counts.results_written = written;
    }
    record.executions = executions;
    record.items = items;
    Ok(Some(record))
}

struct Totals {
    item_total: i64,
    execution_total: i64,
    items_written: i64,
    executions_written: i64,
}

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<(MapRunRecord, Totals)> {
    Ok((
        MapRunRecord {
            map_run_arn: r.get(0)?,
            execution_arn: r.get(1)?,
            state_machine_arn: r.get(2)?,
            status: r.get(3)?,
            start_date_ms: r.get(4)?,
            stop_date_ms: r.get(5)?,
            settings: MapRunSettings {
                max_concurrency: r.get(6)?,
                tolerated_failure_percentage: r.get(7)?,
                tolerated_failure_count: r.get(8)?,
            },
            items: MapRunCounts::default(),
            executions: MapRunCounts::default(),
            redrive_count: r.get(13)?,
            redrive_date_ms: r.get(14)?,
        },
        Totals {
            item_total: r.get(9)?,
            execution_total: r.get(10)?,
            items_written: r.get(11)?,
            executions_written: r.get(12)?,
        },
    ))
}

/// The runs an execution's Map states started, newest first (without counts).
pub(crate) fn runs_of(
    conn: &Connection,
    execution_arn: &str,
) -> rusqlite::Result<Vec<MapRunRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM map_runs WHERE execution_arn = ?1
         ORDER BY start_date DESC, map_run_arn"
    ))?;
    let rows = stmt.query_map([execution_arn], |r| run_from_row(r).map(|(run, _)| run))?;
    rows.collect()
}

/// The settings of a run in force now.
pub(crate) fn settings(
    conn: &Connection,
    map_run_arn: &str,
) -> rusqlite::Result<Option<MapRunSettings>> {
    conn.prepare_cached(
        "SELECT max_concurrency, tolerated_failure_percentage, tolerated_failure_count
         FROM map_runs WHERE map_run_arn = ?1",
    )?
    .query_row([map_run_arn], |r| {
        Ok(MapRunSettings {
            max_concurrency: r.get(0)?,
            tolerated_failure_percentage: r.get(1)?,
            tolerated_failure_count: r.get(2)?,
        })
    })
    .optional()
}

/// What UpdateMapRun changes (members left `None` stay as they are).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MapRunUpdate {
    /// New `maxConcurrency`.
    pub max_concurrency: Option<i64>,
    /// New `toleratedFailurePercentage`.
    pub tolerated_failure_percentage: Option<f64>,
    /// New `toleratedFailureCount`.
    pub tolerated_failure_count: Option<i64>,
}

/// Applies an UpdateMapRun; `false` when no run has this ARN.
pub(crate) fn update(
    tx: &Transaction<'_>,
    map_run_arn: &str,
    u: &MapRunUpdate,
) -> rusqlite::Result<bool> {
    Ok(tx.execute_cached(
        "UPDATE map_runs SET max_concurrency = COALESCE(?2, max_concurrency),
             tolerated_failure_percentage = COALESCE(?3, tolerated_failure_percentage),
             tolerated_failure_count = COALESCE(?4, tolerated_failure_count)
         WHERE map_run_arn = ?1",
        params![
            map_run_arn,
            u.max_concurrency,
            u.tolerated_failure_percentage,
            u.tolerated_failure_count
        ],
    )? == 1)
}

const CHILD_COLUMNS: &str = "e.execution_arn, e.map_run_arn, r.state_machine_arn, e.name,
    e.item_index, e.item_count, e.status, e.start_date, e.stop_date, e.input, e.output, e.error,
    e.cause";

fn child_from_row(r: &Row<'_>) -> rusqlite::Result<MapRunExecution> {
    Ok(MapRunExecution {
        execution_arn: r.get(0)?,
        map_run_arn: r.get(1)?,
        state_machine_arn: r.get(2)?,
        name: r.get(3)?,
        item_index: r.get(4)?,
        item_count: r.get(5)?,
        status: r.get(6)?,
        start_date_ms: r.get(7)?,
        stop_date_ms: r.get(8)?,
        input: r.get(9)?,
        output: r.get(10)?,
        error: r.get(11)?,
        cause: r.get(12)?,
    })
}

/// A run's child executions (those with `status`, if given), newest first.
pub(crate) fn executions(
    conn: &Connection,
    map_run_arn: &str,
    status: Option<&str>,
) -> rusqlite::Result<Vec<MapRunExecution>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CHILD_COLUMNS} FROM map_run_executions e
         JOIN map_runs r ON r.map_run_arn = e.map_run_arn
         WHERE e.map_run_arn = ?1 AND (?2 IS NULL OR e.status = ?2)
         ORDER BY e.start_date DESC, e.item_index DESC"
    ))?;
    let rows = stmt.query_map(params![map_run_arn, status], child_from_row)?;
    rows.collect()
}

/// One child execution of a Map run, by ARN.
pub(crate) fn execution(
    conn: &Connection,
    execution_arn: &str,
) -> rusqlite::Result<Option<MapRunExecution>> {
    conn.prepare_cached(&format!(
        "SELECT {CHILD_COLUMNS} FROM map_run_executions e
         JOIN map_runs r ON r.map_run_arn = e.map_run_arn
         WHERE e.execution_arn = ?1"
    ))?
    .query_row([execution_arn], child_from_row)
    .optional()
}
