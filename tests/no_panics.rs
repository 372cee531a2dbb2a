//! No input makes `validate` panic: every fixture and corpus definition, truncated, with bytes
//! flipped and with values swapped for other JSON types, goes through the validator. A cheap,
//! deterministic stand-in for a fuzzer that runs in every test run.

mod common;

use serde_json::Value;
use sfn_local::asl::{compile_text, MachineType};
use std::path::Path;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const REPLACEMENTS: &[&str] = &[
    "null",
    "true",
    "0",
    "-1",
    "1.5",
    "99999999999999999999",
    "\"\"",
    "\"$\"",
    "\"$$.\"",
    "\"$.a[\"",
    "\"States.Format(\"",
    "[]",
    "{}",
    "[{}]",
    "{\"Type\":\"Map\"}",
    "\"{% $x %}\"",
];

/// Replaces one value somewhere in the document with another JSON type.
fn swap_value(v: &mut Value, rng: &mut Rng, depth: usize) {
    let descend = depth < 8 && rng.below(3) != 0;
    let child = match v {
        Value::Object(m) if descend && !m.is_empty() => {
            let i = rng.below(m.len());
            m.values_mut().nth(i)
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = rng.below(a.len());
            a.get_mut(i)
        }
        _ => None,
    };
    match child {
        Some(c) => swap_value(c, rng, depth + 1),
        None => {
            *v = serde_json::from_str(REPLACEMENTS[rng.below(REPLACEMENTS.len())]).unwrap();
        }
    }
}

fn check(text: &str) {
    for ty in [MachineType::Standard, MachineType::Express] {
        let _ = compile_text(text, ty);
    }
}

fn definitions() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["fixtures/invalid", "fixtures/valid", "definitions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for f in common::json_files(&dir) {
            out.push(std::fs::read_to_string(f).unwrap());
        }
    }
    let cases = common::conformance_cases();
    for f in common::json_files(&cases.join("pure"))
        .into_iter()
        .step_by(7)
    {
        if let Some(t) = common::definition_text(&common::read_json(&f)) {
            out.push(t);
        }
    }
    out
}

#[test]
fn mutated_definitions_never_panic() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut checked = 0;
    for text in definitions() {
        // Truncations: every prefix length class.
        for cut in [1, 2, 3, 7, 10, 50, 100, 1000] {
            let n = text.len().saturating_sub(cut);
            if text.is_char_boundary(n) {
                check(&text[..n]);
                checked += 1;
            }
        }
        // Flipped bytes (kept UTF-8).
        const NOISE: &[u8] = b"{}[]\",:0a$.\\";
        for _ in 0..5 {
            let mut bytes = text.clone().into_bytes();
            if bytes.is_empty() {
                break;
            }
            let i = rng.below(bytes.len());
            bytes[i] = NOISE[rng.below(NOISE.len())];
            if let Ok(s) = String::from_utf8(bytes) {
                check(&s);
                checked += 1;
            }
        }
        // Values swapped for other types.
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            for _ in 0..20 {
                let mut m = v.clone();
                swap_value(&mut m, &mut rng, 0);
                check(&m.to_string());
                checked += 1;
            }
        }
    }
    println!("{checked} mutated definitions validated without a panic");
    assert!(checked > 1000);
}

/// Mutated definitions that still validate are run too (inputs of several shapes, no real
/// waiting, a small history cap): the engine must end every one of them without a panic.
#[test]
fn mutated_machines_run_without_panics() {
    use sfn_local::clock::SystemClock;
    use sfn_local::engine::{context::ExecutionInfo, run_in_memory, EngineOptions};
    use std::rc::Rc;
    use std::sync::Arc;
    let mut rng = Rng(0xfeed_beef_0bad_cafe);
    let inputs: Vec<Value> = [
        "{}",
        "[]",
        "null",
        "{\"a\":[1,2,3],\"n\":1,\"s\":\"x\"}",
        "[1,\"two\",{}]",
    ]
    .iter()
    .map(|t| serde_json::from_str(t).unwrap())
    .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut ran = 0;
    for text in definitions() {
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        for round in 0..10 {
            let mut m = v.clone();
            if round > 0 {
                swap_value(&mut m, &mut rng, 0);
            }
            let (Some(machine), _) = compile_text(&m.to_string(), MachineType::Standard) else {
                continue;
            };
            let machine = Arc::new(machine);
            let input = inputs[rng.below(inputs.len())].clone();
            let info = ExecutionInfo::new("us-east-1", "123456789012", "M", "e", None, 0);
            let run = run_in_memory(
                machine,
                info,
                input,
                Arc::new(SystemClock::new(0.0)),
                Rc::new(sfn_local::tasks::LocalTasks::default()),
                EngineOptions {
                    max_history_events: 500,
                    ..EngineOptions::default()
                },
            );
            let local = tokio::task::LocalSet::new();
            let finished = local.block_on(&runtime, async {
                tokio::time::timeout(std::time::Duration::from_secs(5), run).await
            });
            assert!(finished.is_ok(), "a machine did not end within 5 s: {m}");
            ran += 1;
        }
    }
    println!("{ran} machines ran to their end without a panic");
    assert!(ran > 150);
}
