//! A new database file starts as a copy of an empty database at [`SCHEMA_VERSION`], already in
//! WAL mode: its bytes ship in the binary (`migrations/fresh.db.lz4`, 41 pages that compress to
//! almost nothing).
//!
//! Building the schema with SQL took a third of a one-state `run` (about 2 ms: 27 `CREATE`
//! statements, each making SQLite re-read the schema, and the switch to WAL); writing the
//! file takes a tenth of a millisecond. The copy is written beside the target and linked into
//! place, so another process never sees a half-written file: if two create the same database
//! at once, one link wins and both open that file. A test checks the template is what the
//! migrations build (`UPDATE_SCHEMA=1 cargo test --lib fresh_schema` rewrites it).

use std::io::Write;
use std::path::Path;

/// The empty database, LZ4-compressed with its size prepended.
const TEMPLATE: &[u8] = include_bytes!("migrations/fresh.db.lz4");

/// Creates `path` as an empty database at the current schema, readable by its owner only, and
/// says whether it did: `Ok(false)` when something is at `path` already (an existing database,
/// or another process's that won the race), which the caller opens as usual. `durable` syncs
/// the file before it is linked into place (`--durability full`).
pub fn create(path: &Path, durable: bool) -> std::io::Result<bool> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let bytes = lz4_flex::decompress_size_prepended(TEMPLATE)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let aside = aside(path);
    let written =
        write_private(&aside, &bytes, durable).and_then(|()| std::fs::hard_link(&aside, path));
    let _ = std::fs::remove_file(&aside);
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// A name beside `path` no other process picks: this process's id and the time. (Not
/// `crate::random`: under `--seed` that sequence names executions and tokens, and must not
/// depend on whether the database was new.)
fn aside(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    path.with_file_name(format!(".{name}.{}.{nanos}.new", std::process::id()))
}

fn write_private(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::migrations::{self, SchemaCheck};
    use super::*;
    use rusqlite::Connection;

    const PATH: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/store/migrations/fresh.db.lz4"
    );

    /// An empty database built by the migrations, in WAL mode, checkpointed into its file.
    fn migrated_file(dir: &Path) -> Vec<u8> {
        let path = dir.join("migrated.db");
        let conn = Connection::open(&path).expect("open");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("wal");
        migrations::migrate(&conn, std::time::Duration::from_secs(5))
            .expect("migrate")
            .expect("not newer");
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .expect("checkpoint");
        drop(conn);
        std::fs::read(&path).expect("read")
    }

    /// A database's objects (type, name, SQL), user version, journal mode and page size.
    type Shape = (Vec<(String, String, Option<String>)>, i64, String, i64);

    fn shape(conn: &Connection) -> Shape {
        let mut stmt = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .expect("schema query");
        let objects = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("rows")
            .map(|r| r.expect("row"))
            .collect();
        let pragma = |name: &str| -> rusqlite::types::Value {
            conn.pragma_query_value(None, name, |r| r.get(0))
                .expect(name)
        };
        let text = |v| match v {
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        };
        let int = |v| match v {
            rusqlite::types::Value::Integer(i) => i,
            _ => -1,
        };
        (
            objects,
            int(pragma("user_version")),
            text(pragma("journal_mode")),
            int(pragma("page_size")),
        )
    }

    #[test]
    fn the_fresh_schema_template_is_what_the_migrations_build() {
        let dir = tempfile::tempdir().expect("tempdir");
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            let bytes = migrated_file(dir.path());
            std::fs::write(PATH, lz4_flex::compress_prepend_size(&bytes)).expect("write");
            return;
        }
        let created = dir.path().join("created.db");
        assert!(create(&created, false).expect("create"));
        let conn = Connection::open(&created).expect("open the copy");
        assert_eq!(
            migrations::check(&conn).expect("check"),
            SchemaCheck::Current
        );
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("integrity");
        assert_eq!(integrity, "ok");
        migrated_file(dir.path());
        let migrated = Connection::open(dir.path().join("migrated.db")).expect("open");
        assert_eq!(
            shape(&conn),
            shape(&migrated),
            "src/store/migrations/fresh.db.lz4 is not what the migrations build: \
             UPDATE_SCHEMA=1 cargo test --lib fresh_schema"
        );
    }

    #[test]
    fn an_existing_file_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("there.db");
        std::fs::write(&path, b"not ours").expect("write");
        assert!(!create(&path, false).expect("create"));
        assert_eq!(std::fs::read(&path).expect("read"), b"not ours");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
        assert_eq!(left.len(), 1, "nothing left beside it");
    }

    #[cfg(unix)]
    #[test]
    fn the_new_file_is_its_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.db");
        assert!(create(&path, true).expect("create"));
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1);
    }
}
