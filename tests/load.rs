//! The load test of issue #5: 50 worker processes heartbeating every 100 ms and answering tasks
//! while runners drive 200 executions of a `.waitForTaskToken` machine, all on one database file.
//!
//! Real processes only: every execution is its own `sfn-local run` (so 200 executions rows,
//! 200 runners' leases and commits, with [`RUNNERS`] of them alive at once), and every worker is
//! a shell loop (`tests/workers/load-worker.sh`) calling `sfn-local list-tasks --format json`,
//! `send-task-heartbeat` (every 100 ms, three times per task) and `send-task-success`. Many `run`
//! processes rather than one Map with 200 callback iterations: that is what contends on the
//! file (many writer processes at once, each with its own writer thread and lease keeper), and
//! it gives 200 real executions to check one by one.
//!
//! Asserted: every execution SUCCEEDED with the output its input calls for, no process's stderr
//! mentions "database is locked" (or the store's Busy error), every answer sent was accepted
//! and exactly one answer per execution was sent. Throughput (executions/s, answers/s,
//! heartbeats/s) is printed.
//!
//! The default is the full size (50 workers, 200 executions, 20 runners alive at
//! once): 30 to 50 s in a debug build on 2 cores. `SFN_LOAD_WORKERS`, `SFN_LOAD_EXECUTIONS`
//! and `SFN_LOAD_RUNNERS` change it.

mod common;

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `run` processes alive at once unless `SFN_LOAD_RUNNERS` says otherwise.
const RUNNERS: usize = 20;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

fn machine() -> Value {
    json!({
        "StartAt": "Ask",
        "States": {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"token.$": "$$.Task.Token", "n.$": "$.n"},
                "HeartbeatSeconds": 20, "TimeoutSeconds": 120,
                "ResultPath": "$.answer",
                "End": true
            }
        }
    })
}

fn mentions_lock(text: &str) -> bool {
    let text = &without_tokens(text);
    text.contains("database is locked")
        || text.contains("stayed locked")
        || text.contains("Busy")
        || text.contains("SQLITE_BUSY")
}

/// `text` with each task token it prints (after `task token` or `--task-token`) replaced by
/// `<token>`: a token is random letters and digits, and one once held "Busy"
/// (`...fP33BusyBlaY`), which failed the run it was printed by.
fn without_tokens(text: &str) -> String {
    let mut words: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        let after_token = matches!(words.last(), Some(&"token") | Some(&"--task-token"));
        words.push(if after_token { "<token>" } else { word });
    }
    words.join(" ")
}

#[test]
fn fifty_workers_two_hundred_executions_no_lock_errors_no_lost_answers() {
    let workers = env_or("SFN_LOAD_WORKERS", 50);
    let executions = env_or("SFN_LOAD_EXECUTIONS", 200);
    let runners = env_or("SFN_LOAD_RUNNERS", RUNNERS).min(executions);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("state.db");
    let def = dir.path().join("load.asl.json");
    std::fs::write(&def, machine().to_string()).expect("definition");
    let bin = common::bin();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workers/load-worker.sh");

    // Create the database (and its schema) before anyone races to.
    let out = Command::new(&bin)
        .args(["list-executions", "--db"])
        .arg(&db)
        .output()
        .expect("list-executions");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let started = Instant::now();
    let mut pool = Vec::new();
    for w in 0..workers {
        let child = Command::new("bash")
            .arg(&script)
            .env("SFN_LOCAL", &bin)
            .env("SFN_LOCAL_DB", &db)
            .env("LOAD_DIR", dir.path())
            .env("WORKER", w.to_string())
            .env("WORKERS", workers.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn worker");
        pool.push(child);
    }

    let next = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<(usize, std::process::Output)>>> = Arc::default();
    let threads: Vec<_> = (0..runners)
        .map(|_| {
            let (next, results, bin, db, def) = (
                next.clone(),
                results.clone(),
                bin.clone(),
                db.clone(),
                def.clone(),
            );
            std::thread::spawn(move || loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= executions {
                    break;
                }
                let out = Command::new(&bin)
                    .arg("run")
                    .arg(&def)
                    .args(["--name", &format!("load-{n}"), "--input"])
                    .arg(json!({ "n": n }).to_string())
                    .env("SFN_LOCAL_DB", &db)
                    .stdin(Stdio::null())
                    .output()
                    .expect("run");
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((n, out));
            })
        })
        .collect();
    for t in threads {
        t.join().expect("runner thread");
    }
    let elapsed = started.elapsed();
    std::fs::write(dir.path().join("stop"), "").expect("stop file");
    for mut child in pool {
        let status = child.wait().expect("worker");
        assert!(status.success(), "a worker failed: {status}");
    }

    // Every execution succeeded with its own answer.
    let results = std::mem::take(&mut *results.lock().unwrap_or_else(|p| p.into_inner()));
    assert_eq!(results.len(), executions);
    for (n, out) in &results {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!mentions_lock(&stderr), "load-{n}: {stderr}");
        assert!(out.status.success(), "load-{n} failed: {stderr}");
        let output: Value = serde_json::from_slice(&out.stdout).expect("output JSON");
        assert_eq!(output["n"], json!(n), "load-{n}");
        assert_eq!(output["answer"]["double"], json!(2 * n), "load-{n}");
        assert_eq!(output["answer"]["by"], json!(n % workers), "load-{n}");
    }
    let list = Command::new(&bin)
        .args(["list-executions", "--db"])
        .arg(&db)
        .output()
        .expect("list-executions");
    let listed: Value = serde_json::from_slice(&list.stdout).expect("list JSON");
    let listed = listed["executions"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), executions);
    assert!(listed.iter().all(|e| e["status"] == "SUCCEEDED"));

    // Workers: nothing locked, every answer accepted, one per execution.
    let (mut beats, mut beats_refused, mut answers, mut refused, mut polls) = (0, 0, 0, 0, 0);
    let mut tokens = std::collections::HashSet::new();
    for w in 0..workers {
        let stderr =
            std::fs::read_to_string(dir.path().join(format!("stderr-{w}"))).unwrap_or_default();
        assert!(!mentions_lock(&stderr), "worker {w}: {stderr}");
        let counts =
            std::fs::read_to_string(dir.path().join(format!("counts-{w}"))).expect("worker counts");
        let c: Vec<u64> = counts
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        assert_eq!(c.len(), 5, "worker {w}: {counts}");
        beats += c[0];
        beats_refused += c[1];
        answers += c[2];
        refused += c[3];
        polls += c[4];
        let answered =
            std::fs::read_to_string(dir.path().join(format!("answered-{w}"))).unwrap_or_default();
        for token in answered.lines() {
            assert!(
                tokens.insert(token.to_owned()),
                "token answered twice: {token}"
            );
        }
    }
    assert_eq!(refused, 0, "answers refused");
    assert_eq!(beats_refused, 0, "heartbeats refused");
    assert_eq!(answers as usize, executions, "answers accepted");
    assert_eq!(tokens.len(), executions);

    let secs = elapsed.as_secs_f64();
    eprintln!(
        "load: {workers} workers, {executions} executions ({runners} runners at once) in {secs:.1} s: \
         {:.1} executions/s, {:.1} answers/s, {:.1} heartbeats/s ({beats} heartbeats, {polls} polls), \
         0 'database is locked'",
        executions as f64 / secs,
        answers as f64 / secs,
        beats as f64 / secs,
    );
}

/// Regression: a task token that happened to hold "Busy" was taken for a lock error.
#[test]
fn a_token_holding_a_lock_word_is_not_a_lock_error() {
    let stderr = "sfn-local: state 'Ask' (attempt 1) issued task token TpJNUibpiCXUKd6t4WFgZ1YdSvcteR24fP33BusyBlaY\n\
                  answer with: sfn-local send-task-success --task-token TpJNUibpiCXUKd6t4WFgZ1YdSvcteR24fP33BusyBlaY --task-output JSON";
    assert!(!mentions_lock(stderr));
    assert!(mentions_lock("sfn-local: the store stayed locked"));
    assert!(mentions_lock("SqliteFailure(Error { code: DatabaseBusy })"));
}
