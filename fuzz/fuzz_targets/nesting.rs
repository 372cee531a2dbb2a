//! Deep nesting everywhere a definition or an input can nest (src/depth.rs): the bytes choose a
//! shape and a depth up to 100,000, and the target takes the result through what `validate`
//! (JSON and YAML), `run` (compile, then the engine in memory with a nested input) and serve's
//! request path (`ValidateStateMachineDefinition`'s body, its model check and its verdict) do
//! with it. A stack overflow aborts the process, which libFuzzer reports as a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use sfn_local::asl::SourceFormat;
use sfn_local::clock::ManualClock;
use sfn_local::engine::{run_in_memory, EngineOptions};
use sfn_local::tasks::LocalTasks;
use std::rc::Rc;
use std::sync::Arc;

/// The deepest nesting built.
const MAX_LEVELS: usize = 100_000;

fuzz_target!(|data: &[u8]| {
    let [shape, a, b, c, input_shape, e, f, rest @ ..] = data else {
        return;
    };
    let levels = depth(*a, *b, *c);
    let input_levels = depth(*e, *f, *f);
    let leaf = String::from_utf8_lossy(rest);
    let text = definition(*shape, levels, &leaf);
    // Every door refuses a longer definition before parsing it (limits.rs).
    if text.chars().count() > sfn_local::limits::DEFINITION_CHARS {
        return;
    }
    // What validate and serve's ValidateStateMachineDefinition do with the text; the compiled
    // machine, when there is one, is what run executes.
    let machine = validate(&text, *shape % 14 == 12);
    serve_request(&text);
    if let Some(machine) = machine {
        run(machine, &input(*input_shape, input_levels));
    }
});

/// A depth from 0 to [`MAX_LEVELS`], over orders of magnitude (`scale` picks the order, the
/// deep ones less often: a 100,000-level input costs a thousand shallow ones), so that most
/// inputs are cheap and every order is tried.
fn depth(scale: u8, high: u8, low: u8) -> usize {
    let order = f64::from(scale) / 255.0;
    let max = 10f64.powf(order * order * order * 5.0);
    let fraction = f64::from(u16::from(high) << 8 | u16::from(low)) / f64::from(u16::MAX);
    ((fraction * max).round() as usize).min(MAX_LEVELS)
}

/// `open` `levels` times, `middle`, `close` as many times.
fn nest(open: &str, middle: &str, close: &str, levels: usize) -> String {
    let mut s = String::with_capacity((open.len() + close.len()) * levels + middle.len());
    (0..levels).for_each(|_| s.push_str(open));
    s.push_str(middle);
    (0..levels).for_each(|_| s.push_str(close));
    s
}

/// A one-Pass machine whose `Parameters` hold `field`.
fn pass_with(field: &str) -> String {
    format!(
        r#"{{"StartAt":"P","States":{{"P":{{"Type":"Pass","Parameters":{field},"End":true}}}}}}"#
    )
}

fn jsonata_output(expression: &str) -> String {
    let output = serde_json::to_string(&format!("{{% {expression} %}}")).unwrap();
    format!(
        r#"{{"QueryLanguage":"JSONata","StartAt":"P","States":{{"P":{{"Type":"Pass","Output":{output},"End":true}}}}}}"#
    )
}

fn path_field(path: &str) -> String {
    pass_with(&format!(
        r#"{{"x.$":{}}}"#,
        serde_json::to_string(path).unwrap()
    ))
}

/// A definition nesting `levels` deep in the way `shape` picks.
fn definition(shape: u8, levels: usize, leaf: &str) -> String {
    let leaf_json = serde_json::to_string(leaf).unwrap();
    match shape % 14 {
        0 => path_field(&format!("$.a[?({})]", nest("(", "@.b == 1", ")", levels))),
        1 => path_field(&format!("$.a[?({}(@.b == 1))]", "!".repeat(levels))),
        2 => path_field(&nest("$.a[?(@.b", "", ")]", levels)),
        3 => pass_with(&nest(r#"{"a":"#, &leaf_json, "}", levels)),
        4 => pass_with(&format!(
            r#"{{"r":{}}}"#,
            nest("[", &leaf_json, "]", levels)
        )),
        5 => path_field(&nest("States.Array(", "1", ")", levels)),
        6 => jsonata_output(&nest("(", "1", ")", levels)),
        7 => jsonata_output(&nest("[", "1", "]", levels)),
        8 => jsonata_output(&nest("{'a':", "1", "}", levels)),
        9 => {
            let rule = nest(
                r#"{"Not":"#,
                r#"{"Variable":"$.x","IsPresent":true}"#,
                "}",
                levels,
            );
            format!(
                r#"{{"StartAt":"C","States":{{"C":{{"Type":"Choice","Choices":[{{"And":[{rule}],"Next":"E"}}],"Default":"E"}},"E":{{"Type":"Succeed"}}}}}}"#
            )
        }
        10 => nest(
            r#"{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":["#,
            r#"{"StartAt":"L","States":{"L":{"Type":"Pass","End":true}}}"#,
            "]}}}",
            levels,
        ),
        11 => {
            let steps = vec!["a"; levels.max(1)].join(".");
            format!(
                r#"{{"StartAt":"P","States":{{"P":{{"Type":"Pass","Result":{leaf_json},"ResultPath":"$.{steps}","End":true}}}}}}"#
            )
        }
        12 => format!(
            "StartAt: P\nStates:\n  P:\n    Type: Pass\n    Result: {}\n    End: true\n",
            nest("[", "1", "]", levels)
        ),
        _ => {
            // A loop that nests its input `levels % 200` deeper each turn.
            let wrap = nest(r#"{"a":"#, r#"{"v.$":"$"}"#, "}", levels % 200);
            format!(
                r#"{{"StartAt":"N","States":{{"N":{{"Type":"Pass","Parameters":{wrap},"Next":"L"}},"L":{{"Type":"Choice","Choices":[{{"Variable":"$.never","IsPresent":true,"Next":"D"}}],"Default":"N"}},"D":{{"Type":"Succeed"}}}}}}"#
            )
        }
    }
}

/// An execution input nested `levels` deep, as text (parsed as `run --input` parses it).
fn input(shape: u8, levels: usize) -> String {
    match shape % 3 {
        0 => nest("[", "1", "]", levels),
        1 => nest(r#"{"a":"#, "1", "}", levels),
        _ => r#"{"a":{"b":1}}"#.to_owned(),
    }
}

fn validate(text: &str, yaml: bool) -> Option<sfn_local::asl::StateMachine> {
    let format = if yaml {
        SourceFormat::Yaml
    } else {
        SourceFormat::Json
    };
    let loaded = sfn_local_fuzz::load_standard(text, format);
    let _ = loaded
        .diagnostics
        .iter()
        .map(sfn_local::api::validation::diagnostic_json)
        .count();
    loaded.machine
}

/// The request body as serve reads it, and its model check (the verdict is `validate`'s).
fn serve_request(text: &str) {
    let body = json!({ "definition": text }).to_string();
    if let Ok(request) = serde_json::from_str::<Value>(&body) {
        let _ = sfn_local::serve::model::validate("ValidateStateMachineDefinition", &request);
    }
}

fn run(machine: sfn_local::asl::StateMachine, input: &str) {
    let Ok(input) = serde_json::from_str::<Value>(input) else {
        return;
    };
    let info = sfn_local_fuzz::execution_info();
    let options = EngineOptions {
        // Loops end by the history cap, not by time.
        max_history_events: 2_000,
        ..EngineOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(tokio::task::LocalSet::new().run_until(async {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000));
        let _ = run_in_memory(
            Arc::new(machine),
            info,
            input,
            clock,
            Rc::new(LocalTasks::default()),
            options,
        )
        .await;
    }));
}
