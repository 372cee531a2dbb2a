//! Store tests against real files in a temporary directory (WAL needs a file).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::*;

const REGION_ACCOUNT: &str = "us-east-1:123456789012";

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested").join("dir").join("state.db");
    (dir, path)
}

fn open(path: &Path) -> Store {
    Store::open(path, StoreOptions::default()).expect("open store")
}

fn arn(machine: &str, name: &str) -> String {
    format!("arn:aws:states:{REGION_ACCOUNT}:execution:{machine}:{name}")
}

fn event(id: i64, event_type: &str) -> NewEvent {
    NewEvent {
        id,
        previous_event_id: id - 1,
        timestamp_ms: 1_700_000_000_000 + id,
        event_type: event_type.to_owned().into(),
        replay_key: None,
        details: Some(format!(r#"{{"name":"S{id}","input":"{{}}"}}"#)),
    }
}

fn new_execution(machine: &str, name: &str, start_date_ms: i64) -> NewExecution {
    NewExecution {
        execution_arn: arn(machine, name),
        name: name.to_owned(),
        state_machine_arn: format!("arn:aws:states:{REGION_ACCOUNT}:stateMachine:{machine}"),
        state_machine_name: machine.to_owned(),
        definition: r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#.to_owned(),
        input: r#"{"x":1}"#.to_owned(),
        start_date_ms,
        role_arn: None,
        timeout_at_ms: None,
        position: Some("start".to_owned()),
        owner: Some("runner-1".to_owned()),
        lease_expires_at_ms: Some(start_date_ms + 30_000),
        run_config: None,
        state_machine_version_arn: None,
        state_machine_alias_arn: None,
        events: vec![NewEvent {
            previous_event_id: 0,
            details: Some(r#"{"input":"{\"x\":1}","inputDetails":{"truncated":false}}"#.to_owned()),
            ..event(1, "ExecutionStarted")
        }],
    }
}

fn append(execution_arn: &str, ids: std::ops::RangeInclusive<i64>) -> Append {
    Append {
        execution_arn: execution_arn.to_owned(),
        events: ids.map(|id| event(id, "PassStateEntered")).collect(),
        position: None,
        finish: None,
        owner: None,
    }
}

fn no_events(execution_arn: &str) -> Append {
    Append {
        execution_arn: execution_arn.to_owned(),
        events: Vec::new(),
        position: None,
        finish: None,
        owner: None,
    }
}

fn finish(status: ExecutionStatus) -> Finish {
    Finish {
        status,
        output: (status == ExecutionStatus::Succeeded).then(|| "{}".to_owned()),
        error: (status == ExecutionStatus::Failed).then(|| "States.TaskFailed".to_owned()),
        cause: None,
        stop_date_ms: 1_700_000_009_999,
    }
}

fn user_version(path: &Path) -> i64 {
    let conn = Connection::open(path).expect("raw connection");
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version")
}

#[test]
fn fresh_file_is_created_and_migrated_in_wal_mode() {
    let (_dir, path) = temp();
    let store = open(&path);
    assert!(path.exists());
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let conn = Connection::open(&path).expect("raw connection");
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    drop(store);
}

#[test]
fn reopening_keeps_data_and_migrates_nothing_twice() {
    let (_dir, path) = temp();
    {
        let store = open(&path);
        store
            .create_execution(new_execution("M", "a", 1))
            .wait_blocking()
            .expect("create");
    }
    let store = open(&path);
    let record = store.execution("a").expect("read").expect("found");
    assert_eq!(record.execution_arn, arn("M", "a"));
    assert_eq!(record.status, ExecutionStatus::Running);
    assert_eq!(record.last_event_id, 1);
    assert_eq!(record.position.as_deref(), Some("start"));
    assert_eq!(record.owner.as_deref(), Some("runner-1"));
    assert_eq!(user_version(&path), SCHEMA_VERSION);
}

#[test]
fn newer_schema_is_refused_and_left_alone() {
    let (dir, _) = temp();
    let path = dir.path().join("future.db");
    {
        let conn = Connection::open(&path).expect("raw connection");
        conn.execute_batch("CREATE TABLE from_the_future (x); PRAGMA user_version = 42;")
            .expect("setup");
    }
    let err = Store::open(&path, StoreOptions::default()).expect_err("must refuse");
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 42, supported, .. } if supported == SCHEMA_VERSION),
        "{err:?}"
    );
    assert!(err.to_string().contains("newer"), "{err}");
    let err = Store::open_read_only(&path, StoreOptions::default()).expect_err("must refuse");
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 42, .. }),
        "{err:?}"
    );
    assert_eq!(user_version(&path), 42);
}

#[test]
fn a_file_that_is_not_a_database_is_reported_as_such() {
    let (dir, _) = temp();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(64)).expect("write");
    let err = Store::open(&path, StoreOptions::default()).expect_err("must refuse");
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    assert!(
        err.to_string().contains("not an sfn-local database"),
        "{err}"
    );
    let err = Store::open_read_only(&path, StoreOptions::default()).expect_err("must refuse");
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
}

#[test]
fn a_directory_in_place_of_the_file_is_a_clear_error() {
    let (dir, _) = temp();
    let err = Store::open(dir.path(), StoreOptions::default()).expect_err("must refuse");
    assert!(matches!(err, StoreError::CannotOpen { .. }), "{err:?}");
}

#[test]
fn read_only_stores_refuse_writes_with_a_typed_error() {
    let (_dir, path) = temp();
    drop(open(&path));

    // Read-only store: reads work, writes are refused.
    let store = Store::open_read_only(&path, StoreOptions::default()).expect("open read-only");
    assert!(store.list_executions(None).expect("list").is_empty());
    let err = store
        .create_execution(new_execution("M", "a", 1))
        .wait_blocking()
        .expect_err("read-only");
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");

    // SQLite's own read-only refusal is classified as ReadOnly, not a generic SQLite error.
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("raw");
    let raw = conn
        .execute("UPDATE executions SET owner = 'x'", [])
        .expect_err("read-only connection");
    let err = StoreError::from_sqlite(&path, "test", Duration::from_secs(1), raw);
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");

    // A file without write permission: only meaningful when permissions bind (not as root).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
        let privileged = std::fs::OpenOptions::new().write(true).open(&path).is_ok();
        let opened = Store::open(&path, StoreOptions::default());
        if privileged {
            // Root ignores file modes: the open must simply work.
            assert!(opened.is_ok(), "{opened:?}");
        } else {
            assert!(
                matches!(opened, Err(StoreError::ReadOnly { .. })),
                "{opened:?}"
            );
        }
    }
}

#[test]
fn queued_commands_commit_in_submission_order() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "order");
    let mut commits = vec![store.create_execution(new_execution("M", "order", 1))];
    for id in 2..=2_000 {
        commits.push(store.append(Append {
            position: Some(format!("at {id}")),
            ..append(&execution_arn, id..=id)
        }));
    }
    for commit in commits {
        commit.wait_blocking().expect("commit");
    }
    let history = store.history(&execution_arn, false).expect("history");
    let ids: Vec<i64> = history.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=2_000).collect::<Vec<_>>());
    let record = store
        .execution(&execution_arn)
        .expect("read")
        .expect("found");
    assert_eq!(record.last_event_id, 2_000);
    assert_eq!(record.position.as_deref(), Some("at 2000"));
}

#[test]
fn event_ids_must_continue_the_history() {
    let (_dir, path) = temp();
    let store = open(&path);
    let a = arn("M", "ids");
    store
        .create_execution(new_execution("M", "ids", 1))
        .wait_blocking()
        .expect("create");

    // Submitted together: the bad ones fail alone, the good ones commit.
    let gap = store.append(append(&a, 3..=3));
    let good = store.append(append(&a, 2..=3));
    let reused = store.append(append(&a, 3..=3));
    let bad_previous = store.append(Append {
        events: vec![NewEvent {
            previous_event_id: 4,
            ..event(4, "PassStateExited")
        }],
        ..no_events(&a)
    });
    let good_again = store.append(append(&a, 4..=4));

    let err = gap.wait_blocking().expect_err("gap");
    assert!(
        matches!(
            err,
            StoreError::EventIdNotContiguous {
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    good.wait_blocking().expect("good");
    let err = reused.wait_blocking().expect_err("reused");
    assert!(
        matches!(
            err,
            StoreError::EventIdNotContiguous {
                expected: 4,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let err = bad_previous.wait_blocking().expect_err("previous id");
    assert!(matches!(err, StoreError::InvalidWrite { .. }), "{err:?}");
    good_again.wait_blocking().expect("good again");

    let ids: Vec<i64> = store
        .history(&a, false)
        .expect("history")
        .iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, vec![1, 2, 3, 4]);

    // The first events of a new execution start at 1.
    let mut late = new_execution("M", "late", 2);
    late.events[0].id = 2;
    let err = store
        .create_execution(late)
        .wait_blocking()
        .expect_err("starts at 2");
    assert!(matches!(
        err,
        StoreError::EventIdNotContiguous {
            expected: 1,
            found: 2,
            ..
        }
    ));
    assert!(store.execution("late").expect("read").is_none());
}

#[test]
fn history_reads_forward_and_reverse_with_details_verbatim() {
    let (_dir, path) = temp();
    let store = open(&path);
    let a = arn("M", "h");
    let _ = store.create_execution(new_execution("M", "h", 1));
    store
        .append(Append {
            events: vec![
                event(2, "PassStateEntered"),
                NewEvent {
                    details: None,
                    ..event(3, "MapStateSucceeded")
                },
            ],
            ..no_events(&a)
        })
        .wait_blocking()
        .expect("append");

    let forward = store.history("h", false).expect("history");
    assert_eq!(
        forward
            .iter()
            .map(|e| e.event_type.as_str())
            .collect::<Vec<_>>(),
        ["ExecutionStarted", "PassStateEntered", "MapStateSucceeded"]
    );
    assert_eq!(forward[0].previous_event_id, 0);
    assert_eq!(forward[1].previous_event_id, 1);
    assert_eq!(forward[1].timestamp_ms, 1_700_000_000_002);
    assert_eq!(
        forward[1].details.as_deref(),
        Some(r#"{"name":"S2","input":"{}"}"#)
    );
    assert_eq!(forward[1].details_key(), "stateEnteredEventDetails");
    assert_eq!(forward[2].details, None);

    let mut reverse = store.history(&a, true).expect("history");
    reverse.reverse();
    assert_eq!(reverse, forward);

    let err = store.history("nobody", false).expect_err("missing");
    assert!(
        matches!(err, StoreError::ExecutionNotFound { .. }),
        "{err:?}"
    );
}

#[test]
fn list_by_status_newest_first() {
    let (_dir, path) = temp();
    let store = open(&path);
    for (i, name) in ["old", "mid", "new"].iter().enumerate() {
        let _ = store.create_execution(new_execution("M", name, 1_000 * i as i64));
    }
    store
        .append(Append {
            finish: Some(finish(ExecutionStatus::Succeeded)),
            ..append(&arn("M", "mid"), 2..=2)
        })
        .wait_blocking()
        .expect("finish");

    let names =
        |records: Vec<ExecutionRecord>| records.into_iter().map(|r| r.name).collect::<Vec<_>>();
    assert_eq!(
        names(store.list_executions(None).expect("list")),
        ["new", "mid", "old"]
    );
    assert_eq!(
        names(store.running_executions().expect("list")),
        ["new", "old"]
    );
    assert_eq!(
        names(
            store
                .list_executions(Some(ExecutionStatus::Succeeded))
                .expect("list")
        ),
        ["mid"]
    );
    assert!(store
        .list_executions(Some(ExecutionStatus::Aborted))
        .expect("list")
        .is_empty());

    let mid = store.execution("mid").expect("read").expect("found");
    assert_eq!(mid.status, ExecutionStatus::Succeeded);
    assert_eq!(mid.output.as_deref(), Some("{}"));
    assert_eq!(mid.stop_date_ms, Some(1_700_000_009_999));
    assert_eq!(mid.owner, None, "finishing releases the lease");
}

#[test]
fn appending_after_the_end_is_refused() {
    let (_dir, path) = temp();
    let store = open(&path);
    let a = arn("M", "done");
    let _ = store.create_execution(new_execution("M", "done", 1));
    let end = store.append(Append {
        finish: Some(finish(ExecutionStatus::Failed)),
        ..append(&a, 2..=2)
    });
    let after = store.append(append(&a, 3..=3));
    end.wait_blocking().expect("finish");
    let err = after.wait_blocking().expect_err("after end");
    assert!(
        matches!(&err, StoreError::ExecutionNotRunning { status, .. } if status == "FAILED"),
        "{err:?}"
    );

    let err = store
        .append(Append {
            finish: Some(finish(ExecutionStatus::Running)),
            ..no_events(&arn("M", "x"))
        })
        .wait_blocking()
        .expect_err("unknown execution");
    assert!(
        matches!(err, StoreError::ExecutionNotFound { .. }),
        "{err:?}"
    );
}

#[test]
fn duplicate_arns_are_refused() {
    let (_dir, path) = temp();
    let store = open(&path);
    let first = store.create_execution(new_execution("M", "dup", 1));
    let second = store.create_execution(new_execution("M", "dup", 2));
    first.wait_blocking().expect("first");
    let err = second.wait_blocking().expect_err("second");
    assert!(
        matches!(err, StoreError::ExecutionAlreadyExists { .. }),
        "{err:?}"
    );
    assert_eq!(store.history("dup", false).expect("history").len(), 1);
}

#[test]
fn lookup_by_arn_or_name_and_ambiguous_names() {
    let (_dir, path) = temp();
    let store = open(&path);
    let _ = store.create_execution(new_execution("One", "same", 1));
    let _ = store.create_execution(new_execution("Two", "same", 2));
    store
        .create_execution(new_execution("One", "unique", 3))
        .wait_blocking()
        .expect("create");

    let by_name = store.execution("unique").expect("read").expect("found");
    let by_arn = store
        .execution(&arn("One", "unique"))
        .expect("read")
        .expect("found");
    assert_eq!(by_name, by_arn);
    assert_eq!(by_name.state_machine_name, "One");
    assert!(store.execution("missing").expect("read").is_none());
    assert!(store
        .execution(&arn("One", "missing"))
        .expect("read")
        .is_none());

    let err = store.execution("same").expect_err("ambiguous");
    match err {
        StoreError::AmbiguousExecutionName { execution_arns, .. } => {
            assert_eq!(execution_arns, [arn("Two", "same"), arn("One", "same")]);
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
}

#[test]
fn dropping_the_store_applies_what_was_submitted() {
    let (_dir, path) = temp();
    {
        let store = open(&path);
        let _ = store.create_execution(new_execution("M", "d", 1));
        let _ = store.append(append(&arn("M", "d"), 2..=50));
    }
    let store = open(&path);
    assert_eq!(store.history("d", false).expect("history").len(), 50);
}

#[test]
fn commits_can_be_awaited_and_flushed() {
    let (_dir, path) = temp();
    let store = std::sync::Arc::new(open(&path));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        store
            .create_execution(new_execution("M", "async", 1))
            .wait()
            .await
            .expect("create");
        let _ = store.append(append(&arn("M", "async"), 2..=10));
        store.flush().wait().await.expect("flush");
        // wait_blocking works inside a runtime too (it blocks, but does not panic).
        store.flush().wait_blocking().expect("flush");
    });
    assert_eq!(store.history("async", true).expect("history")[0].id, 10);
}

#[test]
fn another_connection_writing_concurrently_never_sees_locked() {
    let (_dir, path) = temp();
    let store = open(&path);
    let a = arn("M", "busy");
    store
        .create_execution(new_execution("M", "busy", 1))
        .wait_blocking()
        .expect("create");
    let before = store.data_version().expect("data_version");

    // Another "process": short IMMEDIATE transactions on its own connection, like send-task-heartbeat.
    let other_path = path.clone();
    let other = std::thread::spawn(move || -> rusqlite::Result<()> {
        let mut conn = Connection::open(&other_path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        for i in 0..300 {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            tx.execute(
                "UPDATE executions SET lease_expires_at = ?1 WHERE name = 'busy'",
                [i],
            )?;
            tx.commit()?;
        }
        Ok(())
    });
    let mut last = None;
    for id in 2..=3_001 {
        last = Some(store.append(append(&a, id..=id)));
        if id % 100 == 0 {
            // Let batches interleave with the other writer.
            std::thread::yield_now();
        }
    }
    last.expect("submitted")
        .wait_blocking()
        .expect("no lock error");
    other
        .join()
        .expect("thread")
        .expect("other writer never saw 'database is locked'");

    assert_eq!(store.history(&a, false).expect("history").len(), 3_001);
    let record = store.execution(&a).expect("read").expect("found");
    assert_eq!(record.lease_expires_at_ms, Some(299));
    assert_ne!(store.data_version().expect("data_version"), before);
}

#[test]
fn data_version_changes_only_after_a_commit() {
    let (_dir, path) = temp();
    let store = open(&path);
    store
        .create_execution(new_execution("M", "v", 1))
        .wait_blocking()
        .expect("create");
    let v1 = store.data_version().expect("data_version");
    assert_eq!(store.data_version().expect("data_version"), v1);
    {
        let conn = Connection::open(&path).expect("raw");
        conn.busy_timeout(Duration::from_secs(5)).expect("timeout");
        conn.execute("UPDATE executions SET owner = 'x'", [])
            .expect("write");
    }
    assert_ne!(store.data_version().expect("data_version"), v1);
}

/// Throughput of the write path. Run with
/// `cargo test --release --lib store::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark; prints events/second"]
fn throughput() {
    for durability in [Durability::Normal, Durability::Full] {
        let (_dir, path) = temp();
        let store = Store::open(
            &path,
            StoreOptions {
                durability,
                ..StoreOptions::default()
            },
        )
        .expect("open");
        let a = arn("M", "bench");
        const EVENTS: i64 = 100_000;
        let started = Instant::now();
        let _ = store.create_execution(new_execution("M", "bench", 1));
        // One Append per state transition, as the engine would submit them: 2 events each.
        let mut last = None;
        let mut id = 2;
        while id < EVENTS {
            last = Some(store.append(Append {
                execution_arn: a.clone(),
                events: vec![
                    NewEvent {
                        details: Some(format!(
                            r#"{{"name":"Item","input":"{{\"index\":{id},\"value\":\"some item payload\"}}","inputDetails":{{"truncated":false}}}}"#
                        )),
                        ..event(id, "TaskStateEntered")
                    },
                    event(id + 1, "TaskStateExited"),
                ],
                position: Some(format!(r#"{{"state":"Item","index":{id}}}"#)),
                finish: None,
                owner: None,
            }));
            id += 2;
        }
        let submitted = started.elapsed();
        last.expect("submitted").wait_blocking().expect("commit");
        let elapsed = started.elapsed();
        println!("{durability:?}: all submitted after {submitted:?}");
        let written = id - 1;
        println!(
            "{durability:?}: {written} events in {elapsed:?} = {:.0} events/s",
            written as f64 / elapsed.as_secs_f64()
        );
        assert_eq!(
            store
                .execution(&a)
                .expect("read")
                .expect("found")
                .last_event_id,
            written
        );
    }
}

#[test]
fn store_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
    assert_send_sync::<Commit>();
    assert_send_sync::<StoreError>();
}

#[test]
fn a_full_disk_is_classified_as_such() {
    let (_dir, path) = temp();
    drop(open(&path));
    // max_page_count makes SQLite answer SQLITE_FULL exactly as a full disk would.
    let conn = Connection::open(&path).expect("raw");
    let pages: i64 = conn
        .pragma_query_value(None, "page_count", |row| row.get(0))
        .expect("page_count");
    conn.pragma_update(None, "max_page_count", pages)
        .expect("limit");
    let raw = conn
        .execute(
            "INSERT INTO executions (execution_arn, name, state_machine_arn, state_machine_name, \
             definition, input, start_date) VALUES ('a', 'a', 'm', 'm', ?1, '{}', 0)",
            ["x".repeat(64 * 1024)],
        )
        .expect_err("no room");
    let err = StoreError::from_sqlite(&path, "test", Duration::from_secs(1), raw);
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err:?}");
}

#[test]
fn a_lock_held_past_the_busy_timeout_is_a_typed_error_for_the_whole_batch() {
    let (_dir, path) = temp();
    let options = StoreOptions {
        busy_timeout: Duration::from_millis(100),
        ..StoreOptions::default()
    };
    let store = Store::open(&path, options).expect("open");
    let a = arn("M", "locked");
    store
        .create_execution(new_execution("M", "locked", 1))
        .wait_blocking()
        .expect("create");

    let mut other = Connection::open(&path).expect("raw");
    let tx = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("take the write lock");
    let first = store.append(append(&a, 2..=2));
    let second = store.append(append(&a, 3..=3));
    for commit in [first, second] {
        let err = commit.wait_blocking().expect_err("locked");
        assert!(
            matches!(
                err,
                StoreError::Busy {
                    timeout_ms: 100,
                    ..
                }
            ),
            "{err:?}"
        );
    }
    drop(tx);
    // Nothing was kept, so the history continues at 2.
    store
        .append(append(&a, 2..=2))
        .wait_blocking()
        .expect("after the lock is released");
}

/// A runner's lease row keeps every execution it holds past the execution's own expiry; when
/// it lapses the execution can be taken over; a released execution can be taken at once.
#[test]
fn a_runners_lease_row_extends_its_executions_until_it_lapses() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "leased");
    // Its own lease (runner-1's, from the start) ends at 1 + 30,000.
    store
        .create_execution(new_execution("M", "leased", 1))
        .wait_blocking()
        .expect("create");
    store.renew_leases("runner-1", 100_000).expect("renew");
    let record = store.execution(&execution_arn).unwrap().unwrap();
    assert_eq!(record.lease_expires_at_ms, Some(100_000));
    // Past its own expiry, before its runner's: held.
    let taken = store.acquire_lease(&execution_arn, "runner-2", 50_000, 60_000);
    assert!(
        taken.expect("acquire").is_none(),
        "runner-1's row still holds it"
    );
    // Past its runner's too: lapsed, so runner-2 takes it, and runner-1's renewals no longer
    // reach it (they name another owner).
    let taken = store.acquire_lease(&execution_arn, "runner-2", 100_001, 110_000);
    assert!(taken.expect("acquire").is_some());
    store.renew_leases("runner-1", 200_000).expect("renew");
    let record = store.execution(&execution_arn).unwrap().unwrap();
    assert_eq!(record.owner.as_deref(), Some("runner-2"));
    assert_eq!(record.lease_expires_at_ms, Some(110_000));
    // Released, it is free at once, whatever its runner's row says.
    store.renew_leases("runner-2", 500_000).expect("renew");
    store
        .release_lease(&execution_arn, "runner-2")
        .expect("release");
    let taken = store.acquire_lease(&execution_arn, "runner-3", 120_000, 130_000);
    assert!(
        taken.expect("acquire").is_some(),
        "a released lease is free"
    );
}

/// Takeovers from runners that died count while no event is committed between them; one from
/// a runner that released its lease (stopped cleanly) starts the count again, and a runner
/// taking its own execution again is no takeover.
#[test]
fn takeovers_without_progress_are_counted_until_a_clean_stop() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "stalls");
    store
        .create_execution(new_execution("M", "stalls", 1))
        .wait_blocking()
        .expect("create");
    let stalled = |owner: &str, at: i64| {
        let taken = store.acquire_lease(&execution_arn, owner, at, at + 1_000);
        taken.expect("acquire").expect("lapsed").stalled
    };
    // runner-1 (its creator) died: the first takeover has nothing to compare with.
    assert_eq!(stalled("runner-2", 100_000), 0);
    assert_eq!(stalled("runner-2", 100_001), 0, "its own again");
    assert_eq!(stalled("runner-3", 200_000), 1);
    assert_eq!(stalled("runner-4", 300_000), 2);
    store
        .release_lease(&execution_arn, "runner-4")
        .expect("release");
    assert_eq!(stalled("runner-5", 300_001), 0, "runner-4 stopped cleanly");
    assert_eq!(stalled("runner-6", 400_000), 1);
    // A settle from a runner that no longer holds it changes nothing; the holder's does.
    store
        .settle_takeover(&execution_arn, "runner-5")
        .expect("settle");
    assert_eq!(stalled("runner-7", 500_000), 2);
    store
        .settle_takeover(&execution_arn, "runner-7")
        .expect("settle");
    assert_eq!(stalled("runner-8", 600_000), 0, "runner-7 reached its wait");
}

/// Regression (#38): a Map run's journal writes are background work, taken at most
/// `BACKGROUND_PER_BATCH` a transaction after everything else: a new execution's row submitted
/// behind thousands of them commits before they all have (it waited behind all of them).
#[test]
fn a_new_execution_commits_before_a_backlog_of_map_run_writes() {
    let (_dir, path) = temp();
    let store = open(&path);
    let parent = new_execution("M", "parent", 0);
    let parent_arn = parent.execution_arn.clone();
    store.create_execution(parent).wait_blocking().unwrap();
    let backlog: Vec<Commit> = (0..20_000)
        .map(|i| {
            store.record_map_run_child(MapRunChild {
                execution_arn: parent_arn.clone(),
                run_key: "run".into(),
                item_index: i,
                child: "{}".into(),
            })
        })
        .collect();
    store
        .create_execution(new_execution("M", "other", 0))
        .wait_blocking()
        .unwrap();
    let stored: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM map_run_children", [], |r| r.get(0))
        .unwrap();
    assert!(
        stored < 20_000,
        "the new execution waited for the whole backlog"
    );
    for commit in backlog {
        commit.wait_blocking().unwrap();
    }
    // A barrier still answers once everything before it committed.
    store.flush().wait_blocking().unwrap();
    let stored: i64 = Connection::open(&path)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM map_run_children", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 20_000);
}

/// Regression: the store's side connection kept SQLite's automatic checkpoint (1,000 pages),
/// so the first side commit past 4 MiB of WAL (here a StopExecution's request) copied the WAL
/// into the database, with its fsyncs, before answering: 200 ms after 500 executions in
/// `serve`. Checkpoints are the writer's, off every caller's path.
#[test]
fn a_side_commit_never_checkpoints_the_wal() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "big");
    let mut commits = vec![store.create_execution(new_execution("M", "big", 1))];
    // Padding that does not compress (chunks over 2 KiB are stored compressed).
    let mut letters = fastrand::Rng::with_seed(1);
    let mut padding = || -> String { (0..8 * 1024).map(|_| letters.lowercase()).collect() };
    for id in 2..=1_000 {
        let mut events = append(&execution_arn, id..=id);
        events.events[0].details = Some(format!(r#"{{"name":"{}"}}"#, padding()));
        commits.push(store.append(events));
    }
    for commit in commits {
        commit.wait_blocking().expect("commit");
    }
    let wal = |suffix: &str| {
        let mut name = path.clone().into_os_string();
        name.push(suffix);
        std::fs::metadata(name).map(|m| m.len()).unwrap_or(0)
    };
    assert!(wal("-wal") > 4 << 20, "the WAL holds {} bytes", wal("-wal"));
    let database_before = wal("");
    store
        .request_stop(&execution_arn, Some("Enough"), None, 2)
        .expect("stop");
    assert_eq!(wal(""), database_before, "a checkpoint copied the WAL in");
}

/// The machine a `run` of `name` registers.
fn cli_machine(name: &str) -> StateMachineRecord {
    StateMachineRecord {
        arn: format!("arn:aws:states:{REGION_ACCOUNT}:stateMachine:{name}"),
        name: name.to_owned(),
        machine_type: "STANDARD".into(),
        definition: r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#.into(),
        role_arn: String::new(),
        settings: "{}".into(),
        revision_id: "r1".into(),
        creation_date_ms: 1,
        update_date_ms: None,
    }
}

#[test]
fn a_new_database_starts_its_wal_unsynced_then_runs_at_the_chosen_level() {
    let (_dir, path) = temp();
    let options = StoreOptions {
        durability: Durability::Normal,
        ..StoreOptions::default()
    };
    let store = Store::open(&path, options).expect("open store");
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    // The WAL's header is written at open (under `synchronous = OFF`: no fsyncs)...
    let header = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(header >= 32, "the WAL holds {header} bytes");
    // ...and the write connection is back at the store's level for everything after.
    let writer = store.writer.as_ref().expect("writable");
    let idle = writer.idle();
    let conn = &idle.as_ref().expect("no command yet").conn;
    let level: i64 = conn
        .pragma_query_value(None, "synchronous", |row| row.get(0))
        .expect("synchronous");
    assert_eq!(level, 1, "NORMAL");
}

#[test]
fn short_writes_use_the_write_connection_until_the_writer_starts() {
    let (_dir, path) = temp();
    let store = open(&path);
    let machine = cli_machine("M");
    assert!(matches!(
        store.register_cli_machine(&machine),
        Ok(Registered::Created)
    ));
    assert!(
        lock(&store.side_writer).is_none(),
        "a side connection opened"
    );
    assert!(store.writer.as_ref().expect("writable").idle().is_some());
    // A new execution commits on it too (its caller waits anyway); the first command nobody
    // waits for starts the writer's thread on that connection. Later short writes take the
    // side connection, and both see each other's rows.
    let execution_arn = arn("M", "one");
    store
        .create_execution(new_execution("M", "one", 1))
        .wait_blocking()
        .expect("create");
    assert!(store.writer.as_ref().expect("writable").idle().is_some());
    let events = store.append(append(&execution_arn, 2..=3));
    assert!(store.writer.as_ref().expect("writable").idle().is_none());
    events.wait_blocking().expect("append");
    store
        .request_stop(&execution_arn, Some("Enough"), None, 2)
        .expect("stop");
    assert!(lock(&store.side_writer).is_some());
    assert!(matches!(
        store.register_cli_machine(&machine),
        Ok(Registered::Unchanged)
    ));
    drop(store);
    let again = open(&path);
    assert!(again.stop_request(&execution_arn).expect("read").is_some());
}

#[test]
fn the_watcher_starting_from_the_log_at_open_wakes_on_a_later_stop() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "watched");
    store
        .create_execution(new_execution("M", "watched", 1))
        .wait_blocking()
        .expect("create");
    // A row logged by another process after this store opened, before anyone waits.
    store
        .create_execution(new_execution("M", "elsewhere", 1))
        .wait_blocking()
        .expect("create");
    let other = open(&path);
    other
        .request_stop(&arn("M", "elsewhere"), None, None, 2)
        .expect("stop");
    let waiter = store.watch_execution(&execution_arn).expect("watch");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let mut notified = std::pin::pin!(waiter.notified());
    notified.as_mut().enable();
    other
        .request_stop(&execution_arn, Some("Enough"), None, 3)
        .expect("stop");
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), notified).await })
        .expect("the waiter was never woken");
}

#[test]
fn a_short_execution_commits_on_the_callers_thread_and_starts_no_writer() {
    let (_dir, path) = temp();
    let store = open(&path);
    let execution_arn = arn("M", "short");
    store
        .create_execution(new_execution("M", "short", 1))
        .wait_blocking()
        .expect("create");
    let ended = Append {
        finish: Some(finish(ExecutionStatus::Succeeded)),
        ..append(&execution_arn, 2..=4)
    };
    store.append(ended).wait_blocking().expect("append");
    assert!(store.writer.as_ref().expect("writable").idle().is_some());
    drop(store);
    let again = open(&path);
    let record = again.execution(&execution_arn).expect("read").expect("row");
    assert_eq!(
        (record.status, record.last_event_id),
        (ExecutionStatus::Succeeded, 4)
    );
}
