//! The database file mistreated while `run` holds it (deleted, replaced by another file,
//! truncated, migrated by a newer sfn-local), and two `resume --all` racing for the same
//! executions, through the real binary and real SQLite files. Each case has the outcome the
//! README's "When the database is the problem" table gives.

mod common;

use common::{kill, types, Output, Sandbox};
use serde_json::{json, Value};
use std::process::Child;
use std::time::{Duration, Instant};

/// A sandbox whose runner leases last 300 ms, so a killed runner's executions are soon free.
fn sandbox() -> Sandbox {
    Sandbox::new().lease_ms(300)
}

/// Pass, a Wait of `wait` seconds, Pass.
fn napping(wait: u64) -> Value {
    json!({"StartAt": "First", "States": {
        "First": {"Type": "Pass", "Result": 1, "ResultPath": "$.first", "Next": "Nap"},
        "Nap": {"Type": "Wait", "Seconds": wait, "Next": "Last"},
        "Last": {"Type": "Pass", "Result": 2, "ResultPath": "$.last", "End": true}}})
}

fn def(sb: &Sandbox, name: &str, machine: &Value) -> String {
    sb.write(name, &machine.to_string()).display().to_string()
}

/// Waits until execution `name` has entered its Wait state (its start is committed).
fn wait_for_nap(sb: &Sandbox, name: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let out = sb.run(&["get-execution-history", "--execution-arn", name]);
        if out.code == 0 && out.stdout.contains("WaitStateEntered") {
            return;
        }
        assert!(
            Instant::now() < until,
            "{name} never reached its Wait: {}",
            out.stderr
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Collects a run that must fail on the database without panicking, and returns its stderr.
#[track_caller]
fn failed_on_the_database(child: Child) -> String {
    let out = Output::of(child);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert_ne!(out.code, -1, "killed by a signal: {}", out.stderr);
    out.stderr
}

#[test]
fn a_database_deleted_while_run_holds_it_stops_the_run_clearly() {
    let sb = sandbox();
    let d = def(&sb, "m.asl.json", &napping(1));
    let run = sb.spawn(&["run", &d, "--name", "held"]);
    wait_for_nap(&sb, "held");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", sb.db().display()));
    }
    let stderr = failed_on_the_database(run);
    assert!(
        stderr.contains("was deleted while this process had it open; nothing more is written"),
        "{stderr}"
    );
    // Nothing brought a half-empty file back to life at the path.
    assert!(!sb.db().exists());
}

#[test]
fn a_database_replaced_by_another_file_while_run_holds_it_is_left_alone() {
    let sb = sandbox();
    let other = sandbox();
    let d = def(&sb, "m.asl.json", &napping(1));
    let out = other.run(&["run", &d, "--name", "theirs", "--input", "{}"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Checkpointed into one file, as a copied database would be.
    rusqlite::Connection::open(other.db())
        .and_then(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"))
        .expect("checkpoint");
    let run = sb.spawn(&["run", &d, "--name", "held"]);
    wait_for_nap(&sb, "held");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", sb.db().display()));
    }
    std::fs::rename(other.db(), sb.db()).expect("replace the database");
    let stderr = failed_on_the_database(run);
    assert!(
        stderr.contains("was replaced by another file while this process had it open"),
        "{stderr}"
    );
    // The file now at the path is the other one, untouched: its one execution, nothing of ours.
    let out = sb.run(&["list-executions"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let names: Vec<Value> = out.json()["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(names, [json!("theirs")]);
}

#[test]
fn a_database_truncated_while_run_holds_it_stops_the_run_clearly() {
    let sb = sandbox();
    let d = def(&sb, "m.asl.json", &napping(1));
    let run = sb.spawn(&["run", &d, "--name", "held"]);
    wait_for_nap(&sb, "held");
    std::fs::OpenOptions::new()
        .write(true)
        .open(sb.db())
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    let stderr = failed_on_the_database(run);
    assert!(
        stderr.contains("was truncated while this process had it open"),
        "{stderr}"
    );
}

#[test]
fn a_run_holding_a_database_a_newer_sfn_local_migrated_stops_writing() {
    let sb = sandbox();
    let d = def(&sb, "m.asl.json", &napping(1));
    let run = sb.spawn(&["run", &d, "--name", "held"]);
    wait_for_nap(&sb, "held");
    // What a newer sfn-local's migration leaves: a higher schema version.
    rusqlite::Connection::open(sb.db())
        .and_then(|c| c.execute_batch("PRAGMA user_version = 999"))
        .expect("set version");
    let stderr = failed_on_the_database(run);
    assert!(
        stderr.contains("has schema version 999, newer than this sfn-local supports"),
        "{stderr}"
    );
    let version: i64 = rusqlite::Connection::open(sb.db())
        .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
        .expect("version");
    assert_eq!(version, 999);
}

#[test]
fn two_resume_all_at_once_drive_each_execution_exactly_once() {
    let sb = sandbox();
    let log = sb.path("ran.log");
    let machine = json!({"StartAt": "Nap", "States": {
        "Nap": {"Type": "Wait", "Seconds": 8, "Next": "Work"},
        "Work": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true}}});
    let d = def(&sb, "m.asl.json", &machine);
    let task = format!(
        "Work=sh -c 'echo \"$SFN_EXECUTION_ARN\" >> {}; echo {{}}'",
        log.display()
    );
    let names: Vec<String> = (0..6).map(|i| format!("e{i}")).collect();
    let mut runs: Vec<Child> = names
        .iter()
        .map(|n| sb.spawn(&["run", &d, "--name", n, "--task", &task]))
        .collect();
    for n in &names {
        wait_for_nap(&sb, n);
    }
    for r in &mut runs {
        kill(r);
    }
    std::thread::sleep(Duration::from_millis(400));
    let a = sb.spawn(&["resume", "--all"]);
    let b = sb.spawn(&["resume", "--all"]);
    let (a, b) = (Output::of(a), Output::of(b));
    for out in [&a, &b] {
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    for n in &names {
        let events = sb.history(n);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["id"], json!(i + 1), "{n}: ids must be contiguous");
        }
        let t = types(&events);
        assert_eq!(
            t.iter().filter(|t| *t == "ExecutionSucceeded").count(),
            1,
            "{n}: {t:?}\nA: {}\nB: {}",
            a.stderr,
            b.stderr
        );
        assert_eq!(
            t.iter().filter(|t| *t == "TaskStarted").count(),
            1,
            "{n} ran its task twice: {t:?}"
        );
        let runs = ran
            .lines()
            .filter(|l| l.ends_with(&format!(":{n}")))
            .count();
        assert_eq!(runs, 1, "{n} ran {runs} times:\n{ran}");
    }
}
