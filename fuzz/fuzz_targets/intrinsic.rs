//! Intrinsic calls (`States.Format(...)` and the other 17): parse fuzzed call text and evaluate
//! it against a fuzzed input, with the text as `$.a` too so string functions get real strings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sfn_local::asl::eval::Env;
use sfn_local::asl::intrinsics::Call;
use sfn_local_fuzz::{context, text_and_value, variables};

fuzz_target!(|data: &[u8]| {
    let Some((text, input)) = text_and_value(data) else {
        return;
    };
    let Ok(call) = Call::parse(text) else {
        return;
    };
    let _ = call.paths();
    let context = context();
    let vars = variables(&input);
    let env = Env {
        input: &input,
        context: &context,
        variables: &vars,
    };
    let _ = call.evaluate(&env);
});
