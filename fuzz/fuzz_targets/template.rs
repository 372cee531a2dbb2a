//! Payload templates (Parameters, ResultSelector, ItemSelector): compile a fuzzed template,
//! with its `.$` paths and intrinsic calls, and evaluate it against a fuzzed input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::diagnostic::{Diagnostics, JsonPointer};
use sfn_local::asl::eval::Env;
use sfn_local::asl::template::Template;
use sfn_local_fuzz::{context, two_values, variables};

fuzz_target!(|data: &[u8]| {
    let (template, input) = two_values(data);
    let mut diags = Diagnostics::default();
    let compiled = Template::compile(
        &template,
        &JsonPointer::root().key("Parameters"),
        &mut diags,
    );
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
    let _ = compiled.evaluate(&env, "Parameters");
});
