//! Durable executions, case by case, through the binary: bad stores (not a database, locked
//! too long, read-only, full, newer schema), fencing a runner that lost its lease, Ctrl-C, a
//! local task running at the crash, a distributed Map's finished children kept, answers and
//! heartbeats given while no runner is alive, and a serve taking over another's executions.

mod common;

use common::{kill, types, Output, Sandbox};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A sandbox for these cases: worker scripts call the binary back, and runner leases last
/// 300 ms, so a dead runner's executions can be resumed soon.
fn sandbox() -> Sandbox {
    Sandbox::with_workers().lease_ms(300)
}

/// This suite's helpers on the shared sandbox.
impl Sandbox {
    /// Writes the definition into the sandbox (`m.asl.json`) and returns its path.
    fn def(&self, machine: &Value) -> String {
        self.write("m.asl.json", &machine.to_string())
            .display()
            .to_string()
    }

    /// Writes an executable script into the sandbox and returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let script = self.write(name, body);
        let _ = Command::new("chmod").arg("+x").arg(&script).status();
        script
    }

    /// The event types of an execution's history, whose ids must be contiguous.
    fn history_types(&self, execution: &str) -> Vec<String> {
        let events = self.history(execution);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["id"], json!(i + 1), "ids must be contiguous");
        }
        types(&events)
    }

    fn describe(&self, execution: &str) -> Value {
        let out = self.run(&["describe-execution", "--execution-arn", execution]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()
    }

    fn executions(&self) -> Vec<Value> {
        let out = self.run(&["list-executions"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()["executions"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The open tasks, waiting until there are `n` (or 10 s pass).
    fn wait_tasks(&self, n: usize) -> Vec<Value> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.run(&["list-tasks", "--format", "json"]);
            let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
            let tasks = v["tasks"].as_array().cloned().unwrap_or_default();
            if tasks.len() >= n || Instant::now() > until {
                return tasks;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {sig}");
}

#[track_caller]
fn no_panic(out: &Output) {
    let err = &out.stderr;
    assert!(!err.contains("panicked"), "panic: {err}");
    assert_ne!(out.code, 101, "panic exit: {err}");
    assert_ne!(out.code, -1, "killed by a signal: {err}");
}

fn simple() -> Value {
    json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Result": {"ok": true}, "End": true}}})
}

fn callback(heartbeat: u64) -> Value {
    json!({
        "StartAt": "Ask",
        "States": {
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"token.$": "$$.Task.Token"},
                "HeartbeatSeconds": heartbeat, "TimeoutSeconds": 60,
                "ResultPath": "$.answer",
                "End": true
            }
        }
    })
}

/// Asserts that every stored execution is whole: a terminal one has its terminal event; a
/// running one has contiguous ids (checked by `history_types`).
fn no_half_written(sb: &Sandbox) {
    for e in sb.executions() {
        let arn = e["executionArn"].as_str().unwrap_or_default().to_owned();
        let types = sb.history_types(&arn);
        match e["status"].as_str() {
            Some("RUNNING") => {}
            Some("SUCCEEDED") => assert_eq!(
                types.last().map(String::as_str),
                Some("ExecutionSucceeded"),
                "{arn}"
            ),
            other => panic!("{arn}: unexpected status {other:?}"),
        }
    }
}

// ---- bad stores ---------------------------------------------------------------------------

/// `send-task-success` for a token nobody issued: a command that opens the store for writing.
const SEND_SUCCESS: [&str; 5] = [
    "send-task-success",
    "--task-token",
    // A token of sfn-local's shape, so the database is consulted.
    "TAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "--task-output",
    "{}",
];

/// Asserts that `args` were refused cleanly because of the store: no panic, a failure exit and
/// an error that says `message` and names the database file.
#[track_caller]
fn refused(sb: &Sandbox, args: &[&str], out: &Output, message: &str) {
    no_panic(out);
    assert_ne!(out.code, 0, "{args:?}");
    let err = &out.stderr;
    assert!(err.contains(message), "{args:?}: {err}");
    let db = sb.db().display().to_string();
    assert!(err.contains(&db), "{args:?} must name the file: {err}");
}

/// Runs the simple machine as `before`, so that the store holds a finished execution; returns
/// the definition's path.
fn run_before(sb: &Sandbox) -> String {
    let def = sb.def(&simple());
    let first = sb.run(&["run", &def, "--name", "before"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    def
}

#[test]
fn a_file_that_is_not_a_database_is_refused_clearly() {
    let sb = sandbox();
    std::fs::write(sb.db(), "this is not SQLite\n".repeat(300)).expect("file");
    let before = std::fs::read(sb.db()).expect("read");
    let def = sb.def(&simple());
    for args in [
        vec!["run", def.as_str()],
        vec!["list-executions"],
        SEND_SUCCESS.to_vec(),
        vec!["resume", "--all"],
    ] {
        let out = sb.run(&args);
        refused(&sb, &args, &out, "not an sfn-local database");
    }
    assert_eq!(
        std::fs::read(sb.db()).expect("read"),
        before,
        "the file was changed"
    );
}

#[test]
fn a_database_locked_too_long_by_another_process_is_a_clear_error() {
    let sb = sandbox();
    let def = run_before(&sb);
    // Another process (this test) holds a write transaction for longer than the busy timeout.
    let mut holder = rusqlite::Connection::open(sb.db()).expect("open");
    let tx = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("begin immediate");
    for args in [
        vec!["run", def.as_str(), "--name", "during"],
        SEND_SUCCESS.to_vec(),
    ] {
        let started = Instant::now();
        let out = sb.run_env(&args, &[("SFN_LOCAL_BUSY_TIMEOUT_MS", "300")]);
        let message = "stayed locked by another process for longer than 300 ms";
        refused(&sb, &args, &out, message);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the timeout was not used"
        );
    }
    // Readers are not blocked by a writer (WAL).
    let list = sb.run(&["list-executions"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    drop(tx);
    drop(holder);
    // Nothing of "during" was kept, or it is whole.
    no_half_written(&sb);
    let again = sb.run(&["run", &def, "--name", "after"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
}

/// Makes a file immutable with `chattr +i` (root cannot write it either) while alive.
struct Immutable(PathBuf);

impl Immutable {
    fn try_new(path: &Path) -> Option<Immutable> {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// CI runs as root, which writes through `chmod`. So the file is made immutable with `chattr +i`
/// where the file system allows it (root cannot write it either); elsewhere
/// `SFN_LOCAL_READ_ONLY=1` opens it without write access, exactly what SQLite sees on a
/// read-only mount. Either way: writes are refused naming the file, reads still work.
#[test]
fn a_read_only_database_refuses_writes_clearly_and_still_reads() {
    let sb = sandbox();
    let def = run_before(&sb);
    let guard = Immutable::try_new(&sb.db());
    let how = if guard.is_some() {
        "chattr +i"
    } else {
        "SFN_LOCAL_READ_ONLY=1"
    };
    eprintln!("read-only database by {how}");
    let read_only: &[(&str, &str)] = if guard.is_none() {
        &[("SFN_LOCAL_READ_ONLY", "1")]
    } else {
        &[]
    };
    let ro = |args: &[&str]| sb.run_env(args, read_only);
    for args in [
        vec!["run", def.as_str(), "--name", "during"],
        SEND_SUCCESS.to_vec(),
        vec!["stop-execution", "--execution-arn", "before"],
    ] {
        let out = ro(&args);
        refused(&sb, &args, &out, "is read-only");
    }
    let list = ro(&["list-executions"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(list.json()["executions"].as_array().map(Vec::len), Some(1));
    drop(guard);
    no_half_written(&sb);
}

/// `SFN_LOCAL_MAX_PAGE_COUNT` caps the file as a full disk would. The run fails saying so, the
/// execution is left whole (RUNNING with contiguous ids, or not there at all), and once there is
/// room again `resume` finishes it.
#[test]
fn a_full_disk_is_a_clear_error_and_leaves_a_resumable_execution() {
    let sb = sandbox();
    let big = "x".repeat(200_000);
    let machine = json!({
        "StartAt": "Small",
        "States": {
            "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.small", "Next": "Big"},
            "Big": {"Type": "Pass", "Result": big, "ResultPath": "$.big", "Next": "Done"},
            "Done": {"Type": "Pass", "Parameters": {"length.$": "States.StringSplit($.small, ',')"}, "End": true}
        }
    });
    run_before(&sb);
    let def2 = sb.write("big.asl.json", &machine.to_string());
    let def2 = def2.display().to_string();
    // The database's current size in pages, plus a little: the big state cannot fit.
    let pages: i64 = rusqlite::Connection::open(sb.db())
        .and_then(|c| c.query_row("PRAGMA page_count", [], |r| r.get(0)))
        .expect("page_count");
    let args = ["run", def2.as_str(), "--name", "full"];
    let max_pages = (pages + 12).to_string();
    let out = sb.run_env(&args, &[("SFN_LOCAL_MAX_PAGE_COUNT", &max_pages)]);
    refused(&sb, &args, &out, "disk full");
    no_half_written(&sb);
    let full = sb.executions().into_iter().find(|e| e["name"] == "full");
    if let Some(full) = full {
        assert_eq!(full["status"], "RUNNING");
        let out = sb.resume("full");
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["length"], json!(["small"]));
    }
}

#[test]
fn a_database_from_a_newer_sfn_local_is_refused_untouched() {
    let sb = sandbox();
    let def = run_before(&sb);
    rusqlite::Connection::open(sb.db())
        .and_then(|c| c.execute_batch("PRAGMA user_version = 999"))
        .expect("set version");
    for args in [
        vec!["run", def.as_str(), "--name", "during"],
        vec!["list-executions"],
        SEND_SUCCESS.to_vec(),
    ] {
        let out = sb.run(&args);
        refused(&sb, &args, &out, "schema version 999, newer than");
        assert!(
            out.stderr.contains("upgrade sfn-local"),
            "{args:?}: {}",
            out.stderr
        );
    }
    let version: i64 = rusqlite::Connection::open(sb.db())
        .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
        .expect("version");
    assert_eq!(version, 999, "the database was changed");
}

// Regression (seen in CI): processes opening a new database at the same moment all switch it
// to WAL; SQLite answers one of them BUSY at once rather than deadlock, and that `run` failed
// with "stayed locked ... longer than 30000 ms" though it had not waited.
#[test]
fn runs_started_together_on_a_new_database_all_succeed() {
    for round in 0..30 {
        let sb = sandbox();
        let def = sb.def(&simple());
        let runs: Vec<_> = (0..4)
            .map(|i| sb.spawn(&["run", &def, "--name", &format!("together-{i}")]))
            .collect();
        for (i, run) in runs.into_iter().enumerate() {
            let out = Output::of(run);
            assert_eq!(out.code, 0, "round {round}, run {i}: {}", out.stderr);
        }
    }
}

// ---- fencing, Ctrl-C, crashes around tasks --------------------------------------------------

fn waits() -> Value {
    json!({
        "StartAt": "First",
        "States": {
            "First": {"Type": "Pass", "Result": 1, "ResultPath": "$.first", "Next": "Nap"},
            "Nap": {"Type": "Wait", "Seconds": 2, "Next": "Last"},
            "Last": {"Type": "Pass", "Result": 2, "ResultPath": "$.last", "End": true}
        }
    })
}

/// `stop-execution` on an execution whose runner is dead ends it at once, the way a live
/// runner would: `ExecutionAborted` (pointing at nothing, with the caller's error and cause)
/// after the last recorded event, and nothing left to resume.
#[test]
fn stopping_an_execution_whose_runner_died_aborts_it() {
    let sb = sandbox();
    let def = sb.def(&json!({"StartAt": "Nap", "States": {
        "Nap": {"Type": "Wait", "Seconds": 60, "End": true}}}));
    let mut child = sb.spawn(&["run", &def, "--name", "orphan"]);
    let until = Instant::now() + Duration::from_secs(10);
    let mut last = None;
    loop {
        let out = sb.run(&["get-execution-history", "--execution-arn", "orphan"]);
        if out.stdout.contains("WaitStateEntered") {
            break;
        }
        if Instant::now() > until {
            kill(&mut child);
            let run = Output::of(child);
            panic!(
                "the Wait never started; last history read: {last:?}; run: {} {}",
                run.stdout, run.stderr
            );
        }
        last = Some(format!("{} {}", out.stdout, out.stderr));
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&mut child);
    let out = sb.run(&[
        "stop-execution",
        "--execution-arn",
        "orphan",
        "--error",
        "Gone",
        "--cause",
        "runner died",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let described = sb.describe("orphan");
    assert_eq!(described["status"], "ABORTED");
    assert_eq!(described["error"], "Gone");
    assert_eq!(
        sb.history_types("orphan"),
        ["ExecutionStarted", "WaitStateEntered", "ExecutionAborted"]
    );
    let events = sb.history("orphan");
    let last = &events[2];
    assert_eq!(last["previousEventId"], 0);
    assert_eq!(
        last["executionAbortedEventDetails"],
        json!({"error": "Gone", "cause": "runner died"})
    );
    let resumed = sb.run(&["resume", "--execution-arn", "orphan"]);
    assert_ne!(resumed.code, 0, "an aborted execution is not resumed");
}

/// A runner paused (SIGSTOP) past its lease while another resumes the execution: when it wakes
/// up, its appends are refused (the writer's owner check), it says so, and the history holds
/// the new owner's events only once.
#[test]
fn a_runner_that_lost_its_lease_writes_nothing() {
    let sb = sandbox();
    let def = sb.def(&waits());
    let reference = sb.run(&["run", &def, "--name", "reference"]);
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let paused = sb.spawn(&["run", &def, "--name", "fenced"]);
    std::thread::sleep(Duration::from_millis(500));
    signal(&paused, "-STOP");
    std::thread::sleep(Duration::from_millis(500)); // the 300 ms lease lapses
    let resumer = sb.spawn(&["resume", "--execution-arn", "fenced"]);
    std::thread::sleep(Duration::from_millis(300));
    signal(&paused, "-CONT");
    let old = Output::of(paused);
    let new = Output::of(resumer);
    assert_eq!(new.code, 0, "{}", new.stderr);
    assert_eq!(new.stdout, reference.stdout);
    no_panic(&old);
    assert_ne!(old.code, 0, "the fenced runner must fail");
    assert!(old.stderr.contains("lost its lease"), "{}", old.stderr);
    assert_eq!(sb.history_types("fenced"), sb.history_types("reference"));
}

/// Regression: a fenced runner must stop before its next effect. Paused during a Wait past its
/// lease, it wakes after another runner resumed the execution and ran the Task: its first commit
/// is refused, so it never starts the Task's command a second time.
#[test]
fn a_fenced_runner_never_starts_a_task_the_new_owner_ran() {
    let sb = sandbox();
    let marker = sb.path("runs.txt");
    let script = sb.script(
        "work.sh",
        &format!(
            "#!/bin/sh\ncat > /dev/null\necho ran >> '{}'\necho '{{\"ok\":true}}'\n",
            marker.display()
        ),
    );
    let machine = json!({"StartAt": "Nap", "States": {
        "Nap": {"Type": "Wait", "Seconds": 2, "Next": "Work"},
        "Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}});
    let def = sb.def(&machine);
    let task = format!("Work={}", script.display());
    let paused = sb.spawn(&["run", &def, "--name", "fenced-task", "--task", &task]);
    std::thread::sleep(Duration::from_millis(500));
    signal(&paused, "-STOP");
    std::thread::sleep(Duration::from_millis(500)); // the 300 ms lease lapses
    let resumed = sb.resume("fenced-task");
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    signal(&paused, "-CONT");
    let old = Output::of(paused);
    no_panic(&old);
    assert_ne!(old.code, 0, "the fenced runner must fail");
    let runs = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(
        runs.lines().count(),
        1,
        "the command ran {} times",
        runs.lines().count()
    );
    assert_eq!(sb.describe("fenced-task")["status"], "SUCCEEDED");
}

#[test]
fn ctrl_c_leaves_the_execution_running_and_resume_finishes_it() {
    let sb = sandbox();
    let def = sb.def(&waits());
    let reference = sb.run(&["run", &def, "--name", "reference"]);
    let child = sb.spawn(&["run", &def, "--name", "int"]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, "-INT");
    let out = Output::of(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(out.stderr.contains("resume"), "{}", out.stderr);
    assert_eq!(sb.describe("int")["status"], "RUNNING");
    let resumed = sb.resume("int");
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.stdout, reference.stdout);
    assert_eq!(sb.describe("int")["status"], "SUCCEEDED");
    assert_eq!(sb.history_types("int"), sb.history_types("reference"));
}

/// A local `--task` command running when the runner is killed runs again on resume, and the
/// history shows the second start.
// Regression (fault injection, killed 9 ms in): a runner killed after the execution's row
// was committed but before its first batch of events left a row with no history, and resume
// replayed nothing, so the history never got its ExecutionStarted.
#[test]
fn a_runner_killed_before_its_first_event_is_resumed_from_the_start() {
    use sfn_local::store::{NewExecution, Store, StoreOptions};
    let sb = sandbox();
    let machine = json!({"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Result": {"ok": true}, "End": true}}});
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    // What `run` commits first: the row, leased to a runner, with no event yet.
    let store = Store::open(sb.db(), StoreOptions::default()).expect("store");
    store
        .create_execution(NewExecution {
            execution_arn: "arn:aws:states:us-east-1:123456789012:execution:m:early".into(),
            name: "early".into(),
            state_machine_arn: "arn:aws:states:us-east-1:123456789012:stateMachine:m".into(),
            state_machine_name: "m".into(),
            definition: machine.to_string(),
            input: r#"{"x":1}"#.into(),
            start_date_ms: now,
            role_arn: None,
            timeout_at_ms: None,
            position: None,
            owner: Some("a-runner-that-died".into()),
            lease_expires_at_ms: Some(now + 300),
            run_config: None,
            state_machine_version_arn: None,
            state_machine_alias_arn: None,
            events: Vec::new(),
        })
        .wait_blocking()
        .expect("row");
    drop(store);

    let out = sb.resume("early");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"ok": true}));
    let events = sb.history("early");
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    assert_eq!(
        events[0]["executionStartedEventDetails"]["input"],
        json!(r#"{"x":1}"#)
    );
}

#[test]
fn a_local_task_running_at_the_crash_is_started_again() {
    let sb = sandbox();
    let script = sb.script(
        "slow.sh",
        "#!/bin/sh\ncat > /dev/null\nsleep 1\necho '{\"done\":true}'\n",
    );
    let machine = json!({"StartAt": "Work", "States": {"Work": {
        "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}});
    let def = sb.def(&machine);
    let task = format!("Work={}", script.display());
    let mut child = sb.spawn(&["run", &def, "--name", "local", "--task", &task]);
    std::thread::sleep(Duration::from_millis(500));
    kill(&mut child);
    assert_eq!(sb.describe("local")["status"], "RUNNING");
    let out = sb.resume("local");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"done": true}));
    let types = sb.history_types("local");
    let count = |name: &str| types.iter().filter(|t| *t == name).count();
    assert_eq!(count("LambdaFunctionScheduled"), 1, "{types:?}");
    assert_eq!(
        count("LambdaFunctionStarted"),
        2,
        "started again: {types:?}"
    );
    assert_eq!(count("LambdaFunctionSucceeded"), 1, "{types:?}");
}

/// A distributed Map killed with three children finished and one running: resume takes the
/// three finished results from the store and runs only the fourth again.
#[test]
fn a_distributed_map_resumes_with_its_finished_children_kept() {
    let sb = sandbox();
    let log = sb.path("runs.log");
    let resumed = sb.path("resumed");
    // Item 3 hangs until the test says the runner was killed; every start is logged.
    let script = sb.script(
        "child.sh",
        &format!(
            "#!/bin/sh\nn=$(jq .n)\necho \"$n\" >> {log}\n\
             if [ \"$n\" = 3 ]; then while [ ! -e {resumed} ]; do sleep 0.05; done; fi\n\
             echo \"{{\\\"n\\\": $n}}\"\n",
            log = log.display(),
            resumed = resumed.display()
        ),
    );
    let machine = json!({"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 4, "End": true,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Work",
            "States": {"Work": {"Type": "Task",
                "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}
        }
    }}});
    let def = sb.def(&machine);
    let task = format!("Work={}", script.display());
    let input = json!({"items": [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]}).to_string();
    let mut child = sb.spawn(&[
        "run", &def, "--name", "fan", "--task", &task, "--input", &input,
    ]);

    // Wait until three children are recorded as finished (and the fourth is hanging).
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let kept: i64 = rusqlite::Connection::open(sb.db())
            .and_then(|c| c.query_row("SELECT count(*) FROM map_run_children", [], |r| r.get(0)))
            .unwrap_or(0);
        // The fourth's program must have started too (it logs first), or the kill may come
        // before it ever ran and the log would show it once.
        let hanging = std::fs::read_to_string(&log).is_ok_and(|l| l.lines().any(|n| n == "3"));
        if kept == 3 && hanging {
            break;
        }
        assert!(Instant::now() < until, "children never recorded ({kept})");
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&mut child);
    std::fs::write(&resumed, "").expect("marker");
    assert_eq!(sb.describe("fan")["status"], "RUNNING");

    let out = sb.resume("fan");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]));
    let mut starts: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(str::to_owned)
        .collect();
    starts.sort();
    assert_eq!(
        starts,
        ["0", "1", "2", "3", "3"],
        "only the unfinished child ran again"
    );
    let types = sb.history_types("fan");
    let count = |name: &str| types.iter().filter(|t| *t == name).count();
    assert_eq!(count("MapRunStarted"), 1, "{types:?}");
    assert_eq!(count("MapRunSucceeded"), 1, "{types:?}");
}

/// Callbacks inside a distributed Map's children wait like any other: tokens are listed and
/// answered from another process. Killed while both wait, one answered while no runner is
/// alive: resume finds both children's tokens again (no new ones), takes the answer given
/// meanwhile and waits for the other.
#[test]
fn callbacks_in_a_distributed_map_survive_a_crash() {
    let sb = sandbox();
    let machine = json!({"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Ask",
            "States": {"Ask": {"Type": "Task",
                "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"MessageBody": {"token.$": "$$.Task.Token", "n.$": "$.n"}},
                "HeartbeatSeconds": 60, "End": true}}
        }
    }}});
    let def = sb.def(&machine);
    let input = json!({"items": [{"n": 1}, {"n": 2}]}).to_string();
    let mut child = sb.spawn(&["run", &def, "--name", "fan-cb", "--input", &input]);
    let tasks = sb.wait_tasks(2);
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    let token_for = |tasks: &[Value], n: i64| -> String {
        tasks
            .iter()
            .find(|t| {
                let input: Value =
                    serde_json::from_str(t["input"].as_str().unwrap_or("null")).unwrap_or_default();
                input["MessageBody"]["n"] == json!(n)
            })
            .and_then(|t| t["taskToken"].as_str())
            .expect("a token for each item")
            .to_owned()
    };
    let (first, second) = (token_for(&tasks, 1), token_for(&tasks, 2));
    kill(&mut child);
    let sent = sb.send_success(&first, r#"{"got":1}"#);
    assert_eq!(sent.code, 0, "{}", sent.stderr);

    // Resume once the dead runner's lease has lapsed (a refused resume exits 2 at once).
    let until = Instant::now() + Duration::from_secs(10);
    let resumed = loop {
        let mut resumed = sb.spawn(&["resume", "--execution-arn", "fan-cb"]);
        std::thread::sleep(Duration::from_millis(200));
        match resumed.try_wait().expect("resume status") {
            Some(status) if status.code() == Some(2) && Instant::now() < until => continue,
            _ => break resumed,
        }
    };
    // The second child waits on the token it had before the crash.
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        let sent = sb.send_success(&second, r#"{"got":2}"#);
        if sent.code == 0 {
            break;
        }
        assert!(Instant::now() < until, "{}", sent.stderr);
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = Output::of(resumed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([{"got": 1}, {"got": 2}]));
    assert!(sb.wait_tasks(0).is_empty(), "no token left open");
}

/// Starts the callback machine (heartbeat timeout `heartbeat` s) as execution `name`, waits
/// for its task and kills the runner: returns the task, left open with no runner alive.
fn orphaned_callback(sb: &Sandbox, name: &str, heartbeat: u64) -> Value {
    let def = sb.def(&callback(heartbeat));
    let mut child = sb.spawn(&["run", &def, "--name", name]);
    let tasks = sb.wait_tasks(1);
    kill(&mut child);
    tasks[0].clone()
}

/// An answer sent while no runner is alive is recorded and used by the resumed execution.
#[test]
fn an_answer_sent_while_no_runner_is_alive_is_used_on_resume() {
    let sb = sandbox();
    let task = orphaned_callback(&sb, "cb", 30);
    let token = task["taskToken"].as_str().expect("token");
    let sent = sb.send_success(token, r#"{"v":7}"#);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    let out = sb.resume("cb");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["answer"], json!({"v": 7}));
}

/// A heartbeat sent while no runner is alive moves the heartbeat deadline: an answer after the
/// first deadline (but before the moved one) is still accepted and used.
#[test]
fn a_heartbeat_sent_while_no_runner_is_alive_still_counts() {
    let sb = sandbox();
    let task = orphaned_callback(&sb, "hb", 2);
    let token = task["taskToken"].as_str().expect("token");
    let first_deadline = task["heartbeatDate"].as_str().expect("deadline");
    std::thread::sleep(Duration::from_millis(1200));
    let beat = sb.run(&["send-task-heartbeat", "--task-token", token]);
    assert_eq!(beat.code, 0, "{}", beat.stderr);
    let moved = sb.wait_tasks(1);
    let second_deadline = moved[0]["heartbeatDate"].as_str().expect("deadline");
    assert!(
        second_deadline > first_deadline,
        "{first_deadline} -> {second_deadline}"
    );
    // Past the first deadline, before the second.
    std::thread::sleep(Duration::from_millis(1200));
    let sent = sb.send_success(token, r#"{"v":8}"#);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    let out = sb.resume("hb");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["answer"], json!({"v": 8}));
}

/// A live runner keeps its executions past their own first lease through its runner's lease
/// row (one write renews them all): `resume` from another process is refused, and the run ends
/// as a run does.
#[test]
fn a_live_runner_keeps_its_execution_past_the_first_lease() {
    let sb = sandbox();
    let def = sb.def(&waits());
    let live = sb.spawn(&["run", &def, "--name", "live"]);
    std::thread::sleep(Duration::from_millis(1_200)); // four 300 ms lease periods
    let refused = sb.run(&["resume", "--execution-arn", "live"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("resume takes only executions whose runner is gone"),
        "{}",
        refused.stderr
    );
    let live = Output::of(live);
    assert_eq!(live.code, 0, "{}", live.stderr);
}

/// `serve` on port 0 in `sb`.
fn serve(sb: &Sandbox) -> common::served::Served {
    common::served::Served::serve(sb, &[])
}

/// Starts `count` executions on `server` of a machine that waits `seconds`; their ARNs.
fn start_waiting(server: &common::served::Served, count: usize, seconds: u64) -> Vec<String> {
    let definition = json!({"StartAt": "Nap", "States": {
        "Nap": {"Type": "Wait", "Seconds": seconds, "End": true}
    }});
    let request = json!({"name": "Naps", "definition": definition.to_string(),
        "roleArn": "arn:aws:iam::123456789012:role/r"});
    let (status, created) = server.call("CreateStateMachine", request);
    assert_eq!(status, 200, "{created}");
    (0..count)
        .map(|i| {
            let start =
                json!({"stateMachineArn": created["stateMachineArn"], "name": format!("nap-{i}")});
            let (status, started) = server.call("StartExecution", start);
            assert_eq!(status, 200, "{started}");
            started["executionArn"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Polls `server` until every execution of `arns` has SUCCEEDED, for at most `patience`.
fn all_succeed(server: &common::served::Served, arns: &[String], patience: Duration) {
    let until = Instant::now() + patience;
    for arn in arns {
        loop {
            let (_, d) = server.call("DescribeExecution", json!({"executionArn": arn}));
            if d["status"] == "SUCCEEDED" {
                break;
            }
            assert!(
                Instant::now() < until,
                "{arn} is {} (only a client waiting):\n{}",
                d["status"],
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Regression (#47, item 3): a serve killed with SIGKILL and restarted at once left its
/// executions RUNNING for good: the new serve took over only leases lapsed when it started,
/// and never looked again. Now it sees that their runner's process is gone.
#[test]
fn a_serve_started_at_once_after_one_was_killed_finishes_its_executions() {
    let sb = Sandbox::new().lease_ms(1_000);
    let mut first = serve(&sb);
    let arns = start_waiting(&first, 5, 2);
    kill(&mut first.child);
    let second = serve(&sb);
    all_succeed(&second, &arns, Duration::from_secs(30));
}

/// Regression (#47, item 3): orphans were looked for only when serve started. Now a running
/// serve takes over, within a lease period, the executions of a runner that stopped renewing
/// its lease (here frozen with SIGSTOP: its process is still there, so only the lapse tells).
#[test]
fn a_running_serve_takes_over_the_executions_of_a_runner_that_stopped() {
    let sb = Sandbox::new().lease_ms(500);
    let taker = serve(&sb);
    let mut frozen = serve(&sb);
    let arns = start_waiting(&frozen, 5, 2);
    let stopped = Command::new("kill")
        .args(["-STOP", &frozen.child.id().to_string()])
        .status()
        .expect("kill -STOP");
    assert!(stopped.success());
    all_succeed(&taker, &arns, Duration::from_secs(30));
    kill(&mut frozen.child);
}

/// A database the previous release wrote (schema 15, every history chunk stored as text) opens,
/// is brought to this build's schema, and its interrupted execution resumes to the end, its
/// history whole: the chunks this build stores compressed (schema 16) are read beside the old
/// text ones. Before the compressed chunks, the Map's history was stored as 11.3 MB of text.
#[test]
fn a_database_of_the_previous_release_opens_and_resumes() {
    let sb = sandbox();
    let machine = json!({
        "StartAt": "Each",
        "States": {
            "Each": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.done",
                     "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}},
                     "Next": "Nap"},
            "Nap": {"Type": "Wait", "Seconds": 2, "Next": "Last"},
            "Last": {"Type": "Pass", "Result": 2, "ResultPath": "$.last", "End": true}
        }
    });
    let def = sb.def(&machine);
    let input = json!({"items": (0..200).collect::<Vec<_>>()}).to_string();
    let reference = sb.run(&["run", &def, "--name", "reference", "--input", &input]);
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let child = sb.spawn(&["run", &def, "--name", "old", "--input", &input]);
    // Not yet started is no error here: the history is asked for until it waits.
    let napping = |sb: &Sandbox| {
        let out = sb.run(&["get-execution-history", "--execution-arn", "old"]);
        out.code == 0 && out.stdout.contains("WaitStateEntered")
    };
    while !napping(&sb) {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, "-INT");
    assert_eq!(Output::of(child).code, 130);
    // As the previous release wrote it: text chunks, schema 15.
    let db = rusqlite::Connection::open(sb.db()).expect("open");
    let blobs: Vec<(i64, i64, Vec<u8>)> = db
        .prepare("SELECT execution_id, first_event_id, events FROM event_chunks WHERE typeof(events) = 'blob'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!blobs.is_empty(), "this build compresses the Map's chunks");
    for (execution, first, blob) in blobs {
        let text =
            String::from_utf8(lz4_flex::block::decompress_size_prepended(&blob).unwrap()).unwrap();
        db.execute(
            "UPDATE event_chunks SET events = ?1 WHERE execution_id = ?2 AND first_event_id = ?3",
            rusqlite::params![text, execution, first],
        )
        .unwrap();
    }
    db.execute_batch("PRAGMA user_version = 15").unwrap();
    drop(db);
    let resumed = sb.resume("old");
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(resumed.stdout, reference.stdout);
    assert_eq!(sb.history_types("old"), sb.history_types("reference"));
    let version: i64 = rusqlite::Connection::open(sb.db())
        .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
        .unwrap();
    assert_eq!(version, 16);
}
