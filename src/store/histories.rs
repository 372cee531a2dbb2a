//! Reading many executions' histories at once, by definition: what coverage needs.
//!
//! Coverage groups executions by the definition they ran. The definitions are read once each
//! (`GROUP BY definition`), the caller decides which ones it wants, and only those executions'
//! histories are read, one execution at a time, so memory stays at one history.

use rusqlite::Connection;

use super::events;

/// An execution as coverage lists it: who it is, not what it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionHead {
    /// The store's row id.
    pub id: i64,
    /// The execution ARN.
    pub execution_arn: String,
    /// The state machine's name.
    pub state_machine_name: String,
    /// The state machine's ARN.
    pub state_machine_arn: String,
    /// AWS's status spelling.
    pub status: String,
}

/// Each distinct definition text stored with an execution, with how many executions ran it.
pub(crate) fn distinct_definitions(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt =
        conn.prepare_cached("SELECT definition, COUNT(*) FROM executions GROUP BY definition")?;
    let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))?;
    rows.collect()
}

/// The executions that ran exactly this definition text, oldest first.
pub(crate) fn with_definition(
    conn: &Connection,
    definition: &str,
) -> rusqlite::Result<Vec<ExecutionHead>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, execution_arn, state_machine_name, state_machine_arn, status \
         FROM executions WHERE definition = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([definition], |row| {
        Ok(ExecutionHead {
            id: row.get(0)?,
            execution_arn: row.get(1)?,
            state_machine_name: row.get(2)?,
            state_machine_arn: row.get(3)?,
            status: row.get(4)?,
        })
    })?;
    rows.collect()
}

/// Hands `each` every listed execution's whole history, oldest event first, one at a time.
pub(crate) fn for_each(
    conn: &Connection,
    executions: &[ExecutionHead],
    each: &mut dyn FnMut(&ExecutionHead, &[super::EventRecord]),
) -> rusqlite::Result<()> {
    for head in executions {
        let history = events::history(conn, head.id, false)?;
        each(head, &history);
    }
    Ok(())
}
