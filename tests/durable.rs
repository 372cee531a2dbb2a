//! Durable executions with real processes: `run` is killed with SIGKILL at seeded random
//! moments, `resume` continues, and every execution must end exactly as an uninterrupted run
//! does: same output, same event types in the same order, ids 1..n without gaps or repeats.
//!
//! `SFN_DURABLE_KILLS` sets how many kill points are tried (default 10), `SFN_DURABLE_SEED`
//! the seed (default fixed, printed, so a failure can be replayed).

mod common;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn sfn(&self) -> Command {
        let mut c = Command::new(common::bin());
        c.env("SFN_LOCAL_DB", self.path("state.db"))
            .env("SFN_LOCAL", common::bin())
            // Short leases: a killed runner's executions can be resumed 300 ms later.
            .env("SFN_LOCAL_LEASE_MS", "300")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn cli(&self, args: &[&str]) -> Output {
        self.sfn().args(args).output().expect("sfn-local")
    }

    fn history(&self, execution: &str) -> Vec<Value> {
        let out = self.cli(&["get-execution-history", "--execution-arn", execution]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("history JSON");
        v["events"].as_array().cloned().unwrap_or_default()
    }

    fn status(&self, execution: &str) -> Option<String> {
        let out = self.cli(&["describe-execution", "--execution-arn", execution]);
        if !out.status.success() {
            return None;
        }
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v["status"].as_str().map(str::to_owned)
    }
}

fn worker() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workers/durable-worker.sh")
        .display()
        .to_string()
}

/// A Map, a Parallel, Waits and a callback task answered by a shell worker.
fn machine() -> Value {
    json!({
        "StartAt": "Prepare",
        "States": {
            "Prepare": {"Type": "Pass", "Result": [1, 2, 3], "ResultPath": "$.items", "Next": "EachItem"},
            "EachItem": {
                "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 1, "ResultPath": "$.mapped",
                "ItemProcessor": {"StartAt": "Double", "States": {
                    "Double": {"Type": "Pass", "Parameters": {"v.$": "$"}, "Next": "Pause"},
                    "Pause": {"Type": "Wait", "Seconds": 2, "End": true}
                }},
                "Next": "Both"
            },
            "Both": {
                "Type": "Parallel", "ResultPath": "$.both",
                "Branches": [
                    {"StartAt": "Left", "States": {"Left": {"Type": "Pass", "Result": "left", "End": true}}},
                    {"StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 3, "End": true}}}
                ],
                "Next": "Ask"
            },
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"token.$": "$$.Task.Token"},
                "HeartbeatSeconds": 60, "TimeoutSeconds": 600,
                "ResultPath": "$.answer",
                "Next": "Done"
            },
            "Done": {"Type": "Succeed"}
        }
    })
}

/// xorshift64*: a seeded sequence without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .collect()
}

fn run_args(def: &Path, name: &str, task: &str) -> Vec<String> {
    [
        "run",
        &def.display().to_string(),
        "--name",
        name,
        "--time-scale",
        "0.05",
        "--task",
        task,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Resumes until the execution ends; a lease still held (the killed runner's has not lapsed
/// yet) is waited out.
fn resume_to_end(sb: &Sandbox, name: &str) -> Output {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let out = sb.cli(&["resume", "--execution-arn", name]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(2) && err.contains("lease") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        return out;
    }
}

#[test]
fn sigkill_at_random_points_then_resume_loses_nothing() {
    let sb = Sandbox::new();
    let def = sb.path("durable.asl.json");
    std::fs::write(&def, machine().to_string()).expect("definition");
    let task = format!("Ask={}", worker());

    // The reference: an uninterrupted run.
    let started = Instant::now();
    let reference = sb
        .sfn()
        .args(run_args(&def, "reference", &task))
        .output()
        .expect("run");
    let duration = started.elapsed();
    assert!(
        reference.status.success(),
        "reference run failed: {}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let expected_output: Value = serde_json::from_slice(&reference.stdout).expect("output");
    let expected_types = types(&sb.history("reference"));

    let kills: u64 = std::env::var("SFN_DURABLE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("SFN_DURABLE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_cafe);
    let mut rng = Rng(seed | 1);
    let span = duration.as_millis() as u64 + 50;
    let (mut tried, mut survived, mut before_start, mut second_kills) = (0, 0, 0, 0);
    for k in 0..kills {
        let name = format!("kill-{k}");
        let delay = Duration::from_millis(rng.below(span));
        let mut child = sb
            .sfn()
            .args(run_args(&def, &name, &task))
            .spawn()
            .expect("spawn run");
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        tried += 1;
        match sb.status(&name).as_deref() {
            None => {
                // Killed before the execution's row was committed: nothing to resume, and
                // nothing half-written either. Run it again.
                before_start += 1;
                let out = sb
                    .sfn()
                    .args(run_args(&def, &name, &task))
                    .output()
                    .expect("run");
                assert!(out.status.success());
            }
            Some("RUNNING") => {
                // Sometimes kill the resuming runner too.
                if rng.below(2) == 0 {
                    std::thread::sleep(Duration::from_millis(350));
                    let mut again = sb
                        .sfn()
                        .args(["resume", "--execution-arn", &name])
                        .spawn()
                        .expect("spawn resume");
                    std::thread::sleep(Duration::from_millis(rng.below(span / 2)));
                    let _ = again.kill();
                    let _ = again.wait();
                    second_kills += 1;
                }
                if sb.status(&name).as_deref() == Some("RUNNING") {
                    let out = resume_to_end(&sb, &name);
                    assert!(
                        out.status.success(),
                        "resume of {name} failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let output: Value = serde_json::from_slice(&out.stdout).expect("output");
                    assert_eq!(output, expected_output, "{name}: output");
                }
            }
            Some(_) => {}
        }
        let events = sb.history(&name);
        assert_eq!(sb.status(&name).as_deref(), Some("SUCCEEDED"), "{name}");
        assert_eq!(
            types(&events),
            expected_types,
            "{name} (killed after {delay:?})"
        );
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["id"], json!(i + 1), "{name}: ids must be contiguous");
        }
        let describe = sb.cli(&["describe-execution", "--execution-arn", &name]);
        let d: Value = serde_json::from_slice(&describe.stdout).expect("describe");
        let output: Value =
            serde_json::from_str(d["output"].as_str().unwrap_or("null")).expect("output");
        assert_eq!(output, expected_output, "{name}: stored output");
        survived += 1;
    }
    eprintln!(
        "durable: seed {seed:#x}: {tried} kill points tried ({before_start} before the execution was stored, {second_kills} resumes killed again), {survived} executions survived"
    );
    assert_eq!(survived, tried);
}
