//! Durable executions with real processes: `run` is killed with SIGKILL at seeded random
//! moments, `resume` continues, and every execution must end exactly as an uninterrupted run
//! does: same output, same event types in the same order, ids 1..n without gaps or repeats.
//!
//! `SFN_DURABLE_KILLS` sets how many kill points are tried (default 10), `SFN_DURABLE_SEED`
//! the seed (default fixed, printed, so a failure can be replayed).

mod common;

use common::{kill, types, worker, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// This suite's helper on the shared sandbox.
impl Sandbox {
    /// The status of an execution (`describe-execution`), `None` when it is not stored.
    fn status(&self, execution: &str) -> Option<String> {
        let out = self.run(&["describe-execution", "--execution-arn", execution]);
        if out.code != 0 {
            return None;
        }
        let v: Value = serde_json::from_str(&out.stdout).ok()?;
        v["status"].as_str().map(str::to_owned)
    }
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

/// `run` of the definition at `def` as execution `name`, with its callback answered by `task`.
fn run_args<'a>(def: &'a str, name: &'a str, task: &'a str) -> [&'a str; 8] {
    [
        "run",
        def,
        "--name",
        name,
        "--time-scale",
        "0.05",
        "--task",
        task,
    ]
}

#[test]
fn sigkill_at_random_points_then_resume_loses_nothing() {
    // Short leases: a killed runner's executions can be resumed 300 ms later.
    let sb = Sandbox::with_workers().lease_ms(300);
    let def = sb.write("durable.asl.json", &machine().to_string());
    let def = def.display().to_string();
    let task = format!("Ask={}", worker("durable-worker.sh"));

    // The reference: an uninterrupted run.
    let started = Instant::now();
    let reference = sb.run(&run_args(&def, "reference", &task));
    let duration = started.elapsed();
    assert_eq!(
        reference.code, 0,
        "reference run failed: {}",
        reference.stderr
    );
    let expected_output = reference.json();
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
        let mut child = sb.spawn(&run_args(&def, &name, &task));
        std::thread::sleep(delay);
        kill(&mut child);
        tried += 1;
        match sb.status(&name).as_deref() {
            None => {
                // Killed before the execution's row was committed: nothing to resume, and
                // nothing half-written either. Run it again.
                before_start += 1;
                let out = sb.run(&run_args(&def, &name, &task));
                assert_eq!(out.code, 0);
            }
            Some("RUNNING") => {
                // Sometimes kill the resuming runner too.
                if rng.below(2) == 0 {
                    std::thread::sleep(Duration::from_millis(350));
                    let mut again = sb.spawn(&["resume", "--execution-arn", &name]);
                    std::thread::sleep(Duration::from_millis(rng.below(span / 2)));
                    kill(&mut again);
                    second_kills += 1;
                }
                if sb.status(&name).as_deref() == Some("RUNNING") {
                    let out = sb.resume_within(&name, Duration::from_secs(20));
                    assert_eq!(out.code, 0, "resume of {name} failed: {}", out.stderr);
                    assert_eq!(out.json(), expected_output, "{name}: output");
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
        let d = sb
            .run(&["describe-execution", "--execution-arn", &name])
            .json();
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
