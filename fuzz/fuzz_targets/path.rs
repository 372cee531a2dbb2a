//! JSONPath and reference paths: parse, then select from and write into a fuzzed document, and
//! build the causes AWS gives for a path that matches nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::eval::Env;
use sfn_local::asl::path::Path;
use sfn_local_fuzz::{context, text_and_value, variables};

fuzz_target!(|data: &[u8]| {
    let Some((text, input)) = text_and_value(data) else {
        return;
    };
    let context = context();
    let vars = variables(&input);
    let env = Env {
        input: &input,
        context: &context,
        variables: &vars,
    };
    if let Ok(path) = Path::parse(text) {
        let _ = path.select(&env);
        let _ = path.select_in(&input);
        let _ = path.normalized();
        let _ = path.dialect_notes();
        let _ = path.miss_detail(&env);
        let _ = path.invalid_path_cause(&env);
    }
    if let Ok(path) = Path::parse_reference(text) {
        let _ = path.select(&env);
        // ResultPath: write a value into the document.
        let mut target = input.clone();
        let _ = path.set(&mut target, serde_json::json!({"result": 1}));
    }
});
