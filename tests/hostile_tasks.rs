//! Hostile `--task` programs and oversized inputs, through the real binary: a program that
//! prints a gigabyte, floods stderr, never exits, ignores SIGTERM, leaves children behind,
//! closes stdout early, prints invalid UTF-8 or dies by a signal; inputs, definitions, mock
//! files and task outputs over AWS's limits. Each has one defined outcome, and no process of a
//! task outlives `run`.

mod common;

use common::{Output, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// One Task state `T` (with `TimeoutSeconds` when given) that ends the machine.
fn machine(sb: &Sandbox, timeout: Option<u64>) -> String {
    let mut task =
        json!({"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true});
    if let Some(t) = timeout {
        task["TimeoutSeconds"] = json!(t);
    }
    let def = json!({"StartAt": "T", "States": {"T": task}});
    sb.write("m.asl.json", &def.to_string())
        .display()
        .to_string()
}

/// `sfn-local run` of [`machine`] with `T` bound to `sh -c SCRIPT` (the script runs in the
/// sandbox's folder).
fn run_script(sb: &Sandbox, timeout: Option<u64>, script: &str) -> Output {
    run_script_measured(sb, timeout, script).0
}

/// [`run_script`], with the run's peak memory in MiB.
fn run_script_measured(sb: &Sandbox, timeout: Option<u64>, script: &str) -> (Output, i64) {
    let def = machine(sb, timeout);
    let script = format!("cd '{}' || exit 9\n{script}", sb.dir.path().display());
    let binding = format!("T=sh -c {}", shell_quote(&script));
    sb.run_measured(&["run", &def, "--name", "x", "--task", &binding])
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `TaskFailed` (or `LambdaFunctionFailed`) event's details of execution `x`.
fn failure(sb: &Sandbox) -> Value {
    let events = sb.history("x");
    let failed = events
        .iter()
        .find(|e| {
            e["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("Failed") && t != "ExecutionFailed")
        })
        .unwrap_or_else(|| panic!("no task failure in {events:#?}"));
    failed
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.ends_with("EventDetails"))
        .map(|(_, v)| v.clone())
        .unwrap()
}

/// Whether process `pid` is gone (or a zombie waiting for init), waiting up to 5 s.
fn gone(pid: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
        let alive = match &status {
            Err(_) => false,
            Ok(s) => !s
                .lines()
                .any(|l| l.starts_with("State:") && l.contains('Z')),
        };
        if !alive {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid a script wrote to `name` in the sandbox.
fn pid_in(sb: &Sandbox, name: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(sb.path(name)) {
            if !s.trim().is_empty() {
                return s.trim().to_owned();
            }
        }
        assert!(Instant::now() < until, "{name} was never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_command_printing_a_gigabyte_fails_with_data_limit_exceeded_in_flat_memory() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let (out, peak_mib) = run_script_measured(&sb, None, "yes | head -c 1073741824");
    assert_eq!(out.code, 1, "{}", out.stderr);
    let details = failure(&sb);
    assert_eq!(details["error"], "States.DataLimitExceeded");
    assert_eq!(
        details["cause"],
        "The state/task 'lambda' returned a result with a size exceeding the maximum number of bytes service limit."
    );
    // Not a timing assertion: the run stops reading at once instead of draining 1 GB.
    eprintln!(
        "1 GB printer failed in {:?}, peak {peak_mib} MiB",
        started.elapsed()
    );
    assert!(
        peak_mib < 60,
        "peak memory of sfn-local run was {peak_mib} MiB"
    );
}

#[test]
fn a_result_over_256_kib_as_compact_json_is_data_limit_exceeded() {
    let sb = Sandbox::new();
    // 300,000 characters in one string: under the 1 MiB read, over AWS's 256 KiB quota.
    let out = run_script(
        &sb,
        None,
        r#"printf '"'; head -c 300000 /dev/zero | tr '\0' a; printf '"'"#,
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(failure(&sb)["error"], "States.DataLimitExceeded");
}

#[test]
fn a_flood_on_stderr_keeps_its_end_within_awss_cause_limit() {
    let sb = Sandbox::new();
    let (out, peak_mib) = run_script_measured(
        &sb,
        None,
        "yes error | head -c 5000000 >&2; echo the-end >&2; exit 1",
    );
    assert_eq!(out.code, 1);
    let details = failure(&sb);
    assert_eq!(details["error"], "States.TaskFailed");
    let cause = details["cause"].as_str().unwrap();
    assert!(cause.chars().count() <= 32_768, "{}", cause.len());
    assert!(cause.ends_with("the-end"), "{}", &cause[cause.len() - 50..]);
    assert!(
        peak_mib < 60,
        "peak memory of sfn-local run was {peak_mib} MiB"
    );
}

#[test]
fn errors_and_causes_a_program_names_are_cut_to_awss_lengths() {
    let sb = Sandbox::new();
    let line = json!({"Error": "E".repeat(300), "Cause": "c".repeat(40_000)}).to_string();
    sb.write("err.json", &line);
    let out = run_script(&sb, None, "cat err.json >&2; exit 1");
    assert_eq!(out.code, 1);
    let details = failure(&sb);
    assert_eq!(details["error"].as_str().unwrap().len(), 256);
    assert_eq!(details["cause"].as_str().unwrap().len(), 32_768);
    let events = sb.history("x");
    let end = events.last().unwrap();
    assert_eq!(end["type"], "ExecutionFailed");
    assert_eq!(
        end["executionFailedEventDetails"]["cause"]
            .as_str()
            .unwrap()
            .len(),
        32_768
    );
}

#[test]
fn a_command_that_never_exits_ends_at_its_timeout_with_its_children() {
    let sb = Sandbox::new();
    let out = run_script(
        &sb,
        Some(1),
        "sleep 1000 & echo $! > child.pid; echo $$ > leader.pid; wait",
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let types = common::types(&sb.history("x"));
    assert!(types.contains(&"TaskTimedOut".to_owned()), "{types:?}");
    assert!(gone(&pid_in(&sb, "leader.pid")), "the command outlived run");
    assert!(
        gone(&pid_in(&sb, "child.pid")),
        "the command's child outlived run"
    );
}

#[test]
fn a_command_that_ignores_sigterm_gets_sigkill() {
    let sb = Sandbox::new();
    let out = run_script(
        &sb,
        Some(1),
        "trap '' TERM; echo $$ > leader.pid; while :; do sleep 0.2; done",
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        gone(&pid_in(&sb, "leader.pid")),
        "a SIGTERM-proof command outlived run"
    );
}

#[test]
fn children_left_behind_by_a_command_that_exited_are_ended() {
    let sb = Sandbox::new();
    // The child keeps the command's stdout open: the result is still the command's.
    let out = run_script(
        &sb,
        None,
        r#"sleep 1000 & echo $! > child.pid; echo '{"ok": true}'"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["Payload"], json!({"ok": true}), "{}", out.stdout);
    assert!(
        gone(&pid_in(&sb, "child.pid")),
        "a forked child outlived run"
    );
}

#[test]
fn a_command_that_closes_stdout_early_gives_what_it_printed_when_it_exits() {
    let sb = Sandbox::new();
    let out = run_script(
        &sb,
        None,
        r#"echo '{"early": 1}'; exec >&-; sleep 0.3; echo still-working >&2"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["Payload"], json!({"early": 1}));
    assert!(out.stderr.contains("[T] still-working"), "{}", out.stderr);
}

#[test]
fn invalid_utf8_on_stdout_fails_the_task_clearly() {
    let sb = Sandbox::new();
    let out = run_script(&sb, None, r#"printf '"\377"'"#);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let details = failure(&sb);
    assert_eq!(details["error"], "States.TaskFailed");
    assert!(
        details["cause"]
            .as_str()
            .unwrap()
            .contains("is not UTF-8 text (invalid byte at offset 1)"),
        "{details}"
    );
}

#[test]
fn invalid_utf8_on_stderr_is_replaced_not_fatal() {
    let sb = Sandbox::new();
    let out = run_script(&sb, None, r#"printf 'bad \377 byte\n' >&2; exit 4"#);
    assert_eq!(out.code, 1);
    assert_eq!(failure(&sb)["cause"], "bad \u{fffd} byte");
}

#[test]
fn a_command_killed_by_a_signal_names_the_signal() {
    let sb = Sandbox::new();
    let out = run_script(&sb, None, "echo dying >&2; kill -SEGV $$");
    assert_eq!(out.code, 1, "{}", out.stderr);
    let details = failure(&sb);
    assert_eq!(details["error"], "States.TaskFailed");
    assert_eq!(
        details["cause"],
        "'sh' was killed by SIGSEGV; the end of its stderr:\ndying"
    );
}

#[test]
fn ctrl_c_on_run_ends_the_running_command_and_its_children() {
    let sb = Sandbox::new();
    let def = machine(&sb, None);
    let script = format!(
        "cd '{}' || exit 9\nsleep 1000 & echo $! > child.pid; echo $$ > leader.pid; wait",
        sb.dir.path().display()
    );
    let binding = format!("T=sh -c {}", shell_quote(&script));
    let child = sb.spawn(&["run", &def, "--name", "x", "--task", &binding]);
    let leader = pid_in(&sb, "leader.pid");
    let grandchild = pid_in(&sb, "child.pid");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = Output::of(child);
    assert_eq!(out.code, 130, "{}", out.stderr);
    assert!(gone(&leader), "the command outlived run's Ctrl-C");
    assert!(
        gone(&grandchild),
        "the command's child outlived run's Ctrl-C"
    );
}

#[test]
fn a_callback_worker_writing_one_endless_stderr_line_is_forwarded_in_pieces() {
    let sb = Sandbox::with_workers();
    let def = json!({"StartAt": "Ask", "States": {"Ask": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": 60, "End": true}}});
    let path = sb.write("cb.asl.json", &def.to_string());
    // 100 MB without a newline, then the answer.
    let script = r#"head -c 100000000 /dev/zero | tr '\0' x >&2; "$SFN_LOCAL" send-task-success --task-token "$SFN_TASK_TOKEN" --task-output '{"done":true}'"#;
    let binding = format!("Ask=sh -c {}", shell_quote(script));
    let (out, peak_mib) = sb.run_measured(&[
        "run",
        &path.display().to_string(),
        "--name",
        "x",
        "--task",
        &binding,
    ]);
    assert_eq!(
        out.code,
        0,
        "{}",
        &out.stderr[out.stderr.len().saturating_sub(500)..]
    );
    assert_eq!(out.json(), json!({"done": true}));
    assert!(out.stderr.contains("[Ask] xxxxxxxx"));
    assert!(
        peak_mib < 60,
        "peak memory of sfn-local run was {peak_mib} MiB"
    );
}
