//! Choice rules: compile a fuzzed rule (boolean combinations, every comparator, paths on both
//! sides) and evaluate it against a fuzzed input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::choice::Rule;
use sfn_local::asl::diagnostic::{Diagnostics, JsonPointer};
use sfn_local::asl::eval::Env;
use sfn_local_fuzz::{context, two_values, variables};

fuzz_target!(|data: &[u8]| {
    let (rule, input) = two_values(data);
    let mut diags = Diagnostics::default();
    let at = JsonPointer::root()
        .key("States")
        .key("C")
        .key("Choices")
        .index(0);
    let compiled = Rule::compile(&rule, &at, &mut diags);
    if diags.has_errors() {
        return;
    }
    let context = context();
    let vars = variables(&input);
    let env = Env {
        input: &input,
        context: &context,
        variables: &vars,
    };
    let _ = compiled.evaluate(&env);
});
