//! One-shot statements through the connection's statement cache.
//!
//! rusqlite's `Connection::execute` and `query_row` prepare their SQL anew on every call:
//! parsing it and compiling the triggers of the tables it writes. On the paths every execution
//! takes (its lease, its stop request, its machine's row) that was an eighth of `serve`'s CPU.
//! These do the same through `prepare_cached`.

use rusqlite::{Connection, Params, Row};

/// `execute` and `query_row` with the statement cached on the connection.
pub(crate) trait CachedSql {
    /// Like `Connection::execute`.
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// Like `Connection::query_row`.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>;
}

impl CachedSql for Connection {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: Params,
        F: FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}
