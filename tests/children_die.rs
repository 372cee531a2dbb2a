//! A `--task` program and whatever it started never outlive the sfn-local that started them,
//! even killed with SIGKILL (no chance to clean up): `run`, `resume`, `serve` and `worker` are
//! each killed while their program (a shell that started a `sleep` in the background) runs,
//! and /proc must lose both processes. The leader dies by PR_SET_PDEATHSIG, the background
//! `sleep` by the runner's reaper, which kills the group when the runner's pipe closes.

mod common;

use common::{kill, Sandbox};
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// A Task program that records its pid and its background child's, then waits for it.
fn program(pids: &Path) -> String {
    format!(
        "sh -c 'sleep 300 & echo $$ $! > {0}.tmp && mv {0}.tmp {0}; wait'",
        pids.display()
    )
}

const TASK: &str = r#"{"StartAt":"Work","States":{"Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","End":true}}}"#;

/// `sfn-local run DEFINITION --name NAME --task BINDING`.
fn spawn_run(
    sandbox: &Sandbox,
    definition: &Path,
    name: &str,
    binding: &str,
) -> std::process::Child {
    sandbox.spawn(&[
        "run",
        definition.to_str().unwrap(),
        "--name",
        name,
        "--task",
        binding,
    ])
}

/// The two pids the program wrote, once it wrote them.
fn wait_for_pids(file: &Path) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            let pids: Vec<i32> = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.len() == 2 {
                return pids;
            }
        }
        assert!(
            Instant::now() < until,
            "the task program never started ({})",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether /proc still shows `pid` as a live process (a zombie waiting for a reaper that
/// may never come, as PID 1 of a container, counts as dead).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// Asserts every pid leaves /proc soon (the kernel and the reaper act within milliseconds;
/// the bound is only there so a failure does not hang).
fn assert_gone(pids: &[i32], runner: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|&p| alive(p)) {
        if Instant::now() > until {
            let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
            for p in &left {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &p.to_string()])
                    .status();
            }
            panic!("{runner} was killed with SIGKILL and left {left:?} running");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn run_and_resume_killed_with_sigkill_take_their_task_programs_along() {
    let sandbox = Sandbox::new().lease_ms(300);
    let def = sandbox.write("m.json", TASK);
    let first = sandbox.path("first.pids");
    let binding = format!("Work={}", program(&first));
    let mut run = spawn_run(&sandbox, &def, "e", &binding);
    let pids = wait_for_pids(&first);
    kill(&mut run);
    assert_gone(&pids, "run");

    // `resume` starts the program again (the execution is still RUNNING); kill it too.
    let again = sandbox.path("again.pids");
    let binding = format!("Work={}", program(&again));
    std::thread::sleep(Duration::from_millis(400));
    let mut resume = sandbox.spawn(&["resume", "--execution-arn", "e", "--task", &binding]);
    let pids = wait_for_pids(&again);
    kill(&mut resume);
    assert_gone(&pids, "resume");
}

// Regression: a program was listed with the reaper by sfn-local after its spawn returned, so
// one that started a child at once could see sfn-local killed in between, its child unlisted
// and left running (a flaky run of the test above; 5 times in 30 when killed at once). Now the
// program lists itself before it runs.
#[test]
fn run_killed_the_moment_its_program_starts_a_child_takes_both_along() {
    let sandbox = Sandbox::new();
    let def = sandbox.write("m.json", TASK);
    for attempt in 0..20 {
        let pids_file = sandbox.path(&format!("{attempt}.pids"));
        let binding = format!("Work={}", program(&pids_file));
        let name = format!("e{attempt}");
        let mut run = spawn_run(&sandbox, &def, &name, &binding);
        let until = Instant::now() + Duration::from_secs(60);
        while !pids_file.exists() {
            assert!(Instant::now() < until, "the task program never started");
            std::thread::yield_now();
        }
        kill(&mut run);
        assert_gone(&wait_for_pids(&pids_file), "run");
    }
}

#[test]
fn serve_killed_with_sigkill_takes_its_task_programs_along() {
    let sandbox = Sandbox::new();
    let pids_file = sandbox.path("serve.pids");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let binding = format!("M:Work={}", program(&pids_file));
    let mut serve = sandbox.spawn(&["serve", "--port", &port.to_string(), "--task", &binding]);
    let call = |target: &str, body: String| -> String {
        let until = Instant::now() + Duration::from_secs(60);
        let mut stream = loop {
            match std::net::TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(e) if Instant::now() < until => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("serve never listened: {e}"),
            }
        };
        write!(
            stream,
            "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AWSStepFunctions.{target}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        assert!(response.starts_with("HTTP/1.1 200"), "{target}: {response}");
        response
    };
    let created = call(
        "CreateStateMachine",
        serde_json::json!({
            "name": "M",
            "definition": TASK,
            "roleArn": "arn:aws:iam::123456789012:role/r",
        })
        .to_string(),
    );
    let machine = created
        .split("\"stateMachineArn\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("stateMachineArn")
        .to_owned();
    call(
        "StartExecution",
        serde_json::json!({ "stateMachineArn": machine }).to_string(),
    );
    let pids = wait_for_pids(&pids_file);
    kill(&mut serve);
    assert_gone(&pids, "serve");
}

#[test]
fn a_worker_killed_with_sigkill_takes_its_handler_along() {
    let sandbox = Sandbox::new();
    let activity = "arn:aws:states:us-east-1:123456789012:activity:chores";
    let def = sandbox.write(
        "m.json",
        &format!(
            r#"{{"StartAt":"Work","States":{{"Work":{{"Type":"Task","Resource":"{activity}","End":true}}}}}}"#
        ),
    );
    let pids_file = sandbox.path("worker.pids");
    let mut run = sandbox.spawn(&["run", def.to_str().unwrap(), "--name", "w"]);
    let handler = program(&pids_file);
    let mut worker = sandbox
        .command()
        .args(["worker", "--activity-arn", activity, "--", "sh", "-c"])
        .arg(
            handler
                .strip_prefix("sh -c '")
                .and_then(|h| h.strip_suffix('\''))
                .expect("shell body"),
        )
        .spawn()
        .expect("spawn worker");
    let pids = wait_for_pids(&pids_file);
    kill(&mut worker);
    assert_gone(&pids, "worker");
    kill(&mut run);
}

/// A Task program (a script) that starts a grandchild in the background, then waits: both
/// name the script in their command lines.
const STARTS_A_GRANDCHILD: &str =
    "#!/bin/sh\nsh -c 'sleep 300; :' \"$0-grandchild\" &\nsleep 300\n";

/// Every pid /proc lists.
fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

/// The child of `parent` that it forked and that has not exec'd yet (its executable is still
/// sfn-local's), once there is one.
fn forked_not_execd(parent: u32) -> i32 {
    let me = std::fs::canonicalize(common::bin()).expect("sfn-local's path");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let held = pids().into_iter().find(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status"));
            let child = status.is_ok_and(|s| s.contains(&format!("\nPPid:\t{parent}\n")));
            let exe = std::fs::read_link(format!("/proc/{pid}/exe"));
            child && exe.is_ok_and(|exe| exe == me)
        });
        if let Some(pid) = held {
            return pid;
        }
        assert!(Instant::now() < until, "no program was held before exec");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The live processes whose command line mentions `marker`.
fn mentioning(marker: &str) -> Vec<i32> {
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .filter(|&pid| alive(pid))
        .collect()
}

/// Kills the process group it names if the test fails while it is held (a program that ran
/// after all, and what it started), so a failure leaves nothing behind.
struct GroupKilledOnFailure(i32);

impl Drop for GroupKilledOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::process::Command::new("kill")
                .args(["-9", "--", &format!("-{}", self.0)])
                .status();
        }
    }
}

/// #47 item 7: the race a program's start leaves open is forced, not waited for. A debug
/// build holds every program between fork and exec before the step its
/// `SFN_LOCAL_HOLD_BEFORE_EXEC` names, until sfn-local is gone; sfn-local is killed with
/// SIGKILL there, and neither the program nor the grandchild it would start may run.
#[test]
fn run_or_resume_killed_between_a_programs_fork_and_exec_never_leaves_it_running() {
    for (step, command) in [
        ("pdeathsig", "run"),
        ("listing", "run"),
        ("parent-check", "run"),
        ("pdeathsig", "resume"),
    ] {
        let sandbox = Sandbox::new()
            .lease_ms(100)
            .env("SFN_LOCAL_HOLD_BEFORE_EXEC", step);
        let def = sandbox.write("m.json", TASK);
        let script = sandbox.write("program.sh", STARTS_A_GRANDCHILD);
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let binding = format!("Work={}", script.display());
        let mut runner = spawn_run(&sandbox, &def, "e", &binding);
        if command == "resume" {
            let pid = forked_not_execd(runner.id());
            kill(&mut runner);
            assert_gone(&[pid], "run");
            std::thread::sleep(Duration::from_millis(200));
            runner = sandbox.spawn(&["resume", "--execution-arn", "e"]);
        }
        let held = forked_not_execd(runner.id());
        // The program leads its own group, whose id is its pid.
        let _cleanup = GroupKilledOnFailure(held);
        kill(&mut runner);
        let what = format!("{command} killed before the program's {step}");
        assert_gone(&[held], &what);
        let left = mentioning(&script.display().to_string());
        assert_gone(&left, &what);
    }
}
