//! Versioned schema migrations, applied when the store opens.
//!
//! Each migration is an SQL file `migrations/V<n>__<what>.sql` compiled into the binary. The version
//! lives in `PRAGMA user_version` (part of the database header, so it changes atomically with the
//! migration's own statements). All pending migrations run in one IMMEDIATE transaction: two
//! processes opening a fresh file at once serialize, and the second sees the work already done.

use rusqlite::Connection;

/// One schema step.
struct Migration {
    version: i64,
    sql: &'static str,
}

/// Every migration, in order. Versions are 1, 2, 3... without gaps.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("migrations/V1__init.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("migrations/V2__task_tokens.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("migrations/V3__durable.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("migrations/V4__map_run_children.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("migrations/V5__redrive.sql"),
    },
    Migration {
        version: 6,
        sql: include_str!("migrations/V6__api_resources.sql"),
    },
    Migration {
        version: 7,
        sql: include_str!("migrations/V7__map_runs.sql"),
    },
    Migration {
        version: 8,
        sql: include_str!("migrations/V8__wakeups.sql"),
    },
    Migration {
        version: 9,
        sql: include_str!("migrations/V9__execution_versions.sql"),
    },
    Migration {
        version: 10,
        sql: include_str!("migrations/V10__map_run_histories.sql"),
    },
    Migration {
        version: 11,
        sql: include_str!("migrations/V11__runner_leases.sql"),
    },
    Migration {
        version: 12,
        sql: include_str!("migrations/V12__chunks_with_rowids.sql"),
    },
    Migration {
        version: 13,
        sql: include_str!("migrations/V13__virtual_clock_tokens.sql"),
    },
    Migration {
        version: 14,
        sql: include_str!("migrations/V14__stalled_takeovers.sql"),
    },
    Migration {
        version: 15,
        sql: include_str!("migrations/V15__running_by_owner.sql"),
    },
    Migration {
        version: 16,
        sql: include_str!("migrations/V16__compressed_chunks.sql"),
    },
];

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// What the file's schema version means for this build.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SchemaCheck {
    /// Up to date.
    Current,
    /// Older: `migrate` will bring it forward.
    Older(i64),
    /// Written by a newer build; refuse it.
    Newer(i64),
}

/// Reads `user_version` and compares it with [`SCHEMA_VERSION`].
pub(crate) fn check(conn: &Connection) -> rusqlite::Result<SchemaCheck> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    Ok(match found {
        v if v == SCHEMA_VERSION => SchemaCheck::Current,
        v if v > SCHEMA_VERSION => SchemaCheck::Newer(v),
        v => SchemaCheck::Older(v),
    })
}

/// The schema every migration together builds, as one script (its tables, then indexes, then
/// triggers): a fresh database gets it in one step. Thirteen migrations, whose ALTER TABLEs
/// each make SQLite parse the whole schema again, took a third of a short `run`'s time. A test
/// checks it is what the migrations build (`UPDATE_SCHEMA=1` rewrites it).
const FRESH_SCHEMA: &str = include_str!("migrations/schema.sql");

/// Brings the schema to [`SCHEMA_VERSION`]. Returns the version found (re-read inside the
/// transaction) if it is newer than this build, without changing anything.
pub(crate) fn migrate(
    conn: &Connection,
    busy_timeout: std::time::Duration,
) -> rusqlite::Result<Result<(), i64>> {
    let tx = super::lock::begin_immediate(conn, busy_timeout)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if found > SCHEMA_VERSION {
        return Ok(Err(found));
    }
    if found == 0 {
        tx.execute_batch(FRESH_SCHEMA)?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    } else {
        for migration in MIGRATIONS.iter().filter(|m| m.version > found) {
            tx.execute_batch(migration.sql)?;
            // PRAGMA takes no bound parameters; the version is our own integer.
            tx.execute_batch(&format!("PRAGMA user_version = {}", migration.version))?;
        }
    }
    tx.commit()?;
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_contiguous_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Older(0));
        migrate(&conn, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Current);
        migrate(&conn, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Current);
    }

    /// The database's objects: type, name, table and SQL text, sorted.
    fn objects(conn: &Connection) -> Vec<(String, String, String, Option<String>)> {
        let mut stmt = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
            .expect("schema query");
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("schema rows");
        rows.map(|r| r.expect("schema row")).collect()
    }

    /// The script that builds `conn`'s schema: tables, indexes, triggers, views, each in the
    /// order they were made.
    fn schema_script(conn: &Connection) -> String {
        let mut stmt = conn
            .prepare(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' \
                 ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 \
                 WHEN 'trigger' THEN 2 ELSE 3 END, rowid",
            )
            .expect("schema query");
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .expect("schema rows");
        let statements: Vec<String> = rows.map(|r| r.expect("schema row") + ";\n").collect();
        format!(
            "-- The schema migrations V1 to V{SCHEMA_VERSION} build, for a fresh database in one step.\n\
             -- Generated: UPDATE_SCHEMA=1 cargo test --lib fresh_schema\n\n{}",
            statements.join("\n")
        )
    }

    #[test]
    fn the_fresh_schema_is_what_the_migrations_build() {
        let migrated = database_at(MIGRATIONS.len());
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/store/migrations/schema.sql"
            );
            std::fs::write(path, schema_script(&migrated)).expect("write schema.sql");
            return;
        }
        let fresh = Connection::open_in_memory().expect("in-memory database");
        migrate(&fresh, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        assert_eq!(check(&fresh).expect("check"), SchemaCheck::Current);
        assert_eq!(
            objects(&fresh),
            objects(&migrated),
            "src/store/migrations/schema.sql is not what the migrations build: \
             UPDATE_SCHEMA=1 cargo test --lib fresh_schema"
        );
    }

    /// An in-memory database with the schema of `version`, as that build left it.
    fn database_at(version: usize) -> Connection {
        let conn = Connection::open_in_memory().expect("in-memory database");
        for m in &MIGRATIONS[..version] {
            conn.execute_batch(m.sql).expect("old migration");
        }
        conn.execute_batch(&format!("PRAGMA user_version = {version}"))
            .expect("old version");
        conn
    }

    #[test]
    fn a_version_2_database_is_migrated_with_its_rows_kept() {
        let conn = database_at(2);
        conn.execute_batch(
            "INSERT INTO executions (execution_arn, name, state_machine_arn, state_machine_name,
               definition, input, start_date) VALUES ('a', 'a', 'm', 'm', '{}', '{}', 0);",
        )
        .expect("old row");
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Older(2));
        migrate(&conn, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Current);
        let (name, config): (String, Option<String>) = conn
            .query_row("SELECT name, run_config FROM executions", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("row kept, new column readable");
        assert_eq!((name.as_str(), config), ("a", None));
        conn.execute_batch("SELECT replay_key FROM task_tokens")
            .expect("new token column");
    }

    /// V12 moves history chunks out of WITHOUT ROWID tables: the histories stored before it
    /// read the same after it, and the cascade from an execution still reaches its chunks.
    #[test]
    fn a_version_11_database_keeps_its_history_chunks() {
        let conn = database_at(11);
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             INSERT INTO executions (execution_arn, name, state_machine_arn, state_machine_name,
               definition, input, start_date) VALUES ('a', 'a', 'm', 'm', '{}', '{}', 0);
             INSERT INTO event_chunks VALUES (1, 1, 2, 'one'), (1, 3, 3, 'two');
             INSERT INTO map_run_event_chunks VALUES ('child', 1, 4, 'three');",
        )
        .expect("old rows");
        migrate(&conn, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        let chunks: Vec<(i64, String)> = conn
            .prepare("SELECT first_event_id, events FROM event_chunks ORDER BY first_event_id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .expect("chunks kept");
        assert_eq!(chunks, [(1, "one".into()), (3, "two".into())]);
        let child: String = conn
            .query_row("SELECT events FROM map_run_event_chunks", [], |r| r.get(0))
            .expect("child chunk kept");
        assert_eq!(child, "three");
        assert!(conn
            .execute("INSERT INTO event_chunks VALUES (1, 3, 3, 'again')", [])
            .is_err());
        conn.execute("DELETE FROM executions", []).expect("delete");
        let left: i64 = conn
            .query_row("SELECT count(*) FROM event_chunks", [], |r| r.get(0))
            .expect("count");
        assert_eq!(left, 0, "chunks go with their execution");
    }

    #[test]
    fn newer_schema_is_reported_not_touched() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        conn.execute_batch("PRAGMA user_version = 99")
            .expect("set version");
        assert_eq!(
            migrate(&conn, std::time::Duration::from_secs(5)).expect("migrate"),
            Err(99)
        );
        assert_eq!(check(&conn).expect("check"), SchemaCheck::Newer(99));
    }
}
